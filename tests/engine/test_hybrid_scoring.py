"""The hybrid turn scoring: z-scores, smoothing along the conversation, the second hop, the speaker
and time boosts, diversity across sessions, the second hop's terms."""

from __future__ import annotations

import numpy as np
import pytest

from memory.engine.hybrid_scoring import (
    PART_NAMES,
    HybridParams,
    answer_lift,
    asks,
    best_first,
    bridge_terms,
    diverse_first,
    feedback_query,
    final_array,
    fused_parts,
    meaning_lift,
    named_speakers,
    next_turn,
    part_dict,
    z_array,
)

PARAMS = HybridParams(previous_weight=0.5, next_weight=0.25, speaker_boost=3.0, hop_weight=0.2, time_boost=2.0)
DENSE, HOP, SPEAKER, TIME = (PART_NAMES.index(name) for name in ("dense", "hop", "speaker", "time"))


def content_only(*scores: float) -> np.ndarray:
    """Parts whose content score is `scores` (as the dense column) and with no boost."""
    parts = np.zeros((len(scores), len(PART_NAMES)))
    parts[:, 0] = scores
    return parts


def smoothed(scores: list[float], slots: list[tuple[int, int]]) -> list[float]:
    seq, pos = np.array([s for s, _ in slots]), np.array([p for _, p in slots])
    return list(final_array(content_only(*scores), seq, pos, params=PARAMS))


def test_z_scores_standardise_and_floor_missing_keys():
    # mean 2, population spread 1 (values 1 and 3); "c" is not in the list: the list's lowest.
    assert list(z_array({"a": 1.0, "b": 3.0}, ["a", "b", "c"])) == pytest.approx([-1.0, 1.0, -1.0])


def test_z_scores_of_a_flat_empty_or_absent_list_are_zero():
    assert list(z_array({"a": 2.0, "b": 2.0}, ["a", "b"])) == [0.0, 0.0]
    assert list(z_array({}, ["a"])) == [0.0]
    assert list(z_array(None, ["a", "b"])) == [0.0, 0.0]


def test_named_speakers_match_whole_words_and_possessives():
    assert named_speakers("What do Melanie's kids like?", {"Melanie", "Caroline"}) == {"Melanie"}
    assert named_speakers("Did Carol go?", {"Caroline"}) == set()


def test_smoothing_lends_positive_scores_to_the_next_and_previous_turn():
    # q, a, far: a gains 0.5 · 2 from q; q gains 0.25 · 1 from a; "far" is not adjacent to anything.
    assert smoothed([2.0, 1.0, 4.0], [(1, 0), (1, 1), (3, 0)]) == pytest.approx([2.25, 2.0, 4.0])


def test_smoothing_ignores_the_order_candidates_come_in():
    assert smoothed([4.0, 1.0, 2.0], [(3, 0), (1, 1), (1, 0)]) == pytest.approx([4.0, 2.0, 2.25])


def test_smoothing_crosses_a_page_boundary_only_from_the_last_to_the_first_turn():
    # end (1, 1) → start (2, 0) are adjacent; start (2, 0) and second (3, 1) are not.
    assert smoothed([2.0, 2.0, 2.0], [(1, 1), (2, 0), (3, 1)]) == pytest.approx([2.5, 3.0, 2.0])


def test_a_neighbour_below_the_mean_does_not_pull_a_turn_down():
    # fact keeps 1.5 (no negative loans); before gains 0.25 · 1.5, after gains 0.5 · 1.5.
    assert smoothed([-2.0, 1.5, -1.0], [(1, 0), (1, 1), (1, 2)]) == pytest.approx([-1.625, 1.5, -0.25])


def test_speaker_boost_is_added_after_smoothing():
    # The named participant's turn (content 1.0, boost 3.0) is followed by the other's reply (0.5).
    parts = content_only(1.0, 0.5)
    parts[0, SPEAKER] = 3.0
    final = final_array(parts, np.array([1, 1]), np.array([0, 1]), params=PARAMS)
    # reply borrows 0.5 · 1.0 of named's content, not of its boost (which would give 0.5 + 2.0).
    assert list(final) == pytest.approx([1.0 + 0.25 * 0.5 + 3.0, 1.0])


