"""Facts that change: detection on maintenance's write path, and the operators' review queue.

When promotion stores new KB facts, each is compared with the user's current facts stated before it
(memory/engine/supersession.py). A confident candidate supersedes the older fact at once; an
uncertain one opens a review. With a language model configured, each candidate is put to it first
(outside any transaction): it confirms (supersede), rejects (nothing happens, the event says why) or
is unsure (a review). A superseded fact is kept: it gets `valid_until` (the newer statement's time)
and `superseded_by`, and the newer fact's node a `supersedes` edge to it, so provenance and the
content ids show the change. Every decision is a lifecycle event with its reason.

An operator (or the person, for their own memory) accepts a review (the fact is superseded),
rejects it (both stay current; a decided supersession is undone) or edits the newer fact's text and
accepts; the same permission rules and audit as pin/repress/correct.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory.adapters import configured
from memory.engine.supersession import (
    Decision,
    Memory,
    Verdict,
    claims_of,
    statement_of,
    supersession_candidates,
    topic_verdicts,
)
from memory.engine.traits import TRAITS_BY_KEY, update_trait_score
from memory.models import DialoguePage, LifecycleEvent, MemoryNode
from memory.services import graph
from memory.services.common import MemoryInputError, MemoryNotFound, lock_user_state, text_check
from memory.services.editing import actor_name, memory_correct, reason_clean
from memory.services.events import event_record
from memory.services.model_tasks import confirm_supersession
from persona.models import KnowledgeFact, Supersession, UserTrait

log = logging.getLogger(__name__)
# Candidates looked at per new fact: a statement rarely changes more than one slot.
MAX_CANDIDATES = 3
DETECTOR = "detector"
MODEL = "model"


@dataclass(frozen=True)
class Planned:
    new_id: uuid.UUID
    old_id: uuid.UUID
    verdict: Verdict
    decided_by: str


def _current_before(user_id: int, fact: KnowledgeFact) -> list[KnowledgeFact]:
    """The user's current facts stated before `fact` (a fact can only end an older one)."""
    rows = KnowledgeFact.objects.filter(user_id=user_id, valid_until__isnull=True, repressed=False).exclude(pk=fact.pk)
    if fact.timestamp is not None:
        rows = rows.filter(timestamp__lt=fact.timestamp)
    else:
        rows = rows.filter(created_at__lt=fact.created_at)
    decided = Supersession.objects.filter(new_fact=fact).values_list("old_fact_id", flat=True)
    return list(rows.exclude(pk__in=decided).only("id", "text", "timestamp"))


def _statement(fact: KnowledgeFact) -> str:
    page_ids = [str(p) for p in fact.source_page_ids or ()]
    utterances = DialoguePage.objects.filter(pk__in=page_ids, user_id=fact.user_id).values_list("query", flat=True)
    return statement_of(fact.text, " ".join(utterances))


def _plan(user_id: int, fact: KnowledgeFact, statement: str = "",
          similarity: Callable[[str, str], float | None] | None = None) -> list[Planned]:
    """The candidates for one new fact, confirmed by the model when one is configured. `statement`:
    the words the fact was read from, when the caller knows them (else they are looked for);
    `similarity`: two texts' closeness in meaning, for what the kinds alone cannot tell."""
    current = _current_before(user_id, fact)
    if not current:
        return []
    statement = statement or _statement(fact)
    memories = [Memory(id=str(row.id), text=row.text, at=row.timestamp) for row in current]
    texts = {str(row.id): row.text for row in current}
    planned = []
    verdicts = supersession_candidates(statement, memories)
    if not verdicts and similarity is not None:
        verdicts = topic_verdicts(statement, fact.text, memories, similarity)
    for verdict in verdicts[:MAX_CANDIDATES]:
        decided_by = DETECTOR
        if configured.chat_model() is not None:
            confirmation = confirm_supersession(user_id=user_id, old=texts[verdict.old_id or ""], statement=statement)
            if confirmation is not None:
                decided_by = MODEL
                verdict = Verdict(decision=confirmation.decision, confidence=verdict.confidence, slot=verdict.slot,
                                  old_id=verdict.old_id,
                                  reason=f"{verdict.reason}; the model: {confirmation.reason or confirmation.decision}")
        planned.append(Planned(new_id=fact.pk, old_id=uuid.UUID(verdict.old_id or ""), verdict=verdict,
                               decided_by=decided_by))
    return planned


