"""Utterance-level ("turn") vectors and the hybrid recall policy over them.

Each page is also indexed by who said what: one point per utterance, dense (the utterance with
its preceding utterance as context) and sparse (BM25 terms of the text with the page's date).
Indexing runs in maintenance, off the reply path.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
import uuid
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from django.conf import settings
from django.db import transaction

from memory import components, reads
from memory.engine import recall_policies as policy
from memory.engine.ports import VectorPoint
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, PageStatus, Tier

TURN_NAMESPACE = uuid.UUID("6f1d4a52-8a3e-4c7b-9d0e-2b5c8f4e7a10")
INDEX_BATCH = 32
# A turn point's id is derived from (page, position), so these payload fields never change for it.
FIXED_FIELDS = ("seq", "pos", "speaker")


class TurnFact(NamedTuple):
    """What ranking needs of a turn point besides its scores. (The page is found by the user and
    seq; keeping its id too made each entry twice as big.)"""

    seq: int
    pos: int
    speaker: str

    @classmethod
    def of(cls, payload: dict[str, Any]) -> TurnFact:
        # Speaker names repeat on every turn: one shared string each.
        return cls(int(payload["seq"]), int(payload["pos"]), sys.intern(str(payload.get("speaker", ""))))


class TurnFacts:
    """The fixed payload of turn points, kept in memory by id (oldest entry out first), about
    0.2 kB an entry.

    A hybrid recall takes hundreds of candidates from each of three searches; reading their
    payloads back from the index costs about 15 µs a hit, three times what id and score cost.
    The searches ask for no payload and the facts come from here, or, for ids not seen yet,
    from one batched read. Maintenance puts in the facts of the points it indexes (a re-indexed
    page's replace the old ones), and all entries are dropped when the facts are asked of
    another index than before (settings changed, a benchmark's fresh store: integer ids repeat
    across stores). A server restart clears it. Eviction is first in, first out: keeping a
    least-recently-used order cost a dictionary move per candidate, a millisecond a recall, and
    an evicted entry costs one batched read to get back.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._facts: dict[str, TurnFact] = {}
        self._source: weakref.ref | None = None  # the index the facts were read from
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._facts)

    def get(self, index, *, user_id: str, ids: Sequence[str]) -> dict[str, TurnFact]:
        with self._lock:
            cached = self._bound_to(index)
            found = {key: facts for key in ids if (facts := cached.get(key)) is not None}
        missing = [key for key in ids if key not in found]
        if missing:
            fetched = {key: TurnFact.of(payload) for key, payload in
                       index.get_payloads(user_id=user_id, ids=missing, fields=FIXED_FIELDS).items()
                       if "seq" in payload and "pos" in payload}
            found.update(fetched)
            self.put(index, fetched)
        return found

    def put(self, index, facts: dict[str, TurnFact]) -> None:
        """Keep the facts of points just read from, or just written to, `index`."""
        with self._lock:
            cached = self._bound_to(index)
            cached.update(facts)
            excess = len(cached) - self.size
            if excess > 0:
                for key in list(itertools.islice(cached, excess)):
                    del cached[key]

    def _bound_to(self, index) -> dict[str, TurnFact]:
        """The facts, emptied first if they were read from another index (call with the lock)."""
        if self._source is None or self._source() is not index:
            self._facts.clear()
            self._source = weakref.ref(index)
        return self._facts

    def clear(self) -> None:
        with self._lock:
            self._facts.clear()


@functools.cache
def turn_facts() -> TurnFacts:
    return TurnFacts(settings.MEMORYOS["TURN_FACTS_CACHE"])


# Turn points have integer ids packed from (user, page seq, position): unique, derivable, and
# cheap to read back (Edge returns a UUID id as a uuid.UUID object, ~10 µs a hit; a hybrid recall
# reads over a thousand). Outside these ranges, and for points indexed before integer ids, the
# id is a UUID derived from (page id, position).
_SEQ_BITS, _POS_BITS, _USER_BITS = 32, 8, 23


def turn_point_id(page: DialoguePage, position: int) -> str:
    user_id, seq = page.user_id, page.seq
    if 0 < user_id < 1 << _USER_BITS and 0 < seq < 1 << _SEQ_BITS and 0 <= position < 1 << _POS_BITS:
        return str((user_id << (_SEQ_BITS + _POS_BITS)) | (seq << _POS_BITS) | position)
    return legacy_turn_point_id(page.id, position)


def legacy_turn_point_id(page_id, position: int) -> str:
    return str(uuid.uuid5(TURN_NAMESPACE, f"{page_id}:{position}"))


