"""The hybrid turn scoring: z-scores, smoothing along the conversation, the speaker boost."""

from __future__ import annotations

import pytest

from memory.engine.recall_policies import (
    HybridParams,
    final_scores,
    fused_scores,
    named_speakers,
    smooth_along_conversation,
    zscores,
)

PARAMS = HybridParams(previous_weight=0.5, next_weight=0.25, speaker_boost=3.0)


def test_zscores_standardise_and_floor_missing_keys():
    # mean 2, population spread 1 (values 1 and 3); "c" is not in the list: the list's lowest.
    z = zscores({"a": 1.0, "b": 3.0}, ["a", "b", "c"])
    assert z == pytest.approx({"a": -1.0, "b": 1.0, "c": -1.0})


def test_zscores_of_a_flat_or_empty_list_are_zero():
    assert zscores({"a": 2.0, "b": 2.0}, ["a", "b"]) == {"a": 0.0, "b": 0.0}
    assert zscores({}, ["a"]) == {"a": 0.0}


def test_named_speakers_match_whole_words_and_possessives():
    assert named_speakers("What do Melanie's kids like?", {"Melanie", "Caroline"}) == {"Melanie"}
    assert named_speakers("Did Carol go?", {"Caroline"}) == set()


def test_smoothing_lends_positive_scores_to_the_next_and_previous_turn():
    order = {"q": (1, 0), "a": (1, 1), "far": (3, 0)}
    smoothed = smooth_along_conversation({"q": 2.0, "a": 1.0, "far": 4.0}, order, params=PARAMS)
    # a gains 0.5 · 2 from q; q gains 0.25 · 1 from a; "far" is not adjacent to anything.
    assert smoothed == pytest.approx({"q": 2.25, "a": 2.0, "far": 4.0})


def test_smoothing_crosses_a_page_boundary_only_from_the_last_to_the_first_turn():
    order = {"end": (1, 1), "start": (2, 0), "second": (3, 1)}
    smoothed = smooth_along_conversation({"end": 2.0, "start": 2.0, "second": 2.0}, order, params=PARAMS)
    assert smoothed == pytest.approx({"end": 2.5, "start": 3.0, "second": 2.0})


def test_a_neighbour_below_the_mean_does_not_pull_a_turn_down():
    order = {"before": (1, 0), "fact": (1, 1), "after": (1, 2)}
    smoothed = smooth_along_conversation({"before": -2.0, "fact": 1.5, "after": -1.0}, order, params=PARAMS)
    # fact keeps 1.5 (no negative loans); before gains 0.25 · 1.5, after gains 0.5 · 1.5.
    assert smoothed == pytest.approx({"before": -1.625, "fact": 1.5, "after": -0.25})


def _parts(content: float, speaker: float) -> dict[str, float]:
    return {"dense": content, "sparse": 0.0, "feedback": 0.0, "speaker": speaker, "score": content + speaker}


def test_speaker_boost_is_added_after_smoothing():
    # The named participant's turn is followed by the other participant's reply.
    parts = {"named": _parts(1.0, 3.0), "reply": _parts(0.5, 0.0)}
    order = {"named": (1, 0), "reply": (1, 1)}
    final = final_scores(parts, order, params=PARAMS)
    # reply borrows 0.5 · 1.0 of named's content, not of its boost (which would give 0.5 + 2.0).
    assert final == pytest.approx({"named": 1.0 + 0.25 * 0.5 + 3.0, "reply": 1.0})


def test_fused_scores_boost_only_a_single_named_speaker():
    keys = ["a", "b"]
    dense, sparse = {"a": 1.0, "b": 3.0}, {"a": 2.0, "b": 2.0}
    speaker_of = {"a": "Ana", "b": "Ben"}
    one = fused_scores(keys=keys, dense=dense, sparse=sparse, feedback=None, speaker_of=speaker_of,
                       named={"Ana"}, params=PARAMS)
    assert one["a"] == pytest.approx({"dense": -1.0, "sparse": 0.0, "feedback": 0.0, "speaker": 3.0, "score": 2.0})
    assert one["b"]["score"] == pytest.approx(1.0)
    both = fused_scores(keys=keys, dense=dense, sparse=sparse, feedback=None, speaker_of=speaker_of,
                        named={"Ana", "Ben"}, params=PARAMS)
    assert both["a"]["speaker"] == both["b"]["speaker"] == 0.0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_array_scoring_equals_the_reference_functions(seed):
    import random

    import numpy as np

    from memory.engine.recall_policies import (
        best_first,
        final_array,
        final_scores,
        fused_parts,
        fused_scores,
        part_dict,
    )

    rng = random.Random(seed)
    # 300 candidates on 120 pages of up to 3 turns: many adjacent pairs, some lists missing keys.
    slots = rng.sample([(seq, pos) for seq in range(1, 121) for pos in range(3)], 300)
    keys = [f"k{i}" for i in range(300)]
    order = dict(zip(keys, slots, strict=True))
    dense = {k: rng.uniform(0.1, 0.9) for k in keys if rng.random() < 0.8}
    sparse = {k: rng.uniform(0.0, 12.0) for k in keys if rng.random() < 0.5}
    feedback = {k: rng.uniform(0.1, 0.9) for k in keys if rng.random() < 0.7}
    speaker_of = {k: rng.choice(["Ann", "Bob"]) for k in keys}
    params = HybridParams()

    for fb in (None, feedback):
        ref = fused_scores(keys=keys, dense=dense, sparse=sparse, feedback=fb, speaker_of=speaker_of,
                           named={"Ann"}, params=params)
        parts = fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=fb,
                            speakers=[speaker_of[k] for k in keys], named={"Ann"}, params=params)
        for i, key in enumerate(keys):
            assert part_dict(parts, i) == pytest.approx(ref[key], abs=1e-9)
    ref_final = final_scores(ref, order, params=params)
    seq = np.array([order[k][0] for k in keys])
    pos = np.array([order[k][1] for k in keys])
    final = final_array(parts, seq, pos, params=params)

    assert list(final) == pytest.approx([ref_final[k] for k in keys], abs=1e-9)
    expected = sorted(keys, key=lambda k: (-ref_final[k], order[k]))[:20]
    assert [keys[i] for i in best_first(final, seq, pos, 20)] == expected
