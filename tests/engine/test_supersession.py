"""The offline supersession detector: claims, clashes, confidence and what is never a candidate."""

from __future__ import annotations

import pytest

from memory.engine.supersession import (
    NO_VERDICT,
    Decision,
    Memory,
    SupersessionParams,
    claims_of,
    same_value,
    supersession_candidates,
    supersession_decide,
    topic_verdicts,
)


def memories(*texts: str) -> list[Memory]:
    return [Memory(id=f"m{i}", text=text) for i, text in enumerate(texts)]


# --- reading claims ---------------------------------------------------------------------------

def test_stored_facts_and_first_person_statements_read_alike():
    stored = claims_of("User lives in Leeds")
    spoken = claims_of("I live in Leeds.")
    assert [(c.subject, c.slot, c.value) for c in stored] == [("self", "residence", "leeds")]
    assert [(c.subject, c.slot, c.value) for c in spoken] == [("self", "residence", "leeds")]


def test_a_move_names_the_new_place_and_the_old_one():
    [claim] = claims_of("We moved from Leeds to York last month.")
    assert (claim.slot, claim.value, claim.ended, claim.change) == ("residence", "york", "leeds", True)


def test_a_relation_is_its_own_subject():
    [claim] = claims_of("My sister lives in Paris.")
    assert (claim.subject, claim.value) == ("sister", "paris")


@pytest.mark.parametrize("text", [
    "I visited York last weekend.",  # a mention
    "If we moved to York we'd be closer to my mum.",  # a hypothetical
    "I'm thinking about moving to York.",  # a plan
    "Should I move to York?",  # a question
    "lol I basically live at the gym now",  # a joke
    "Tom moved to York.",  # someone else
])
def test_mentions_hypotheticals_questions_jokes_and_others_claim_no_residence(text):
    assert [c for c in claims_of(text) if c.slot == "residence" and c.subject == "self"] == []


def test_values_agree_when_one_holds_the_others_words():
    assert same_value("the bakery", "bakery on elm street")
    assert not same_value("bakery", "library")
    assert not same_value("", "york")


def test_a_claim_late_in_a_long_clause_is_read():
    [claim] = claims_of("After three long years of commuting through the traffic every single day we finally "
                        "moved to York")
    assert (claim.slot, claim.value, claim.change) == ("residence", "york", True)


# --- verdicts ---------------------------------------------------------------------------------

def test_a_change_word_makes_a_new_value_supersede_at_once():
    verdict = supersession_decide("I live in York now.", memories("User loves tea", "User lives in Leeds"))
    # base 0.55 + change word 0.3 = 0.85 >= supersede_at 0.8
    assert (verdict.decision, verdict.confidence, verdict.slot, verdict.old_id) == (
        Decision.SUPERSEDE, 0.85, "residence", "m1")
    assert "'leeds' became 'york'" in verdict.reason


def test_a_new_value_without_a_change_word_waits_for_review():
    verdict = supersession_decide("I live in York.", memories("User lives in Leeds"))
    assert (verdict.decision, verdict.confidence) == (Decision.REVIEW, 0.55)


def test_naming_the_old_value_adds_its_bonus():
    verdict = supersession_decide("We moved from Leeds to York.", memories("User lives in Leeds"))
    # 0.55 + 0.3 (moved) + 0.3 (from Leeds), capped at 0.98
    assert verdict.confidence == 0.98


def test_thresholds_come_from_the_params():
    strict = SupersessionParams(supersede_at=0.9, review_at=0.6)
    verdict = supersession_decide("I live in York now.", memories("User lives in Leeds"), params=strict)
    assert verdict.decision is Decision.REVIEW
    assert supersession_decide("I live in York.", memories("User lives in Leeds"), params=strict) == NO_VERDICT


def test_the_same_value_again_is_no_clash():
    assert supersession_decide("We love living in York.", memories("User lives in York")) == NO_VERDICT


def test_a_past_statement_of_another_value_is_history_not_a_change():
    assert supersession_decide("I used to live in Leeds.", memories("User lives in York")) == NO_VERDICT


def test_a_past_statement_of_the_current_value_ends_it():
    verdict = supersession_decide("I used to live in Leeds.", memories("User lives in Leeds"))
    assert (verdict.decision, verdict.old_id) == (Decision.SUPERSEDE, "m0")


def test_leaving_a_job_ends_it_and_the_new_one_is_named():
    found = supersession_candidates("I left my job at the bakery and started at the library.",
                                    memories("User works at the bakery on Elm Street", "User loves tea"))
    assert [v.old_id for v in found] == ["m0"]
    assert found[0].decision is Decision.SUPERSEDE


def test_another_pet_is_no_clash_but_a_death_is():
    current = memories("User has a dog named Max")
    assert supersession_decide("We adopted a kitten called Luna!", current) == NO_VERDICT
    verdict = supersession_decide("Max died in the spring.", current)
    assert (verdict.decision, verdict.slot) == (Decision.SUPERSEDE, "pet")


def test_liking_two_things_is_no_clash_but_turning_against_one_is():
    current = memories("User loves sushi")
    assert supersession_decide("I also love ramen.", current) == NO_VERDICT
    assert supersession_decide("I don't like sushi anymore.", current).old_id == "m0"


