"""Utterance-level ("turn") points: the index the hybrid recall policy searches.

Each page is also indexed by who said what: one point per utterance, dense (the utterance with
its preceding utterance as context) and sparse (BM25 terms of the text with the page's date).
Indexing runs in maintenance, off the reply path; the ranking is memory/recall/hybrid.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from django.db import transaction
from django.db.models import QuerySet

from memory.adapters import configured
from memory.engine import hybrid_scoring as scoring
from memory.engine.candidates import TurnFact
from memory.engine.ports import VectorPoint
from memory.models import MEMORY_ONLY_REPLIES, DialoguePage, PageStatus, Tier
from memory.recall.turn_facts import turn_facts
from memory.services.common import lock_user_state

TURN_NAMESPACE = uuid.UUID("6f1d4a52-8a3e-4c7b-9d0e-2b5c8f4e7a10")
INDEX_BATCH = 32
# An attached file's text as an utterance: about a message's worth. The page itself is indexed with
# more of it (MEMORYOS_ATTACHMENT_INDEX_CHARS); here a longer text would cost two full-length MiniLM
# passes (the utterance, and as the next one's context) and drown the next utterance's meaning.
ATTACHMENT_UTTERANCE_CHARS = 600


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
    """Stored utterances, or the user's query (and the text of the files it carried) and the reply
    of a live page.

    An offline reply only restates memory, so it is not indexed as something that was said.
    """
    if page.utterances:
        return page.utterances
    user_name = getattr(getattr(page.user, "long_term_profile", None), "name", "") or page.user.get_username()
    said = [{"id": "", "speaker": user_name, "text": page.query}]
    if page.attachment_text:  # the files came with the user's message: theirs to have said
        said.append({"id": "", "speaker": user_name,
                     "text": f"(attached) {page.attachment_text[:ATTACHMENT_UTTERANCE_CHARS]}"})
    if page.response and page.reply_model not in MEMORY_ONLY_REPLIES:
        said.append({"id": "", "speaker": page.sona.name if page.sona else "assistant", "text": page.response})
    return said


def turn_text(page: DialoguePage, utterance: dict) -> str:
    """What BM25 sees: the date (temporal questions name it), the speaker and the words."""
    return f"{page.timestamp.strftime('%d %B %Y')} {utterance['speaker']}: {utterance['text']}"


def utterance_text(utt: dict) -> str:
    """What an utterance is embedded as: the speaker and the words."""
    return f"{utt['speaker']}: {utt['text']}"


def context_text(previous: str, text: str) -> str:
    """What an utterance's context is embedded as: the previous utterance and it, joined."""
    return f"{previous}\n{text}"


def _turn_slots(pages: Sequence[DialoguePage], before: dict | None
                ) -> list[tuple[DialoguePage, int, str, str | None]]:
    """(page, position, utterance text, context text or None) of every utterance of the pages."""
    slots: list[tuple[DialoguePage, int, str, str | None]] = []
    previous = utterance_text(before) if before is not None else None
    for page in pages:
        for pos, utt in enumerate(page.utterances):
            text = utterance_text(utt)
            slots.append((page, pos, text, context_text(previous, text) if previous is not None else None))
            previous = text
    return slots


def turn_texts(pages: Sequence[DialoguePage], before: dict | None) -> list[str]:
    """The distinct utterance and context texts the pages' points are made of, in order."""
    return list(dict.fromkeys(text for _, _, utt, context in _turn_slots(pages, before)
                              for text in (utt, context) if text))


def turn_vectors(pages: Sequence[DialoguePage], before: dict | None,
                 vectors: Mapping[str, Sequence[float]] | None = None) -> dict[str, Sequence[float]]:
    """The vectors of the pages' utterance and context texts, by text: those in `vectors` taken
    as they are, the others embedded in one call, each distinct text once."""
    needed = turn_texts(pages, before)
    known = {text: vectors[text] for text in needed if text in vectors} if vectors else {}
    missing = [text for text in needed if text not in known]
    if missing:
        known.update(zip(missing, configured.embedder().embed(missing), strict=True))
    return known


def turn_points(pages: Sequence[DialoguePage], before: dict | None, params: scoring.HybridParams,
                vectors: Mapping[str, Sequence[float]] | None = None) -> list[VectorPoint]:
    """Points for the pages' utterances; `before` is the utterance preceding the first page.

    Dense: v(utterance) + mix · v(previous utterance joined to it), normalised (context_vector).
    Each distinct text is embedded once; `vectors` holds texts embedded already (a whole-file
    import embeds the file's utterances and contexts up front, a reply its own: page_reply_store).
    """
    known = turn_vectors(pages, before, vectors)
    points = []
    for page, pos, text, context in _turn_slots(pages, before):
        utt = page.utterances[pos]
        points.append(VectorPoint(
            id=turn_point_id(page, pos),
            vector=scoring.context_vector(known[text], known[context] if context else None, mix=params.context_mix),
            text=turn_text(page, utt),
            payload={"user_id": str(page.user_id), "kind": "turn", "tier": page.tier,
                     "segment_id": str(page.segment_id) if page.segment_id else "", "page_id": str(page.id),
                     "seq": page.seq, "pos": pos, "speaker": utt["speaker"], "source_id": utt.get("id", ""),
                     "timestamp": page.timestamp.timestamp(), **turn_flags(page.utterances, pos)},
        ))
    return points


