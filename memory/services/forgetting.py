"""A person's own hand on what is known about them: forget, correct, undo a correction, erase all.

Forgetting is deletion along provenance (memory/services/deletion.py), at once and for good: a
forgotten fact goes with the turns it was told in and the turns that quoted it, and what depended
on those follows (facts left without a source, traits' evidence, segments' summaries, Exocortex
recollections, traces, the vectors and keyword index); a forgotten profile value leaves the
profile and its history. None of the five recall policies can find it afterwards, and no reply can
use it. There is no undo: an undo would have to keep the very words the person asked to have
erased (a hidden copy is not forgetting), so the page and the chat say so before and after.

Corrections are versioned (memory/services/editing.py) and can be undone: the fact takes its new
text, the turns that said otherwise are repressed (kept, never recalled); "undo" puts back the old
text and the turns. Every action records an "edited" lifecycle event naming the action, the actor
and what it touched (never the forgotten words), beside the events of the services it calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction

from memory.models import DialoguePage, LifecycleEvent, MemoryNode, PageStatus
from memory.services.common import MemoryInputError, MemoryNotFound, lock_user_state
from memory.services.deletion import SCRUBBED, memory_delete, user_forget
from memory.services.editing import actor_name, memory_correct, memory_repress
from memory.services.events import event_record
from memory.services.long_term import profile_update
from memory.services.segments import segment_rederive
from persona.models import KnowledgeFact, UserProfile, UserTrait

FORGET = "forget"
CORRECT = "correct"
UNDO = "undo"
ERASE = "erase_all"


@dataclass(frozen=True)
class Forgotten:
    facts: int = 0
    pages: int = 0
    profile_values: int = 0
    traits: int = 0

    @property
    def nothing(self) -> bool:
        return not (self.facts or self.pages or self.profile_values or self.traits)


@dataclass(frozen=True)
class Corrected:
    event_id: int
    facts: int = 0
    pages: int = 0
    profile_values: int = 0


def _fact_sources(user, fact_ids: Iterable[str]) -> set[str]:
    return {str(p) for f in KnowledgeFact.objects.filter(user=user, id__in=list(fact_ids))
            for p in f.source_page_ids or ()}


def memories_forget(*, user, fact_ids: Iterable[str] = (), page_ids: Iterable[str] = (),
                    profile_fields: Iterable[str] = (), trait_keys: Iterable[str] = (), replies: Iterable[str] = (),
                    actor=None, via: str = "page") -> Forgotten:
    """Forget facts (with the turns they were told in), turns, profile values and traits, for good;
    `replies`: turns that keep their words but lose a reply that quoted what is forgotten."""
    fact_ids, trait_keys, profile_fields = list(dict.fromkeys(fact_ids)), list(trait_keys), list(profile_fields)
    pages = set(map(str, page_ids)) | _fact_sources(user, fact_ids)
    # A turn still under way (the request's own) is never deleted from under its reply.
    pages = {str(p) for p in DialoguePage.objects.filter(user=user, id__in=_valid(pages))
             .exclude(status=PageStatus.PENDING).values_list("id", flat=True)}
    who = actor if actor is not None else user
    facts = 0
    for fact_id in fact_ids:
        if KnowledgeFact.objects.filter(user=user, id=fact_id).exists():
            memory_delete(user=user, kind="fact", ident=fact_id, actor=who, reason=f"forgotten ({via})")
            facts += 1
    deleted = 0
    for page_id in sorted(pages):
        if DialoguePage.objects.filter(user=user, id=page_id).exists():
            radius = memory_delete(user=user, kind="page", ident=page_id, actor=who, reason=f"forgotten ({via})")
            facts += len(radius.facts_removed)
            deleted += 1
    traits = 0
    for key in trait_keys:
        if UserTrait.objects.filter(user=user, key=key).exists():
            memory_delete(user=user, kind="trait", ident=key, actor=who, reason=f"forgotten ({via})")
            traits += 1
    values = profile_values_forget(user=user, fields=profile_fields) if profile_fields else 0
    for page_id in sorted(set(map(str, replies)) - pages):
        reply_scrub(user=user, page_id=page_id, actor=who)
    done = Forgotten(facts=facts, pages=deleted, profile_values=values, traits=traits)
    event_record(user_id=user.pk, kind=LifecycleEvent.Kind.EDITED, subject_id="about_me", action=FORGET,
                 actor=actor_name(who), via=via, facts=done.facts, pages=done.pages,
                 profile_values=done.profile_values, traits=done.traits, final=True)
    return done


def _valid(ids: Iterable[str]) -> list[str]:
    valid = []
    for ident in ids:
        try:
            valid.append(str(uuid.UUID(str(ident))))
        except ValueError:
            continue
    return valid


SCRUBBED_REPLY = "(This reply quoted something since forgotten.)"


def reply_scrub(*, user, page_id: str, actor=None) -> None:
    """A turn's reply that quoted a forgotten memory is replaced (a new version of the page, indexed
    again); the old version's node and the correction's record of the old words go."""
    page = DialoguePage.objects.filter(user=user, id=page_id).exclude(status=PageStatus.PENDING).first()
    if page is None or page.response == SCRUBBED_REPLY:
        return
    memory_correct(user=user, kind="page", ident=page_id, version=None, actor=actor,
                   reason="its reply quoted something forgotten", response=SCRUBBED_REPLY)
    for event in LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.CORRECTED, subject_id=page_id):
        payload = {**event.payload, "before": SCRUBBED}
        event.payload = payload
        event.save(update_fields=["payload"])
    MemoryNode.objects.filter(user=user, kind=MemoryNode.Kind.PAGE, object_id__startswith=f"{page_id}@").delete()
    if page.segment_id:  # its summary may quote the old reply: derived again at once
        segment_rederive(user_id=user.pk, segment_id=page.segment_id)


def profile_values_forget(*, user, fields: Iterable[str]) -> int:
    """Profile values gone with their history; earlier events keep that they changed, not the value."""
    fields = set(fields)
    with transaction.atomic():
        lock_user_state(user.pk)
        profile = UserProfile.objects.select_for_update().filter(user=user).first()
        if profile is None:
            return 0
        forgotten: dict[str, object] = {}
        for name in fields:
            if name in ("name", "gender", "birth_year"):
                value = getattr(profile, name)
                if value not in ("", None):
                    forgotten[name] = value
                    setattr(profile, name, None if name == "birth_year" else "")
            elif name.startswith("extra.") and name.removeprefix("extra.") in profile.extra:
                forgotten[name] = profile.extra.pop(name.removeprefix("extra."))
        past = [h for h in profile.history if h.get("field") in fields]
        if not forgotten and not past:
            return 0
        profile.history = [h for h in profile.history if h.get("field") not in fields]
        for name in fields:
            profile.since.pop(name, None)
        profile.save()
        words = {str(v) for v in forgotten.values()} | {str(h.get("value")) for h in past}
        _profile_events_scrub(user, fields, words)
    return len(forgotten) + len(past)


def _profile_events_scrub(user, fields: set[str], words: set[str]) -> None:
    """The profile's earlier events keep which field changed, not the forgotten values."""
    for event in LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.EDITED, subject_id="profile"):
        payload = dict(event.payload)
        values = {k: (SCRUBBED if k in fields else v) for k, v in (payload.get("values") or {}).items()}
        superseded = [{**h, "value": SCRUBBED} if h.get("field") in fields or str(h.get("value")) in words else h
                      for h in payload.get("superseded") or []]
        if values != payload.get("values", {}) or superseded != payload.get("superseded", []):
            payload.update(values=values, superseded=superseded)
            event.payload = payload
            event.save(update_fields=["payload"])


