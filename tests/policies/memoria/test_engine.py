"""Memoria's recall math against hand-computed values: the score and its terms, importance by EWMA,
sona similarity, budgeted expansion over a small DAG (a diamond, timestamp ties, exhaustion) and
the order recalled memories are shown in."""

from __future__ import annotations

import math

import pytest

from memory.engine.ipld import Dependency, node_build, node_cid
from memory.policies.memoria.engine.expansion import (
    CycleError,
    GraphNode,
    Pull,
    budget_expand,
    graph_reader,
    topological_order,
)
from memory.policies.memoria.engine.scoring import (
    GA_HALF_LIFE_S,
    Candidate,
    MemoriaParams,
    fulltext_terms,
    importance_term,
    importance_update,
    memoria_rank,
    memoria_recall,
    recency_term,
    sona_similarity,
)

NOW = 1_700_000_000.0
HOUR = 3600.0


# ------------------------------------------------------------------ the terms

def test_recency_halves_every_half_life_and_is_zero_without_a_timestamp():
    assert recency_term(timestamp=NOW, now=NOW, half_life_s=HOUR) == 1.0
    assert recency_term(timestamp=NOW - HOUR, now=NOW, half_life_s=HOUR) == 0.5
    assert recency_term(timestamp=NOW - 3 * HOUR, now=NOW, half_life_s=HOUR) == 0.125
    assert recency_term(timestamp=None, now=NOW, half_life_s=HOUR) == 0.0
    assert recency_term(timestamp=NOW + HOUR, now=NOW, half_life_s=HOUR) == 1.0  # clock skew counts as now


def test_default_recency_is_generative_agents_0995_per_hour():
    assert GA_HALF_LIFE_S / HOUR == pytest.approx(138.283, abs=1e-3)
    assert recency_term(timestamp=NOW - HOUR, now=NOW, half_life_s=GA_HALF_LIFE_S) == pytest.approx(0.995)
    assert recency_term(timestamp=NOW - 24 * HOUR, now=NOW, half_life_s=GA_HALF_LIFE_S) == pytest.approx(0.995**24)


def test_fulltext_scores_are_divided_by_the_querys_best():
    assert fulltext_terms([2.0, 0.0, 8.0]) == [0.25, 0.0, 1.0]
    assert fulltext_terms([0.0, 0.0]) == [0.0, 0.0]
    assert fulltext_terms([]) == []
    with pytest.raises(ValueError, match="larger = better"):
        fulltext_terms([1.0, -3.2])  # a "smaller is better" rank must be negated first
    with pytest.raises(ValueError):
        fulltext_terms([float("nan")])


def test_importance_scale_and_prior():
    assert importance_term(1) == 0.0
    assert importance_term(10) == 1.0
    assert importance_term(7.3) == pytest.approx(0.7)
    assert importance_term(None) == 0.5  # never rated: 5.5, the middle
    assert importance_term(None, prior=1.0) == 0.0
    with pytest.raises(ValueError, match="from 1 to 10"):
        importance_term(0.5)


def test_importance_update_is_an_ewma_of_ratings():
    assert importance_update(old=5.5, rating=9, alpha=0.3) == pytest.approx(6.55)  # 0.7·5.5 + 0.3·9
    value = 1.0
    for expected in (5.5, 7.75, 8.875):  # alpha 0.5, three ratings of 10
        value = importance_update(old=value, rating=10, alpha=0.5)
        assert value == expected
    assert importance_update(old=4.0, rating=7, alpha=1.0) == 7.0


@pytest.mark.parametrize("rating", [0, 11, 7.5, True, "8", None])
def test_ratings_outside_1_to_10_are_refused(rating):
    with pytest.raises(ValueError, match="a rating is an integer from 1 to 10"):
        importance_update(old=5.0, rating=rating, alpha=0.3)


def test_importance_update_checks_alpha_and_old():
    with pytest.raises(ValueError, match="alpha"):
        importance_update(old=5.0, rating=5, alpha=0.0)
    with pytest.raises(ValueError, match="alpha"):
        importance_update(old=5.0, rating=5, alpha=1.5)
    with pytest.raises(ValueError, match="old importance"):
        importance_update(old=0.0, rating=5, alpha=0.3)


