"""Talking to memory in the chat: "what do you know about me?", "forget that I …", "that's wrong,
I …", "why do you think I …?" and "undo", answered from memory's provenance.

The turn path (memory/services/turns.py) stores the message first, then asks `memory_talk_answer`;
a memory request gets its reply here instead of the offline engine's or the model's. Detection is
offline (memory/engine/memory_talk.py). A request that points at more than one memory asks which;
the next turn's answer ("the first", "both", "Miso") resolves it, anything else lets the question
lapse. Actions go through memory/services/forgetting.py, each an audited event; a forget is final
(see there why), a correction has an undo ("undo").

A forget request's own words would name what is forgotten, so the request is stored without
them ("Forget that … [forgotten]"), and the replies here never quote a forgotten memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.engine import memory_talk as talk
from memory.engine.text import is_question
from memory.engine.traits import TRAITS_BY_KEY
from memory.models import DialoguePage, LifecycleEvent
from memory.selectors.about_me import about_me, facts_known, memory_candidates, pages_dated, profile_values
from memory.services.common import MemoryInputError, MemoryNotFound
from memory.services.events import event_record
from memory.services.forgetting import (
    Corrected,
    correction_undo,
    memories_correct,
    memories_forget,
    reply_scrub,
)
from persona.models import KnowledgeFact, UserTrait

ASK = "ask"
# How every question here ends: the next turn is read as its answer only after a reply that ends so.
ANSWER_HINT = "(Answer with the number, \"all\" or \"none\".)"
# A forget that would erase more than this many turns and facts asks first, listing a few.
CONFIRM_ABOVE = 5
REDACTED = "[forgotten]"
# An answer to a question ("the first one", "both") is short; longer messages are never read as one.
ANSWER_MAX_CHARS = 120
LIST_MAX = 10


@dataclass(frozen=True)
class TalkReply:
    text: str
    intent: str
    action: str = ""  # "forget", "correct", "undo", "ask" or "" (a read)


def memory_talk_answer(*, user, page: DialoguePage) -> TalkReply | None:
    """The reply to a memory request stored as `page` (still pending), or None for an ordinary message."""
    request = talk.detect(page.query)
    if request is None:
        pending = _pending_question(user, page) if len(page.query) <= ANSWER_MAX_CHARS else None
        return _answer_question(user, page, pending) if pending is not None else None
    if request.soft:
        return _correct(user, page, request.target, soft=True)
    handler = {talk.Intent.WHAT: _what, talk.Intent.FORGET: _forget, talk.Intent.CORRECT: _correct,
               talk.Intent.WHY: _why, talk.Intent.UNDO: _undo}[request.intent]
    return handler(user, page, request.target)


# ------------------------------------------------------------------ what do you know about me?

def _more(count: int, one: str, many: str = "") -> list[str]:
    """The line saying how many more of a list than the reply shows ("and 3 more facts: …")."""
    left = count - LIST_MAX
    if left <= 0:
        return []
    return [f"- … and {left} more {one if left == 1 else many or one + 's'}, listed on the page "
            "\"What I know about you\" (/me/)"]


def _what(user, page: DialoguePage, target: str) -> TalkReply:
    known = about_me(user=user)
    if known.empty:
        return TalkReply("I don't know anything about you yet. Tell me about yourself and I'll remember it.",
                         talk.Intent.WHAT)
    lines = ["Here is what I know about you:"]
    lines += [f"- {v.label}: {v.value}" for v in known.profile]
    for fact in known.facts[:LIST_MAX]:
        told = f" (you told me on {talk.day(fact.sources[0].at)})" if fact.sources else ""
        lines.append(f"- {fact.said}{told}")
    lines += _more(len(known.facts), "fact")
    for said in known.statements[:LIST_MAX]:
        lines.append(f"- you told me on {talk.day(said.at)}: \"{said.text}\"")
    lines += _more(len(known.statements), "thing you said about yourself", "things you said about yourself")
    for fact in known.past[:LIST_MAX]:
        lines.append(f"- before: {fact.said} ({fact.period})")
    lines += _more(len(known.past), "earlier fact")
    if known.traits:
        sensed = ", ".join(f"{t.name.lower()} ({t.score:.2f})" for t in known.traits[:3])
        lines.append(f"- what I sense of you: {sensed}")
    lines.append("You can correct any of it (\"that's wrong, I …\"), ask why I think something, or say "
                 "\"forget that I …\". The page \"What I know about you\" (/me/) lists it all, with an erase button.")
    return TalkReply("\n".join(lines), talk.Intent.WHAT)


# ------------------------------------------------------------------ forget

def _statements(user, page: DialoguePage | None, words: frozenset[str] | None, page_ids=()
                ) -> tuple[list[talk.Candidate], list[talk.Candidate], dict[str, str]]:
    """What the person stated (facts, profile values, turns that are no question nor memory
    request: these may be chosen among), every turn with its reply (these follow what is chosen),
    and each turn's own words by id; turns read only where they may hold one of `words`."""
    candidates, queries = memory_candidates(user=user, exclude_page_id=page.id if page is not None else None,
                                            words=words, page_ids=page_ids)
    statements, others = [], []
    for candidate in candidates:
        if candidate.kind != "page":
            statements.append(candidate)
            continue
        others.append(candidate)
        query = queries[candidate.ident]
        request = talk.detect(query)
        if request is not None and request.intent == talk.Intent.CORRECT and request.target:
            # A correction states the new truth: "That's wrong, I live in Porto" says "I live in Porto".
            statements.append(talk.Candidate("page", candidate.ident, talk.correction_parts(request.target)[0]))
        elif not is_question(query) and request is None:
            statements.append(talk.Candidate("page", candidate.ident, query))
    return statements, others, queries