def test_fused_parts_boost_only_a_single_named_speaker():
    keys, speakers = ["a", "b"], ["Ana", "Ben"]
    dense, sparse = {"a": 1.0, "b": 3.0}, {"a": 2.0, "b": 2.0}
    one = fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=None, speakers=speakers,
                      named={"Ana"}, params=PARAMS)
    assert part_dict(one, 0) == pytest.approx({"dense": -1.0, "sparse": 0.0, "feedback": 0.0, "hop": 0.0,
                                               "speaker": 3.0, "time": 0.0, "long_term": 0.0, "score": 2.0})
    assert part_dict(one, 1)["score"] == pytest.approx(1.0)
    both = fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=None, speakers=speakers,
                       named={"Ana", "Ben"}, params=PARAMS)
    assert list(both[:, SPEAKER]) == [0.0, 0.0]


def test_fused_parts_weight_the_feedback_list():
    params = HybridParams(dense_weight=2.0, sparse_weight=1.0, feedback_weight=0.5)
    parts = fused_parts(keys=["a", "b"], dense={"a": 1.0, "b": 3.0}, sparse={}, feedback={"a": 3.0, "b": 1.0},
                        speakers=["", ""], named=set(), params=params)
    # dense z (-1, 1) · 2; feedback z (1, -1) · 2 · 0.5; no hop list, no boost.
    assert PART_NAMES == ("dense", "sparse", "feedback", "hop", "speaker", "time", "long_term")
    assert parts.ravel().tolist() == pytest.approx([-2.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0,
                                                    2.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0])


def test_the_long_term_column_is_the_boost_times_each_turn_s_fact_cosine_and_is_not_smoothed():
    params = HybridParams(long_term_boost=2.0, previous_weight=0.5, next_weight=0.5)
    parts = fused_parts(keys=["a", "b"], dense={}, sparse={}, feedback=None, speakers=["", ""], named=set(),
                        params=params, long_term=np.array([0.0, 0.6]))
    assert parts[:, PART_NAMES.index("long_term")].tolist() == pytest.approx([0.0, 1.2])
    # adjacent turns, no content score: the boost stays on the turn whose page a fact was learned from
    final = final_array(parts, np.array([1, 1]), np.array([0, 1]), params=params)
    assert final.tolist() == pytest.approx([0.0, 1.2])


def test_best_first_breaks_ties_by_conversation_order():
    final = np.array([1.0, 2.0, 2.0, 0.5])
    seq, pos = np.array([1, 5, 3, 2]), np.array([0, 0, 1, 0])
    assert list(best_first(final, seq, pos, 3)) == [2, 1, 0]


def test_feedback_query_adds_mix_times_the_mean_of_the_top_vectors():
    # mean of (1, 0) and (0, 1) is (0.5, 0.5); q + 0.5 · mean = (1, 0) + (0.25, 0.25)
    assert feedback_query([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], mix=0.5) == pytest.approx([1.25, 0.25])
    assert feedback_query([0.3, 0.4], [], mix=0.5) == [0.3, 0.4]


def test_z_scores_take_their_statistics_from_the_whole_list():
    # "x" is listed but is no candidate: it still counts. Scores 0, 6, 3: mean 3, spread sqrt(6).
    assert list(z_array({"a": 0.0, "b": 6.0, "x": 3.0}, ["a", "b", "c"])) == pytest.approx(
        [-3 / 6 ** 0.5, 3 / 6 ** 0.5, -3 / 6 ** 0.5])


def test_fused_parts_weight_the_second_hop_list():
    # hop scores 1, 3: z (-1, 1), times hop_weight 0.2; "c" is not in the hop list: the list's lowest.
    parts = fused_parts(keys=["a", "b", "c"], dense={}, sparse={}, feedback=None, speakers=["", "", ""],
                        named=set(), params=PARAMS, hop={"a": 1.0, "b": 3.0})
    assert list(parts[:, HOP]) == pytest.approx([-0.2, 0.2, -0.2])
    assert part_dict(parts, 1)["score"] == pytest.approx(0.2)


def test_fused_parts_boost_only_the_turns_in_the_questions_window():
    keys, speakers = ["a", "b", "c"], ["", "", ""]
    inside = fused_parts(keys=keys, dense={}, sparse={}, feedback=None, speakers=speakers, named=set(),
                         params=PARAMS, in_window=np.array([False, True, True]))
    assert list(inside[:, TIME]) == [0.0, 2.0, 2.0]
    for none_inside in (np.zeros(3, dtype=bool), None):
        parts = fused_parts(keys=keys, dense={}, sparse={}, feedback=None, speakers=speakers, named=set(),
                            params=PARAMS, in_window=none_inside)
        assert not parts.any()