def test_a_relations_change_leaves_the_speakers_facts_alone():
    assert supersession_decide("My sister moved to York.", memories("User lives in Leeds")) == NO_VERDICT
    verdict = supersession_decide("My sister moved to York.", memories("User's sister lives in Leeds"))
    assert verdict.old_id == "m0"


def test_a_breakup_ends_the_partner_named_and_no_other_slot():
    current = memories("User's boyfriend is Tom", "User lives in Leeds")
    found = supersession_candidates("Tom and I broke up in the spring.", current)
    assert [(v.old_id, v.slot) for v in found] == [("m0", "partner")]


def test_nothing_current_means_nothing_to_supersede():
    assert supersession_candidates("We moved to York.", []) == []


# --- replies and prompts use time ---------------------------------------------------------------

def test_a_superseded_memory_is_shown_with_its_period_and_successor():
    from datetime import UTC, datetime

    from memory.engine.supersession import successor_in, superseded_text
    text = superseded_text("User lives in Leeds", datetime(2025, 3, 2, tzinfo=UTC), "User lives in York")
    assert text == "User lives in Leeds (until March 2025; since then: User lives in York)"
    assert successor_in(text) == "User lives in York"
    assert successor_in("User lives in Leeds") == ""


def test_the_offline_reply_answers_with_the_current_value_unless_asked_about_the_past():
    from datetime import UTC, datetime

    from memory.engine.replies import compose_reply
    from memory.engine.supersession import superseded_text
    from memory.engine.types import RecalledItem
    march, june = datetime(2025, 3, 2, tzinfo=UTC), datetime(2025, 6, 9, tzinfo=UTC)
    items = [
        RecalledItem(kind="kb_fact", ref="f1", text=superseded_text("User lives in Leeds", june, "User lives in York"),
                     score=0.3, timestamp=march, breakdown={"superseded": 0.5, "until": june.timestamp()}),
        RecalledItem(kind="turn", ref="t1", text="Sam: I live in Leeds with my cats.", score=0.9, timestamp=march,
                     breakdown={"cosine": 0.7}),
    ]
    now = compose_reply("Where do I live?", items, user_aliases=("Sam",), now=datetime(2025, 7, 1, tzinfo=UTC))
    assert "you live in York" in now and "9 June 2025" in now and "Leeds" not in now
    past = compose_reply("Where did I live before?", items, user_aliases=("Sam",),
                         now=datetime(2025, 7, 1, tzinfo=UTC))
    assert "I live in Leeds with my cats" in past


def test_the_replay_marks_a_superseded_fact_and_an_operators_rejection_undoes_it():
    from datetime import UTC, datetime

    from memory.engine.lifecycle import EventRecord, replay
    june = datetime(2025, 6, 2, tzinfo=UTC)
    events = [EventRecord(1, "fact_added", "f1", june, {"text": "User lives in Leeds"}),
              EventRecord(2, "fact_added", "f2", june, {"text": "User lives in York"}),
              EventRecord(3, "fact_superseded", "f1", june, {"new_fact_id": "f2"}),
              EventRecord(4, "supersession_rejected", "f1", june, {"by": "model"}),  # a candidate: nothing undone
              EventRecord(5, "supersession_rejected", "f1", june, {"before": "superseded"})]
    assert replay(events, until=3).superseded == {"f1": june}
    assert set(replay(events, until=3).facts) == {"f1", "f2"}  # kept: history is memory
    assert replay(events, until=4).superseded == {"f1": june}
    assert replay(events).superseded == {}


@pytest.mark.parametrize(("old", "new"), [
    ("I like games that test my strategy.", "I love those games too."),  # the same taste again
    ("I joined a chess club.", "I joined a programming group online."),  # clubs are no employers
    ("I made an avatar and joined a new platform.", "I joined an online gaming tournament."),
    ("I loved the book Becoming Nicole.", "I took the first step towards becoming a mom."),
    ("Lately I've become interested in extreme sports.", "I asked her to become my girlfriend."),
])
def test_what_the_dev_conversations_taught_is_no_clash(old, new):
    assert supersession_decide(new, memories(old)) == NO_VERDICT


def test_a_statement_that_replaces_ends_what_it_speaks_of_across_kinds_told_apart_by_little():
    """ "our anniversary's in October actually" is read as something said, the earlier "…is in
    August" as a plan: for a statement that says it replaces, close in meaning, one kind."""
    old = memories("User's wedding anniversary is in August")
    found = topic_verdicts("our anniversary's in October actually", "User's anniversary is in October actually",
                           old, lambda first, second: 0.77)
    assert [(v.decision, v.old_id) for v in found] == [(Decision.SUPERSEDE, "m0")]
    assert topic_verdicts("our anniversary's in October", "User's anniversary is in October", old,
                          lambda first, second: 0.77) == []  # no word of replacing


def test_kinds_apart_are_still_apart_for_a_statement_that_replaces():
    old = memories("User lives in Leeds")
    assert topic_verdicts("I'm actually vegan now", "User is vegan", old, lambda first, second: 0.9) == []