def supersession_detect(*, user_id: int, fact_ids: Sequence[str], at: datetime | None = None,
                        statements: dict[str, str] | None = None,
                        similarity: Callable[[str, str], float | None] | None = None) -> list[Supersession]:
    """Compare newly stored facts (oldest statement first) with the current facts before them and
    write the decisions; returns the supersessions and reviews written. Safe to run again: a pair
    already decided is not looked at twice. `statements`: the sentences each fact was read from, by
    fact id, where the caller has them (facts read at their turn)."""
    facts = sorted(KnowledgeFact.objects.filter(user_id=user_id, pk__in=list(fact_ids)),
                   key=lambda f: (f.timestamp or f.created_at, f.created_at))
    written: list[Supersession] = []
    for fact in facts:
        statement = (statements or {}).get(str(fact.pk), "")
        for planned in _plan(user_id, fact, statement, similarity) + _ended_by_later(user_id, fact):
            row = _decide(user_id, planned, at=at)  # the model was asked outside any transaction
            if row is not None:
                written.append(row)
    return written


def _ended_by_later(user_id: int, fact: KnowledgeFact) -> list[Planned]:
    """A fact stored after newer ones (promotion reads a segment's older turns late): a current fact
    stated after it that changes its slot ends it at once, as it would have had they come in order."""
    if fact.timestamp is None or not any(claim.value for claim in claims_of(fact.text)):
        return []
    slots = {(claim.subject, claim.slot) for claim in claims_of(fact.text)}
    later = [row for row in KnowledgeFact.objects.filter(user_id=user_id, valid_until__isnull=True, repressed=False,
                                                         timestamp__gt=fact.timestamp).exclude(pk=fact.pk)
             .only("id", "text", "timestamp", "source_page_ids")
             if {(c.subject, c.slot) for c in claims_of(row.text)} & slots]
    planned = []
    for row in sorted(later, key=lambda r: r.timestamp):
        older = Memory(id=str(fact.pk), text=fact.text, at=fact.timestamp)
        verdicts = supersession_candidates(_statement(row), [older])
        confident = [v for v in verdicts if v.decision is Decision.SUPERSEDE]
        if confident:
            planned.append(Planned(new_id=row.pk, old_id=fact.pk, verdict=confident[0], decided_by=DETECTOR))
            break  # ended once, by the earliest statement that ends it
    return planned


def unchecked_facts_of(user_id: int) -> QuerySet[KnowledgeFact]:
    """One user's KB facts no supersession detector has looked at yet (valid_from unset)."""
    return KnowledgeFact.objects.filter(user_id=user_id, valid_from__isnull=True)


def supersession_detect_pending(*, user_id: int, at: datetime | None = None) -> list[Supersession]:
    """Maintenance's step after promotion: the facts no detector has looked at yet (valid_from
    unset: promotion, an archive import) are compared, then get their valid_from (when stated)."""
    pending = list(unchecked_facts_of(user_id).values_list("pk", flat=True))
    if not pending:
        return []
    written = supersession_detect(user_id=user_id, fact_ids=[str(pk) for pk in pending], at=at)
    KnowledgeFact.objects.filter(pk__in=pending, valid_from__isnull=True).update(
        valid_from=Coalesce(F("timestamp"), F("created_at")))
    return written


