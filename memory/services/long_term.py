"""Writes to long-term memory: promotion of hot segments, profile edits, FIFO trims."""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.adapters import configured
from memory.config import memory_params
from memory.engine import offline
from memory.engine.content_ids import trait_evidence_object_id
from memory.engine.facts import facts_of_all, said_by_person, same_meaning, statement_in
from memory.engine.long_term import fifo_overflow, normalise_fact
from memory.engine.mid_term import segment_after_promotion
from memory.engine.ports import VectorPoint
from memory.engine.traits import TRAITS_BY_KEY, trait_evidence, update_trait_score
from memory.models import DialoguePage, LifecycleEvent, MemoryNode, Segment
from memory.services import graph
from memory.services.common import MemoryInputError, embed_or_none, lock_user_state
from memory.services.events import event_record
from memory.services.model_tasks import extract_long_term
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait

log = logging.getLogger(__name__)
MAX_EVIDENCE = 5
# Pages a promotion reads when none is new since the last one (the segment's latest).
PROMOTE_FALLBACK_PAGES = 50


@dataclass
class Extraction:
    """What a promoted segment yields, before it is written."""

    facts: list[tuple[str, DialoguePage]] = field(default_factory=list)
    agent_traits: list[tuple[str, DialoguePage]] = field(default_factory=list)
    trait_hits: list[tuple[str, float, tuple[str, ...], DialoguePage]] = field(default_factory=list)


def extract_from_pages(pages: Sequence[DialoguePage]) -> Extraction:
    """Offline extraction: the language pipeline for facts (as at their turn, so a fact promoted
    is the fact told), patterns for agent traits, lexicons for trait evidence."""
    result = Extraction()
    read = facts_of_all(statement_in(said_by_person(page.query, page.utterances or ())) for page in pages)
    for page, facts in zip(pages, read, strict=True):
        result.facts += [(fact.text, page) for fact in facts]
        result.agent_traits += [(trait, page) for trait in offline.extract_agent_traits(page.response)]
        result.trait_hits += [(ev.key, ev.weight, ev.matched, page) for ev in trait_evidence(page.query)]
    return result


def _closest_page(text: str, pages: Sequence[DialoguePage]) -> DialoguePage:
    """Provenance for a model-extracted item: the page sharing most keywords with it."""
    words = offline.extract_keywords(text)
    return max(pages, key=lambda p: (len(words & set(p.keywords)), -p.seq))


def _llm_extraction(user_id: int, pages: Sequence[DialoguePage]) -> Extraction | None:
    """The LLM's extraction when one is configured and answers well; None otherwise."""
    if configured.chat_model() is None or not pages:
        return None
    result = extract_long_term(user_id=user_id, texts=[f"User: {p.query}\nAssistant: {p.response}" for p in pages])
    if result is None:
        return None
    return Extraction(
        facts=[(fact, _closest_page(fact, pages)) for fact in result.facts],
        agent_traits=[(trait, _closest_page(trait, pages)) for trait in result.agent_traits],
        trait_hits=[(key, 0.5, (evidence,), _closest_page(evidence, pages)) for key, evidence in result.traits],
    )


