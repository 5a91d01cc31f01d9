"""Long-term memory: the profile, the trait dimensions with their evidence, the knowledge base and
the agent traits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory.engine.traits import CATEGORIES, TRAIT_CATALOGUE, TRAITS_BY_KEY
from memory.models import DialoguePage, LifecycleEvent, Segment
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait


@dataclass
class TraitRow:
    key: str
    name: str
    category: str
    description: str
    score: float
    evidence: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class LongTerm:
    profile: UserProfile | None
    traits: list[TraitRow]
    facts: list[KnowledgeFact]
    agent_traits: list[AgentTrait]
    categories: dict[str, str]


def long_term(*, user) -> LongTerm:
    scored = {t.key: t for t in UserTrait.objects.filter(user=user)}
    traits = [TraitRow(key=d.key, name=d.name, category=d.category, description=d.description,
                       score=scored[d.key].score if d.key in scored else 0.0,
                       evidence=list(scored[d.key].evidence) if d.key in scored else [])
              for d in TRAIT_CATALOGUE]
    return LongTerm(profile=UserProfile.objects.filter(user=user).first(), traits=traits,
                    facts=list(KnowledgeFact.objects.filter(user=user).select_related("segment").order_by("created_at")),
                    agent_traits=list(AgentTrait.objects.filter(user=user).select_related("segment", "sona")
                                      .order_by("created_at")),
                    categories=dict(CATEGORIES))


@dataclass
class TraitEvidence:
    trait: UserTrait  # the stored row (unsaved when the dimension has no evidence yet)
    row: TraitRow
    pages: list[DialoguePage]
    segments: list[Segment]
    updates: list[LifecycleEvent]


def trait_evidence(*, user, key: str) -> TraitEvidence | None:
    dimension = TRAITS_BY_KEY.get(key)
    if dimension is None:
        return None
    trait = UserTrait.objects.filter(user=user, key=key).first()
    updates = list(LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.TRAIT_UPDATED, subject_id=key)
                   .order_by("id"))
    page_ids = list(dict.fromkeys([e.payload.get("page_id") for e in updates if e.payload.get("page_id")]
                                  + [e.get("page_id") for e in (trait.evidence if trait else [])]))
    pages = list(DialoguePage.objects.filter(user=user, id__in=page_ids).order_by("seq"))
    segments = list(Segment.objects.filter(user=user, id__in={p.segment_id for p in pages if p.segment_id})
                    .defer("embedding"))
    row = TraitRow(key=key, name=dimension.name, category=dimension.category, description=dimension.description,
                   score=trait.score if trait else 0.0, evidence=list(trait.evidence) if trait else [])
    return TraitEvidence(trait=trait or UserTrait(user=user, key=key), row=row, pages=pages, segments=segments,
                         updates=updates)


def profile_exists(*, user) -> bool:
    """Whether the person has answered (or skipped) the first-visit profile question."""
    return UserProfile.objects.filter(user=user).exists()


def profile_initial(*, user) -> dict:
    """The profile form's initial values."""
    profile = UserProfile.objects.filter(user=user).first()
    if profile is None:
        return {}
    return {"name": profile.name, "gender": profile.gender, "birth_year": profile.birth_year}


def profile_get(*, user) -> UserProfile:
    """The profile, or an empty one (unsaved) when none was given."""
    return UserProfile.objects.filter(user=user).first() or UserProfile(user=user)


def traits_scored(*, user) -> list[dict]:
    """All the trait dimensions with the user's score, flags and evidence (0 and none when unscored)."""
    stored = {t.key: t for t in UserTrait.objects.filter(user=user)}
    rows = []
    for dimension in TRAIT_CATALOGUE:
        trait = stored.get(dimension.key)
        rows.append({"key": dimension.key, "name": dimension.name, "category": dimension.category,
                     "description": dimension.description, "score": trait.score if trait else 0.0,
                     "pinned": bool(trait and trait.pinned), "repressed": bool(trait and trait.repressed),
                     "evidence": list(trait.evidence) if trait else []})
    return rows


def knowledge_base(*, user):
    return KnowledgeFact.objects.filter(user=user).order_by("-created_at")


def agent_traits(*, user):
    return AgentTrait.objects.filter(user=user).order_by("-created_at")


@dataclass(frozen=True)
class FactWithPeriod:
    """A fact as the places that list facts show it: current, or superseded with its period and
    what took its place ("until March 2026; since then: User lives in Porto")."""

    fact: KnowledgeFact
    successor: str = ""

    @property
    def current(self) -> bool:
        return self.fact.valid_until is None

    @property
    def period(self) -> str:
        if self.fact.valid_until is None:
            return ""
        since = f"; since then: {self.successor}" if self.successor else ""
        return f"until {self.fact.valid_until:%B %Y}{since}"

    @property
    def label(self) -> str:
        return f"{self.fact.text} ({self.period})" if self.period else self.fact.text


def facts_with_periods(*, user, limit: int = 200) -> list[FactWithPeriod]:
    """The person's facts (repressed ones left out), current first (newest first), then the
    superseded ones with their period, most recently ended first."""
    rows = list(KnowledgeFact.objects.filter(user=user, repressed=False)
                .only("id", "text", "timestamp", "created_at", "valid_from", "valid_until", "superseded_by",
                      "source_page_ids").order_by("-created_at")[:limit])
    texts = {row.pk: row.text for row in rows}
    missing = {row.superseded_by for row in rows if row.superseded_by and row.superseded_by not in texts}
    if missing:
        texts.update(KnowledgeFact.objects.filter(user=user, pk__in=missing).values_list("pk", "text"))
    listed = [FactWithPeriod(fact=row, successor=texts.get(row.superseded_by, "") if row.superseded_by else "")
              for row in rows]
    current = [f for f in listed if f.current]
    ended = sorted((f for f in listed if not f.current), key=lambda f: f.fact.valid_until, reverse=True)
    return current + ended