def turn_flags(said: Sequence[dict], pos: int) -> dict[str, bool]:
    """What turn pairs need of a turn besides its place (TurnFact.asks, TurnFact.last): whether it
    asks something and whether it ends its page. Kept in the payload so that recall reads no page
    to find them."""
    return {"asks": scoring.asks(said[pos].get("text", "")), "last": pos == len(said) - 1}


def utterance_before(page: DialoguePage) -> dict | None:
    """The last utterance of the page before `page` in the conversation, if any. Its stored
    utterances are read alone; the whole row, with its user and sona, only for a page that has
    none stored (page_utterances makes them then)."""
    pages = (DialoguePage.objects.filter(user_id=page.user_id, seq__lt=page.seq, status=PageStatus.COMPLETE)
             .order_by("-seq"))
    found = pages.values_list("id", "utterances").first()
    if found is None:
        return None
    said = found[1] or page_utterances(DialoguePage.objects.select_related("user", "sona").get(id=found[0]))
    return said[-1] if said else None


def remember_facts(index, points: Sequence[VectorPoint]) -> None:
    """Keep the facts of turn points just written to `index`: whoever wrote them knows them, and
    the reply path need not read them back."""
    turn_facts().put(index, {point.id: TurnFact.of(point.payload) for point in points
                             if point.payload.get("kind") == "turn"})


def points_write(points: Sequence[VectorPoint]) -> None:
    """Write points to the vector index and keep the facts of its turn points (remember_facts)."""
    index = configured.vector_index()
    index.upsert(points)
    remember_facts(index, points)


def unindexed_pages_of(user_id: int) -> QuerySet[DialoguePage]:
    """One user's complete pages whose utterances are not indexed yet, leaving out what recall
    never shows (repressed pages and segments, the archive)."""
    return (DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, turns_indexed=False,
                                        repressed=False)
            .exclude(tier=Tier.ARCHIVED).exclude(segment__repressed=True))


def unindexed_batch(user_id: int) -> tuple[list[DialoguePage], dict | None]:
    """The next INDEX_BATCH of the user's unindexed pages (unindexed_pages_of), oldest first, with
    their utterances made, and the utterance before the first of them (their first context)."""
    # The profile with the user: page_utterances names the person by it (a read a page otherwise).
    pages = list(unindexed_pages_of(user_id).select_related("user__long_term_profile", "sona")
                 .order_by("seq")[:INDEX_BATCH])
    for page in pages:
        page.utterances = page_utterances(page)
    return pages, utterance_before(pages[0]) if pages else None


def index_turns(*, user_id: int, params: scoring.HybridParams | None = None,
                vectors: Mapping[str, Sequence[float]] | None = None) -> int:
    """Index the utterances of completed pages not indexed yet. Idempotent (ids are derived).
    `vectors`: utterance and context texts (utterance_text, context_text) embedded already.

    Batch by batch until one comes short: a page completed after that read is the next run's (its
    maintenance is due until it is chained), and a live write's run reads its pages once."""
    params = params or scoring.HybridParams()
    done = 0
    while True:
        pages, before = unindexed_batch(user_id)
        if not pages:
            return done
        points = turn_points(pages, before, params, vectors)
        points_write(points)
        with transaction.atomic():
            for page in pages:
                DialoguePage.objects.filter(id=page.id).update(utterances=page.utterances, turns_indexed=True)
        done += len(pages)
        if len(pages) < INDEX_BATCH:
            return done


def turn_flags_backfill(*, user_id: int) -> int:
    """Write the turn flags (turn_flags) into the turn points of a user's pages indexed before
    indexing wrote them; returns the pages done. Idempotent; recall is right before and after
    (turn pairs read the page of a point without them). Under the user's lock, so that no
    correction re-indexes a page between the read of its utterances and the write."""
    done = 0
    index = configured.vector_index()
    pages = (DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, turns_indexed=True,
                                         repressed=False)
             .exclude(tier=Tier.ARCHIVED).exclude(segment__repressed=True).order_by("seq")
             .only("id", "user_id", "seq", "utterances"))
    with transaction.atomic():
        lock_user_state(user_id)
        for start in range(0, pages.count(), INDEX_BATCH * 8):
            by_flags: dict[tuple[bool, bool], list[str]] = {}
            for page in pages[start:start + INDEX_BATCH * 8]:
                for pos in range(len(page.utterances or ())):
                    flags = turn_flags(page.utterances, pos)
                    by_flags.setdefault((flags["asks"], flags["last"]), []).extend(
                        [turn_point_id(page, pos), legacy_turn_point_id(page.id, pos)])
                done += 1
            for (asks, last), ids in by_flags.items():
                index.set_payload(user_id=str(user_id), ids=ids, payload={"asks": asks, "last": last})
    return done