def test_sona_similarity_is_the_best_cosine_over_the_memorys_sonas():
    coach = (1.0, 0.0)
    assert sona_similarity(current=coach, memory_sonas=[(0.0, 1.0), (1.0, 1.0)]) == pytest.approx(1 / math.sqrt(2))
    assert sona_similarity(current=coach, memory_sonas=[(0.0, 1.0), (3.0, 0.0)]) == pytest.approx(1.0)
    assert sona_similarity(current=coach, memory_sonas=[(-1.0, 0.0)]) == 0.0  # opposite: nothing, not negative
    assert sona_similarity(current=coach, memory_sonas=[]) == 0.0  # in no sona
    assert sona_similarity(current=(), memory_sonas=[(1.0, 0.0)]) == 0.0  # no current sona


# ------------------------------------------------------------------ the score

def three_candidates() -> list[Candidate]:
    return [
        # recency 0.5, vector 0.8, fulltext 4/8 = 0.5, importance (7.3-1)/9 = 0.7, sona 0.9
        Candidate(cid="a", timestamp=NOW - HOUR, cosine=0.8, fulltext=4.0, importance=7.3, sona=0.9),
        # recency 0.25, vector 0 (negative cosine), fulltext 1, importance 0.5 (prior), sona 0
        Candidate(cid="b", timestamp=NOW - 2 * HOUR, cosine=-0.2, fulltext=8.0, importance=None, sona=0.0),
        # recency 0 (no timestamp), vector 0.6, fulltext 0, importance 1, sona 1
        Candidate(cid="c", timestamp=None, cosine=0.6, fulltext=0.0, importance=10, sona=1.0),
    ]


def test_scores_with_equal_weights():
    ranked = memoria_rank(candidates=three_candidates(), now=NOW, params=MemoriaParams(recency_half_life_s=HOUR))
    assert [s.candidate.cid for s in ranked] == ["a", "c", "b"]
    a, c, b = ranked
    assert a.breakdown.terms == pytest.approx(
        {"recency": 0.5, "vector": 0.8, "fulltext": 0.5, "importance": 0.7, "sona": 0.9})
    assert a.breakdown.score == pytest.approx(3.4)
    assert b.breakdown.terms == pytest.approx(
        {"recency": 0.25, "vector": 0.0, "fulltext": 1.0, "importance": 0.5, "sona": 0.0})
    assert b.breakdown.score == pytest.approx(1.75)
    assert c.breakdown.score == pytest.approx(2.6)
    assert a.budget == pytest.approx(3.4 / 5)  # score over the highest possible (five weights of 1)


def test_scores_with_chosen_weights():
    params = MemoriaParams(recency_half_life_s=HOUR, w_recency=2, w_vector=3, w_fts=1, w_importance=0.5, w_sona=0.5)
    ranked = {s.candidate.cid: s for s in memoria_rank(candidates=three_candidates(), now=NOW, params=params)}
    assert ranked["a"].breakdown.weighted == pytest.approx(
        {"recency": 1.0, "vector": 2.4, "fulltext": 0.5, "importance": 0.35, "sona": 0.45})
    assert ranked["a"].breakdown.score == pytest.approx(4.7)
    assert ranked["b"].breakdown.score == pytest.approx(1.75)  # 0.5 + 0 + 1 + 0.25 + 0
    assert ranked["c"].breakdown.score == pytest.approx(2.8)  # 0 + 1.8 + 0 + 0.5 + 0.5
    assert ranked["a"].budget == pytest.approx(4.7 / 7)
    trace = ranked["a"].breakdown.as_dict()
    assert trace["vector"] == pytest.approx(0.8) and trace["w_vector"] == pytest.approx(2.4)
    assert trace["score"] == pytest.approx(4.7)


def test_ranking_ties_go_to_the_newer_memory_then_the_cid():
    params = MemoriaParams(w_recency=0.0)  # recency out, so that age alone cannot separate them
    same = dict(cosine=0.5, fulltext=0.0, importance=5.0)
    ranked = memoria_rank(candidates=[Candidate(cid="old", timestamp=NOW - HOUR, **same),
                                      Candidate(cid="none", timestamp=None, **same),
                                      Candidate(cid="y", timestamp=NOW, **same),
                                      Candidate(cid="x", timestamp=NOW, **same)], now=NOW, params=params)
    assert [s.candidate.cid for s in ranked] == ["x", "y", "old", "none"]


