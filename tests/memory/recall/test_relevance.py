"""The relevance core under every recall policy over a real store (memory/engine/relevance.py,
read through memory/recall/candidates.py by memory/recall/relevance.py): the time boost for the
turns said in the question's period, the second hop along the names the first hits share, turn
pairs, smoothing by meaning, long-term facts and the feedback query. The same parts by hand on
plain data, and the scores read back per page, scaled and ranked: tests/engine/test_relevance.py."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memory.adapters import configured
from memory.engine.hybrid_scoring import PART_NAMES, HybridParams
from memory.engine.relevance import TurnRelevance
from memory.models import Tier
from memory.recall.relevance import keyword_turns, turn_relevance

# ------------------------------------------------------------------ over a real store

SESSIONS = {"sample_id": "t", "conversation": {
    "speaker_a": "Caroline", "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I met Jolene at the Pride parade downtown."},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds like a lovely day out."},
    ],
    "session_2_date_time": "10:00 am on 20 June, 2023",
    "session_2": [
        {"speaker": "Melanie", "dia_id": "D2:1", "text": "Jolene moved to Portland last month."},
        {"speaker": "Caroline", "dia_id": "D2:2", "text": "I painted a sunset over the lake."},
    ]}}
ASKED_AT = datetime(2023, 7, 1, tzinfo=UTC)
BOTH = (Tier.MTM, Tier.STM)  # the second session stays in STM


@pytest.fixture
def two_sessions(make_user, memory_env):
    from memory.formats.locomo import parse_sample
    from memory.services.importing import conversation_import

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    conversation_import(user=user, conversation=parse_sample(SESSIONS, 0))
    return user


def relevance(user, query: str) -> TurnRelevance:
    return turn_relevance(user=user, query=query, query_vector=configured.embedder().embed([query])[0],
                          now=ASKED_AT, tiers=BOTH)


def by_slot(found: TurnRelevance) -> dict[tuple[int, int], int]:
    return {(found.facts[key].seq, found.facts[key].pos): i for i, key in enumerate(found.keys)}


def test_the_turns_said_in_the_questions_month_gain_the_time_boost_after_smoothing(two_sessions):
    found = relevance(two_sessions, "What did Caroline paint in June 2023?")
    assert found.window.words == "June 2023"
    slots = by_slot(found)
    assert set(slots) == {(1, 0), (1, 1), (2, 0), (2, 1)}
    time = PART_NAMES.index("time")
    assert {slot: found.parts[i, time] for slot, i in slots.items()} == {(1, 0): 0.0, (1, 1): 0.0,
                                                                          (2, 0): 2.0, (2, 1): 2.0}
    # By hand: each turn's content (dense, sparse, feedback, hop) plus 0.3 of the previous turn's and
    # 0.1 of the next turn's positive content (the four turns follow each other), then the boosts,
    # then what turn pairs and smoothing by meaning lent (their own tests below).
    params = HybridParams()
    order = [slots[slot] for slot in sorted(slots)]
    content = [float(found.parts[i, :4].sum()) for i in order]
    for at, i in enumerate(order):
        expected = (content[at] + float(found.parts[i, 4:].sum()) + float(found.meaning[i])
                    + float(found.answer[i]))
        if at > 0:
            expected += params.previous_weight * max(0.0, content[at - 1])
        if at < len(order) - 1:
            expected += params.next_weight * max(0.0, content[at + 1])
        assert found.final[i] == pytest.approx(expected)
    # the painting, said in June by the named participant, comes first
    assert found.ranked(1) == [slots[(2, 1)]]


def test_smoothing_by_meaning_lends_each_turn_the_mean_of_its_nearest_turns_scores(two_sessions):
    """Four candidates, three neighbours each: every turn's neighbours are the three others, so by
    hand each gains meaning_weight times the mean of their positive scores before the lift."""
    query = "What did Caroline paint?"
    found = relevance(two_sessions, query)
    before = found.final - found.meaning
    weight = HybridParams().meaning_weight
    assert len(found.keys) == 4 and HybridParams().meaning_neighbours == 3
    for i in range(4):
        others = [max(0.0, float(before[j])) for j in range(4) if j != i]
        assert found.meaning[i] == pytest.approx(weight * sum(others) / 3)
    off = turn_relevance(user=two_sessions, query=query, query_vector=configured.embedder().embed([query])[0],
                         now=ASKED_AT, tiers=BOTH, params=HybridParams(meaning_weight=0.0))
    assert off.meaning is None
    assert dict(zip(off.keys, off.final.tolist(), strict=True)) == pytest.approx(
        dict(zip(found.keys, before.tolist(), strict=True)))
    assert found.breakdown(0)["meaning"] == pytest.approx(round(float(found.meaning[0]), 4))


PAIRS = {"sample_id": "p", "conversation": {
    "speaker_a": "Caroline", "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "Your dogs look so happy! What are their names?"},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "Max and Daisy."},
        {"speaker": "Caroline", "dia_id": "D1:3", "text": "I went to a pottery class on Friday."},
        {"speaker": "Melanie", "dia_id": "D1:4", "text": "Was it fun? I loved my first class."},
        {"speaker": "Caroline", "dia_id": "D1:5", "text": "It was, I made a bowl."},
    ]}}


@pytest.fixture
def question_and_answer(make_user, memory_env):
    from memory.formats.locomo import parse_sample
    from memory.services.importing import conversation_import

    user = make_user()
    conversation_import(user=user, conversation=parse_sample(PAIRS, 0))
    return user


@pytest.mark.real_adapters  # that the question about the names matches is MiniLM's reading (by hand on plain
# data: tests/engine/test_relevance.py)
def test_a_question_among_the_best_lends_its_answer_a_share_of_its_content(question_and_answer):
    """Five turns, all among the best 10: the two that ask (D1:1, D1:4) each hand the next turn,
    said by the other participant, pair_weight times their positive content (dense, sparse,
    feedback, hop); no other turn gains anything. Without the part, `final` is the rest."""
    query = "What are the names of Melanie's dogs?"
    vector = configured.embedder().embed([query])[0]
    found = turn_relevance(user=question_and_answer, query=query, query_vector=vector, now=ASKED_AT, tiers=BOTH)
    slots = by_slot(found)
    assert len(slots) == 5 and HybridParams().pair_questions >= 5
    order = [slots[slot] for slot in sorted(slots)]  # D1:1 .. D1:5 in conversation order
    content = [float(found.parts[i, :4].sum()) for i in order]
    weight = HybridParams().pair_weight
    expected = [0.0, weight * max(0.0, content[0]), 0.0, 0.0, weight * max(0.0, content[3])]
    assert [float(found.answer[i]) for i in order] == pytest.approx(expected)
    assert expected[1] > 0  # the question about the names matches, so its short answer gains
    assert found.breakdown(order[1])["answer"] == pytest.approx(round(expected[1], 4))
    off = turn_relevance(user=question_and_answer, query=query, query_vector=vector, now=ASKED_AT, tiers=BOTH,
                         params=HybridParams(pair_weight=0.0, meaning_weight=0.0))
    assert off.answer is None
    on = turn_relevance(user=question_and_answer, query=query, query_vector=vector, now=ASKED_AT, tiers=BOTH,
                        params=HybridParams(meaning_weight=0.0))
    assert dict(zip(on.keys, (on.final - on.answer).tolist(), strict=True)) == pytest.approx(
        dict(zip(off.keys, off.final.tolist(), strict=True)))


@pytest.mark.real_adapters  # the answer's lift needs the question to match, by MiniLM
def test_turn_pairs_read_whether_a_turn_asks_from_its_point_not_its_page(question_and_answer, monkeypatch):
    """Indexing writes whether each turn asks and whether it ends its page into its point; turn
    pairs read them there, for the best turns only, and read no page. A point indexed before
    them has its page read: the lift is the same either way."""
    from dataclasses import replace

    from memory.engine.relevance import lift_answers
    from memory.recall import rows
    from memory.recall.candidates import IndexCandidates

    query = "What are the names of Melanie's dogs?"
    vector = configured.embedder().embed([query])[0]
    found = turn_relevance(user=question_and_answer, query=query, query_vector=vector, now=ASKED_AT, tiers=BOTH,
                           params=HybridParams(meaning_weight=0.0))
    slots = by_slot(found)
    index = configured.vector_index()
    payloads = index.get_payloads(user_id=str(question_and_answer.pk), ids=found.keys, fields=("asks", "last"))
    # D1:1 asks and D1:2 ends the first page; D1:4 asks and ends the second, so its answer is
    # the first turn of the next page
    assert [payloads[found.keys[slots[slot]]] for slot in sorted(slots)] == [
        {"asks": True, "last": False}, {"asks": False, "last": True}, {"asks": False, "last": False},
        {"asks": True, "last": True}, {"asks": False, "last": True}]
    reads: list = []
    read = rows.rows
    monkeypatch.setattr(rows, "rows",
                        lambda model, fields, **kw: reads.append(kw.get("among")) or read(model, fields, **kw))

    def lifted(on) -> np.ndarray:
        again = replace(found, final=found.final - found.answer, answer=None)
        lift_answers(IndexCandidates(question_and_answer, BOTH, index=on), again)
        return again.answer

    assert lifted(index).tolist() == found.answer.tolist() and reads == []

    class Unflagged:  # the points of a store indexed before the flags
        def get_payloads(self, **kwargs):
            return {key: {} for key in kwargs["ids"]}

    assert lifted(Unflagged()).tolist() == found.answer.tolist()
    assert len(reads) == 1 and found.answer[slots[(1, 1)]] > 0


def test_a_question_without_a_time_boosts_no_turn(two_sessions):
    found = relevance(two_sessions, "Who did Caroline meet at the parade?")
    assert found.window is None and not found.parts[:, PART_NAMES.index("time")].any()


def test_the_second_hop_searches_the_names_the_first_hits_share(two_sessions):
    found = relevance(two_sessions, "Who did Caroline meet at the parade?")
    # Jolene and Pride: names inside the first hits' sentences (stemmed); not the participants, nor
    # the query's words
    assert {"jolen", "prid"} <= set(found.bridge)
    assert not {"carolin", "melani", "parad", "meet"} & set(found.bridge)
    # the second session's line about Jolene matches that search (its hop part by the z-score of its
    # keyword hit); the first session's reply, which names nobody, does not
    hop, slots = PART_NAMES.index("hop"), by_slot(found)
    assert found.parts[slots[(2, 0)], hop] > 0 > found.parts[slots[(1, 1)], hop]
    assert found.parts[slots[(2, 0)], hop] == pytest.approx(
        HybridParams().hop_weight * _z(keyword_turns(user=two_sessions, query=" ".join(found.bridge), tiers=BOTH),
                                       found.keys[slots[(2, 0)]]))


def _z(scores: dict[str, float], key: str) -> float:
    values = np.array(list(scores.values()))
    return float((scores[key] - values.mean()) / values.std())


def test_without_a_hop_weight_there_is_no_second_search(two_sessions):
    found = turn_relevance(user=two_sessions, query="Who did Caroline meet at the parade?",
                           query_vector=configured.embedder().embed(["Who did Caroline meet at the parade?"])[0],
                           now=ASKED_AT, tiers=BOTH, params=HybridParams(hop_weight=0.0))
    assert found.bridge == [] and not found.parts[:, PART_NAMES.index("hop")].any()


def test_a_blank_query_has_no_keyword_hits(two_sessions):
    assert keyword_turns(user=two_sessions, query="   ", tiers=BOTH) == {}


def test_a_fact_learned_from_a_page_lifts_that_page_s_turns_by_its_cosine(two_sessions):
    """Long-term memory in the core: the KB fact nearest the question was learned from page 1, so
    page 1's turns gain long_term_boost · the fact's cosine, and no other turn gains anything."""
    from memory.engine.ports import VectorPoint
    from memory.models import DialoguePage
    from persona.models import KnowledgeFact

    page = DialoguePage.objects.get(user=two_sessions, seq=1)
    text = "User enjoys going to Pride parades"
    fact = KnowledgeFact.objects.create(user=two_sessions, text=text, normalised=text.lower(),
                                        source_page_ids=[str(page.id)], source_ids=list(page.source_ids))
    vector = configured.embedder().embed([text])[0]
    configured.vector_index().upsert([VectorPoint(id=str(fact.id), vector=vector, text=text,
                                                  payload={"user_id": str(two_sessions.pk), "kind": "kb"})])
    query = "Does Caroline like going to Pride parades?"
    query_vector = configured.embedder().embed([query])[0]
    cosine = sum(a * b for a, b in zip(query_vector, vector, strict=True))
    assert cosine >= HybridParams().long_term_min_cosine  # the fact counts for this question

    def with_facts():
        from memory.recall.long_term import similar_items

        return turn_relevance(user=two_sessions, query=query, query_vector=query_vector, now=ASKED_AT, tiers=BOTH,
                              facts=similar_items(user=two_sessions, query_vector=query_vector))

    found = with_facts()
    long_term = PART_NAMES.index("long_term")
    lifted = {slot: float(found.parts[i, long_term]) for slot, i in by_slot(found).items()}
    boost = HybridParams().long_term_boost * cosine
    assert lifted == pytest.approx({(1, 0): boost, (1, 1): boost, (2, 0): 0.0, (2, 1): 0.0}, abs=1e-3)
    # without the facts (a caller that read none) nothing is lifted
    assert not relevance(two_sessions, query).parts[:, long_term].any()

    # repressed, the fact lifts nothing
    KnowledgeFact.objects.filter(id=fact.id).update(repressed=True)
    found = with_facts()
    assert not found.parts[:, long_term].any()


def test_the_feedback_query_leans_toward_the_top_turns_in_ranking_order(two_sessions, monkeypatch):
    """q' = q + mix · mean(top vectors), the vectors taken in the first pass's order whatever order
    the index returns them in (Edge's filtered scroll returns points by id): a mean summed in
    another order can differ in its last bits, and the feedback search with it."""
    query = "What did Caroline paint?"
    vector = configured.embedder().embed([query])[0]
    index = configured.vector_index()
    real_get, real_search = index.get_vectors, index.search
    asked: list[list[str]] = []
    feedback: list[list[float]] = []

    def get_vectors_reversed(*, user_id, ids):
        asked.append(list(ids))
        return dict(reversed(list(real_get(user_id=user_id, ids=ids).items())))

    def search(**kwargs):
        feedback.append(list(kwargs["vector"]))
        return real_search(**kwargs)

    monkeypatch.setattr(index, "get_vectors", get_vectors_reversed)
    monkeypatch.setattr(index, "search", search)
    turn_relevance(user=two_sessions, query=query, query_vector=vector, now=ASKED_AT, tiers=BOTH,
                   params=HybridParams(meaning_weight=0.0))

    top = asked[0]
    vectors = real_get(user_id=str(two_sessions.pk), ids=top)
    mix = HybridParams().feedback_mix
    expected = (np.asarray(vector, dtype=float)
                + mix * np.asarray([vectors[key] for key in top], dtype=float).mean(axis=0)).tolist()
    assert len(top) == HybridParams().feedback_top
    assert feedback[1] == expected  # bit for bit: [0] is the query's own search