def turn_point_ids(page: DialoguePage) -> list[str]:
    """Every id the page's utterances may have in the index (integer and, from older stores, UUID)."""
    count = len(page.utterances)
    return ([turn_point_id(page, i) for i in range(count)]
            + [legacy_turn_point_id(page.id, i) for i in range(count)])


def page_utterances(page: DialoguePage) -> list[dict]:
    """Stored utterances, or the user's query and the reply of a live page.

    An offline reply only restates memory, so it is not indexed as something that was said.
    """
    if page.utterances:
        return page.utterances
    from memory.services import OFFLINE_MODEL_NAME

    user_name = getattr(getattr(page.user, "persona_profile", None), "name", "") or page.user.get_username()
    said = [{"id": "", "speaker": user_name, "text": page.query}]
    if page.response and page.reply_model != OFFLINE_MODEL_NAME:
        said.append({"id": "", "speaker": page.sona.name if page.sona else "assistant", "text": page.response})
    return said


def turn_text(page: DialoguePage, utterance: dict) -> str:
    """What BM25 sees: the date (temporal questions name it), the speaker and the words."""
    return f"{page.timestamp.strftime('%d %B %Y')} {utterance['speaker']}: {utterance['text']}"


def _said(utt: dict) -> str:
    return f"{utt['speaker']}: {utt['text']}"


def turn_points(pages: Sequence[DialoguePage], before: dict | None,
            params: policy.HybridParams) -> list[VectorPoint]:
    """Points for the pages' utterances; `before` is the utterance preceding the first page."""
    texts: list[str] = []
    slots: list[tuple[DialoguePage, int, int, int | None]] = []
    previous = before
    for page in pages:
        for pos, utt in enumerate(page.utterances):
            texts.append(_said(utt))
            turn_slot, context_slot = len(texts) - 1, None
            if previous is not None:
                texts.append(f"{_said(previous)}\n{_said(utt)}")
                context_slot = len(texts) - 1
            slots.append((page, pos, turn_slot, context_slot))
            previous = utt
    vectors = components.embedder().embed(texts) if texts else []
    points = []
    for page, pos, turn_slot, context_slot in slots:
        context = vectors[context_slot] if context_slot is not None else None
        utt = page.utterances[pos]
        points.append(VectorPoint(
            id=turn_point_id(page, pos),
            vector=policy.context_vector(vectors[turn_slot], context, mix=params.context_mix),
            text=turn_text(page, utt),
            payload={"user_id": str(page.user_id), "kind": "turn", "tier": page.tier,
                     "segment_id": str(page.segment_id) if page.segment_id else "", "page_id": str(page.id),
                     "seq": page.seq, "pos": pos, "speaker": utt["speaker"], "source_id": utt.get("id", ""),
                     "timestamp": page.timestamp.timestamp()},
        ))
    return points


def _utterance_before(page: DialoguePage) -> dict | None:
    """The last utterance of the page before `page` in the conversation, if any."""
    previous = (DialoguePage.objects.select_related("user", "sona")
                .filter(user_id=page.user_id, seq__lt=page.seq, status=PageStatus.COMPLETE)
                .order_by("-seq").first())
    if previous is None:
        return None
    said = page_utterances(previous)
    return said[-1] if said else None


def remember_facts(index, points: Sequence[VectorPoint]) -> None:
    """Keep the facts of turn points just written to `index`: whoever wrote them knows them, and
    the reply path need not read them back."""
    turn_facts().put(index, {point.id: TurnFact.of(point.payload) for point in points
                             if point.payload.get("kind") == "turn"})


def index_turns(*, user_id: int, params: policy.HybridParams | None = None) -> int:
    """Index the utterances of completed pages not indexed yet. Idempotent (ids are derived)."""
    params = params or policy.HybridParams()
    done = 0
    while True:
        pages = list(DialoguePage.objects.select_related("user", "sona").filter(
            user_id=user_id, status=PageStatus.COMPLETE, turns_indexed=False)
            .exclude(tier=Tier.ARCHIVED).order_by("seq")[:INDEX_BATCH])
        if not pages:
            return done
        for page in pages:
            page.utterances = page_utterances(page)
        points = turn_points(pages, _utterance_before(pages[0]), params)
        index = components.vector_index()
        index.upsert(points)
        remember_facts(index, points)
        with transaction.atomic():
            for page in pages:
                DialoguePage.objects.filter(id=page.id).update(utterances=page.utterances, turns_indexed=True)
        done += len(pages)