def test_bad_candidates_and_params_are_refused():
    with pytest.raises(ValueError, match="twice"):
        memoria_rank(candidates=[Candidate(cid="a", timestamp=None)] * 2, now=NOW, params=MemoriaParams())
    with pytest.raises(ValueError, match="cosine"):
        memoria_rank(candidates=[Candidate(cid="a", timestamp=None, cosine=float("nan"))], now=NOW,
                     params=MemoriaParams())
    with pytest.raises(ValueError, match="weights"):
        MemoriaParams(w_recency=0, w_vector=0, w_fts=0, w_importance=0, w_sona=0)
    with pytest.raises(ValueError, match="weights"):
        MemoriaParams(w_vector=-1)
    with pytest.raises(ValueError, match="pass_on"):
        MemoriaParams(pass_on=1.5)


# ------------------------------------------------------------------ budgeted expansion

def diamond() -> dict[str, GraphNode]:
    """S depends on L and R, both depend on D (a diamond), D on E; T, a second seed, on D. R holds the
    larger budget, so it offers D its smaller share first; L's larger offer must win.

    Every weight and budget is a binary fraction, so the expected budgets are exact."""
    return {
        "S": GraphNode(100.0, {"left": Dependency(0.75, "L"), "right": Dependency(1.0, "R")}),
        "L": GraphNode(60.0, {"shared": Dependency(1.0, "D")}),
        "R": GraphNode(40.0, {"shared": Dependency(0.25, "D")}),
        "D": GraphNode(10.0, {"root": Dependency(0.25, "E")}),
        "E": GraphNode(None),
        "T": GraphNode(5.0, {"about": Dependency(1.0, "D")}),
    }


def test_expansion_over_a_diamond():
    batches: list[frozenset[str]] = []
    graph_read = graph_reader(diamond())

    def read(cids: frozenset[str]):
        batches.append(cids)
        return graph_read(cids)

    expansion = budget_expand(seeds={"S": 1.0, "T": 0.125}, read=read, pass_on=0.5, min_budget=0.05, max_pulled=10)
    # S: 1; L: 1·0.5·0.75; R: 1·0.5·1; D by L: 0.375·0.5·1 (by R only 0.5·0.5·0.25, by T 0.125·0.5·1)
    assert expansion.budgets == {"S": 1.0, "L": 0.375, "R": 0.5, "D": 0.1875, "T": 0.125}
    assert expansion.pulled_by == {
        "L": Pull(source="S", target="L", name="left", weight=0.75, budget=0.375),
        "R": Pull(source="S", target="R", name="right", weight=1.0, budget=0.5),
        "D": Pull(source="L", target="D", name="shared", weight=1.0, budget=0.1875),
    }
    # D passes on 0.1875·0.5·0.25 = 0.0234375 < 0.05: E is where the budget ran out
    assert expansion.exhausted == (Pull(source="D", target="E", name="root", weight=0.25, budget=0.0234375),)
    assert [(p.source, p.target) for p in expansion.edges] == [("L", "D"), ("R", "D"), ("S", "L"), ("S", "R"),
                                                                ("T", "D")]
    # dependencies first; D's dependents are then free in any order, so the oldest goes first:
    # T (5) before R (40) before L (60), whatever their budgets; S needs both L and R
    assert expansion.order == ("D", "T", "R", "L", "S")
    # one read per step of the frontier, and nothing read that was not then used (E never is)
    assert batches == [frozenset({"S", "T"}), frozenset({"L", "R"}), frozenset({"D"})]


