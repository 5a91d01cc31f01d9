"""Facts at the turn they are told: after a reply, what the turn states about the person becomes
long-term knowledge at once, and a change it states supersedes the older fact before the next reply.

Maintenance (memory/services/maintenance.py) calls `facts_from_turns` first, in the low-priority
lane after the reply, for the pages it has not linked into the meta chain yet. Each fact is read by
the offline reader on a language pipeline (memory/engine/reading/) or, with a language model
configured, by the model (tolerantly parsed; the offline reader when it fails). A fact already
known, in these words or others of the same meaning, gains the page as a second source instead of
being stored twice. The reply names only what will be stored (`facts_to_note`). Each new fact is a
`fact_added` lifecycle event whose payload names the page, the speaker and how it was read;
supersession then runs on the new facts (confident changes at once, uncertain ones to the review
queue). Heat-driven promotion
(memory/services/long_term.py) still feeds the profile, traits and knowledge as before.

What a turn changed is returned (and found later by the events' "page_id"), so the chat can show
the person a notice with an undo (`fact_change_undo`).
"""

from __future__ import annotations

import functools
import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce

from memory.adapters import configured
from memory.engine.facts import (
    TURN_FACTS_PROMPT,
    facts_of,
    facts_of_all,
    judged_facts,
    said_by_person,
    same_meaning_at,
    statement_in,
    validate_turn_facts,
)
from memory.engine.judging import Examples, example_statements, examples_of, fact_likelihood
from memory.engine.long_term import normalise_fact
from memory.engine.model_output import pages_text
from memory.engine.ports import ChatMessage, ModelError, VectorPoint
from memory.engine.reading import parts_of
from memory.models import NOTICE_UNDONE, DialoguePage, LifecycleEvent, MemoryNode, PageStatus
from memory.services import graph
from memory.services.common import MemoryInputError, MemoryNotFound, embed_or_none, lock_user_state
from memory.services.events import event_record
from persona.models import KnowledgeFact, Supersession

log = logging.getLogger(__name__)
VIA_TURN = "turn"


@dataclass(frozen=True)
class FactChange:
    """What one turn's after-reply work did to a fact: "remembered" (a new fact) or "changed" (it
    superseded `previous`)."""

    action: str
    fact_id: str
    text: str
    page_id: str
    previous: str = ""
    supersession_id: str = ""


def facts_at_turn() -> bool:
    """MEMORYOS["FACTS_AT_TURN"] (default on): facts are read at their turn, not only on promotion."""
    return bool(settings.MEMORYOS.get("FACTS_AT_TURN", True))


def _facts_indexed() -> bool:
    """MEMORYOS["TURN_FACTS_INDEXED"] (default off): facts read at their turn get vector points too.
    Off, recall ranks as before (the BM25 statistics and the long-term boost see promotion's facts
    only); the reply and a model's prompt read the facts themselves (memory/services/turns.py)."""
    return bool(settings.MEMORYOS.get("TURN_FACTS_INDEXED", False))


def _facts_by_model() -> bool:
    """MEMORYOS["TURN_FACTS_MODEL"] (default on): with an LLM configured, the model reads each turn's
    facts (a second call per turn, the offline reader when it fails); off, the offline reader does,
    with or without a model."""
    return bool(settings.MEMORYOS.get("TURN_FACTS_MODEL", True))


def facts_read_by_model() -> bool:
    """Whether a turn's facts are the model's to read (a model is configured and reads them)."""
    return _facts_by_model() and configured.chat_model() is not None


def _told(page: DialoguePage) -> str:
    return said_by_person(page.query, page.utterances or ())


def _statement_of(page: DialoguePage) -> str:
    """What a page states: its words (statement_in), none when it was a correction carried out (the
    corrected fact holds what it said)."""
    statement = statement_in(_told(page))
    if statement and statement != _told(page) and LifecycleEvent.objects.filter(
            user_id=page.user_id, kind=LifecycleEvent.Kind.EDITED, payload__action="correct",
            payload__page_id=str(page.pk)).exists():
        return ""
    return statement


def _speaker(page: DialoguePage) -> str:
    if page.utterances:
        return str(page.utterances[0].get("speaker", "")) or "user"
    return "user"


