"""One user's memories by kind: lists with their filters, one by id, one as its action bar shows it."""

from __future__ import annotations

import uuid

import pytest

from memory.models import Tier
from memory.selectors.memories import handle_of, memories, memory_for_actions, memory_one
from memory.services.pages import page_start
from memory.services.turns import page_complete
from persona.models import KnowledgeFact, UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")


def say(user, query: str, response: str = "Noted."):
    return page_complete(page=page_start(user=user, query=query), response=response, reply_model="test")


def fact(user, text: str, **fields) -> KnowledgeFact:
    return KnowledgeFact.objects.create(user=user, text=text, normalised=text.lower(), **fields)


def test_pages_come_newest_first_and_filter_by_tier_and_words(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 2}
    user, other = make_user(), make_user()
    for text in ("I play chess on Sundays.", "My chess club meets at noon.", "The weather is mild.",
                 "I bake sourdough bread."):
        say(user, text)
    say(other, "Chess is my passion too.")

    pages = memories(user=user, kind="page")
    assert [page.query for page in pages] == ["I bake sourdough bread.", "The weather is mild.",
                                             "My chess club meets at noon.", "I play chess on Sundays."]
    assert {page.query for page in memories(user=user, kind="page", tier=Tier.STM)} == {
        "I bake sourdough bread.", "The weather is mild."}
    assert [page.query for page in memories(user=user, kind="page", query="CHESS")] == [
        "My chess club meets at noon.", "I play chess on Sundays."]
    assert [page.query for page in memories(user=user, kind="page", query="noted")] == [
        page.query for page in pages]  # the response's words count too


def test_facts_and_traits_filter_by_flags_and_words(make_user):
    user = make_user()
    fact(user, "User plays chess", pinned=True)
    fact(user, "User bakes bread", repressed=True)
    UserTrait.objects.create(user=user, key="sports_interest", score=0.2)
    UserTrait.objects.create(user=user, key="art_interest", score=0.7)
    assert [row.text for row in memories(user=user, kind="fact", pinned=True)] == ["User plays chess"]
    assert [row.text for row in memories(user=user, kind="fact", repressed=False)] == ["User plays chess"]
    assert [row.text for row in memories(user=user, kind="fact", query="bread")] == ["User bakes bread"]
    assert [row.key for row in memories(user=user, kind="trait")] == ["art_interest", "sports_interest"]
    assert [row.key for row in memories(user=user, kind="trait", query="sport")] == ["sports_interest"]


def test_one_memory_is_found_only_by_its_owner_and_a_well_formed_id(make_user):
    owner, stranger = make_user(), make_user()
    row = fact(owner, "User lives in Porto")
    assert memory_one(user=owner, kind="fact", ident=str(row.pk)) == row
    assert memory_one(user=stranger, kind="fact", ident=str(row.pk)) is None
    assert memory_one(user=owner, kind="fact", ident="not-a-uuid") is None
    assert memory_one(user=owner, kind="fact", ident=str(uuid.uuid4())) is None
    assert memory_one(user=owner, kind="nonsense", ident=str(row.pk)) is None


def test_the_action_bar_shows_what_a_correction_starts_from(make_user):
    user = make_user()
    page = say(user, "I moved to Porto last spring.", "How do you like it?")
    row = fact(user, "User owns a green kayak", pinned=True)

    shown = memory_for_actions(user=user, kind="page", ident=str(page.pk))
    assert (shown.kind, shown.ident, shown.label) == ("page", str(page.pk), "I moved to Porto last spring.")
    assert shown.values == {"query": "I moved to Porto last spring.", "response": "How do you like it?"}
    assert memory_for_actions(user=user, kind="fact", ident=str(row.pk)).pinned is True

    unscored = memory_for_actions(user=user, kind="trait", ident="sports_interest")
    assert unscored is not None and unscored.values == {"score": 0.0, "note": ""} and unscored.version == 1
    assert memory_for_actions(user=user, kind="trait", ident="no_such_trait") is None
    assert memory_for_actions(user=make_user(), kind="fact", ident=str(row.pk)) is None
    assert handle_of("fact", row).label == "User owns a green kayak"