def _quoting(groups: list[talk.Group], target: str, others: list[talk.Candidate], queries: dict[str, str],
             chosen: set[str]) -> tuple[set[str], set[str]]:
    """Turns that speak of the memories besides the chosen ones: those whose own words do (a
    statement, or a question or request about it) go; those where only the reply quoted it keep
    their words and lose the reply."""
    speaks = {c.ident for c in others if any(talk.quotes(g, target, c.text) for g in groups)}
    # Only a turn whose own words speak of it goes; one where the reply alone quoted it ("what do
    # you know about me?" answered with everything) keeps its words and loses the reply.
    replies = {ident for ident in speaks - chosen
               if not any(talk.quotes(g, target, queries[ident]) for g in groups)}
    return (speaks - replies) | chosen, replies


def _forget(user, page: DialoguePage, target: str) -> TalkReply:
    statements, _, _ = _statements(user, page, talk.topic_words(target))
    groups = talk.group(target, statements)
    _redact(page)
    if not groups:
        return TalkReply("I found nothing like that in my memory, and I haven't kept what you just told me.",
                         talk.Intent.FORGET)
    if len(groups) > 1:
        return _ask(user, page, talk.Intent.FORGET, target, groups)
    if len(groups[0].members) > CONFIRM_ABOVE:
        return _confirm(user, page, target, groups[0])
    return _forget_groups(user, page, target, groups)


def _confirm(user, page: DialoguePage, target: str, memory: talk.Group) -> TalkReply:
    """A forget that reaches many memories is confirmed first (they were told as one thing)."""
    options = [[{"kind": c.kind, "id": c.ident} for c in memory.members]]
    event_record(user_id=user.pk, kind=LifecycleEvent.Kind.EDITED, subject_id=str(page.pk), action=ASK,
                 intent=str(talk.Intent.FORGET), target=target, options=options)
    shown = [f"- {_label(user, talk.Group((c,)))}" for c in memory.members[:3]]
    return TalkReply("\n".join([f"That would forget {len(memory.members)} memories, for good, such as:", *shown,
                                "Shall I forget them all? " + ANSWER_HINT]), talk.Intent.FORGET, action=ASK)


def _forget_groups(user, page: DialoguePage, target: str, groups: list[talk.Group], also=()) -> TalkReply:
    members = [c for g in groups for c in g.members]
    words = talk.topic_words(target) | talk.names_in([c.text for c in members])
    _, others, queries = _statements(user, page, words, [c.ident for c in members if c.kind == "page"])
    chosen = {c.ident for c in members if c.kind == "page"} | set(also)
    pages, replies = _quoting(groups, target, others, queries, chosen)
    done = memories_forget(user=user, fact_ids=[c.ident for c in members if c.kind == "fact"], page_ids=pages,
                           profile_fields=[c.ident for c in members if c.kind == "profile"], replies=replies,
                           via="chat")
    parts = [_count(done.facts, "fact"), _count(done.pages, "turn"), _count(done.profile_values, "profile value")]
    what = ", ".join(p for p in parts if p)
    return TalkReply(f"Done: I have forgotten it ({what}). No recall will bring it back and I won't use it again. "
                     "Forgetting erases, so this cannot be undone.", talk.Intent.FORGET, action="forget")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}" if n else ""


def _redact(page: DialoguePage, text: str = f"Forget that {REDACTED}") -> None:
    """The request's own words leave memory with what they name (the page is still pending: no
    vector, node or keyword entry holds them yet)."""
    page.query = text
    DialoguePage.objects.filter(pk=page.pk).update(query=page.query)