def promote_segment(*, user_id: int, segment_id: str, heat: float, now: datetime | None = None) -> bool:
    """Promote a hot segment to LPM: KB facts, user traits and agent traits with provenance edges.

    Only pages not yet promoted are read (or, when none is, the segment's latest pages: a
    segment can hold thousands); L_interaction then resets to 0. `now` is the memory's time, which
    the lifecycle events carry (an imported conversation's clock).
    """
    at = now or timezone.now()
    segment = Segment.objects.get(id=segment_id, user_id=user_id)
    since = segment.last_promoted_at
    pages = DialoguePage.objects.filter(segment=segment)
    fresh = list(pages.order_by("seq")) if since is None else list(pages.filter(moved_at__gt=since).order_by("seq"))
    fresh = fresh or list(reversed(pages.order_by("-seq")[:PROMOTE_FALLBACK_PAGES]))
    extraction = _llm_extraction(user_id, fresh) or extract_from_pages(fresh)
    texts = [text for text, _ in extraction.facts] + [text for text, _ in extraction.agent_traits]
    vectors = (embed_or_none(texts) or []) if texts else []
    with transaction.atomic():
        lock_user_state(user_id)
        segment = Segment.objects.get(id=segment_id)
        if segment.l_interaction == 0 or segment.status != Segment.Status.ACTIVE:
            return False  # another worker promoted or evicted it meanwhile
        points = _write_extraction(user_id, segment, extraction, vectors, at)
        dropped = _trim_fifo(user_id, at)
        segment.l_interaction = segment_after_promotion(segment.to_engine()).l_interaction
        segment.promoted_count += 1
        segment.last_promoted_at = timezone.now()
        segment.save(update_fields=["l_interaction", "promoted_count", "last_promoted_at"])
        event_record(user_id=user_id, kind=LifecycleEvent.Kind.SEGMENT_PROMOTED, subject_id=segment.id, at=at,
                     heat=round(heat, 4), facts=len(extraction.facts),
                     agent_traits=len(extraction.agent_traits), trait_hits=len(extraction.trait_hits))
        transaction.on_commit(lambda: _sync_vectors(user_id, points, dropped))
    return True


def _write_extraction(user_id: int, segment: Segment, extraction: Extraction,
                      vectors: list[list[float]], at: datetime) -> list[VectorPoint]:
    seg_node = graph.node_of(user_id=user_id, obj=segment, kind=MemoryNode.Kind.SEGMENT)
    points: list[VectorPoint] = []
    vector_iter = iter(vectors)
    for model, kind, items in ((KnowledgeFact, "kb", extraction.facts),
                               (AgentTrait, "agent_trait", extraction.agent_traits)):
        for text, page in items:
            vector = next(vector_iter, None)
            row = _lpm_row_put(model, user_id=user_id, text=text, page=page, segment=segment)
            adopted = row is None and model is KnowledgeFact and (row := _told_at_turn(user_id, text, segment))
            if row is None:
                continue
            node_kind = MemoryNode.Kind.FACT if kind == "kb" else MemoryNode.Kind.AGENT_TRAIT
            node = (graph.node_of(user_id=user_id, obj=row, kind=node_kind) if adopted
                    else graph.row_node_put(user_id=user_id, kind=node_kind, row=row))
            graph.edge_put(user_id=user_id, source=node, target=seg_node, relation="extracted_from")
            page_node = graph.node_of(user_id=user_id, obj=page, kind=MemoryNode.Kind.PAGE)
            graph.edge_put(user_id=user_id, source=node, target=page_node, relation="stated_in")
            if not adopted:
                event = (LifecycleEvent.Kind.FACT_ADDED if kind == "kb" else LifecycleEvent.Kind.AGENT_TRAIT_ADDED)
                event_record(user_id=user_id, kind=event, subject_id=row.id, at=at, text=text,
                             segment_id=str(segment.id), page_id=str(page.id))
            text = row.text
            if vector is not None:
                points.append(VectorPoint(id=str(row.id), vector=vector, text=text,
                                          payload={"user_id": str(user_id), "kind": kind,
                                                   "timestamp": page.timestamp.timestamp()}))
    # The hit dimensions read in one statement, not one get_or_create each (a promotion hits dozens).
    traits = {t.key: t for t in UserTrait.objects.filter(
        user_id=user_id, key__in={key for key, *_ in extraction.trait_hits})}
    for key, weight, matched, page in extraction.trait_hits:
        _trait_update(user_id, key, weight, matched, page, seg_node, at, traits=traits)
    return points


def _told_at_turn(user_id: int, text: str, segment: Segment) -> KnowledgeFact | None:
    """A current fact read at its turn (no segment, no vector point: memory/services/facts.py) that
    promotion learns again, in these words or others of the same meaning: promotion adopts it (its
    segment, edges and vector point, as for a fact it learned first) instead of storing it twice."""
    found = next((f for f in KnowledgeFact.objects.filter(user_id=user_id, valid_until__isnull=True,
                                                          segment__isnull=True, repressed=False)
                  if same_meaning(f.text, text)), None)
    if found is not None:
        found.segment = segment
        found.save(update_fields=["segment"])
    return found