def _model_facts(user_id: int, text: str) -> list[str] | None:
    """The model's facts for one message, or None (no model, or an answer that failed its check)."""
    model = configured.chat_model() if _facts_by_model() else None
    if model is None:
        return None
    from memory.adapters.llm import complete_json  # the model's client loads only where one is configured

    messages = [ChatMessage("system", TURN_FACTS_PROMPT), ChatMessage("user", pages_text([f"User: {text}"]))]
    try:
        return list(complete_json(model, messages, validate=validate_turn_facts, max_tokens=300))
    except (ModelError, ValueError) as exc:
        log.warning("event=turn_facts_model_failed user=%s error=%r", user_id, exc)
        event_record(user_id=user_id, kind=LifecycleEvent.Kind.MODEL_OUTPUT_REJECTED, task="turn_facts",
                     error=str(exc)[:500])
        return None


def facts_read(*, user_id: int, text: str, live: bool = True) -> tuple[list[str], str]:
    """The fact texts a message states and how they were read ("model" or "offline"). A live turn's
    are read by the model where one is configured, or by the offline reader with its judgement by
    meaning (facts_judged_offline); an imported page's (`live` False) by the parse alone: a history
    of thousands of messages costs neither a model call nor a second embedding a page."""
    found = _model_facts(user_id, text) if live else None
    if found is not None:
        return found, "model"
    return facts_judged_offline(text, judge=live), "offline"


def facts_judged_offline(text: str, *, vector: Sequence[float] | None = None, judge: bool = True) -> list[str]:
    """The offline reader's facts of a message: the parse, with the judgement by meaning where the
    parse has no answer (memory/engine/facts.py judged_facts; MEMORYOS["FACTS_JUDGED"], default on)."""
    likelihood = likelihood_of(text, vector) if judge and _facts_judged() else None
    return list(dict.fromkeys(f.text for f in judged_facts(text, likelihood)))


def _facts_judged() -> bool:
    return bool(settings.MEMORYOS.get("FACTS_JUDGED", True))


_likelihoods: OrderedDict[str, float | None] = OrderedDict()
_LIKELIHOODS_KEPT = 4096


@functools.cache
def _examples(embedder_name: str) -> Examples | None:
    """The labelled statements embedded once per process by the configured embedder (a fake one,
    which carries no meaning, has none)."""
    embedder = configured.embedder()
    if not getattr(embedder, "semantic", True):
        return None
    statements = example_statements()
    vectors = embed_or_none([text for text, _ in statements])
    return examples_of(vectors, [fact for _, fact in statements]) if vectors else None


_vectors: OrderedDict[str, list[float]] = OrderedDict()


def texts_similarity(first: str, second: str) -> float | None:
    """Two texts' closeness in meaning: the cosine of their embeddings (kept per text), None when the
    embedder fails or carries no meaning (a fake one)."""
    if not getattr(configured.embedder(), "semantic", True):
        return None
    missing = [t for t in (first, second) if t not in _vectors]
    if missing:
        vectors = embed_or_none(missing)
        if not vectors:
            return None
        _vectors.update(zip(missing, vectors, strict=True))
        while len(_vectors) > _LIKELIHOODS_KEPT:
            _vectors.popitem(last=False)
    a, b = _vectors[first], _vectors[second]
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else None


def fact_reader_warm_up() -> None:
    """Load the reader's language pipeline and embed its labelled statements (a few seconds), so
    that the first turn after a start does not wait for them."""
    facts_of("I live in Porto.")
    _examples(str(getattr(configured.embedder(), "name", "")))


def likelihood_of(text: str, vector: Sequence[float] | None = None) -> float | None:
    """How likely a message states a fact about the person, by its meaning (memory/engine/judging.py);
    None when no example is near or the embedder fails. Kept per text: the reply's reading and the
    work after it ask once."""
    if text in _likelihoods:
        return _likelihoods[text]
    examples = _examples(str(getattr(configured.embedder(), "name", "")))
    if examples is None:
        return None
    if vector is None:
        vectors = embed_or_none([text])
        if not vectors:
            return None
        vector = vectors[0]
    found = fact_likelihood(vector, examples)
    _likelihoods[text] = found
    while len(_likelihoods) > _LIKELIHOODS_KEPT:
        _likelihoods.popitem(last=False)
    return found


def facts_to_note(*, user_id: int, message: str, known: Sequence[str],
                  vector: Sequence[float] | None = None) -> list[str]:
    """The facts the offline reader will store for this message (those `known` does not say
    already): what a reply may say it remembers. Empty when a model reads the facts. `vector`: the
    message's, when the turn has it (the recall's query vector)."""
    statement = statement_in(message)
    if not statement or facts_read_by_model():
        return []
    found = facts_judged_offline(statement, vector=vector if statement == message else None)
    return [text for text in found if same_meaning_at(text, known) is None]