# ------------------------------------------------------------------ that's wrong, I …

def _correct(user, page: DialoguePage, target: str, *, soft: bool = False) -> TalkReply | None:
    """A correction: the memories that say otherwise set right. Said in passing (`soft`: "No, my dog
    is called Rex, not Max"), it is one only when something remembered says otherwise; "sorry, I
    meant Porto" corrects the value the person's previous turn told."""
    if not target:
        return TalkReply("What should it be? Tell me, for example: \"that's wrong, I live in Porto\".",
                         talk.Intent.CORRECT)
    denied = _denied(user, page, target)
    if denied is not None:
        return denied
    new, old_value = talk.correction_parts(target, sentences=True)
    statements, _, _ = _statements(user, page, talk.topic_words(new) | frozenset(old_value.split()))
    current = {f.id for f in facts_known(user=user)[0]}
    found = [c for c in statements if (c.kind != "fact" or c.ident in current)
             and talk.contradicts(new, c.text, old_value)]
    groups = talk.cluster(found, talk.slot_words(new))
    if not groups:  # a value alone ("it's Khloe with a K") corrects a recent fact; a statement is read as told
        return _meant(user, page, target) if not any(r.subject == "self" and r.slot != "other"
                                                      for r in talk.read(new)) else None
    if len(groups) > 1:
        return _ask(user, page, talk.Intent.CORRECT, new, groups)
    return _correct_groups(user, new, groups, page=page)


def _denied(user, page: DialoguePage, target: str) -> TalkReply | None:
    """ "She's called Hailey, not Bailey": every current fact that holds the denied value, with the
    value given; the person's turns that said the denied value are set aside (undo restores all)."""
    said = talk.denial(target)
    if said is None:
        return None
    new, old = said
    fixed = {f.id: text for f in facts_known(user=user)[0] if (text := talk.replace_value(f.text, old, new))}
    if not fixed:
        return None
    statements, _, _ = _statements(user, page, talk.topic_words(old))
    pages = [c.ident for c in statements if c.kind == "page" and talk.replace_value(c.text, old, new)]
    try:
        done = memories_correct(user=user, fact_texts=fixed, repress_pages=pages, via="chat", page_id=str(page.pk))
    except MemoryInputError as exc:
        return TalkReply(f"I could not correct it: {exc}", talk.Intent.CORRECT)
    known = "; ".join(talk.first_person(text) for text in fixed.values())
    parts = [_count(done.facts, "fact"), _count(done.pages, "turn that said otherwise")]
    return TalkReply(f"Corrected: from now on I know that {known} ({', '.join(p for p in parts if p)} set right). "
                     "Say \"undo\" to put it back as it was.", talk.Intent.CORRECT, action="correct")


RECENT_TURNS = 3


def _meant(user, page: DialoguePage, said: str) -> TalkReply | None:
    """ "Sorry, I meant Porto", "no wait it's Khloe with a K": the value a correction gives, in the
    newest fact of the last few turns that holds a value of its kind (a name, a date, a number)."""
    givens = talk.given_values(said)
    if not givens:
        return None
    recent = [str(p) for p in DialoguePage.objects.filter(user=user, seq__lt=page.seq).order_by("-seq")
              .values_list("id", flat=True)[:RECENT_TURNS]]
    facts = sorted((f for f in facts_known(user=user)[0] if any(s.page_id in recent for s in f.sources)),
                   key=lambda f: -max(recent.index(s.page_id) * -1 for s in f.sources if s.page_id in recent))
    for fact in facts:
        # the likeliest value by its kind of word; another only where the fact holds one of its label
        text = next((t for n, given in enumerate(givens) if (t := talk.replace_given(fact.text, given,
                                                                                   same_label=n > 0))), "")
        if text:
            return _correct_groups(user, "", [talk.Group((talk.Candidate("fact", fact.id, fact.text),))], text=text,
                                   page=page)
    return None


def _correct_groups(user, new: str, groups: list[talk.Group], *, text: str = "",
                    page: DialoguePage | None = None) -> TalkReply:
    members = [c for g in groups for c in g.members]
    text = text or talk.third_person(new)
    fact_texts = {c.ident: text for c in members if c.kind == "fact"}
    try:
        done: Corrected = memories_correct(user=user, fact_texts=fact_texts,
                                           repress_pages=[c.ident for c in members if c.kind == "page"], via="chat",
                                           page_id=str(page.pk) if page is not None else "")
    except MemoryInputError as exc:
        return TalkReply(f"I could not correct it: {exc}", talk.Intent.CORRECT)
    parts = [_count(done.facts, "fact"), _count(done.pages, "turn that said otherwise")]
    return TalkReply(f"Corrected: from now on I know that {talk.first_person(text)} "
                     f"({', '.join(p for p in parts if p)} set right). Say \"undo\" to put it back as it was.",
                     talk.Intent.CORRECT, action="correct")


