"""The Exocortex and Generative Agents policies: weights through the policy against hand-computed
values (the relevance core's scores scaled onto [0, 1], the user's own decay curve), the weights
without the recency term, the decay settings' validation, recollections stored with
their edges after the reply and recalled on a later turn, repression of a recollection's member."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory.adapters import configured
from memory.models import DialoguePage, LifecycleEvent, MemoryEdge, MemoryNode, Recollection, Tier, UserMemoryState
from memory.policies.exocortex.services import decay_settings_update
from memory.recall.relevance import turn_relevance
from memory.services.common import MemoryInputError
from memory.services.deletion import memory_delete
from memory.services.editing import memory_repress
from memory.services.pages import page_start
from memory.services.recall import recall_for_query
from memory.services.turns import page_complete

pytestmark = pytest.mark.usefixtures("memory_env")


def tune(settings, **params):
    settings.MEMORYOS = {**settings.MEMORYOS, **params}


def say(user, text: str, response: str = "Noted.", *, at=None) -> DialoguePage:
    return page_complete(page=page_start(user=user, query=text, timestamp=at), response=response, reply_model="test")


def hand_recency(age: float, *, oldest: float, short: float, floor_lt: float) -> float:
    """The curve of memory/policies/exocortex/engine/decay.py's docstring, written out again (Δ = 0.1, k = 100)."""
    band_floor, bend = 0.1, 100.0
    theta_st = floor_lt + band_floor + (1 - floor_lt - band_floor) / (1 + math.log(1 + oldest / short))
    if age <= short:
        return theta_st ** (age / short)
    share = (age - short) / (oldest - short)
    return theta_st - (theta_st - floor_lt) * math.log(1 + bend * share) / math.log(1 + bend)


def min_max(scores: dict[str, float]) -> dict[str, float]:
    """The relevance core's scores onto [0, 1] among the candidates, written out again."""
    best, worst = max(scores.values()), min(scores.values())
    return {key: (value - worst) / (best - worst) for key, value in scores.items()}


CAT = ["I adopted a grey cat called Pepper from the shelter.", "My sister plays the cello in an orchestra.",
       "Pepper the cat sleeps on the radiator all winter.", "Unrelated: the train was late again."]
CAT_AGES_DAYS = (40.0, 12.0, 0.5, 0.001)  # the last page stays in STM (capacity 1)
CAT_QUERY = "What is my cat called?"


def cat_store(user, now) -> tuple[list[DialoguePage], list[float]]:
    """Four pages said that many days before `now` (their turns are indexed with that time), the
    user's decay curve set to 30 minutes and a 0.05 floor; the query's vector."""
    pages = [say(user, text, at=now - timedelta(days=age)) for text, age in zip(CAT, CAT_AGES_DAYS, strict=True)]
    decay_settings_update(user=user, short_term_minutes=30, long_term_threshold=0.05)
    return pages, configured.embedder().embed([CAT_QUERY])[0]


def expected_terms(user, pages, query_vector, now) -> dict[str, tuple[float, float]]:
    """Turn id -> (relevance, recency) by hand: relevance is the core's final score min-max scaled
    over its candidates (fewer than EXOCORTEX_CANDIDATES here: all of them), recency the user's
    curve at the turn's page age, the oldest page (40 days) setting the span."""
    found = turn_relevance(user=user, query=CAT_QUERY, query_vector=query_vector, now=now)
    relevance = min_max(dict(zip(found.keys, found.final.tolist(), strict=True)))
    age_by_seq = {page.seq: age * 86400 for page, age in zip(pages, CAT_AGES_DAYS, strict=True)}
    return {key: (relevance[key], hand_recency(age_by_seq[found.facts[key].seq], oldest=40.0 * 86400,
                                               short=30 * 60.0, floor_lt=0.05))
            for key in found.keys}