FactListener = Callable[..., None]  # (*, user_id: int, page_id: str, changes: list[FactChange]) -> None
_listeners: list[FactListener] = []


def fact_changes_listen(listener: FactListener) -> None:
    """Call `listener` with what a turn changed (the chat's notice: memory/web/notices.py)."""
    if listener not in _listeners:
        _listeners.append(listener)


def fact_changes_unlisten(listener: FactListener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def fact_changes_announce(*, user_id: int, page_id: str, changes: Sequence[FactChange]) -> None:
    """Tell the listeners what a turn changed; a failing listener is logged, never raised (the
    facts are stored already)."""
    for listener in list(_listeners) if changes else ():
        try:
            listener(user_id=user_id, page_id=page_id, changes=list(changes))
        except Exception:
            log.exception("event=fact_changes_announce_failed user=%s page=%s", user_id, page_id)


def facts_from_turns(*, user_id: int, now: datetime | None = None) -> list[FactChange]:
    """Facts from the user's turns that maintenance has not chained yet (their first run after the
    reply), stored and checked for changes, each turn's announced. Safe to run again: a fact
    already known only gains the page as a source."""
    # Every page the chain step will take in this run (it takes them all): none is chained unread.
    pages = list(DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, chain_done=False)
                 .order_by("seq"))
    # Read first (the model outside any transaction), then embed what is new in one call: a bulk
    # import's batch of pages costs one embedding call, not one a page.
    statements = {page.pk: _statement_of(page) for page in pages}
    facts_of_all(s for s in statements.values() if s)  # parsed in one batch
    # An imported history's pages (they carry utterances) are read by the parse alone: judging
    # each by its meaning would embed it once more.
    read = {page.pk: facts_read(user_id=user_id, text=statements[page.pk], live=not page.utterances)
            if statements[page.pk] else ([], "offline") for page in pages}
    vectors = _vectors_of_new(user_id, [text for texts, _ in read.values() for text in texts])
    changes: list[FactChange] = []
    for page in pages:
        found = facts_from_page(user_id=user_id, page=page, now=now, read=read[page.pk], vectors=vectors)
        transaction.on_commit(lambda page_id=str(page.id), found=found: fact_changes_announce(
            user_id=user_id, page_id=page_id, changes=found))
        changes += found
    return changes


def _vectors_of_new(user_id: int, texts: Sequence[str]) -> dict[str, list[float]]:
    """The embeddings of the fact texts not stored yet, by text (none when the embedder fails: the
    facts are stored all the same, and found by the reply and the listings)."""
    texts = list(dict.fromkeys(texts))
    if not texts or not _facts_indexed():
        return {}
    known = set(KnowledgeFact.objects.filter(user_id=user_id, normalised__in=[normalise_fact(t)[:500] for t in texts])
                .values_list("normalised", flat=True))
    fresh = [t for t in texts if normalise_fact(t)[:500] not in known]
    vectors = (embed_or_none(fresh) or []) if fresh else []
    return dict(zip(fresh, vectors, strict=False))


def facts_from_page(*, user_id: int, page: DialoguePage, now: datetime | None = None,
                    read: tuple[list[str], str] | None = None,
                    vectors: dict[str, list[float]] | None = None) -> list[FactChange]:
    """One turn's facts: stored (or their source added), then supersession on the new ones. `read`
    and `vectors`: the facts_read and embeddings the caller has already (facts_from_turns)."""
    statement = _statement_of(page)
    if not statement:
        return []
    texts, via = read if read is not None else facts_read(user_id=user_id, text=statement, live=not page.utterances)
    if not texts:
        return []
    by_text = vectors if vectors is not None else _vectors_of_new(user_id, texts)
    stored: list[KnowledgeFact] = []
    points: list[VectorPoint] = []
    # The facts' nodes and "stated_in" edges re-addressed once, as the transaction closes: a new
    # fact's node is written with its edge's block, not addressed without it and then again (ten
    # statements a fact, and an alias of a CID no one saw). The atomic joins readdress_once's
    # without a savepoint, and is the transaction where re-addressing is not deferred (the
    # benchmarks' per-write baseline, memory/benchmarks/common.py readdress_per_write).
    with graph.readdress_once(), transaction.atomic(savepoint=False):
        lock_user_state(user_id)
        # The current facts, read once for the page: each new one is looked for among them by meaning.
        current = list(KnowledgeFact.objects.filter(user_id=user_id, valid_until__isnull=True).only(
            "id", "text", "normalised", "source_page_ids", "source_ids"))
        for text in texts:
            row = _fact_put(user_id, text=text, page=page, via=via, at=now, current=current)
            if row is not None:
                current.append(row)
            if row is not None:
                stored.append(row)
                vector = by_text.get(text)
                if vector is not None:
                    points.append(VectorPoint(id=str(row.id), vector=vector, text=text,
                                              payload={"user_id": str(user_id), "kind": "kb",
                                                       "timestamp": page.timestamp.timestamp()}))
        if points and _facts_indexed():
            transaction.on_commit(lambda: configured.vector_index().upsert(points))
    changes = [FactChange(action="remembered", fact_id=str(row.id), text=row.text, page_id=str(page.id))
               for row in stored]
    if stored:
        changes = _supersede_at_once(user_id, stored, changes, now, by_meaning=not page.utterances, page=page)
    return changes