def memory_erase_all(*, user, actor=None) -> dict[str, int]:
    """Everything of the person's memory, in every tier, index and file (user_forget)."""
    return user_forget(user=user, actor=actor if actor is not None else user, reason="erased by the person")


# ------------------------------------------------------------------ corrections, with an undo

def memories_correct(*, user, fact_texts: dict[str, str] | None = None, repress_pages: Iterable[str] = (),
                     profile: dict[str, str] | None = None, actor=None, via: str = "page",
                     page_id: str = "") -> Corrected:
    """Correct facts (new text), set aside the turns that said otherwise (repressed) and correct
    profile values; one "edited" event records how to undo it all (and `page_id`, the turn that
    asked, whose words then state no fact of their own)."""
    who = actor if actor is not None else user
    undo_facts, undo_pages, undo_profile = [], [], {}
    for fact_id, text in (fact_texts or {}).items():
        fact = KnowledgeFact.objects.filter(user=user, id=fact_id).first() if _valid([fact_id]) else None
        if fact is None:
            raise MemoryNotFound(f"No fact {fact_id} in this memory.")
        before = fact.text
        memory_correct(user=user, kind="fact", ident=fact_id, version=None, actor=who,
                       reason=f"corrected by the person ({via})", text=text)
        undo_facts.append({"id": fact_id, "text": before})
    for page_id in repress_pages:
        edit = memory_repress(user=user, kind="page", ident=str(page_id), actor=who,
                              reason=f"said otherwise; corrected by the person ({via})")
        undo_pages.append(edit.ident)
    if profile:
        current = UserProfile.objects.filter(user=user).first()
        undo_profile = {name: _profile_value(current, name) for name in profile}
        _profile_set(user, profile)
    if not (undo_facts or undo_pages or undo_profile):
        raise MemoryInputError("Nothing to correct.")
    extra = {"page_id": page_id} if page_id else {}
    event = event_record(user_id=user.pk, kind=LifecycleEvent.Kind.EDITED, subject_id="about_me", action=CORRECT,
                         actor=actor_name(who), via=via, undo={"facts": undo_facts, "pages": undo_pages,
                                                               "profile": undo_profile}, **extra)
    return Corrected(event_id=event.pk, facts=len(undo_facts), pages=len(undo_pages), profile_values=len(undo_profile))