def _undo(user, page: DialoguePage, target: str) -> TalkReply:
    try:
        correction_undo(user=user)
    except MemoryInputError:
        return TalkReply("There is no correction to undo. (Something forgotten cannot come back: forgetting "
                         "erases.)", talk.Intent.UNDO)
    return TalkReply("Undone: the correction is taken back and what I knew before is back.", talk.Intent.UNDO,
                     action="undo")


# ------------------------------------------------------------------ why do you think I …?

def _why(user, page: DialoguePage, target: str) -> TalkReply:
    statements, _, _ = _statements(user, page, talk.topic_words(target))
    groups = talk.group(target, statements)
    if not groups:
        return TalkReply("Nothing in my memory says that, so I don't think it.", talk.Intent.WHY)
    lines = []
    for group in groups[:3]:
        lines += _explain(user, group)
    return TalkReply("\n".join(lines), talk.Intent.WHY)


def _explain(user, group: talk.Group) -> list[str]:
    fact_ids = [c.ident for c in group.members if c.kind == "fact"]
    current, past = facts_known(user=user, fact_ids=fact_ids) if fact_ids else ([], [])
    lines: list[str] = []
    quoted: set[str] = set()
    for fact in [*current, *past]:
        held = f" ({fact.period})" if fact.period else f" (since {talk.day(fact.valid_from)})"
        lines.append(f"I know that {fact.said}{held}, because:")
        for source in fact.sources:
            lines.append(f"- on {talk.day(source.at)} you said: \"{source.text}\"")
            quoted.add(source.page_id)
        lines += [f"- on {talk.day(d.at)}, {d.text}" for d in fact.decisions]
    profile = {v.field: v for v in profile_values(user=user)}
    for candidate in group.members:
        if candidate.kind == "profile" and candidate.ident in profile:
            value = profile[candidate.ident]
            since = f" since {value.since[:10]}" if value.since else ""
            lines.append(f"{value.label} is {value.value} in your profile{since}: you gave it there.")
    pages = [c.ident for c in group.members if c.kind == "page" and c.ident not in quoted]
    for source in pages_dated(user=user, page_ids=pages):
        lines.append(f"Because on {talk.day(source.at)} you told me: \"{source.text}\"")
    return lines


# ------------------------------------------------------------------ asking before acting

def _ask(user, page: DialoguePage, intent: str, target: str, groups: list[talk.Group]) -> TalkReply:
    options = [[{"kind": c.kind, "id": c.ident} for c in g.members] for g in groups[:LIST_MAX]]
    event_record(user_id=user.pk, kind=LifecycleEvent.Kind.EDITED, subject_id=str(page.pk), action=ASK,
                 intent=str(intent), target=target, options=options)
    verb = "forget" if intent == talk.Intent.FORGET else "correct"
    lines = ["More than one thing I remember matches that:"]
    lines += [f"{i}. {_label(user, g)}" for i, g in enumerate(groups[:LIST_MAX], 1)]
    lines.append(f"Which should I {verb}? " + ANSWER_HINT)
    return TalkReply("\n".join(lines), str(intent), action=ASK)


def _label(user, group: talk.Group) -> str:
    label = group.label
    if label.kind == "page":
        source = next(iter(pages_dated(user=user, page_ids=[label.ident])), None)
        return f"\"{label.text}\" (you said it on {talk.day(source.at)})" if source else f"\"{label.text}\""
    return talk.first_person(label.text) if label.kind == "fact" else label.text


def _pending_question(user, page: DialoguePage) -> LifecycleEvent | None:
    """The question the previous turn asked, if it did."""
    previous = DialoguePage.objects.filter(user=user, seq=page.seq - 1,
                                           response__endswith=ANSWER_HINT).values_list("id", flat=True).first()
    if previous is None:
        return None
    return LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.EDITED, subject_id=str(previous),
                                         payload__action=ASK).order_by("-id").first()