def _turn_scope(tiers: Sequence[str]) -> dict[str, Any]:
    return {"match_any": {"tier": list(tiers)}, "kind": "turn", "fields": ()}


def keyword_turns(*, user, query: str, tiers: Sequence[str] = (Tier.MTM,),
                  params: policy.HybridParams | None = None) -> dict[str, float]:
    """The BM25 list of the hybrid policy: turn id -> score. It needs no query vector, so recall
    runs it while the query is being embedded."""
    params = params or policy.HybridParams()
    return {hit.id: hit.score for hit in components.vector_index().search_text(
        user_id=str(user.pk), text=query, limit=params.candidates, **_turn_scope(tiers))}


def recall_turns(*, user, query: str, query_vector: Sequence[float], limit: int,
                 tiers: Sequence[str] = (Tier.MTM,), params: policy.HybridParams | None = None,
                 sparse: dict[str, float] | None = None) -> list[RecalledItem]:
    """The best utterances by the hybrid score, each with its breakdown. `sparse` is the query's
    keyword_turns when the caller has it already."""
    params = params or policy.HybridParams()
    index = components.vector_index()
    user_id = str(user.pk)
    scope = _turn_scope(tiers)
    dense = {hit.id: hit.score for hit in
             index.search(user_id=user_id, vector=query_vector, limit=params.candidates, **scope)}
    if sparse is None:
        sparse = keyword_turns(user=user, query=query, tiers=tiers, params=params)
    facts = turn_facts().get(index, user_id=user_id, ids=list({**dense, **sparse}))
    if not facts:
        return []
    keys, speakers = _keys_and_speakers(facts)
    named = policy.named_speakers(query, set(speakers))
    first = policy.fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=None, speakers=speakers,
                               named=named, params=params)
    top = [keys[i] for i in np.argsort(-first.sum(axis=1), kind="stable")[:params.feedback_top]]
    top_vectors = list(index.get_vectors(user_id=user_id, ids=top).values())
    fb_query = policy.feedback_query(query_vector, top_vectors, mix=params.feedback_mix)
    feedback = {hit.id: hit.score for hit in
                index.search(user_id=user_id, vector=fb_query, limit=params.candidates, **scope)}
    facts.update(turn_facts().get(index, user_id=user_id, ids=[key for key in feedback if key not in facts]))
    keys, speakers = _keys_and_speakers(facts)
    parts = policy.fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=feedback, speakers=speakers,
                               named=named, params=params)
    seq = np.fromiter((facts[key].seq for key in keys), dtype=np.int64, count=len(keys))
    pos = np.fromiter((facts[key].pos for key in keys), dtype=np.int64, count=len(keys))
    final = policy.final_array(parts, seq, pos, params=params)
    ranked = policy.best_first(final, seq, pos, limit)
    return _turn_items(user, [(keys[i], policy.part_dict(parts, i), float(final[i])) for i in ranked],
                       facts, dense, sparse)


def _keys_and_speakers(facts: dict[str, TurnFact]) -> tuple[list[str], list[str]]:
    """The candidates in a fixed order, and who said each."""
    keys = list(facts)
    return keys, [facts[key].speaker for key in keys]


def _turn_items(user, ranked: list[tuple[str, dict[str, float], float]], facts: dict[str, TurnFact], dense,
                sparse) -> list[RecalledItem]:
    """(key, parts, final score) best first → items with their utterance and score breakdown."""
    seqs = sorted({facts[key].seq for key, _, _ in ranked})
    pages = {page.seq: page for page in reads.rows(DialoguePage, ("seq", "utterances", "segment", "timestamp"),
                                                   equal={"user": user.pk}, among={"seq": seqs})}
    items = []
    for key, parts, final in ranked:
        page = pages.get(facts[key].seq)
        pos = facts[key].pos
        if page is None or pos >= len(page.utterances):
            continue
        utt = page.utterances[pos]
        breakdown: dict = {name: round(value, 4) for name, value in parts.items()}
        breakdown["final"] = round(final, 4)
        # The raw scores beside their standard scores: with few candidates the z-scores say little.
        breakdown["cosine"] = round(dense.get(key, 0.0), 4)
        breakdown["bm25"] = round(sparse.get(key, 0.0), 4)
        breakdown["segment_id"] = str(page.segment_id) if page.segment_id else ""
        items.append(RecalledItem(
            kind="turn", ref=key, text=f"{utt['speaker']}: {utt['text']}", score=final,
            timestamp=page.timestamp, source_ids=(utt["id"],) if utt.get("id") else (), breakdown=breakdown,
        ))
    return items
