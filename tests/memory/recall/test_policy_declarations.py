"""A policy declares what it needs, and the rest of the project asks it: a sixth policy registered by
a test is measured by the benchmark, offered by the sona form, gets its after-reply work run and its
turns recollected, and has its items explained in the recall panel, with no edit anywhere else."""

from __future__ import annotations

import pytest

from memory.benchmarks.retrieval import ABLATIONS, measured_policies
from memory.engine.types import RecalledItem
from memory.models import Tier
from memory.policies.exocortex.services import recollecting_policies
from memory.recall.base import (
    ItemExplanation,
    Ranking,
    RecallPolicy,
    get_policy,
    policy_names,
    register_policy,
    unregister_policy,
)
from memory.selectors.recall_panel import score_help, turn_recall
from memory.services.policy_work import after_reply_names, register_after_reply, unregister_after_reply
from memory.services.recall import recall_for_query
from memory.services.turns import turn_run
from memory.web.forms import SonaForm

pytestmark = pytest.mark.usefixtures("memory_env")


class SixthPolicy(RecallPolicy):
    """One made-up memory per query; rated after the reply, recollected, explained in its own words."""

    name = "sixth"
    title = "A sixth policy, registered by a test"
    rank_part = "sixth ranking"
    after_reply = ("sixth_follow_up",)
    makes_recollections = True
    item_kinds = {"sixth_memory": ("Made up by the sixth policy", "A memory the sixth policy made up.")}
    score_help = {"sixth score": "How much the sixth policy liked it."}

    def rank(self, context, query_vector, early):
        return Ranking(items=[RecalledItem(kind="sixth_memory", ref="sixth-1", text=f"sixth recalls {context.query}",
                                           score=0.5)],
                       trace={"sixth": {"liked": 0.75}})

    def explain_item(self, kind, ref, payload):
        if kind != "sixth_memory":
            return None
        return ItemExplanation(scores=[("sixth score", payload["sixth"]["liked"])], why=["The sixth policy liked it."])


@pytest.fixture
def sixth():
    calls: list[dict] = []
    register_policy(SixthPolicy)
    register_after_reply("sixth_follow_up", lambda **kwargs: calls.append(kwargs))
    yield calls
    unregister_after_reply("sixth_follow_up")
    unregister_policy("sixth")


def test_a_sixth_policy_is_measured_offered_and_recollected(sixth, make_user):
    assert policy_names()[-1] == "sixth"
    assert measured_policies({})[-1] == "sixth"
    assert ("sixth", "sixth: A sixth policy, registered by a test") in SonaForm(user=make_user()).fields[
        "recall_policy"].choices
    assert "sixth" in recollecting_policies()
    assert score_help()["sixth score"] == "How much the sixth policy liked it."
    assert not any(applies("sixth") for _, _, applies in ABLATIONS.values())  # no term of another module


def test_its_after_reply_work_runs_once_the_reply_is_stored(sixth, make_user):
    user = make_user()
    result = turn_run(user=user, message="tell me about tangerines", policy="sixth")
    assert sixth == [{"user_id": user.pk, "trace_id": result.recall.trace.id, "reply": result.reply}]
    turn_run(user=user, message="and plums", policy="hybrid")  # a policy that asks for nothing
    assert len(sixth) == 1


def test_its_items_are_explained_in_the_recall_panel(sixth, make_user):
    user = make_user()
    result = turn_run(user=user, message="tell me about tangerines", policy="sixth")
    panel = turn_recall(user=user, page_id=result.page.id)
    sections = dict(panel.sections)
    [row] = sections["Made up by the sixth policy"]
    assert row.scores == [("sixth score", 0.75)]
    assert row.why[0] == "A memory the sixth policy made up."
    assert row.why[-1] == "The sixth policy liked it."
    assert ("sixth score", "How much the sixth policy liked it.") in panel.legend


def test_the_builtin_declarations_are_the_old_special_cases():
    """What used to be spelled by name in services, selectors and the benchmark, now declared."""
    assert recollecting_policies() == ("exocortex", "generative_agents")
    assert [name for name in policy_names() if get_policy(name).after_reply] == ["memoria"]
    assert all(work in after_reply_names() for name in policy_names() for work in get_policy(name).after_reply)
    measured = {ablation: {name for name in policy_names() if applies(name)}
                for ablation, (_, _, applies) in ABLATIONS.items()}
    assert measured == {
        **{core: {"hybrid"} for core in ("core-hop", "core-time", "core-long-term", "core-feedback", "core-speaker",
                                         "core-smoothing", "core-meaning", "core-pair",
                                         "core+diversity")},
        "memoryos-segments": {"memoryos"}, "memoryos-jaccard": {"memoryos"},
        "exocortex-decay": {"exocortex", "generative_agents"}, "memoria-terms": {"memoria"}}



def test_the_inspector_shows_the_section_a_trace_s_policy_declares(make_user, client):
    user = make_user()
    client.force_login(user)
    turn_run(user=user, message="I adopted a cat named Miso last spring", policy="memoria")
    question = "What is the name of my cat Miso?"
    memoria = recall_for_query(user=user, query=question, policy="memoria", turn_tiers=(Tier.STM, Tier.MTM))
    hybrid = turn_run(user=user, message=question, policy="hybrid").recall
    assert memoria.trace.payload["memoria"]["expansion"]["order"]  # something to show
    shown = client.get(f"/inspector/{user.username}/recalls/{memoria.trace.id}/")
    assert shown.status_code == 200
    assert "Memoria's expansion" in shown.content.decode() and 'id="memoria-expansion"' in shown.content.decode()
    plain = client.get(f"/inspector/{user.username}/recalls/{hybrid.trace.id}/")
    assert plain.status_code == 200 and "memoria-expansion" not in plain.content.decode()
