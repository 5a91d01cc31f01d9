"""The replay: the tiers rebuilt from the lifecycle log after any event, with what the page needs
to show them (pages' words, segments' names)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory.engine.lifecycle import EventRecord
from memory.models import DialoguePage
from memory.selectors.ids import uuids
from memory.selectors.log import replay_of
from memory.selectors.segment_names import segment_label_of, segment_names

REPLAY_SEGMENTS = 40  # segment cards a step shows: the one the event touched and the latest accessed


@dataclass
class ReplayView:
    step: int
    total: int
    state: Any  # memory.engine.lifecycle.TierState
    event: EventRecord | None
    page_text: dict[str, str]
    segment_labels: dict[str, str]
    segments: list[Any]  # the SegmentStates shown, in the order they formed
    hidden_segments: int


def replay_view(*, user, step: int) -> ReplayView:
    """The tiers after `step` events, with what the page needs to show them."""
    replay = replay_of(user=user)
    state = replay.state_after(step)
    _drop_deleted(state, replay.events[:state.applied])
    event = state.last
    touched = {event.subject, *(event.payload.get("segments") or ())} if event else set()
    latest = sorted(state.mtm.values(), key=lambda seg: (seg.id not in touched, -seg.last_access.timestamp()))
    keep = {seg.id for seg in latest[:REPLAY_SEGMENTS]}
    segments = [seg for sid, seg in state.mtm.items() if sid in keep]
    stored = DialoguePage.objects.filter(user=user, id__in=uuids(state.stm)).only("id", "query", "utterances")
    texts = {str(p.id): _without_speaker(p)[:90] for p in stored}
    names = segment_names(user=user)
    labels = {sid: segment_label_of(names, sid) for sid in keep if sid in names}
    return ReplayView(step=state.applied, total=len(replay), state=state, event=event, page_text=texts,
                      segment_labels=labels, segments=segments, hidden_segments=len(state.mtm) - len(segments))


def _drop_deleted(state, applied: list[EventRecord]) -> None:
    """What an operator deleted by then leaves the replayed tiers (the log records the delete of the
    memory acted on; the tiers' replay in the engine does not apply it), so that the last step shows
    what the Overview counts."""
    gone = {(str(e.payload.get("target", "")), e.subject) for e in applied if e.kind == "deleted"}
    if not gone:
        return
    state.stm = [pid for pid in state.stm if ("page", pid) not in gone]
    for sid in [sid for sid in state.mtm if ("segment", sid) in gone]:
        state.mtm.pop(sid)
    for segment in state.mtm.values():
        segment.pages = [pid for pid in segment.pages if ("page", pid) not in gone]
    for fid in [fid for fid in state.facts if ("fact", fid) in gone]:
        state.facts.pop(fid)
    for aid in [aid for aid in state.agent_traits if ("agent_trait", aid) in gone]:
        state.agent_traits.pop(aid)


def _without_speaker(page) -> str:
    """An imported page's words without the "Maya: " its transcript starts them with."""
    speakers = {str(u.get("speaker", "")) for u in page.utterances or () if isinstance(u, dict)} - {""}
    for name in speakers:
        if page.query.startswith(f"{name}: "):
            return page.query[len(name) + 2:]
    return page.query