def _fact_put(user_id: int, *, text: str, page: DialoguePage, via: str, at: datetime | None,
              current: Sequence[KnowledgeFact] = ()) -> KnowledgeFact | None:
    """A new fact with its provenance, or None when it was known (the page joins its sources).
    `current`: the user's current facts, where one of the same meaning may be ("I'm a pharmacist"
    after "I work as a pharmacist")."""
    normalised = normalise_fact(text)[:500]
    if not normalised:
        return None
    existing = KnowledgeFact.objects.select_for_update().filter(user_id=user_id, normalised=normalised).first()
    if existing is None:
        at = same_meaning_at(text, [f.text for f in current])
        existing = current[at] if at is not None else None
    if existing is not None:
        sources = [str(p) for p in existing.source_page_ids or ()]
        if str(page.id) not in sources:
            existing.source_page_ids = sources + [str(page.id)]
            existing.source_ids = list(dict.fromkeys([*existing.source_ids, *page.source_ids]))
            existing.save(update_fields=["source_page_ids", "source_ids"])
            node = graph.node_of(user_id=user_id, obj=existing, kind=MemoryNode.Kind.FACT)
            page_node = graph.node_of(user_id=user_id, obj=page, kind=MemoryNode.Kind.PAGE)
            graph.edge_put(user_id=user_id, source=node, target=page_node, relation="stated_in")
        return None
    row = KnowledgeFact.objects.create(user_id=user_id, text=text, normalised=normalised,
                                       source_page_ids=[str(page.id)], source_ids=list(page.source_ids),
                                       timestamp=page.timestamp)
    node = graph.row_node_put(user_id=user_id, kind=MemoryNode.Kind.FACT, row=row)
    page_node = graph.node_of(user_id=user_id, obj=page, kind=MemoryNode.Kind.PAGE)
    graph.edge_put(user_id=user_id, source=node, target=page_node, relation="stated_in")
    event_record(user_id=user_id, kind=LifecycleEvent.Kind.FACT_ADDED, subject_id=row.id, at=at or page.timestamp,
                 text=text, page_id=str(page.id), speaker=_speaker(page), via=via, source="turn")
    return row


def _supersede_at_once(user_id: int, stored: Sequence[KnowledgeFact], changes: list[FactChange],
                       now: datetime | None, *, by_meaning: bool = False,
                       page: DialoguePage | None = None) -> list[FactChange]:
    """Supersession on the new facts now (not at the next promotion); a confident change turns the
    fact's "remembered" into "changed", naming what it replaced. `by_meaning`: facts of the same
    kind are also compared by their meaning (a chat turn's; an import's are not embedded again).
    `page`: the turn the facts were read from, when the caller has it."""
    from memory.services.supersession import supersession_detect

    statements = {str(row.id): statement for row in stored if (statement := _statement(row, page))}
    similar = texts_similarity if by_meaning and _facts_judged() else None
    written = supersession_detect(user_id=user_id, fact_ids=[str(row.id) for row in stored], at=now,
                                  statements=statements, similarity=similar)
    KnowledgeFact.objects.filter(pk__in=[row.pk for row in stored], valid_from__isnull=True).update(
        valid_from=Coalesce(F("timestamp"), F("created_at")))
    ended = {str(row.new_fact_id): row for row in written if row.status == Supersession.Status.SUPERSEDED}
    result = []
    for change in changes:
        decided = ended.get(change.fact_id)
        if decided is None:
            result.append(change)
            continue
        result.append(FactChange(action="changed", fact_id=change.fact_id, text=change.text, page_id=change.page_id,
                                 previous=decided.old_fact.text, supersession_id=str(decided.pk)))
    return result