def _lpm_row_put(model, *, user_id: int, text: str, page: DialoguePage, segment: Segment):
    """A new KB fact or agent trait, or None when the same one is already stored."""
    normalised = normalise_fact(text)[:500]
    if not normalised or model.objects.filter(user_id=user_id, normalised=normalised).exists():
        return None
    if model is KnowledgeFact and any(same_meaning(f, text) for f in KnowledgeFact.objects.filter(
            user_id=user_id, valid_until__isnull=True).values_list("text", flat=True)):
        return None  # told at its turn in other words ("User is a nurse", "User works as a nurse")
    extra = {"sona_id": page.sona_id} if model is AgentTrait else {}
    return model.objects.create(
        user_id=user_id, text=text, normalised=normalised, segment=segment, source_page_ids=[str(page.id)],
        source_ids=list(page.source_ids), timestamp=page.timestamp,
        **extra,
    )


def _trait_update(user_id: int, key: str, weight: float, matched: tuple[str, ...], page: DialoguePage,
                  seg_node: MemoryNode, at: datetime, traits: dict[str, UserTrait] | None = None) -> None:
    """`traits`: the user's rows by key when the caller read them at once; a new dimension's row joins it."""
    if traits is None:
        traits = {t.key: t for t in UserTrait.objects.filter(user_id=user_id, key=key)}
    trait = traits.get(key) or traits.setdefault(key, UserTrait(user_id=user_id, key=key))
    old = trait.score
    if not trait.pinned:  # an operator fixed the score: evidence is kept, the score is theirs
        trait.score = update_trait_score(old, weight)
    trait.evidence = ([{"page_id": str(page.id), "matched": list(matched), "weight": round(weight, 4),
                        "source_ids": list(page.source_ids), "text": page.query[:200],
                        "at": page.timestamp.isoformat() if page.timestamp else None}]
                      + list(trait.evidence))[:MAX_EVIDENCE]
    if trait._state.adding:  # one INSERT with the first evidence, not an INSERT then an UPDATE
        trait.save()
    else:
        trait.save(update_fields=["score", "evidence", "updated_at"])
    # One node per (dimension, page) piece of evidence.
    node = graph.node_put(user_id=user_id, kind=MemoryNode.Kind.USER_TRAIT,
                          object_id=trait_evidence_object_id(key, str(page.id)),
                          data={"trait": key, "weight": round(weight, 4), "matched": sorted(matched)},
                          timestamp=page.timestamp)
    graph.edge_put(user_id=user_id, source=node, target=seg_node, relation="evidence_from", weight=weight)
    event_record(user_id=user_id, kind=LifecycleEvent.Kind.TRAIT_UPDATED, subject_id=key, at=at,
                 name=TRAITS_BY_KEY[key].name, before=round(old, 4), after=round(trait.score, 4),
                 weight=round(weight, 4), matched=list(matched), page_id=str(page.id))


def _trim_fifo(user_id: int, at: datetime) -> list[str]:
    """KB and agent traits keep their newest entries up to capacity."""
    params = memory_params()
    dropped: list[str] = []
    for model, capacity, kind in ((KnowledgeFact, params.kb_capacity, LifecycleEvent.Kind.FACT_DROPPED),
                                  (AgentTrait, params.agent_trait_capacity,
                                   LifecycleEvent.Kind.AGENT_TRAIT_DROPPED)):
        rows = list(model.objects.filter(user_id=user_id).order_by("created_at", "id").values_list("id", "pinned"))
        doomed = fifo_overflow([str(i) for i, _ in rows], capacity=capacity,
                               pinned={str(i) for i, pinned in rows if pinned})
        if doomed:
            # What a dropped entry was, and while it held: a superseded fact's history (its text,
            # its period, what ended it) lives on in the event, not only in the row that goes.
            kept = {str(row["id"]): row for row in model.objects.filter(id__in=doomed).values(
                "id", "text", "valid_from", "valid_until", "superseded_by")}
            model.objects.filter(id__in=doomed).delete()
            for row_id in doomed:
                row = kept.get(row_id, {})
                history = ({"text": row["text"], "valid_from": _iso(row["valid_from"]),
                            "valid_until": _iso(row["valid_until"]), "superseded_by": str(row["superseded_by"])}
                           if row.get("valid_until") is not None else {})
                event_record(user_id=user_id, kind=kind, subject_id=row_id, at=at, **history)
            dropped += doomed
    return dropped


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


