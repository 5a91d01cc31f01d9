"""What memory knows about one person, as the person reads it ("What I know about you", and the
chat's answers to "what do you know about me?" and "why do you think …?"): current facts, past
ones with their period, the profile and the strongest traits, each with where it came from (the
turns' words and dates, the change that superseded it, an operator's decision). Reads only; a
person reads their own memory (the edge passes request.user)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q

from memory.engine.facts import said_by_person
from memory.engine.memory_talk import Candidate, first_person, period
from memory.engine.text import is_question
from memory.engine.traits import TRAITS_BY_KEY
from memory.models import NOTICE_UNDONE, DialoguePage, LifecycleEvent, PageStatus
from memory.selectors.ids import uuids
from persona.models import AgentTrait, KnowledgeFact, Supersession, UserProfile, UserTrait

PROFILE_LABELS = {"name": "Your name", "gender": "Your gender", "birth_year": "Born in"}
STRONG_TRAITS = 8
RECENT_STATEMENTS = 8


@dataclass(frozen=True)
class Source:
    page_id: str
    seq: int
    text: str
    at: datetime | None


@dataclass(frozen=True)
class Decision:
    """Something that changed a memory besides a turn: a supersession, an operator's correction."""

    text: str
    at: datetime | None


@dataclass
class FactView:
    id: str
    text: str
    said: str  # in the person's words: "you live in Porto"
    version: int
    valid_from: datetime | None
    valid_until: datetime | None
    period: str = ""  # a past fact's: "until March 2026; since then: you live in Porto"
    sources: list[Source] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)


@dataclass(frozen=True)
class ProfileValue:
    field: str  # "name", "gender", "birth_year" or "extra.<key>"
    label: str
    value: str
    since: str | None
    history: tuple[dict, ...] = ()


@dataclass(frozen=True)
class TraitView:
    key: str
    name: str
    description: str
    score: float
    evidence: tuple[Source, ...] = ()


@dataclass(frozen=True)
class NoteView:
    """What the assistant noted in its conversations with the person (an agent trait: a suggestion,
    a commitment, "on 14 March the user is flying to Lisbon"): kept about them, so shown to them."""

    id: str
    text: str
    at: datetime


@dataclass
class AboutMe:
    facts: list[FactView]
    past: list[FactView]
    profile: list[ProfileValue]
    traits: list[TraitView]
    statements: list[Source]  # what the person said about themselves that no fact holds yet
    notes: list[NoteView] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.facts or self.past or self.profile or self.traits or self.statements or self.notes)


def _sources(user, page_ids) -> dict[str, Source]:
    # A turn set aside as saying otherwise (a correction represses it) is no reason for a belief.
    pages = DialoguePage.objects.filter(user=user, id__in=uuids(page_ids), repressed=False).only(
        "id", "seq", "query", "utterances", "timestamp")
    # An imported page's query reads "Tomasz: …": the person's own words are quoted, without the name.
    return {str(p.id): Source(page_id=str(p.id), seq=p.seq, text=said_by_person(p.query, p.utterances or ()),
                              at=p.timestamp) for p in pages}


def _decisions(user, facts: list[KnowledgeFact]) -> dict[str, list[Decision]]:
    """Per fact: the supersessions it took part in (decided) and the corrections made to it."""
    ids = [f.pk for f in facts]
    found: dict[str, list[Decision]] = {}
    texts = {str(f.pk): f.text for f in facts}
    rows = Supersession.objects.filter(user=user).filter(Q(old_fact_id__in=ids) | Q(new_fact_id__in=ids)).exclude(
        status=Supersession.Status.OPEN).select_related("old_fact", "new_fact")
    for row in rows:
        automatic = row.decided_by in ("detector", "model", "")
        who = "the change detector" if automatic else f"an operator ({row.decided_by})"
        new, old = first_person(row.new_fact.text), first_person(row.old_fact.text)
        line = (f"{who} decided that {new!r} did not replace {old!r}" if row.status == Supersession.Status.REJECTED
                else f"{new!r} replaced {old!r}, decided by {who}")
        for fact_id in (str(row.old_fact_id), str(row.new_fact_id)):
            found.setdefault(fact_id, []).append(Decision(text=line, at=row.decided_at or row.created_at))
    corrections = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.CORRECTED,
                                                subject_id__in=list(texts))
    for event in corrections:
        before = event.payload.get("before")
        before = before.get("text") if isinstance(before, dict) else None
        actor = event.payload.get("actor", "")
        who = "you" if actor == user.get_username() else f"an operator ({actor})"
        line = f"{who} corrected it" + (f" from {first_person(before)!r}" if before and before != "[deleted]" else "")
        found.setdefault(event.subject_id, []).append(Decision(text=line, at=event.created_at))
    return found


def _fact_view(fact: KnowledgeFact, sources: dict[str, Source], decisions: dict[str, list[Decision]],
               texts: dict[str, str]) -> FactView:
    successor = texts.get(str(fact.superseded_by), "")
    return FactView(id=str(fact.pk), text=fact.text, said=first_person(fact.text), version=fact.version,
                    valid_from=fact.valid_from or fact.timestamp, valid_until=fact.valid_until,
                    period=period(fact.valid_until, first_person(successor) if successor else ""),
                    sources=[sources[str(p)] for p in fact.source_page_ids or () if str(p) in sources],
                    decisions=decisions.get(str(fact.pk), []))