def _statement(row: KnowledgeFact, page: DialoguePage | None = None) -> str:
    """The sentences of its turn a fact was read from ("I became a librarian last year": the change
    word the fact's own text lacks); "" when the offline reader does not find it there (a model's).
    `page`: its turn's page, when the caller has it (read otherwise)."""
    first = str(row.source_page_ids[0]) if row.source_page_ids else None
    if page is None or str(page.pk) != first:
        page = DialoguePage.objects.filter(pk=first).only("query", "utterances").first() if first else None
    if page is None:
        return ""
    chosen = [s for s in parts_of(_statement_of(page))  # parsed already, as the reader split them
              if any(normalise_fact(f.text) == row.normalised for f in facts_of(s))]
    return " ".join(chosen)


def facts_reread_page(*, user, page_id: str, now: datetime | None = None) -> list[FactChange]:
    """A corrected turn's facts read again: a fact it no longer states loses it as a source (and is
    deleted, audited, when it had no other), and what the corrected words state is stored."""
    from memory.services.deletion import memory_delete

    page = DialoguePage.objects.filter(user=user, pk=page_id).first()
    if page is None or not facts_at_turn():
        return []
    stated = {normalise_fact(f.text)[:500] for f in facts_of(statement_in(_told(page)))}
    for fact in KnowledgeFact.objects.filter(user=user).only("id", "normalised", "source_page_ids"):
        sources = [str(p) for p in fact.source_page_ids or ()]
        if str(page.pk) not in sources or fact.normalised in stated:
            continue
        if sources == [str(page.pk)]:
            memory_delete(user=user, kind="fact", ident=str(fact.pk), actor=None,
                          reason="its turn was corrected and no longer states it")
        else:
            fact.source_page_ids = [p for p in sources if p != str(page.pk)]
            fact.save(update_fields=["source_page_ids"])
    return facts_from_page(user_id=user.pk, page=page, now=now)


def fact_changes_of_page(*, user, page_id: str) -> list[FactChange]:
    """What the after-reply work did to facts for one of the user's turns, from the lifecycle log
    (the facts still stored; a change whose supersession was undone reads as remembered)."""
    added = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.FACT_ADDED,
                                          payload__page_id=str(page_id), payload__source="turn")
    ids = [event.subject_id for event in added]
    facts = {str(f.pk): f for f in KnowledgeFact.objects.filter(user=user, pk__in=ids)}
    decided = {str(row.new_fact_id): row for row in Supersession.objects.filter(
        user=user, new_fact_id__in=list(facts), status__in=(Supersession.Status.SUPERSEDED,
                                                            Supersession.Status.ACCEPTED)).select_related("old_fact")}
    changes = []
    for fact_id in dict.fromkeys(ids):
        fact = facts.get(fact_id)
        if fact is None:
            continue
        row = decided.get(fact_id)
        changes.append(FactChange(action="changed" if row else "remembered", fact_id=fact_id, text=fact.text,
                                  page_id=str(page_id), previous=row.old_fact.text if row else "",
                                  supersession_id=str(row.pk) if row else ""))
    return changes


def fact_change_undo(*, user, fact_id: str) -> list[str]:
    """Undo what a turn did to a fact: the fact is deleted through operator deletion (audited as
    `deleted`, its reason the notice's undo), and what it superseded is current again. Returns the
    texts current again."""
    from memory.services.deletion import memory_delete

    fact = KnowledgeFact.objects.filter(user=user, pk=_uuid(fact_id)).first()
    if fact is None:
        raise MemoryNotFound(f"No fact {fact_id} in this memory.")
    restored = [row.text for row in KnowledgeFact.objects.filter(user=user, superseded_by=fact.pk)]
    memory_delete(user=user, kind="fact", ident=str(fact.pk), actor=user, reason="undone from the chat's notice")
    # The words that told it are no longer listed as "things you said about yourself" either: the
    # person took back what the notice added, not only its fact (memory/selectors/about_me.py).
    event_record(user_id=user.pk, kind=LifecycleEvent.Kind.EDITED, subject_id=NOTICE_UNDONE,
                 action=NOTICE_UNDONE, page_ids=[str(page_id) for page_id in fact.source_page_ids or ()])
    return restored


def _uuid(value: str):
    import uuid

    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise MemoryInputError(f"{value!r} is not a fact id.") from None