def _profile_value(profile: UserProfile | None, name: str) -> str:
    if profile is None:
        return ""
    if name.startswith("extra."):
        return str(profile.extra.get(name.removeprefix("extra."), ""))
    value = getattr(profile, name, "")
    return "" if value is None else str(value)


def _profile_set(user, values: dict[str, str]) -> None:
    kwargs: dict = {}
    extra: dict[str, str] = {}
    for name, value in values.items():
        value = (value or "").strip()
        if name == "birth_year":
            try:
                kwargs["birth_year"] = int(value) if value else None
            except ValueError:
                raise MemoryInputError("A birth year is a number, like 1990.") from None
        elif name in ("name", "gender"):
            kwargs[name] = value
        elif name.startswith("extra."):
            extra[name.removeprefix("extra.")] = value
        else:
            raise MemoryInputError(f"Unknown profile field {name!r}.")
    profile_update(user=user, extra=extra or None, **kwargs)


def correction_undoable(*, user, event_id=None) -> LifecycleEvent | None:
    """The person's correction that `undo` would take back: the one named, else the latest one not
    undone yet."""
    rows = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.EDITED, subject_id="about_me")
    undone = {e.payload.get("of") for e in rows.filter(payload__action=UNDO)}
    corrections = rows.filter(payload__action=CORRECT).order_by("-id")
    if event_id is not None:
        corrections = corrections.filter(id=event_id)
    return next((e for e in corrections[:20] if e.pk not in undone), None)


def correction_undo(*, user, event_id=None, actor=None) -> LifecycleEvent:
    """Take back a correction: the facts' old texts, the turns back in recall, the old profile values."""
    event = correction_undoable(user=user, event_id=event_id)
    if event is None:
        raise MemoryNotFound("There is no correction to undo.")
    who = actor if actor is not None else user
    undo = event.payload.get("undo") or {}
    for entry in undo.get("facts", []):
        fact = KnowledgeFact.objects.filter(user=user, id=entry["id"]).first()
        if fact is not None and fact.text != entry["text"]:
            memory_correct(user=user, kind="fact", ident=entry["id"], version=None, actor=who,
                           reason="undo of a correction", text=entry["text"])
    for page_id in undo.get("pages", []):
        if DialoguePage.objects.filter(user=user, id=page_id).exists():
            memory_repress(user=user, kind="page", ident=page_id, actor=who, reason="undo of a correction",
                           repressed=False)
    if undo.get("profile"):
        _profile_set(user, undo["profile"])
    return event_record(user_id=user.pk, kind=LifecycleEvent.Kind.EDITED, subject_id="about_me", action=UNDO,
                        actor=actor_name(who), of=event.pk)
