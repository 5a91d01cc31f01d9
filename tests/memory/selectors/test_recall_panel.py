"""The inspector's search lists what answers the query first, and the standing context apart."""

from __future__ import annotations

from types import SimpleNamespace

from memory.selectors.recall_panel import search_listing


def item(kind, text, score, **breakdown):
    return SimpleNamespace(kind=kind, text=text, score=score, breakdown=breakdown or None)


def test_the_fact_that_answers_comes_before_the_profile_and_the_45_traits():
    items = [item("profile", "name: Maya", 1.0),
             *[item("user_trait", f"trait {i}", 1.0) for i in range(45)],
             item("kb_fact", "User's neighbour Carla looks after Moss", 0.23, similarity=0.23),
             item("kb_fact", "User has a grey cat named Moss", 0.51, similarity=0.51),
             item("agent_trait", "Assistant will quiz the user", 0.3, similarity=0.3),
             item("stm_page", "User: Dad wants to sail", 1.0, similarity=-0.02),
             item("stm_page", "User: Moss leaves the room", 1.0, similarity=0.32),
             item("turn", "Maya: I have a grey cat", 14.1)]
    found, standing = search_listing(items)
    assert found[0].text == "User has a grey cat named Moss"
    assert [i.kind for i in found] == ["kb_fact", "agent_trait", "kb_fact", "turn", "stm_page", "stm_page"]
    assert found[-2].text == "User: Moss leaves the room"  # recent turns by similarity, not by age
    assert len(standing) == 46 and {i.kind for i in standing} == {"profile", "user_trait"}
