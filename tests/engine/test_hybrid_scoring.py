"""The hybrid turn scoring: z-scores, smoothing along the conversation, the speaker boost."""

from __future__ import annotations

import numpy as np
import pytest

from memory.engine.hybrid_scoring import (
    HybridParams,
    best_first,
    feedback_query,
    final_array,
    fused_parts,
    named_speakers,
    part_dict,
    z_array,
)

PARAMS = HybridParams(previous_weight=0.5, next_weight=0.25, speaker_boost=3.0)


def content_only(*scores: float) -> np.ndarray:
    """Parts whose content score is `scores` (as the dense column) and with no speaker boost."""
    parts = np.zeros((len(scores), 4))
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
    parts[0, 3] = 3.0
    final = final_array(parts, np.array([1, 1]), np.array([0, 1]), params=PARAMS)
    # reply borrows 0.5 · 1.0 of named's content, not of its boost (which would give 0.5 + 2.0).
    assert list(final) == pytest.approx([1.0 + 0.25 * 0.5 + 3.0, 1.0])


def test_fused_parts_boost_only_a_single_named_speaker():
    keys, speakers = ["a", "b"], ["Ana", "Ben"]
    dense, sparse = {"a": 1.0, "b": 3.0}, {"a": 2.0, "b": 2.0}
    one = fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=None, speakers=speakers,
                      named={"Ana"}, params=PARAMS)
    assert part_dict(one, 0) == pytest.approx({"dense": -1.0, "sparse": 0.0, "feedback": 0.0, "speaker": 3.0,
                                               "score": 2.0})
    assert part_dict(one, 1)["score"] == pytest.approx(1.0)
    both = fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=None, speakers=speakers,
                       named={"Ana", "Ben"}, params=PARAMS)
    assert list(both[:, 3]) == [0.0, 0.0]


def test_fused_parts_weight_the_feedback_list():
    params = HybridParams(dense_weight=2.0, sparse_weight=1.0, feedback_weight=0.5)
    parts = fused_parts(keys=["a", "b"], dense={"a": 1.0, "b": 3.0}, sparse={}, feedback={"a": 3.0, "b": 1.0},
                        speakers=["", ""], named=set(), params=params)
    # dense z (-1, 1) · 2; feedback z (1, -1) · 2 · 0.5.
    assert parts.ravel().tolist() == pytest.approx([-2.0, 0.0, 1.0, 0.0, 2.0, 0.0, -1.0, 0.0])


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