LPM_POINT_KINDS = {KnowledgeFact: "kb", AgentTrait: "agent_trait"}


def lpm_point(row: KnowledgeFact | AgentTrait, vector) -> VectorPoint:
    """A KB fact's or an agent trait's point: its text, dense and for BM25."""
    return VectorPoint(id=str(row.id), vector=list(vector), text=row.text,
                       payload={"user_id": str(row.user_id), "kind": LPM_POINT_KINDS[type(row)],
                                "timestamp": row.timestamp.timestamp() if row.timestamp else 0.0})


def _sync_vectors(user_id: int, points: list[VectorPoint], dropped: list[str]) -> None:
    index = configured.vector_index()
    if points:
        index.upsert(points)
    if dropped:
        index.delete(user_id=str(user_id), ids=dropped)


class _Keep(enum.Enum):
    KEEP = "keep"


KEEP = _Keep.KEEP  # profile_update's birth year when the call leaves it as it is


PROFILE_HISTORY_MAX = 200  # past values kept per profile; the oldest beyond it go, and the event says so


def profile_update(*, user, name: str | None = None, gender: str | None = None,
                   birth_year: int | None | _Keep = KEEP, extra: dict[str, str] | None = None,
                   at: datetime | None = None) -> UserProfile:
    """The static profile; only the fields given change. A name or gender of "" clears it, and
    so does a birth year of None (the form's empty field): a birth year, once given, can be
    taken back. `extra` sets free fields by key ("" removes one).

    Profile fields carry validity: a value that changes (or is cleared) is kept in the profile's
    history with when it became true and when it stopped (`at`, the memory's time: now unless
    given), and the lifecycle event names it. Recall shows the current values only."""
    if isinstance(birth_year, int) and not 1900 <= birth_year <= timezone.now().year:
        raise MemoryInputError(f"Birth year {birth_year} is out of range.")
    extra = dict(extra or {})
    for key, value in extra.items():
        if not isinstance(key, str) or not key.strip() or not isinstance(value, str):
            raise MemoryInputError("Extra profile fields are non-empty names with text values.")
    when = (at or timezone.now()).isoformat()
    with transaction.atomic():
        profile, _ = UserProfile.objects.select_for_update().get_or_create(user=user)
        new_values: dict[str, object] = {attr: value.strip() for attr, value in (("name", name), ("gender", gender))
                                         if value is not None}
        if birth_year is not KEEP:
            new_values["birth_year"] = birth_year
        extras = dict(profile.extra)
        for key, value in extra.items():
            new_values[f"extra.{key.strip()}"] = value.strip()
        ended: list[dict] = []
        changed: list[str] = []
        for attr, value in new_values.items():
            key = attr.removeprefix("extra.")
            before = extras.get(key, "") if attr.startswith("extra.") else getattr(profile, attr)
            if (before or None) == (value or None):
                continue
            changed.append(attr)
            if before not in ("", None):
                ended.append({"field": attr, "value": before, "valid_from": profile.since.get(attr),
                              "valid_until": when})
            if value in ("", None):
                profile.since.pop(attr, None)
            else:
                profile.since[attr] = when
            if attr.startswith("extra."):
                if value:
                    extras[key] = value
                else:
                    extras.pop(key, None)
            else:
                setattr(profile, attr, value)
        if changed:
            profile.extra = extras
            history = list(profile.history) + ended
            forgotten = max(0, len(history) - PROFILE_HISTORY_MAX)
            profile.history = history[forgotten:]
            profile.save()
            event_record(user_id=user.pk, kind=LifecycleEvent.Kind.EDITED, subject_id="profile", at=at,
                         fields=changed, values={attr: _profile_value(profile, attr) for attr in changed},
                         superseded=ended, history_dropped=forgotten)
    return profile


def _profile_value(profile: UserProfile, attr: str):
    if attr.startswith("extra."):
        return profile.extra.get(attr.removeprefix("extra."), "")
    return getattr(profile, attr)