def test_time_boost_is_added_after_smoothing():
    # The turn in the window (content 1.0, boost 2.0) is followed by one outside it (content 0.5).
    parts = content_only(1.0, 0.5)
    parts[0, TIME] = 2.0
    final = final_array(parts, np.array([1, 1]), np.array([0, 1]), params=PARAMS)
    # the second borrows 0.5 · 1.0 of the first's content, none of its boost (that would give 0.5 + 1.5)
    assert list(final) == pytest.approx([1.0 + 0.25 * 0.5 + 2.0, 0.5 + 0.5 * 1.0])


def test_the_hop_column_is_smoothed_like_content():
    # Only the first turn matches the second search (hop 1.0): it lends 0.5 of it to the next turn.
    parts = np.zeros((2, len(PART_NAMES)))
    parts[0, HOP] = 1.0
    final = final_array(parts, np.array([4, 4]), np.array([0, 1]), params=PARAMS)
    assert list(final) == pytest.approx([1.0, 0.5 * 1.0])


SLOTS = {"seq": np.array([1, 1, 2, 3]), "pos": np.array([0, 1, 0, 0])}


def test_diverse_first_charges_each_turn_already_taken_from_the_same_session():
    final, session = np.array([3.0, 2.8, 2.5, 1.0]), np.array([10, 10, 20, 30])
    # 0 first (3.0); then 1 costs 2.8 - 0.5 = 2.3 < 2.5 for 2 (another session); then 1 (2.3) over 3 (1.0).
    assert diverse_first(final, SLOTS["seq"], SLOTS["pos"], session, 3, penalty=0.5).tolist() == [0, 2, 1]
    # a small penalty does not bridge the gap: 2.8 - 0.2 = 2.6 > 2.5
    assert diverse_first(final, SLOTS["seq"], SLOTS["pos"], session, 3, penalty=0.2).tolist() == [0, 1, 2]


def test_diverse_first_charges_again_for_every_turn_of_the_session():
    final, session = np.array([3.0, 2.9, 2.8, 2.65]), np.array([1, 1, 1, 2])
    # 1 after one taken: 2.7 > 2.65; 2 after two taken: 2.8 - 0.4 = 2.4 < 2.65, so 3 goes first.
    assert diverse_first(final, SLOTS["seq"], SLOTS["pos"], session, 4, penalty=0.2).tolist() == [0, 1, 3, 2]


def test_diverse_first_without_penalty_is_best_first():
    final, session = np.array([1.0, 2.0, 2.0, 0.5]), np.array([1, 1, 1, 2])
    seq, pos = np.array([1, 5, 3, 2]), np.array([0, 0, 1, 0])
    for limit in (0, 2, 4, 9):
        assert diverse_first(final, seq, pos, session, limit, penalty=0.0).tolist() == \
            best_first(final, seq, pos, limit).tolist()
    assert diverse_first(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), 3, penalty=0.5).tolist() == []


SAILING = ["Ana and I sailed from Portree on the ferry in 2022.",
           "The ferry to Portree was late in 2022, said Ben.",
           "We ate chips on the harbour wall.",
           "My cousin Morag came too, and The Proclaimers played."]


def test_bridge_terms_take_names_inside_sentences_and_words_two_hits_share():
    terms = bridge_terms("Where did Ana sail with Ben?", SAILING, exclude={"Ana", "Ben"}, limit=10)
    # Portree: a name in two hits (1.5 each); ferry: a word in two (1.0 each); Morag and Proclaimers:
    # names said once (1.5). Left out: the query's words (sail, ana, ben), words said once (chips,
    # late, harbour), the sentence-opening capitals (We, My), a stopword (The), a number (2022).
    assert terms[:2] == ["portree", "ferry"]
    assert set(terms[2:]) == {"morag", "proclaimer"}
    assert bridge_terms("Where did Ana sail with Ben?", SAILING, exclude={"Ana", "Ben"}, limit=1) == ["portree"]