def test_expansion_is_deterministic_whatever_the_input_order():
    graph = diamond()
    backwards = {cid: GraphNode(node.timestamp, dict(reversed(list(node.dependencies.items()))))
                 for cid, node in reversed(list(graph.items()))}
    one = budget_expand(seeds={"S": 1.0, "T": 0.125}, read=graph_reader(graph), pass_on=0.5, min_budget=0.05,
                        max_pulled=10)
    two = budget_expand(seeds={"T": 0.125, "S": 1.0}, read=graph_reader(backwards), pass_on=0.5, min_budget=0.05,
                        max_pulled=10)
    assert (one.order, one.budgets, one.pulled_by, one.edges) == (two.order, two.budgets, two.pulled_by, two.edges)


def chain(length: int, weight: float) -> dict[str, GraphNode]:
    """c0 depends on c1, c1 on c2, ...; the later in the chain, the NEWER (topology must beat time)."""
    return {f"c{i}": GraphNode(float(i), {"previous": Dependency(weight, f"c{i + 1}")} if i + 1 < length else {})
            for i in range(length)}


def test_budget_exhaustion_along_a_chain():
    expansion = budget_expand(seeds={"c0": 1.0}, read=graph_reader(chain(8, 1.0)), pass_on=0.5, min_budget=0.1,
                              max_pulled=10)
    assert expansion.budgets == {"c0": 1.0, "c1": 0.5, "c2": 0.25, "c3": 0.125}
    assert expansion.exhausted == (Pull(source="c3", target="c4", name="previous", weight=1.0, budget=0.0625),)
    assert expansion.order == ("c3", "c2", "c1", "c0")


def test_with_pass_on_1_the_budget_is_multiplied_by_the_weight_alone():
    expansion = budget_expand(seeds={"c0": 0.8}, read=graph_reader(chain(8, 0.5)), pass_on=1.0, min_budget=0.1,
                              max_pulled=10)
    assert expansion.budgets == pytest.approx({"c0": 0.8, "c1": 0.4, "c2": 0.2, "c3": 0.1})
    # ... and runs to the end of the chain when nothing is lost on the way
    whole = budget_expand(seeds={"c0": 0.8}, read=graph_reader(chain(8, 1.0)), pass_on=1.0, min_budget=0.1,
                          max_pulled=10)
    assert whole.order == tuple(f"c{i}" for i in reversed(range(8)))
    assert whole.exhausted == ()


def test_a_weak_seed_is_recalled_but_not_expanded():
    expansion = budget_expand(seeds={"c0": 0.05}, read=graph_reader(chain(3, 1.0)), pass_on=0.5, min_budget=0.1,
                              max_pulled=10)
    assert expansion.budgets == {"c0": 0.05}
    assert expansion.exhausted == ()


def test_a_seed_reached_as_a_dependency_keeps_the_larger_budget():
    graph = chain(3, 1.0)
    expansion = budget_expand(seeds={"c0": 1.0, "c1": 0.1}, read=graph_reader(graph), pass_on=0.5, min_budget=0.05,
                              max_pulled=10)
    assert expansion.budgets == {"c0": 1.0, "c1": 0.5, "c2": 0.25}
    assert expansion.pulled_by["c1"].source == "c0"


def test_max_pulled_keeps_the_largest_budgets():
    star = {"s": GraphNode(1.0, {f"d{i}": Dependency(w, f"d{i}") for i, w in enumerate((0.25, 1.0, 0.5, 0.75))})}
    star.update({f"d{i}": GraphNode(0.0) for i in range(4)})
    expansion = budget_expand(seeds={"s": 1.0}, read=graph_reader(star), pass_on=1.0, min_budget=0.01, max_pulled=2)
    assert set(expansion.budgets) == {"s", "d1", "d3"}  # weights 1.0 and 0.75
    assert expansion.cut == ("d2", "d0")


def test_memories_the_reader_leaves_out_are_never_included_nor_passed_through():
    graph = {"s": GraphNode(3.0, {"a": Dependency(1.0, "repressed"), "b": Dependency(1.0, "gone")}),
             "repressed": GraphNode(2.0, {"x": Dependency(1.0, "behind")}),
             "behind": GraphNode(1.0)}
    visible = {cid: node for cid, node in graph.items() if cid != "repressed"}
    expansion = budget_expand(seeds={"s": 1.0, "hidden-seed": 1.0}, read=graph_reader(visible), pass_on=1.0,
                              min_budget=0.1, max_pulled=10)
    assert expansion.budgets == {"s": 1.0}
    assert expansion.skipped == frozenset({"repressed", "gone", "hidden-seed"})
    assert expansion.order == ("s",)


