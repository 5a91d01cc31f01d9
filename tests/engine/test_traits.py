"""The 90 user-trait dimensions, lexicon evidence and the EWMA score update."""

from __future__ import annotations

from collections import Counter

import pytest

from memory.engine.offline import stem
from memory.engine.traits import (
    CATEGORIES,
    TRAIT_CATALOGUE,
    TRAITS_BY_KEY,
    TraitEvidence,
    trait_evidence,
    update_trait_score,
)

# The 51 dimensions the seeds name (shared/traits_51.txt), by the category the file gives them.
NAMED = {
    "basic_needs_personality": [
        "Extraversion", "Openness", "Agreeableness", "Conscientiousness", "Neuroticism",
        "Physiological Needs", "Need for Security", "Need for Belonging", "Need for Self-Esteem",
        "Cognitive Needs", "Aesthetic Appreciation", "Self-Actualization", "Need for Order",
        "Need for Autonomy", "Need for Power", "Need for Achievement",
    ],
    "ai_alignment": [
        "Helpfulness", "Honesty", "Safety", "Instruction Compliance", "Truthfulness", "Coherence",
        "Complexity", "Conciseness",
    ],
    "content_interest": [
        "Science Interest", "Education Interest", "Psychology Interest", "Family Concern",
        "Fashion Interest", "Art Interest", "Health Concern", "Financial Management Interest",
        "Sports Interest", "Food Interest", "Travel Interest", "Music Interest",
        "Literature Interest", "Film Interest", "Social Media Activity", "Tech Interest",
        "Environmental Concern", "History Interest", "Political Concern", "Religious Interest",
        "Gaming Interest", "Animal Concern", "Emotional Expression", "Sense of Humor",
        "Information Density", "Language Style", "Practicality",
    ],
}


def test_catalogue_has_exactly_90_unique_dimensions():
    keys = [dim.key for dim in TRAIT_CATALOGUE]
    assert len(keys) == 90
    assert len(set(keys)) == 90
    assert len({dim.name for dim in TRAIT_CATALOGUE}) == 90
    assert set(TRAITS_BY_KEY) == set(keys)


def test_all_51_named_dimensions_are_present_in_their_category():
    assert sum(len(names) for names in NAMED.values()) == 51
    by_name = {dim.name: dim for dim in TRAIT_CATALOGUE}
    for category, names in NAMED.items():
        for name in names:
            assert by_name[name].category == category, name


def test_named_keys_are_snake_case_of_the_names():
    assert TRAITS_BY_KEY["music_interest"].name == "Music Interest"
    assert TRAITS_BY_KEY["need_for_self_esteem"].name == "Need for Self-Esteem"
    assert TRAITS_BY_KEY["self_actualization"].name == "Self-Actualization"


def test_every_category_is_used_and_only_those_three():
    assert list(CATEGORIES) == ["basic_needs_personality", "ai_alignment", "content_interest"]
    counts = Counter(dim.category for dim in TRAIT_CATALOGUE)
    assert counts == {"basic_needs_personality": 29, "ai_alignment": 19, "content_interest": 42}


def test_every_dimension_is_described_with_a_normalised_lexicon():
    for dim in TRAIT_CATALOGUE:
        assert dim.key.isidentifier() and dim.key == dim.key.lower()
        assert dim.description.strip()
        assert 10 <= len(dim.lexicon) <= 30, dim.key
        assert all(stem(word) == word for word in dim.lexicon), dim.key


def test_dimensions_are_frozen():
    with pytest.raises(AttributeError):
        TRAIT_CATALOGUE[0].name = "changed"  # type: ignore[misc]


def test_guitar_at_a_concert_is_music_interest_with_two_hits():
    evidence = trait_evidence("I played guitar at a concert")
    assert evidence[0] == TraitEvidence(key="music_interest", weight=0.75,
                                        matched=("concert", "guitar"))


def test_weight_grows_with_distinct_hits():
    one = trait_evidence("We adopted a puppy.")
    assert TraitEvidence(key="animal_concern", weight=0.5, matched=("puppy",)) in one
    three = {ev.key: ev for ev in trait_evidence("My cat and my puppy love animals.")}
    assert three["animal_concern"] == TraitEvidence(key="animal_concern", weight=0.875,
                                                    matched=("animal", "cat", "puppy"))
    repeated = {ev.key: ev for ev in trait_evidence("guitar guitar guitars")}
    assert repeated["music_interest"].weight == 0.5  # distinct stems, not occurrences


def test_evidence_is_sorted_by_weight_then_key():
    evidence = trait_evidence("I'm so stressed about my exam, I can't sleep. Studying at the "
                              "library for my college degree.")
    assert [(ev.key, ev.weight) for ev in evidence] == sorted(
        ((ev.key, ev.weight) for ev in evidence), key=lambda pair: (-pair[1], pair[0]))
    assert evidence[0].key == "education_interest"


def test_no_evidence_in_chatter():
    assert trait_evidence("") == []
    assert trait_evidence("Hey! Yeah, totally.") == []


def test_ewma_update_moves_toward_one_by_the_weight():
    assert update_trait_score(0.2, 0.75) == pytest.approx(0.38)  # 0.2 + 0.3*0.75*0.8
    assert update_trait_score(0.2, 0.75, rate=0.5) == pytest.approx(0.5)  # 0.2 + 0.5*0.75*0.8
    assert update_trait_score(0.4, 0.0) == 0.4
    assert update_trait_score(1.0, 1.0) == 1.0


def test_repeated_evidence_approaches_but_never_passes_one():
    score = 0.0
    for _ in range(50):
        new = update_trait_score(score, 0.875)
        assert score < new <= 1.0
        score = new
    assert score > 0.99


def test_an_ambiguous_stem_counts_only_in_the_form_the_lexicon_writes():
    # Issue 36, finding 13: "Fitness Interest" cited a boatyard's owner and an evening class.
    assert trait_evidence("Geoff, who runs the boatyard, lent us a sander.") == []
    assert [e.key for e in trait_evidence("The evening class runs every Tuesday.")] == ["education_interest"]
    assert trait_evidence("We took the train to Porto.") == []
    fitness = {e.key: e for e in trait_evidence("I went running by the river, then did yoga.")}["fitness_interest"]
    assert fitness.matched == ("run", "yoga") and fitness.weight == 0.75
    assert {e.key: e.matched for e in trait_evidence("Training for a marathon.")}["fitness_interest"] == (
        "marathon", "train")
    assert [e.key for e in trait_evidence("Sunday's long run by the river.")] == ["fitness_interest"]