def _decide(user_id: int, planned: Planned, *, at: datetime | None) -> Supersession | None:
    verdict = planned.verdict
    with transaction.atomic():
        lock_user_state(user_id)
        old = KnowledgeFact.objects.select_for_update().filter(pk=planned.old_id, user_id=user_id).first()
        new = KnowledgeFact.objects.filter(pk=planned.new_id, user_id=user_id).first()
        if old is None or new is None or old.valid_until is not None:
            return None  # deleted or superseded meanwhile
        if Supersession.objects.filter(old_fact=old, new_fact=new).exists():
            return None
        when = new.timestamp or at
        payload = {"old_fact_id": str(old.pk), "new_fact_id": str(new.pk), "old_text": old.text,
                   "new_text": new.text, "slot": verdict.slot, "confidence": verdict.confidence,
                   "reason": verdict.reason, "by": planned.decided_by}
        if verdict.decision is Decision.NONE:  # the model rejected the detector's candidate
            event_record(user_id=user_id, kind=LifecycleEvent.Kind.SUPERSESSION_REJECTED, subject_id=old.pk,
                         at=when, **payload)
            return None
        status = Supersession.Status.SUPERSEDED if verdict.decision is Decision.SUPERSEDE else Supersession.Status.OPEN
        row = Supersession.objects.create(
            user_id=user_id, old_fact=old, new_fact=new, status=status, slot=verdict.slot,
            confidence=verdict.confidence, reason=verdict.reason, decided_by=planned.decided_by, occurred_at=when,
            decided_at=timezone.now() if status == Supersession.Status.SUPERSEDED else None)
        if status == Supersession.Status.SUPERSEDED:
            _supersede(user_id, old, new, until=when)
            event_record(user_id=user_id, kind=LifecycleEvent.Kind.FACT_SUPERSEDED, subject_id=old.pk, at=when,
                         supersession_id=str(row.pk), **payload)
        else:
            event_record(user_id=user_id, kind=LifecycleEvent.Kind.SUPERSESSION_OPENED, subject_id=old.pk, at=when,
                         supersession_id=str(row.pk), **payload)
        log.info("event=supersession user=%s status=%s slot=%s confidence=%s", user_id, status, verdict.slot,
                 verdict.confidence)
        return row


def _supersede(user_id: int, old: KnowledgeFact, new: KnowledgeFact, *, until: datetime | None) -> None:
    """The old fact ends where the new one begins; the new fact's node `supersedes` the old's, and
    trait evidence from the old fact's turns stops counting."""
    old.valid_until = until or new.valid_from or timezone.now()
    old.superseded_by = new.pk
    old.save(update_fields=["valid_until", "superseded_by"])
    graph.edge_link(user_id=user_id, source=new, source_kind=MemoryNode.Kind.FACT, target=old,
                    target_kind=MemoryNode.Kind.FACT, relation="supersedes")
    traits_rescore(user_id=user_id, pages={str(p) for p in old.source_page_ids or ()}, at=old.valid_until)


def _unsupersede(user_id: int, old: KnowledgeFact, new: KnowledgeFact) -> None:
    old.valid_until = None
    old.superseded_by = None
    old.save(update_fields=["valid_until", "superseded_by"])
    source = MemoryNode.objects.filter(user_id=user_id, kind=MemoryNode.Kind.FACT, object_id=str(new.pk)).first()
    target = MemoryNode.objects.filter(user_id=user_id, kind=MemoryNode.Kind.FACT, object_id=str(old.pk)).first()
    if source is not None and target is not None:
        graph.edge_drop(user_id=user_id, source=source, target=target, relation="supersedes")
    traits_rescore(user_id=user_id, pages={str(p) for p in old.source_page_ids or ()}, at=None)


# ------------------------------------------------------------------ trait evidence with validity

def superseded_pages(user_id: int, *, deleting: Collection[str] = ()) -> set[str]:
    """The turns whose statements no longer hold: sources of superseded facts that no current
    fact was also drawn from. Facts being `deleting` end nothing (what they superseded is
    current again)."""
    deleting = {str(i) for i in deleting}
    ended, current = set(), set()
    rows = KnowledgeFact.objects.filter(user_id=user_id).values_list("pk", "source_page_ids", "superseded_by")
    for pk, pages, by in rows:
        if str(pk) not in deleting:
            (ended if by is not None and str(by) not in deleting else current).update(str(p) for p in pages or ())
    return ended - current