def test_a_cycle_is_refused_with_the_cycle_named():
    graph = {"a": GraphNode(1.0, {"x": Dependency(1.0, "b")}), "b": GraphNode(2.0, {"y": Dependency(1.0, "c")}),
             "c": GraphNode(3.0, {"z": Dependency(1.0, "a")})}
    with pytest.raises(CycleError, match="dependency cycle: a -> b -> c -> a"):
        budget_expand(seeds={"b": 1.0}, read=graph_reader(graph), pass_on=1.0, min_budget=0.1, max_pulled=10)
    with pytest.raises(CycleError, match="a -> a"):
        topological_order(timestamps={"a": 1.0}, edges=[("a", "a")])


def test_topological_order_ties_by_timestamp_no_timestamp_first_then_cid():
    timestamps = {"n2": 20.0, "n1": 10.0, "none-b": None, "none-a": None, "t10": 10.0, "top": 5.0}
    edges = [("top", "n1"), ("top", "n2")]  # top depends on n1 and n2, so it goes after them despite being oldest
    assert topological_order(timestamps=timestamps, edges=edges) == ("none-a", "none-b", "n1", "t10", "n2", "top")
    with pytest.raises(ValueError, match="leaves the memories"):
        topological_order(timestamps={"a": 1.0}, edges=[("a", "b")])


def test_bad_expansion_input_is_refused():
    read = graph_reader(chain(2, 1.0))
    with pytest.raises(ValueError, match="pass_on"):
        budget_expand(seeds={"c0": 1.0}, read=read, pass_on=0.0, min_budget=0.1, max_pulled=1)
    with pytest.raises(ValueError, match="min_budget"):
        budget_expand(seeds={"c0": 1.0}, read=read, pass_on=0.5, min_budget=0.0, max_pulled=1)
    with pytest.raises(ValueError, match="budget"):
        budget_expand(seeds={"c0": float("nan")}, read=read, pass_on=0.5, min_budget=0.1, max_pulled=1)


# ------------------------------------------------------------------ the whole recall, over real nodes

def test_memoria_recall_over_content_addressed_nodes():
    first = node_build(kind="page", data={"text": "I adopted a puppy."}, timestamp=NOW - 2 * HOUR)
    second = node_build(kind="page", data={"text": "Biscuit is four months old."}, timestamp=NOW - HOUR,
                        dependencies={"previous": (1.0, node_cid(first))})
    other = node_build(kind="page", data={"text": "I like jazz."}, timestamp=NOW)
    graph = {node_cid(node): node for node in (first, second, other)}
    candidates = [
        Candidate(cid=node_cid(second), timestamp=second.timestamp, cosine=0.9, fulltext=3.0, importance=10, sona=1.0),
        Candidate(cid=node_cid(other), timestamp=other.timestamp, cosine=0.1, fulltext=0.0, importance=1, sona=0.0),
    ]
    params = MemoriaParams(recency_half_life_s=HOUR, top_k=1, pass_on=0.5, min_budget=0.05)
    recall = memoria_recall(candidates=candidates, now=NOW, params=params, read=graph_reader(graph))
    # second: recency 0.5 + vector 0.9 + fulltext 1 + importance 1 + sona 1 = 4.4 of 5: budget 0.88
    assert [s.candidate.cid for s in recall.seeds] == [node_cid(second)]
    assert recall.seeds[0].budget == pytest.approx(0.88)
    assert recall.expansion.budgets[node_cid(first)] == pytest.approx(0.44)
    assert recall.order == (node_cid(first), node_cid(second))  # the page it follows comes first
    trace = recall.trace()
    assert trace["seeds"][0]["cid"] == node_cid(second)
    assert trace["seeds"][0]["score"] == pytest.approx(4.4) and trace["seeds"][0]["budget"] == pytest.approx(0.88)
    assert trace["expansion"]["pulled_by"][node_cid(first)]["source"] == node_cid(second)
    assert trace["expansion"]["order"] == list(recall.order)
