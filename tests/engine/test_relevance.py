"""The relevance core over plain data (memory/engine/relevance.py with memory/engine/candidates.py's
Candidates): every expectation below is worked out by hand from the turns, lists and parameters;
then the scores read back per page, scaled onto [0, 1], ranked across sessions and broken down.

Two-hit lists keep the arithmetic small: a list of two scores has z-scores +1 and -1 whatever the
scores, and a candidate missing from a list gets the list's lowest z (-1).
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memory.engine.candidates import Candidates, CandidateSource, Turn, TurnFact
from memory.engine.hybrid_scoring import PART_NAMES, HybridParams
from memory.engine.relevance import (
    FactColumns,
    RelevanceQuery,
    TurnRelevance,
    _in_window,
    keyword_hits,
    learned_from,
    relevance,
)
from memory.engine.time_window import question_window
from memory.engine.types import RecalledItem

DAY = 86400.0
DENSE, SPARSE, FEEDBACK, HOP, SPEAKER, TIME, LONG_TERM = range(len(PART_NAMES))
MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp()
JUNE = datetime(2023, 6, 10, 15, 0, tzinfo=UTC).timestamp()
JULY = datetime(2023, 7, 20, 10, 0, tzinfo=UTC).timestamp()
ASKED_AT = datetime(2023, 8, 1, tzinfo=UTC)
# Every part but dense and BM25 off: the final score is their z-sum.
ONLY_LISTS = HybridParams(candidates=2, feedback_weight=0.0, hop_weight=0.0, previous_weight=0.0, next_weight=0.0,
                          pair_weight=0.0, meaning_weight=0.0, long_term_boost=0.0)


def turns(*rows: tuple[str, TurnFact, list[float]], texts: dict[str, str] | None = None) -> dict[str, Turn]:
    return {key: Turn(fact=fact, vector=vector, text=(texts or {}).get(key, "")) for key, fact, vector in rows}


def by_key(found, column: int) -> dict[str, float]:
    return {key: float(found.parts[i, column]) for i, key in enumerate(found.keys)}


def finals(found) -> dict[str, float]:
    return dict(zip(found.keys, found.final.tolist(), strict=True))


# a [1, 0], b [0, 1], c [0.6, 0.8]: to the query [1, 0] cosines 1, 0, 0.6, so with two hits per
# list the dense list is {a: 1.0, c: 0.6}
ABC = (("a", TurnFact(1, 0, "Ana", MAY), [1.0, 0.0]), ("b", TurnFact(2, 0, "Ben", JUNE), [0.0, 1.0]),
       ("c", TurnFact(3, 0, "Ana", JULY), [0.6, 0.8]))


def test_plain_candidates_honour_the_port():
    assert isinstance(Candidates(turns(*ABC)), CandidateSource)


def test_the_dense_and_keyword_lists_meet_on_one_scale():
    query = "What about the lake?"
    source = Candidates(turns(*ABC), keywords={query: {"b": 3.0, "c": 1.0}})
    found = relevance(RelevanceQuery(query, [1.0, 0.0], ASKED_AT), source, ONLY_LISTS)
    # dense {a: 1.0, c: 0.6}: a +1, c -1, b (missing) -1; BM25 {b: 3.0, c: 1.0}: b +1, c -1, a -1
    assert found.keys == ["a", "c", "b"]  # the dense list's, then the keyword list's new ones
    assert by_key(found, DENSE) == pytest.approx({"a": 1.0, "c": -1.0, "b": -1.0})
    assert by_key(found, SPARSE) == pytest.approx({"a": -1.0, "c": -1.0, "b": 1.0})
    assert finals(found) == pytest.approx({"a": 0.0, "c": -2.0, "b": 0.0})
    assert found.ranked(3, diverse=False) == [0, 2, 1]  # a and b tie at 0: the earlier page first
    assert found.window is None and found.bridge == []
    assert found.breakdown(1)["cosine"] == 0.6 and found.breakdown(1)["bm25"] == 1.0


def test_a_turn_borrows_from_its_neighbours_and_the_named_speaker_and_period_are_boosted():
    # a and b are one page's two turns (May); c another page (July). The question names Ben and May 2023.
    query = "What did Ben say in May 2023?"
    rows = (("a", TurnFact(1, 0, "Ana", MAY), [1.0, 0.0]), ("b", TurnFact(1, 1, "Ben", MAY + 60), [0.0, 1.0]),
            ("c", TurnFact(3, 0, "Ana", JULY), [0.6, 0.8]))
    source = Candidates(turns(*rows), keywords={query: {"a": 3.0, "b": 1.0}})
    params = HybridParams(candidates=2, feedback_weight=0.0, hop_weight=0.0, pair_weight=0.0, meaning_weight=0.0,
                          long_term_boost=0.0)  # previous 0.3, next 0.1, speaker 3, time 2
    found = relevance(RelevanceQuery(query, [1.0, 0.0], ASKED_AT), source, params)
    # dense {a: 1.0, c: 0.6} and BM25 {a: 3.0, b: 1.0}: content a +1 +1 = 2, b -1 -1 = -2, c -1 -1 = -2
    assert found.window.words == "May 2023"
    assert by_key(found, SPEAKER) == {"a": 0.0, "c": 0.0, "b": 3.0}
    assert by_key(found, TIME) == {"a": 2.0, "c": 0.0, "b": 2.0}
    # b follows a: b gains 0.3 · 2 (a's content); a gains 0.1 · max(b's -2, 0) = 0; then the boosts
    assert finals(found) == pytest.approx({"a": 2.0 + 2.0, "b": -2.0 + 0.6 + 3.0 + 2.0, "c": -2.0})


def test_the_feedback_query_leans_toward_the_best_first_hits():
    query = "What about the lake?"
    source = Candidates(turns(*ABC), keywords={query: {"b": 3.0, "c": 1.0}})
    params = HybridParams(candidates=2, hop_weight=0.0, previous_weight=0.0, next_weight=0.0, pair_weight=0.0,
                          meaning_weight=0.0, long_term_boost=0.0)  # feedback: weight 0.5, mix 0.5, top 3
    found = relevance(RelevanceQuery(query, [1.0, 0.0], ASKED_AT), source, params)
    # the first pass's summed parts: a 0, c -2, b 0, so the best three are a, b, c; the mean of
    # [1, 0], [0, 1], [0.6, 0.8] is [1.6/3, 1.8/3], and q' = [1, 0] + 0.5 · that
    assert [what for read, what in source.asked if read == "vectors"][0] == ["a", "b", "c"]
    searched = [what for read, what in source.asked if read == "dense"]
    assert searched[0] == [1.0, 0.0] and searched[1] == pytest.approx([1 + 0.8 / 3, 0.3])
    # q' is nearest a, then c (cosines 0.97, 0.77; b 0.23): a +1, c -1, b -1, at 0.5 · the dense weight
    assert by_key(found, FEEDBACK) == {"a": 0.5, "c": -0.5, "b": -0.5}


def test_a_question_among_the_best_lends_its_answer_a_share_of_its_content():
    query = "What are the dogs called?"
    texts = {"q": "What are your dogs' names?", "r": "Max and Daisy.", "x": "I like parks."}
    rows = (("q", TurnFact(1, 0, "Ana"), [1.0, 0.0]), ("r", TurnFact(1, 1, "Ben"), [0.0, 1.0]),
            ("x", TurnFact(2, 0, "Ana"), [0.6, 0.8]))
    params = HybridParams(candidates=2, feedback_weight=0.0, hop_weight=0.0, previous_weight=0.0, next_weight=0.0,
                          meaning_weight=0.0, long_term_boost=0.0)  # pairs: weight 0.3, the best 10
    flagged = {"q": (True, False), "r": (False, True), "x": (False, True)}
    with_flags = {key: Turn(turn.fact, turn.vector, turn.text, *flagged[key])
                  for key, turn in turns(*rows, texts=texts).items()}
    for given in (with_flags, turns(*rows, texts=texts)):
        source = Candidates(given, keywords={query: {"q": 3.0, "r": 1.0}})
        found = relevance(RelevanceQuery(query, [1.0, 0.0], ASKED_AT), source, params)
        # dense {q: 1.0, x: 0.6} and BM25 {q: 3.0, r: 1.0}: content q 2, r -2, x -2. q asks and is
        # not its page's last turn: its answer is (1, 1), r, said by Ben; r gains 0.3 · 2
        assert dict(zip(found.keys, found.answer.tolist(), strict=True)) == pytest.approx(
            {"q": 0.0, "x": 0.0, "r": 0.6})
        assert finals(found) == pytest.approx({"q": 2.0, "x": -2.0, "r": -1.4})
        pages = [what for read, what in source.asked if read == "pages"]
        assert pages == ([] if given is with_flags else [[1, 2]])  # pages are read only for turns without flags


def test_the_second_hop_searches_the_names_the_first_hits_share():
    query = "Who did Caroline meet at the parade?"
    texts = {"a": "I met Jolene at the parade.", "b": "Jolene moved to Portland.", "c": "That sounds lovely."}
    rows = (("a", TurnFact(1, 0, "Caroline"), [1.0, 0.0]), ("b", TurnFact(2, 0, "Melanie"), [0.0, 1.0]),
            ("c", TurnFact(3, 0, "Melanie"), [0.6, 0.8]))
    source = Candidates(turns(*rows, texts=texts), keywords={"jolen": {"b": 2.0, "a": 1.0}})
    params = HybridParams(candidates=2, feedback_weight=0.0, previous_weight=0.0, next_weight=0.0, pair_weight=0.0,
                          meaning_weight=0.0, long_term_boost=0.0)  # hop: weight 0.2, 5 seeds, 6 terms
    found = relevance(RelevanceQuery(query, [1.0, 0.0], ASKED_AT, sparse={"a": 3.0, "c": 1.0}), source, params)
    # the first pass has a and c (dense {a: 1.0, c: 0.6}, BM25 {a: 3.0, c: 1.0}): seeds a, c.
    # "Jolene" is a name inside a's sentence (1.5); every other word is said once (1, below 1.5),
    # or is the query's or a participant's
    assert found.bridge == ["jolen"]
    assert ("keyword", "jolen") in source.asked
    # the hop list {b: 2.0, a: 1.0} brings b in: b +1, a -1, c -1, at 0.2; b is in neither first
    # list (-1 -1)
    assert found.keys == ["a", "c", "b"]
    assert by_key(found, HOP) == pytest.approx({"a": -0.2, "c": -0.2, "b": 0.2})
    # and a, said by Caroline whom the question names, gains the speaker boost (3)
    assert finals(found) == pytest.approx({"a": 2.0 - 0.2 + 3.0, "c": -2.0 - 0.2, "b": -2.0 + 0.2})


def test_a_fact_learned_from_a_page_lifts_its_turns_by_its_cosine():
    facts = (RecalledItem(kind="kb_fact", ref="f1", text="Ana likes lakes", score=0.8, source_page_ids=("p1", "p9")),
             RecalledItem(kind="agent_trait", ref="t1", text="talks of travel", score=0.2, source_page_ids=("p3",)))
    # the trait is below long_term_min_cosine (0.3); p9 is not the user's page
    assert learned_from(facts, HybridParams()) == {"p1": 0.8, "p9": 0.8}
    source = Candidates(turns(*ABC), keywords={"lake": {"b": 3.0, "c": 1.0}}, pages={"p1": 1, "p3": 3})
    params = HybridParams(candidates=2, feedback_weight=0.0, hop_weight=0.0, previous_weight=0.0, next_weight=0.0,
                          pair_weight=0.0, meaning_weight=0.0)  # long-term boost 2
    found = relevance(RelevanceQuery("lake", [1.0, 0.0], ASKED_AT, facts=facts), source, params)
    assert by_key(found, LONG_TERM) == pytest.approx({"a": 2.0 * 0.8, "c": 0.0, "b": 0.0})
    assert finals(found) == pytest.approx({"a": 1.6, "c": -2.0, "b": 0.0})


def test_smoothing_by_meaning_lends_each_turn_its_nearest_turns_score():
    # c [0.8, 0.6] is nearest a (cosine 0.8 against b's 0.6); a's and b's nearest is c
    rows = (("a", TurnFact(1, 0, "Ana"), [1.0, 0.0]), ("b", TurnFact(2, 0, "Ben"), [0.0, 1.0]),
            ("c", TurnFact(3, 0, "Ana"), [0.8, 0.6]))
    params = HybridParams(candidates=2, feedback_weight=0.0, hop_weight=0.0, previous_weight=0.0, next_weight=0.0,
                          pair_weight=0.0, long_term_boost=0.0, meaning_neighbours=1)  # meaning weight 0.3
    source = Candidates(turns(*rows), keywords={"lake": {"a": 3.0, "b": 1.0}})
    found = relevance(RelevanceQuery("lake", [1.0, 0.0], ASKED_AT), source, params)
    # before: a 2, b -2, c -2; c gains 0.3 · a's 2; a and b gain 0.3 · max(c's -2, 0)
    assert dict(zip(found.keys, found.meaning.tolist(), strict=True)) == pytest.approx({"a": 0.0, "c": 0.6, "b": 0.0})
    assert finals(found) == pytest.approx({"a": 2.0, "c": -1.4, "b": -2.0})


def test_after_an_event_means_the_two_weeks_from_the_day_of_its_best_keyword_match():
    query = "Where did Ana go after the road trip?"
    source = Candidates(turns(*ABC), keywords={"road trip": {"a": 1.0, "b": 4.0}})
    params = HybridParams(candidates=2, feedback_weight=0.0, hop_weight=0.0, pair_weight=0.0, meaning_weight=0.0,
                          long_term_boost=0.0)
    # the keyword list given holds b alone (one hit: no spread, z 0), so that b is a candidate
    found = relevance(RelevanceQuery(query, [1.0, 0.0], ASKED_AT, sparse={"b": 1.0}), source, params)
    # b, the best match, was said on 10 June: the window is 10 June to 24 June; c (20 July) is out
    assert (found.window.start, found.window.end) == (datetime(2023, 6, 10, tzinfo=UTC).timestamp(),
                                                      datetime(2023, 6, 24, tzinfo=UTC).timestamp())
    assert ("keyword", "road trip") in source.asked
    assert by_key(found, TIME) == {"a": 0.0, "c": 0.0, "b": 2.0}


def test_no_candidates_score_nothing_and_a_blank_text_searches_nothing():
    source = Candidates({})
    found = relevance(RelevanceQuery("What happened in May 2023?", [1.0, 0.0], ASKED_AT), source, HybridParams())
    assert found.keys == [] and found.final.shape == (0,) and found.window.words == "May 2023"
    assert found.ranked(3) == [] and found.page_scores() == {}
    asked = len(source.asked)
    assert keyword_hits(source, "  ", 5) == {} and len(source.asked) == asked
    assert np.array_equal(found.parts, np.zeros((0, len(PART_NAMES))))


# ------------------------------------------------------------------ the scores, read back

def relevance_of(final: list[float], facts: list[TurnFact], **params) -> TurnRelevance:
    keys = [f"t{i}" for i in range(len(final))]
    return TurnRelevance(keys=keys, facts=dict(zip(keys, facts, strict=True)),
                         parts=np.zeros((len(final), len(PART_NAMES))), final=np.array(final),
                         dense={}, sparse={}, params=HybridParams(**params))


def test_a_pages_keyword_score_is_its_best_lines_in_the_keyword_list():
    found = relevance_of([0.9, 0.1, 0.5, 0.7], [TurnFact(1, 0, "Ann"), TurnFact(1, 1, "Bo"), TurnFact(2, 0, "Ann"),
                                                 TurnFact(3, 0, "Bo")])
    found.sparse = {"t0": 2.5, "t1": 4.0, "t2": 1.5, "gone": 9.0}  # "gone": not a candidate (no fact read)
    # page 1's best line by words is not its best by final score; page 3's line matched no word
    assert found.page_keyword_scores() == {1: 4.0, 2: 1.5}
    assert found.page_scores() == {1: 0.9, 2: 0.5, 3: 0.7}
    found.sparse = {}
    assert found.page_keyword_scores() == {}


def test_normalised_maps_the_candidates_min_max_onto_zero_to_one():
    found = relevance_of([], [])
    assert found.normalised({"a": 2.0, "b": -1.0, "c": 0.5}) == {"a": 1.0, "b": 0.0, "c": 0.5}
    assert found.normalised({"a": -0.3, "b": -0.3}) == {"a": 1.0, "b": 1.0}  # flat: none is weaker
    assert found.normalised({"a": -4.0}) == {"a": 1.0}
    assert found.normalised({}) == {}


def test_a_page_is_as_relevant_as_its_best_turn():
    found = relevance_of([0.5, 2.0, -1.0, -3.0], [TurnFact(1, 0, "Ana"), TurnFact(1, 1, "Ben"),
                                                  TurnFact(2, 0, "Ana"), TurnFact(2, 1, "Ben")])
    assert found.page_scores() == {1: 2.0, 2: -1.0}


def test_a_page_s_score_leaves_out_what_turn_pairs_lent_its_lines():
    # the answer (1, 1) rose from 0.5 to 2.5 by its question's lift: its page still scores by the
    # question's 2.0; page 2's line keeps its own -1.0 (nothing lent)
    found = relevance_of([2.0, 2.5, -1.0], [TurnFact(1, 0, "Ana"), TurnFact(1, 1, "Ben"), TurnFact(2, 0, "Ana")])
    found.answer = np.array([0.0, 2.0, 0.0])
    assert found.page_scores() == {1: 2.0, 2: -1.0}
    found.answer = None
    assert found.page_scores() == {1: 2.5, 2: -1.0}


def test_ranked_spreads_over_days_only_when_asked_and_penalised():
    # two turns of one day (3.0, 2.8), one of another (2.5): the second day's turn costs nothing
    facts = [TurnFact(1, 0, "Ana", 10 * DAY), TurnFact(1, 1, "Ben", 10 * DAY + 60), TurnFact(2, 0, "Ana", 11 * DAY)]
    spread = relevance_of([3.0, 2.8, 2.5], facts, session_penalty=0.5)
    assert spread.ranked(3) == [0, 2, 1]
    assert spread.ranked(3, diverse=False) == [0, 1, 2]
    assert relevance_of([3.0, 2.8, 2.5], facts, session_penalty=0.0).ranked(3) == [0, 1, 2]


def test_a_breakdown_names_every_part_and_the_raw_scores():
    found = relevance_of([1.5], [TurnFact(1, 0, "Ana")])
    found.parts[0] = [1.0, 0.25, 0.0, 0.25, 0.0, 0.0, 0.0]
    found.dense, found.sparse = {"t0": 0.61234}, {}
    assert found.breakdown(0) == {"dense": 1.0, "sparse": 0.25, "feedback": 0.0, "hop": 0.25, "speaker": 0.0,
                                  "time": 0.0, "long_term": 0.0, "score": 1.5, "meaning": 0.0, "answer": 0.0,
                                  "final": 1.5,
                                  "cosine": 0.6123,
                                  "bm25": 0.0}


def test_the_seq_pos_and_day_columns_are_the_facts_read_once():
    # sessions by the day each turn was said (TurnFact.day), boundaries and before 1970 too
    said = [0.0, DAY - 0.001, DAY, 10.5 * DAY, -1.0, -DAY - 0.5]
    facts = [TurnFact(seq, pos, "Ana", at) for seq, pos, at in zip([4, 4, 5, 9, 1, 1], [0, 1, 0, 2, 0, 1], said,
                                                                      strict=True)]
    found = relevance_of([0.0] * len(facts), facts)
    seq, pos, day = found._columns
    assert seq.tolist() == [4, 4, 5, 9, 1, 1] and pos.tolist() == [0, 1, 0, 2, 0, 1]
    assert day.tolist() == [fact.day for fact in facts] == [0, 0, 1, 10, -1, -2]
    assert found.seq is seq  # read once
    assert relevance_of([], []).ranked(3) == [] and relevance_of([], []).page_scores() == {}


def test_the_second_pass_s_columns_are_the_first_s_and_the_added_turns():
    # the feedback query, pulled hard toward a and b ([1, 0] + 10 · [0.5, 0.5]), finds c, which
    # neither first list held: its facts come after a's and b's
    query = "What about the lake?"
    source = Candidates(turns(*ABC), keywords={query: {"b": 3.0}})
    params = HybridParams(candidates=1, feedback_mix=10.0, hop_weight=0.0, pair_weight=0.0, meaning_weight=0.0,
                          long_term_boost=0.0)
    found = relevance(RelevanceQuery(query, [1.0, 0.0], ASKED_AT), source, params)
    assert found.keys == ["a", "b", "c"]
    afresh = FactColumns.of(found.facts, found.keys)
    assert all(np.array_equal(read, fresh) for read, fresh in zip(found._columns, (afresh.seq, afresh.pos, afresh.day),
                                                                   strict=True))
    assert afresh.speakers == tuple(found.facts[key].speaker for key in found.keys)
    assert FactColumns.of({}, []).speakers == () and len(FactColumns.of({}, []).extended(afresh).seq) == len(found.keys)


@pytest.mark.parametrize("words", ["in May 2023", "on 8 May 2023", "in May"])
def test_the_period_is_tested_over_an_array_as_window_contains_tests_one_time(words):
    window = question_window(f"What happened {words}?", now=ASKED_AT)
    day = datetime(2023, 5, 8, tzinfo=UTC).timestamp()
    said = np.array([MAY, JUNE, day, day - 0.001, day + DAY, day + DAY - 0.001,
                     datetime(2021, 5, 1, tzinfo=UTC).timestamp(), 0.0, -DAY])
    assert _in_window(window, said).tolist() == [window.contains(float(at)) for at in said]
