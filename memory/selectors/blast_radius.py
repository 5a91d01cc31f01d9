"""What the delete dialog needs beside the blast radius: which of the memories it lists are pinned
(an operator asked to keep them: the dialog says so before they go)."""

from __future__ import annotations

from memory.models import DialoguePage, Segment
from memory.selectors.ids import uuids
from persona.models import AgentTrait, KnowledgeFact


def pinned_in_radius(*, user, radius) -> set[str]:
    """The ids of the pinned pages, segments, facts and agent traits among those `radius` lists."""
    wanted = {
        DialoguePage: [entry["id"] for entry in radius.pages],
        Segment: [entry["id"] for entry in (*radius.segments_deleted, *radius.segments_rederived)],
        KnowledgeFact: [entry["id"] for entry in (*radius.facts_removed, *radius.facts_kept)],
        AgentTrait: [entry["id"] for entry in (*radius.agent_traits_removed, *radius.agent_traits_kept)],
    }
    if radius.kind in ("page", "segment", "fact", "agent_trait"):
        model = {"page": DialoguePage, "segment": Segment, "fact": KnowledgeFact,
                 "agent_trait": AgentTrait}[radius.kind]
        wanted[model] = [*wanted[model], radius.ident]
    pinned: set[str] = set()
    for model, ids in wanted.items():
        keys = uuids(ids)
        if keys:
            pinned.update(str(pk) for pk in model.objects.filter(user=user, pk__in=keys, pinned=True)
                          .values_list("pk", flat=True))
    return pinned