@pytest.mark.slow
def test_weights_through_both_policies_match_hand_computed_values(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    now = timezone.now()
    pages, qvec = cat_store(user, now)
    assert DialoguePage.objects.filter(user=user, tier=Tier.MTM).count() == 3
    expected = expected_terms(user, pages, qvec, now)
    assert len(expected) == 6  # the MTM pages' utterances: the user's and the reply's
    assert min(rel for rel, _ in expected.values()) == 0.0 and max(rel for rel, _ in expected.values()) == 1.0
    for policy, formula in (("exocortex", lambda rel, rec: rel * (1 - rec) + rec),
                            ("generative_agents", lambda rel, rec: rel * rec)):
        recall = recall_for_query(user=user, query=CAT_QUERY, query_vector=qvec, policy=policy, now=now,
                                  update_heat=False)
        items = [i for i in recall.items if i.kind == "turn"]
        assert {i.ref for i in items} == set(expected), policy
        for item in items:
            relevance, recency = expected[item.ref]
            assert item.breakdown["relevance"] == pytest.approx(relevance, abs=2e-4), policy
            assert item.breakdown["recency"] == pytest.approx(recency, abs=2e-4), policy
            assert item.breakdown["type_weight"] == 1.0
            assert item.score == pytest.approx(formula(relevance, recency), abs=1e-4), policy
            assert item.breakdown["weight"] == pytest.approx(item.score, abs=1e-4)
            assert len(item.source_ids) <= 1 and ": " in item.text  # "speaker: words", one utterance
        assert [i.score for i in items] == sorted((i.score for i in items), reverse=True)
        trace = recall.trace.payload
        assert recall.trace.policy == policy and trace["decay"]["short_term_minutes"] == 30.0
        assert trace["decay"]["long_term_threshold"] == 0.05 and trace["decay"]["oldest_age_days"] == 40.0
        assert {w["id"] for w in trace["weights"]} == set(expected)
        assert {t["id"] for t in trace["turns"]} == set(expected)
        assert trace["candidates"] == {"turns": 6, "recollections": 0}
        assert ("nostalgia" in trace["weights"][0]) == (policy == "exocortex")
    # An old relevant memory is not drowned: the 40-day-old line about the cat outranks the 12-day-old
    # one about the cello, and its Exocortex weight keeps most of its relevance.
    items = recall_for_query(user=user, query=CAT_QUERY, query_vector=qvec, policy="exocortex", now=now,
                             update_heat=False, record_trace=False).items
    order = [i.text.split(": ", 1)[-1] for i in items if i.kind == "turn"]
    assert order.index(CAT[0]) < order.index(CAT[1])
    cat_turn = next(i for i in items if i.kind == "turn" and i.text.endswith(CAT[0]))
    relevance, recency = expected[cat_turn.ref]
    assert relevance * (1 - recency) + recency > 0.9 * relevance > 10 * relevance * recency


@pytest.fixture
def cat_case(make_user, memory_env):
    """The cat store, asked CAT_QUERY now: (weights(policy): ref -> breakdown and score of each
    recalled utterance, the hand-computed (relevance, recency) by ref)."""
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    now = timezone.now()
    pages, qvec = cat_store(user, now)

    def weights(policy: str) -> dict[str, dict]:
        recall = recall_for_query(user=user, query=CAT_QUERY, query_vector=qvec, policy=policy, now=now,
                                  update_heat=False, record_trace=False)
        return {i.ref: {**i.breakdown, "score": i.score} for i in recall.items if i.kind == "turn"}

    return weights, expected_terms(user, pages, qvec, now)


@pytest.mark.slow
def test_without_decay_the_weights_lose_exactly_the_recency_term(cat_case, monkeypatch):
    from memory.policies.exocortex import ranking as policy_module

    weights, expected = cat_case
    with_decay = weights("exocortex")
    monkeypatch.setattr(policy_module, "DECAY", False)
    without = weights("exocortex")
    # the 12-day-old cello line: recency ~0.2 of its weight on, none off
    cello = next(key for key in expected if key in with_decay and with_decay[key]["age_days"] == pytest.approx(12.0))
    relevance, recency = expected[cello]
    assert recency > 0.1
    assert with_decay[cello]["score"] == pytest.approx(relevance * (1 - recency) + recency, abs=1e-4)
    assert without[cello]["recency"] == 0.0 and without[cello]["nostalgia"] == 1.0
    assert without[cello]["score"] == pytest.approx(relevance, abs=1e-4)
    assert with_decay[cello]["score"] - without[cello]["score"] == pytest.approx(recency * (1 - relevance), abs=1e-4)
    # with recency off, the Exocortex ranks by relevance alone
    assert all(without[key]["score"] == pytest.approx(expected[key][0], abs=1e-4) for key in expected)
    scores = [entry["score"] for entry in without.values()]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.slow
def test_without_decay_generative_agents_rank_by_relevance_alone(cat_case, monkeypatch):
    from memory.policies.exocortex import ranking as policy_module

    weights, expected = cat_case
    monkeypatch.setattr(policy_module, "DECAY", False)
    # recency 1, the product's neutral value: relevance · type weight
    assert {ref: entry["score"] for ref, entry in weights("generative_agents").items()} == pytest.approx(
        {key: rel for key, (rel, _) in expected.items()}, abs=1e-4)


def test_decay_settings_are_validated_and_bad_input_changes_nothing(make_user):
    user = make_user()
    decay_settings_update(user=user, short_term_minutes=45, long_term_threshold=0.02)
    for minutes, threshold in ((0, 0.01), (-5, 0.01), (60 * 24 * 8, 0.01), (25, 0), (25, 0.95), (25, -0.1),
                               ("soon", 0.01), (25, float("nan")), (float("inf"), 0.01)):
        with pytest.raises(MemoryInputError):
            decay_settings_update(user=user, short_term_minutes=minutes, long_term_threshold=threshold)
    state = UserMemoryState.objects.get(user=user)
    assert (state.short_term_minutes, state.long_term_threshold) == (45.0, 0.02)
    other = make_user()
    assert not UserMemoryState.objects.filter(user=other).exists() or \
        UserMemoryState.objects.get(user=other).short_term_minutes == 25.0


LISBON = ["In May I walked the steep streets of Alfama in Lisbon and heard fado at night.",
          "We took the old yellow tram 28 through Lisbon to the castle of São Jorge.",
          "In Lisbon we ate pastéis de nata in Belém by the river Tagus.",
          "The tiles on the Lisbon houses were blue and white, azulejos everywhere."]
BREAD = ["My sourdough starter needs feeding with rye flour every morning.",
         "The sourdough loaf needs a long cold proof in the fridge overnight.",
         "I bake my sourdough bread in a cast iron pot at 250 degrees.",
         "Scoring the sourdough dough with a razor blade gives a nice ear."]


@pytest.mark.slow
def test_a_recollection_is_stored_with_edges_and_recalled_on_a_later_turn(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=2, EXOCORTEX_RECOLLECTIONS="always")
    user, stranger = make_user(), make_user()
    pages = {}
    for text in [*LISBON[:2], *BREAD[:2], *LISBON[2:], *BREAD[2:], "The weather is grey today."]:
        pages[text] = say(user, text)
    assert not Recollection.objects.exists()  # the pool so far: nothing clusters around grey weather
    say(user, "Remind me what I did on my trip to Lisbon?")
    made = list(Recollection.objects.filter(user=user))
    assert made, LifecycleEvent.objects.filter(kind=LifecycleEvent.Kind.RECOLLECTED).first()
    lisbon_ids = {str(pages[t].id) for t in LISBON}
    best = max(made, key=lambda r: r.prompt_similarity)
    assert set(best.members) <= lisbon_ids and len(best.members) >= 2
    assert "Lisbon" in best.text and "Recollection for" in best.text
    node = MemoryNode.objects.get(user=user, kind=MemoryNode.Kind.RECOLLECTION, object_id=str(best.id))
    edges = MemoryEdge.objects.filter(source=node, relation="recollects")
    assert {e.target.object_id for e in edges} == set(best.members)
    assert sum(e.weight for e in edges) == pytest.approx(1.0)
    event = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.RECOLLECTED).first()
    assert str(best.id) in event.payload["recollections"]
    assert "inter_cluster_similarity" in event.payload["guard"] and event.payload["guard"]["clusters"]
    # The next turn recalls it, through the index, with the recollection's type weight.
    recall = recall_for_query(user=user, query="What did I see in Lisbon?", policy="exocortex")
    found = [i for i in recall.items if i.kind == "recollection"]
    assert str(best.id) in {i.ref for i in found}
    assert found[0].breakdown["type_weight"] == pytest.approx(1.1)
    assert any(w["kind"] == "recollection" for w in recall.trace.payload["weights"])
    # The inspector's provenance view shows it with its members, for its owner only.
    client = Client()
    client.force_login(user)
    shown = client.get(f"/inspector/{user.username}/provenance/recollection/{best.id}/")
    assert shown.status_code == 200 and b"recollects" in shown.content
    for member in DialoguePage.objects.filter(id__in=best.members):
        assert member.query[:30].encode() in shown.content
    client.force_login(stranger)
    assert client.get(f"/inspector/{user.username}/provenance/recollection/{best.id}/").status_code == 404
    # Another user never sees it.
    other = recall_for_query(user=stranger, query="What did I see in Lisbon?", policy="exocortex")
    assert not [i for i in other.items if i.kind == "recollection"]
    # A recollection quotes its members: repressing one hides the recollection from every recall.
    memory_repress(user=user, kind="page", ident=best.members[0])
    for policy in ("exocortex", "generative_agents"):
        again = recall_for_query(user=user, query="What did I see in Lisbon?", policy=policy, record_trace=False)
        assert str(best.id) not in {i.ref for i in again.items}, policy
    # Deleting a member deletes the recollection along its provenance: row, node, edges and point.
    memory_repress(user=user, kind="page", ident=best.members[0], repressed=False)
    doomed = best.members[-1]
    radius = memory_delete(user=user, kind="page", ident=doomed, dry_run=True)
    assert str(best.id) in {r["id"] for r in radius.recollections_removed}
    memory_delete(user=user, kind="page", ident=doomed)
    assert not Recollection.objects.filter(id=best.id).exists()
    assert not MemoryNode.objects.filter(user=user, kind=MemoryNode.Kind.RECOLLECTION, object_id=str(best.id)).exists()
    assert not configured.vector_index().get_vectors(user_id=str(user.pk), ids=[str(best.id)])