def test_bridge_terms_leave_out_the_participants_and_the_querys_words():
    # Morag is a participant here; the query now names the ferry.
    terms = bridge_terms("Which ferry did we take?", SAILING, exclude={"Ana", "Ben", "Morag"}, limit=10)
    assert terms[0] == "portree" and "ferry" not in terms and "morag" not in terms
    assert "ben" in bridge_terms("Which ferry did we take?", SAILING, exclude=set(), limit=10)
    assert bridge_terms("anything", ["A plain line.", "Another one."], exclude=set(), limit=5) == []


# Three unit vectors: a and b at cosine 0.8, b and c at 0.6, a and c at 0.
MEANING_VECTORS = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])


def test_meaning_lift_adds_weight_times_the_nearest_neighbours_score():
    # a's nearest is b (0.8 > 0), b's is a (0.8 > 0.6), c's is b (0.6 > 0).
    lift = meaning_lift(np.array([2.0, 1.0, 0.5]), MEANING_VECTORS, weight=0.5, neighbours=1)
    assert lift.tolist() == pytest.approx([0.5 * 1.0, 0.5 * 2.0, 0.5 * 1.0])


def test_meaning_lift_averages_the_neighbours_and_a_negative_one_lends_nothing():
    # Two neighbours each: a takes b (1.0) and c (-1.0 lends 0); b takes a (2.0) and c (0); c takes a and b.
    lift = meaning_lift(np.array([2.0, 1.0, -1.0]), MEANING_VECTORS, weight=0.5, neighbours=2)
    assert lift.tolist() == pytest.approx([0.5 * (1.0 + 0.0) / 2, 0.5 * (2.0 + 0.0) / 2, 0.5 * (2.0 + 1.0) / 2])


def test_meaning_lift_is_zero_when_off_or_alone():
    assert meaning_lift(np.array([2.0, 1.0, 0.5]), MEANING_VECTORS, weight=0.0, neighbours=2).tolist() == [0.0] * 3
    assert meaning_lift(np.array([2.0]), MEANING_VECTORS[:1], weight=0.5, neighbours=2).tolist() == [0.0]
    # More neighbours asked than there are: the others all lend.
    lift = meaning_lift(np.array([2.0, 1.0]), MEANING_VECTORS[:2], weight=1.0, neighbours=5)
    assert lift.tolist() == pytest.approx([1.0, 2.0])


def test_meaning_lift_puts_back_the_blas_thread_count_it_lowered():
    # The cosine product runs on one BLAS thread; every other BLAS call keeps the pool it had.
    from threadpoolctl import threadpool_info

    before = [(pool["filepath"], pool["num_threads"]) for pool in threadpool_info() if pool["user_api"] == "blas"]
    lift = meaning_lift(np.array([2.0, 1.0, 0.5]), MEANING_VECTORS, weight=0.5, neighbours=1)
    after = [(pool["filepath"], pool["num_threads"]) for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert lift.tolist() == pytest.approx([0.5, 1.0, 0.5])
    assert after == before


# ------------------------------------------------------------------ turn pairs

def test_a_turn_asks_when_it_holds_a_question_mark():
    assert asks("Nice! What are your dogs called?")
    assert not asks("Max and Daisy.")
    assert not asks("")


def test_the_next_turn_is_the_next_in_its_page_else_the_first_of_the_next_page():
    assert next_turn(4, 0, 2) == (4, 1)
    assert next_turn(4, 1, 2) == (5, 0)
    assert next_turn(4, 0, 1) == (5, 0)


def test_answer_lift_hands_each_answer_weight_times_its_question_s_positive_content():
    # rows 0 and 2 ask; 1 answers 0 (0.3 · 2.0), 3 answers 2 whose content is negative (nothing)
    lift = answer_lift(np.array([2.0, 0.5, -1.0, 4.0]), [(0, 1), (2, 3)], weight=0.3)
    assert lift.tolist() == pytest.approx([0.0, 0.6, 0.0, 0.0])


def test_answer_lift_takes_the_larger_lift_and_is_zero_without_pairs():
    lift = answer_lift(np.array([1.0, 3.0, 0.0]), [(0, 2), (1, 2)], weight=0.5)
    assert lift.tolist() == pytest.approx([0.0, 0.0, 1.5])
    assert answer_lift(np.array([1.0, 2.0]), [], weight=0.5).tolist() == [0.0, 0.0]