def facts_known(*, user, fact_ids=None) -> tuple[list[FactView], list[FactView]]:
    """The person's facts (not repressed), current then past, each with its sources and decisions."""
    rows = KnowledgeFact.objects.filter(user=user, repressed=False).order_by("created_at")
    if fact_ids is not None:
        rows = rows.filter(id__in=uuids(fact_ids))
    facts = list(rows)
    sources = _sources(user, [p for f in facts for p in f.source_page_ids or ()])
    decisions = _decisions(user, facts)
    texts = dict(KnowledgeFact.objects.filter(user=user, id__in=[f.superseded_by for f in facts if f.superseded_by])
                 .values_list("id", "text"))
    texts = {str(k): v for k, v in texts.items()}
    views = [_fact_view(f, sources, decisions, texts) for f in facts]
    return [v for v in views if v.valid_until is None], [v for v in views if v.valid_until is not None]


def profile_values(*, user) -> list[ProfileValue]:
    profile = UserProfile.objects.filter(user=user).first()
    if profile is None:
        return []
    values = [(name, PROFILE_LABELS[name], getattr(profile, name)) for name in ("name", "gender", "birth_year")]
    values += [(f"extra.{key}", key.replace("_", " ").capitalize(), value)
               for key, value in sorted(profile.extra.items())]
    return [ProfileValue(field=name, label=label, value=str(value), since=profile.since.get(name),
                         history=tuple(h for h in profile.history if h.get("field") == name))
            for name, label, value in values if value not in ("", None)]


def traits_strongest(*, user, limit: int = STRONG_TRAITS) -> list[TraitView]:
    rows = UserTrait.objects.filter(user=user, repressed=False, score__gt=0).order_by("-score", "key")[:limit]
    views = []
    for trait in rows:
        dimension = TRAITS_BY_KEY.get(trait.key)
        if dimension is None:
            continue
        evidence = tuple(Source(page_id=str(e.get("page_id", "")), seq=0, text=e.get("text") or e.get("note") or "",
                                at=_parse(e.get("at"))) for e in trait.evidence[:3])
        views.append(TraitView(key=trait.key, name=dimension.name, description=dimension.description,
                               score=trait.score, evidence=evidence))
    return views


def _parse(value) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


def statements_recent(*, user, limit: int = RECENT_STATEMENTS, covered: set[str] | None = None) -> list[Source]:
    """The person's latest statements about themselves ("I …", "My …") that are not questions and
    not the sources of a fact already listed."""
    pages = DialoguePage.objects.filter(user=user, repressed=False, status=PageStatus.COMPLETE).filter(
        Q(query__istartswith="I ") | Q(query__istartswith="I'm ") | Q(query__istartswith="My ")
        | Q(query__istartswith="I've ")).only("id", "seq", "query", "timestamp").order_by("-seq")[:limit * 3]
    undone = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.EDITED, subject_id=NOTICE_UNDONE)
    # a notice's Undo took back what those words told
    taken_back = {str(page_id) for ids in undone.values_list("payload__page_ids", flat=True) for page_id in ids or ()}
    found = [Source(page_id=str(p.id), seq=p.seq, text=p.query, at=p.timestamp) for p in pages
             if not is_question(p.query) and str(p.id) not in (covered or set()) | taken_back]
    return found[:limit]


def about_me(*, user) -> AboutMe:
    facts, past = facts_known(user=user)
    covered = {s.page_id for f in [*facts, *past] for s in f.sources}
    return AboutMe(facts=facts, past=past, profile=profile_values(user=user), traits=traits_strongest(user=user),
                   statements=statements_recent(user=user, covered=covered), notes=assistant_notes(user=user))


def assistant_notes(*, user) -> list[NoteView]:
    """Everything the assistant keeps of its own about its conversations with the person, newest first."""
    return [NoteView(id=str(row.pk), text=row.text, at=row.created_at)
            for row in AgentTrait.objects.filter(user=user, repressed=False).order_by("-created_at")]


def memory_candidates(*, user, exclude_page_id=None, words: frozenset[str] | None = None,
                      page_ids=()) -> tuple[list[Candidate], dict[str, str]]:
    """Everything a request may point at: facts (current and past), profile values and complete
    turns (their words and the reply); and each turn's words alone, by id (a question is not a
    statement). With `words` (stems), only turns that may hold one of them are read (and those of
    `page_ids`): a prefilter on the first letters of each stem, which every form of it shares."""
    candidates = [Candidate("fact", str(f.pk), f.text)
                  for f in KnowledgeFact.objects.filter(user=user, repressed=False).only("id", "text")]
    candidates += [Candidate("profile", v.field, f"{v.label}: {v.value}") for v in profile_values(user=user)]
    queries: dict[str, str] = {}
    pages = DialoguePage.objects.filter(user=user, repressed=False).exclude(id=exclude_page_id)
    if words is not None:
        wanted = Q(id__in=uuids(page_ids))
        for word in words:
            wanted |= Q(query__icontains=word[:3]) | Q(response__icontains=word[:3])
        pages = pages.filter(wanted)
    for page in pages.only("id", "query", "response", "utterances").order_by("seq"):
        said, replied = _words_of(page)
        queries[str(page.id)] = said
        candidates.append(Candidate("page", str(page.id), f"{said}\n{replied}"))
    return candidates, queries


def _words_of(page: DialoguePage) -> tuple[str, str]:
    """A turn's words and its reply's, without the speakers' names an imported turn is stored with
    ("Maya: …"): forgetting "your name: Maya" must not find every imported turn."""
    if not page.utterances:
        return page.query, page.response
    first = page.utterances[0].get("speaker")
    replied = " ".join(str(u.get("text", "")) for u in page.utterances if u.get("speaker") != first)
    return said_by_person(page.query, page.utterances), replied or page.response


def pages_dated(*, user, page_ids) -> list[Source]:
    """Pages by id as sources (their words and dates), in turn order."""
    return sorted(_sources(user, page_ids).values(), key=lambda s: s.seq)