def _answer_question(user, page: DialoguePage, question: LifecycleEvent) -> TalkReply | None:
    intent, target = question.payload.get("intent"), question.payload.get("target", "")
    asked = [m["id"] for option in question.payload.get("options", []) for m in option if m.get("kind") == "page"]
    statements, _, _ = _statements(user, page, frozenset(), asked)
    by_key = {(c.kind, c.ident): c for c in statements}
    groups = [talk.Group(tuple(by_key[(m["kind"], m["id"])] for m in option if (m["kind"], m["id"]) in by_key))
              for option in question.payload.get("options", [])]
    groups = [g for g in groups if g.members]
    chosen = talk.choose(page.query, [_label(user, g) for g in groups]) if groups else None
    if chosen is None:
        return None  # an ordinary message: the question lapses
    if not chosen:
        return TalkReply("All right, I left everything as it was.", str(intent))
    picked = [groups[i] for i in chosen]
    if intent == talk.Intent.FORGET:
        _redact(page, f"(Which one to forget: answered; {REDACTED})")
        # The question goes too (it said what to forget); its event keeps that it asked, not the words.
        LifecycleEvent.objects.filter(pk=question.pk).update(payload={**question.payload, "target": ""})
        return _forget_groups(user, page, target, picked, also=[question.subject_id])
    reply = _correct_groups(user, target, picked, page=page)
    reply_scrub(user=user, page_id=question.subject_id)  # the question listed what was said otherwise
    return reply


# ------------------------------------------------------------------ the person's page

@dataclass(frozen=True)
class ForgetPlan:
    """What forgetting one item of the person's page removes, before it acts: the turns that go
    (with why: they told it, or spoke of it) and the turns that keep their words but lose a reply
    that quoted it."""

    kind: str
    ident: str
    text: str
    told: tuple[DialoguePage, ...]
    spoke: tuple[DialoguePage, ...]
    redacted: tuple[DialoguePage, ...]


def memory_item_forget_plan(*, user, kind: str, ident: str) -> ForgetPlan:
    """What memory_item_forget would remove (nothing changes). MemoryNotFound for an item that is
    not the person's."""
    if kind == "trait":
        if not UserTrait.objects.filter(user=user, key=ident).exists():
            raise MemoryNotFound("No such trait in your memory.")
        return ForgetPlan(kind=kind, ident=ident, text=TRAITS_BY_KEY[ident].name if ident in TRAITS_BY_KEY else ident,
                          told=(), spoke=(), redacted=())
    statements, _, _ = _statements(user, None, frozenset(), [ident] if kind == "page" else [])
    item = next((c for c in statements if c.kind == kind and c.ident == str(ident)), None)
    if item is None:
        raise MemoryNotFound("No such memory of yours.")
    own = [item.ident] if kind == "page" else []
    _, others, queries = _statements(user, None, talk.topic_words(item.text), own)
    pages, replies = _quoting([talk.Group((item,))], item.text, others, queries,
                              {item.ident} if kind == "page" else set())
    told_ids = set(map(str, pages)) & ({item.ident} if kind == "page" else _told_by(user, kind, item.ident))
    rows = {str(p.id): p for p in DialoguePage.objects.filter(user=user, id__in=[*pages, *replies, *told_ids])}
    ordered = sorted(rows.values(), key=lambda p: p.seq)
    return ForgetPlan(kind=kind, ident=str(item.ident), text=item.text,
                      told=tuple(p for p in ordered if str(p.id) in told_ids),
                      spoke=tuple(p for p in ordered if str(p.id) in set(map(str, pages)) - told_ids),
                      redacted=tuple(p for p in ordered if str(p.id) in set(map(str, replies))))


def _told_by(user, kind: str, ident: str) -> set[str]:
    """The turns a fact was told in (its sources)."""
    if kind != "fact":
        return set()
    row = KnowledgeFact.objects.filter(user=user, id=ident).values_list("source_page_ids", flat=True).first()
    return set(map(str, row or ()))


def memory_item_forget(*, user, kind: str, ident: str, actor=None):
    """Forget one item of "What I know about you" (a fact, a profile value, a trait, a statement)
    with the turns that quoted it, as the chat's "forget that" does, and as memory_item_forget_plan
    lists it first. MemoryNotFound for an item that is not the person's."""
    if kind == "trait":
        memory_item_forget_plan(user=user, kind=kind, ident=ident)
        return memories_forget(user=user, trait_keys=[ident], actor=actor, via="page")
    plan = memory_item_forget_plan(user=user, kind=kind, ident=ident)
    pages = [str(p.id) for p in (*plan.told, *plan.spoke)]
    return memories_forget(user=user, fact_ids=[plan.ident] if kind == "fact" else [], page_ids=pages,
                           profile_fields=[plan.ident] if kind == "profile" else [],
                           replies=[str(p.id) for p in plan.redacted], actor=actor, via="page")