def traits_rescore(*, user_id: int, pages: Collection[str], at: datetime | None) -> list[UserTrait]:
    """The traits with evidence from `pages`, scored again from their updates (the lifecycle's
    trait_updated events, replayed from 0 in order) leaving out evidence from superseded turns.
    Each evidence entry says whether it still counts (`superseded`, with the fact's end). A
    pinned trait, or one an operator scored, keeps its score; only the evidence marks change."""
    pages = {str(p) for p in pages}
    if not pages:
        return []
    updates = list(LifecycleEvent.objects.filter(user_id=user_id, kind=LifecycleEvent.Kind.TRAIT_UPDATED)
                   .order_by("occurred_at", "id").values_list("subject_id", "payload"))
    affected = {key for key, payload in updates if payload.get("page_id") in pages}
    if not affected:
        return []
    ended = superseded_pages(user_id)
    cited = {payload.get("page_id") for _, payload in updates} - {None}
    alive = {str(pk) for pk in DialoguePage.objects.filter(user_id=user_id, pk__in=cited).values_list("pk", flat=True)}
    uncounted = ended | (cited - alive)  # a deleted turn's evidence is gone too
    until = at.isoformat() if at is not None else None
    rescored = []
    for trait in UserTrait.objects.select_for_update().filter(user_id=user_id, key__in=affected):
        score = 0.0
        for key, payload in updates:
            if key == trait.key and payload.get("page_id") not in uncounted:
                score = update_trait_score(score, float(payload.get("weight", 0.0)))
        evidence = []
        for entry in trait.evidence:
            page = entry.get("page_id")
            kept = {k: v for k, v in entry.items() if k not in ("superseded", "valid_until")}
            if page in ended:
                kept.update(superseded=True, valid_until=until if page in pages else entry.get("valid_until"))
            evidence.append(kept)
        before = trait.score
        if not trait.pinned and not any(e.get("operator") for e in evidence):
            trait.score = score
        trait.evidence = evidence
        trait.save(update_fields=["score", "evidence", "updated_at"])
        # weight 0: a replay of the trait's updates (deletion's) reads this one as no evidence
        event_record(user_id=user_id, kind=LifecycleEvent.Kind.TRAIT_UPDATED, subject_id=trait.key, at=at,
                     name=TRAITS_BY_KEY[trait.key].name if trait.key in TRAITS_BY_KEY else trait.key,
                     before=round(before, 4), after=round(trait.score, 4), weight=0.0, rescored=True,
                     reason="evidence from a superseded fact left out" if at is not None
                     else "evidence from a fact current again counted")
        rescored.append(trait)
    return rescored


# ------------------------------------------------------------------ the review queue

def supersession_get(*, user, ident: str, for_update: bool = False) -> Supersession:
    """One of the user's supersessions, or MemoryNotFound (another user's is not theirs)."""
    try:
        key = uuid.UUID(str(ident))
    except ValueError:
        raise MemoryNotFound(f"{ident!r} is not a supersession id.") from None
    rows = Supersession.objects.select_for_update() if for_update else Supersession.objects
    row = rows.select_related("old_fact", "new_fact").filter(user=user, pk=key).first()
    if row is None:
        raise MemoryNotFound(f"No supersession {ident} in this memory.")
    return row


def _audit(user, row: Supersession, kind: str, actor, reason: str, before: str) -> None:
    event_record(user_id=user.pk, kind=kind, subject_id=row.old_fact_id, supersession_id=str(row.pk),
                 old_fact_id=str(row.old_fact_id), new_fact_id=str(row.new_fact_id), old_text=row.old_fact.text,
                 new_text=row.new_fact.text, slot=row.slot, before=before, after=row.status,
                 actor=actor_name(actor), by=actor_name(actor), reason=reason or row.reason)


def supersession_accept(*, user, ident: str, actor=None, reason: str = "", text: str | None = None) -> Supersession:
    """The newer fact supersedes the older one. With `text`, the newer fact is corrected first (the
    operator's edit: a new version, audited as a correction)."""
    reason = reason_clean(reason)
    if text is not None and not text_check(text, field="text").strip():
        raise MemoryInputError("The corrected text is empty.")
    with transaction.atomic():
        lock_user_state(user.pk)
        row = supersession_get(user=user, ident=ident, for_update=True)
        if row.status in (Supersession.Status.SUPERSEDED, Supersession.Status.ACCEPTED):
            raise MemoryInputError("This supersession is already decided; reject it to undo it.")
        if text is not None:
            memory_correct(user=user, kind="fact", ident=str(row.new_fact_id), version=None, actor=actor,
                           reason=reason or "edited in the review queue", text=text)
            row.new_fact.refresh_from_db()
        before = row.status
        old = KnowledgeFact.objects.select_for_update().get(pk=row.old_fact_id)
        _supersede(user.pk, old, row.new_fact, until=row.occurred_at or row.new_fact.timestamp)
        row.old_fact = old
        row.status, row.decided_by, row.decided_at = Supersession.Status.ACCEPTED, actor_name(actor), timezone.now()
        row.save(update_fields=["status", "decided_by", "decided_at"])
        _audit(user, row, LifecycleEvent.Kind.FACT_SUPERSEDED, actor, reason, before)
    return row


def supersession_reject(*, user, ident: str, actor=None, reason: str = "") -> Supersession:
    """Both facts stay current; a supersession already decided (by the detector, the model or an
    operator) is undone: the older fact is current again and the `supersedes` edge goes."""
    reason = reason_clean(reason)
    with transaction.atomic():
        lock_user_state(user.pk)
        row = supersession_get(user=user, ident=ident, for_update=True)
        if row.status == Supersession.Status.REJECTED:
            raise MemoryInputError("This supersession is already rejected.")
        before = row.status
        if before in (Supersession.Status.SUPERSEDED, Supersession.Status.ACCEPTED):
            old = KnowledgeFact.objects.select_for_update().get(pk=row.old_fact_id)
            if old.superseded_by == row.new_fact_id:
                _unsupersede(user.pk, old, row.new_fact)
            row.old_fact = old
        row.status, row.decided_by, row.decided_at = Supersession.Status.REJECTED, actor_name(actor), timezone.now()
        row.save(update_fields=["status", "decided_by", "decided_at"])
        _audit(user, row, LifecycleEvent.Kind.SUPERSESSION_REJECTED, actor, reason, before)
    return row


# ------------------------------------------------------------------ when a fact is deleted

SUPERSESSION_EVENTS = (LifecycleEvent.Kind.FACT_SUPERSEDED, LifecycleEvent.Kind.SUPERSESSION_OPENED,
                       LifecycleEvent.Kind.SUPERSESSION_REJECTED)


def supersessions_forget_facts(*, user, fact_ids: Collection[str], scrubbed: str) -> None:
    """Deleted facts (inside the deletion's transaction): what they superseded is current again
    (the statement that ended it is gone), and the supersession events keep no words of either
    fact (the reason quotes the newer statement). Their Supersession rows go with the facts."""
    ids = [str(i) for i in fact_ids]
    if not ids:
        return
    current_again = KnowledgeFact.objects.filter(user=user, superseded_by__in=ids)
    pages = {str(p) for row in current_again.values_list("source_page_ids", flat=True) for p in row or ()}
    current_again.update(valid_until=None, superseded_by=None)
    traits_rescore(user_id=user.pk, pages=pages, at=None)  # their turns' trait evidence counts again
    events = LifecycleEvent.objects.filter(user=user, kind__in=SUPERSESSION_EVENTS).filter(
        Q(payload__old_fact_id__in=ids) | Q(payload__new_fact_id__in=ids))
    for event in events:
        event.payload = {**event.payload, **{key: scrubbed for key in ("old_text", "new_text", "reason")
                                             if key in event.payload}}
        event.save(update_fields=["payload"])
