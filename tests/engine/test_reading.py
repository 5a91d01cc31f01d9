"""The statement reader on spaCy's parse: what a clause says about the speaker (or someone they
name), of which kind, kept in the third person; what states nothing (questions, hypotheticals,
wishes, moods, requests, other people's news). Semantic assertions on the real English model."""

from __future__ import annotations

import re

import pytest

from memory.engine.language import parse
from memory.engine.reading import SELF, kept_back, normalise_statement, read
from memory.engine.reading.reader import _cleft_said_apart, _so_set_off, _unclefted
from memory.engine.wording import to_person, to_stored


def facts(text: str) -> list[str]:
    return [r.text for r in read(text)]


def kinds(text: str) -> list[str]:
    return [r.slot for r in read(text)]


@pytest.mark.parametrize(("statement", "fact", "kind"), [
    ("My hobby is bouldering.", "User's hobby is bouldering", "activity"),
    ("I can't eat gluten.", "User can't eat gluten", "diet"),
    ("I have no children.", "User has no children", "family"),
    ("I don't drink alcohol at all.", "User doesn't drink alcohol at all", "diet"),
    ("Spanish is my first language.", "Spanish is User's first language", "language"),
    ("I'm coeliac, so gluten is out for me.", "User is coeliac", "health"),
    ("Peanuts put me in hospital once, so I have to avoid them.", "Peanuts put User in hospital once", "diet"),
    ("I'm a nurse.", "User works as a nurse", "occupation"),
    ("I prefer tea over coffee.", "User prefers tea over coffee", "preference"),
    ("My son is called Rafael.", "Rafael is User's son", "family"),  # the recogniser takes "Rafael" for a place
])
def test_everyday_statements_become_facts_of_their_kind(statement, fact, kind):
    found = read(statement)
    assert fact in [r.text for r in found], found
    assert next(r.slot for r in found if r.text == fact) == kind


def test_a_negation_is_kept_and_marked():
    [fact] = read("I don't drink alcohol at all.")
    assert fact.negated and "doesn't" in fact.text


def test_a_hedge_frames_what_is_still_asserted():
    assert facts("Honestly I'm pretty sure I'm lactose intolerant.") == ["User is lactose intolerant"]
    assert facts("I guess I'm kind of a night owl.") == ["User is kind of a night owl"]


@pytest.mark.parametrize("text", [
    "If I won the lottery I'd buy a boat.",  # a hypothetical
    "Maybe I'll take up pottery someday.",  # a wish without a date
    "I'm thinking about moving to Berlin.",
    "Where do I live?",  # a question, with or without its mark
    "do you know a good parka brand",
    "My coworker just got promoted.",  # someone else's news
    "A lad on my course has gone vegan.",
    "I'm so tired today.",  # a passing mood
    "ugh this monday is dragging",
    "Give me five ideas for a party.",  # a request
    "pls explain recursion like im 5",
    "That new film was overrated.",  # an opinion about the world
    "lol ok",
    "I finally did it!",  # nothing but pronouns
])
def test_what_states_nothing_lasting_about_the_person_gives_no_fact(text):
    assert facts(text) == []


def test_family_by_name_keeps_its_owner():
    found = read("My brother Daniel lives in Porto with his wife Inês and their daughter Lia.")
    assert "Daniel is User's brother" in [r.text for r in found]
    residence = next(r for r in found if r.slot == "residence")
    assert (residence.subject, residence.value) == ("brother", "porto")
    assert not [r for r in found if "Lia is User's" in r.text]  # their daughter is the brother's


def test_a_stored_fact_reads_as_the_speakers_words():
    assert normalise_statement("User is allergic to peanuts") == "I'm allergic to peanuts"
    assert normalise_statement("User lives in Porto") == "I live in Porto"
    # the person's own words keep "their": it is someone else's
    assert normalise_statement("My sister and their kids visited") == "My sister and their kids visited"


def test_a_job_at_a_named_employer_is_read_for_both_kinds():
    found = read("I work at Acme as an accountant.")
    assert {(r.slot, r.value) for r in found} == {("occupation", "accountant"), ("employer", "acme")}
    assert {r.text for r in found} == {"User works as an accountant at Acme"}


def test_an_is_taken_for_a_possessive_is_read_again():
    assert facts("My husband's called Raj.") == ["User's husband is Raj"]
    assert "User's birthday is the 29th of February" in facts("Birthday's the 29th of February.")


def test_a_correction_in_passing_names_the_value_it_denies():
    [pet] = read("No, my dog is called Rex, not Max.")
    assert (pet.slot, pet.key, pet.ended) == ("pet", "rex|dog", "max")


def test_a_name_and_an_age():
    assert facts("I'm Marguerite, a retired teacher.")[0] == "User's name is Marguerite"
    assert facts("I'm 34.") == ["User is 34"]
    assert facts("When I was nine my dad taught me to sail.") == []


def test_only_the_speakers_readings_are_the_speakers():
    found = read("My sister moved to Oslo.")
    assert [(r.subject, r.slot) for r in found] == [("sister", "residence")]
    assert read("I moved to Oslo.")[0].subject == SELF


@pytest.mark.parametrize(("stored", "said"), [
    ("User is coeliac", "You're coeliac"),
    ("Ingrid is User's older sister", "Ingrid is your older sister"),
    ("User doesn't have any children", "You don't have any children"),
    ("User is flying to Lisbon on 14 March", "You're flying to Lisbon on 14 March"),
    ("User left their job at Larkfield Hospital", "You left your job at Larkfield Hospital"),
    ("User's sister Ingrid is older than User", "Your sister Ingrid is older than you"),
    ("User studies law", "You study law"),
    ("User watches birds", "You watch birds"),
    ("User can't eat gluten", "You can't eat gluten"),
])
def test_a_fact_is_said_to_the_person_with_its_verb_agreeing(stored, said):
    assert to_person(stored) == said


@pytest.mark.parametrize(("written", "stored"), [
    ("You live in Porto", "User lives in Porto"), ("You're coeliac", "User is coeliac"),
    ("Ingrid is your older sister", "Ingrid is User's older sister"),
    ("You left your job at Acme", "User left their job at Acme"), ("I study law", "User studies law"),
    ("User lives in Porto", "User lives in Porto"),
])
def test_a_fact_written_to_the_person_is_stored_in_the_third_person_and_reads_back_the_same(written, stored):
    assert to_stored(written) == stored
    assert to_person(stored) == to_person(to_stored(written))


@pytest.mark.parametrize(("message", "target_words"), [
    ("Hey, forget that I live in Lisbon.", {"lisbon"}),
    ("I want you to forget that I live in Lisbon.", {"lisbon"}),
    ("Never store this: I live in Lisbon", {"lisbon"}),
    ("Stop remembering that I live in Leeds.", {"leeds"}),
    ("Please don't commit my address to memory, it's 4 Elm Road.", {"address"}),
    ("No need to remember my PIN, it's 4471.", {"pin"}),
    ("You don't have to remember that I'm diabetic.", {"diabetic"}),
    ("Pretend I never mentioned that I'm job hunting.", {"job", "hunting"}),
    ("I'm seeing a therapist, but keep that to yourself.", {"therapist"}),
    # said in other grammar (issue 49): a courtesy the parser took for a subject, "treat … as", a
    # copula declaring it private, a wish that it not be kept, "ignore", a pretence of not typing it
    ("My PIN is 4821 but plz dont save it.", {"pin"}),
    ("Treat this as private: I'm diabetic.", {"diabetic"}),
    ("I sleep in my car these days. That's confidential.", {"sleep", "car"}),
    ("I'm in debt, though I don't want it stored anywhere.", {"debt"}),
    ("Ignore what I said about my ex.", {"ex"}),
    ("Pretend I never wrote that I failed my exam.", {"failed", "exam"}),
])
def test_a_request_not_to_keep_is_read_with_what_it_points_at(message, target_words):
    found = kept_back(message)
    assert found is not None
    assert target_words <= set(re.findall(r"[a-z]+", found.target.lower()))


@pytest.mark.parametrize("message", [
    "Did you forget that I'm vegan?",  # asks about memory
    "Don't forget I'm vegan.",  # asks to keep
    "Remember that I hate mushrooms.",
    "I always forget my keys, I live alone in Brighton.",  # the speaker's own doing
    "You forgot my birthday, it's on 3 May.",
    "Forget the gym, I've taken up climbing.",  # nothing of the person's to let go
    "I live in Leeds and don't keep chickens.",
])
def test_what_only_mentions_forgetting_or_keeping_is_no_request(message):
    assert kept_back(message) is None


def test_a_past_form_the_tagger_took_for_a_present_gets_its_lemma_back():
    from memory.engine.language import parse

    forgot = parse("I forgot to mention it.")[1]
    rent = parse("I rent a flat.")[1]  # "rent" is a verb of its own, not only the past of "rend"
    assert (forgot.lemma_, forgot.tag_) == ("forget", "VBD")
    assert rent.lemma_ == "rent"


def test_the_days_news_told_in_the_past_is_no_fact():
    assert facts("Took my nephew to the aquarium today.") == []


def test_went_with_what_one_became_is_a_change_and_where_one_went_is_not():
    assert [(r.slot, r.value, r.change) for r in read("I went vegan in January.")] == [("diet", "vegan", True)]
    assert not any(r.change for r in read("I went to Paris last week."))


@pytest.mark.parametrize(("statement", "ended", "now"), [
    ("I've left my job at Larkfield Hospital, I'm now at Northgate Pharmacy.", "larkfield hospital",
     "User works at Northgate Pharmacy"),
    ("I left Acme in March. I'm with Deloitte now.", "acme", "User works at Deloitte"),
    ("I quit the bakery in May; I'm running the front desk at the Grand Hotel now.", "bakery",
     "User works at the Grand Hotel"),
    ("We moved out of Leeds in June and we're in York now.", "leeds", "User lives in York"),
])
def test_a_change_said_in_two_breaths_keeps_its_new_value(statement, ended, now):
    """Issue 48: "I've left my job at Larkfield Hospital, I'm now at Northgate Pharmacy" kept only
    the leaving, so "Where do I work now?" was answered with the old job."""
    found = read(statement)
    assert any(r.ended == ended and not r.value for r in found)
    [new] = [r for r in found if r.value and r.slot in ("employer", "residence")]
    assert new.text == now and new.change


@pytest.mark.parametrize(("statement", "now"), [
    ("I started a new job last week, I'm at Globex now.", "User works at Globex"),
    ("Went back to work in May — I'm doing the accounts at the garden centre now.", "User works at the garden centre"),
])
def test_work_taken_up_and_then_placed_names_the_employer(statement, now):
    assert now in [r.text for r in read(statement) if r.slot == "employer"]


@pytest.mark.parametrize("statement", [
    "I'm looking for a new job, I'm at the library now.", "Go back to work! I'm at the pub now.",
])
def test_work_only_sought_or_bidden_names_no_employer(statement):
    assert not any(r.slot == "employer" and r.value for r in read(statement))


@pytest.mark.parametrize("statement", [
    "I quit my job at Tesco, I'm having lunch at Luigi's to celebrate.",
    "I've left my job at the bank, I'm now at home with the kids.",
    "I quit my job at Tesco, I'm eating cake at the park now.",
    "I left Acme in March. I was at Globex before that.",
])
def test_an_ending_names_no_new_value_where_the_person_is_not_placed_for_good(statement):
    assert not any(r.slot == "employer" and r.value for r in read(statement))


def test_moving_out_of_a_place_ends_it_rather_than_naming_it_home():
    """ "We moved out of Leeds" was read as "User lives in Leeds"."""
    [reading] = read("I moved out of London last year.")
    assert (reading.slot, reading.value, reading.ended) == ("residence", "", "london")


@pytest.mark.parametrize(("statement", "fact"), [
    ("Correction: it's hazelnuts I'm allergic to.", "User is allergic to hazelnuts"),
    ("It's the cello I play.", "User plays the cello"),
    ("It is peanuts that I can't eat.", "User can't eat peanuts"),
    ("It's my brother who lives in Leeds.", "User's brother lives in Leeds"),
])
def test_a_cleft_is_read_in_its_plain_order(statement, fact):
    """ "It's hazelnuts I'm allergic to" was stored as "User is allergic to": the fronted focus
    fills the gap its clause leaves (issue 48)."""
    assert fact in facts(statement)


@pytest.mark.parametrize("statement", ["It's a shame I can't come.", "It's raining.", "It's my birthday today."])
def test_what_only_looks_like_a_cleft_is_not_rewritten(statement):
    assert _unclefted(parse(statement)) == ""


def test_no_fact_ends_on_a_preposition_left_without_its_object():
    """A comma splice loses the cleft's focus: "User is allergic to" was kept and answered."""
    said = facts("it's hazelnuts I'm allergic to, I got muddled with my son's allergy")
    assert "User is allergic to" not in said
    assert not [fact for fact in said if fact.split()[-1] in ("to", "with", "of", "at", "in")]


@pytest.mark.parametrize("statement", ["Grumpy as a wet cat tonight, don't mind me.", "Hungry as a wolf today"])
def test_a_likeness_tells_no_kind(statement):
    """ "as a wet cat" is a mood, not a pet: a word in a comparison names nothing the person has."""
    assert read(statement) == ()


def test_a_likeness_leaves_a_plain_mention_alone():
    assert kinds("penicillin allergy fyi") == ["allergy"]


@pytest.mark.parametrize(("statement", "fact", "not_fact"), [
    ("We're moving house in January.", "User is moving house in January", "User lives in January"),
    ("Starting new job at Infosys from the 1st of next month.", "User works at Infosys", "User works at the 1st"),
])
def test_a_time_is_never_a_home_or_an_employer(statement, fact, not_fact):
    """The noun after "in" or "at" was taken for the place whatever it was: a date is when."""
    said = facts(statement)
    assert fact in said and not_fact not in said


@pytest.mark.parametrize(("statement", "fact"), [
    ("Not a morning person at all, don't message me before 10.", "User is not a morning person at all"),
    ("Allergic to penicillin, just so you know.", "User is allergic to penicillin"),
])
def test_a_first_part_without_its_verb_is_read_on_its_own(statement, fact):
    """Chat drops the "I'm" of a first part, and the parse hung it on the clause after the comma."""
    assert fact in facts(statement)


def test_a_subject_set_off_by_commas_is_no_mention_of_its_own():
    assert facts("My sister, who lives in Leeds, is a nurse.") == ["User's sister works as a nurse in Leeds"]


@pytest.mark.parametrize(("statement", "name"), [
    ("Call me Kenji.", "Kenji"),
    ("Call me Bongani, Bo for short.", "Bongani"),
])
def test_call_me_at_the_start_names_the_person(statement, name):
    """A sentence opening on a bare verb was taken for a request: "Call me Kenji" names them."""
    assert f"User's name is {name}" in facts(statement)


@pytest.mark.parametrize("statement", ["Call me a taxi.", "Call me when you're free."])
def test_call_me_asking_something_names_no_one(statement):
    assert not [fact for fact in facts(statement) if "name" in fact]


def test_a_so_without_its_comma_still_links_two_clauses():
    """The parse ran "I have a Vitamix so smoothie recipes are fine" into one clause and read nothing."""
    assert "User has a Vitamix" in facts("I have a Vitamix so smoothie recipes are fine")
    assert _so_set_off(parse("I have a Vitamix so smoothie recipes are fine")) == (
        "I have a Vitamix, so smoothie recipes are fine")


@pytest.mark.parametrize("statement", ["I'm so happy today", "I think so too"])
def test_a_so_that_links_nothing_is_left_alone(statement):
    assert _so_set_off(parse(statement)) == ""


def test_a_mention_keeps_the_no_that_negates_it():
    """ "No meat for me" was kept as "User mentioned: meat for User": the opposite of what was said."""
    assert facts("No meat for me.") == ["User mentioned: No meat for User"]
    assert to_person("User mentioned: No meat for User") == "You mentioned: No meat for you"


def test_a_pet_named_with_be_is_one_fact():
    """ "My dog is Rex" was kept twice: "User has a dog named Rex" and "User's dog is Rex"."""
    assert facts("My dog is Rex.") == ["User has a dog named Rex"]
    assert facts("My dog Rex is a beagle.") == ["User's dog Rex is a beagle"]


@pytest.mark.parametrize("statement", ["asthma since i was a kid lol always got my inhaler on me",
                                       "i'm having asthma since i was small"])
def test_a_time_of_life_is_no_fact_of_its_own(statement):
    """ "since I was a kid" was kept as "User was a kid", a family fact."""
    said = facts(statement)
    assert "User was a kid" not in said and "User was small" not in said
    assert any("asthma" in fact for fact in said)


def test_a_mention_in_the_first_person_agrees_with_its_verb():
    """ "I am having diabetes" was kept as "User am having diabetes"."""
    assert facts("I am having diabetes type 2 since 2019.") == [
        "User mentioned: User is having diabetes type 2 since 2019"]


def test_a_mention_keeps_the_you_it_says_to_the_assistant():
    """Only the opening "I" is the person's verb to agree: "you" further on is the assistant, where
    wording.to_stored, made for text said to the person, would read it as them."""
    assert facts("I am having diabetes type 2 since 2019, as I told you.") == [
        "User mentioned: User is having diabetes type 2 since 2019, as User told you"]


@pytest.mark.parametrize(("statement", "fact", "kind"), [
    ("I think I might be lactose intolerant?", "User might be lactose intolerant", "allergy"),
    ("I might have a half-sister in Cebu.", "User might have a half-sister in Cebu", "family"),
    ("Might move to Canada next year, applied for PR.", "User might move to Canada next year", "plan"),
    ("I might be a nurse.", "User might be a nurse", "work"),  # a guess, never "User works as a nurse"
    ("I think I might be vegan.", "User might be vegan", "diet"),
])
def test_the_persons_own_guess_under_might_is_kept_as_said(statement, fact, kind):
    """ "might" and "may" hedge what the person says of themselves; a move under them is a plan
    (a dated one), never their home now."""
    found = read(statement)
    assert fact in [r.text for r in found], found
    assert next(r.slot for r in found if r.text == fact) == kind
    assert not any(r.slot == "residence" for r in found)


@pytest.mark.parametrize("statement", ["I might go for a run later.", "Maybe someday I might learn the violin.",
                                       "If it rains I might stay in.", "You might be right.",
                                       "I could live in Paris one day.", "I might be a painter in another life.",
                                       "Thinking maybe we move to Spain someday, we'll see, just a dream."])
def test_might_without_a_date_a_dream_or_the_person_keeps_nothing(statement):
    assert facts(statement) == []


@pytest.mark.parametrize(("statement", "fact"), [
    ("My grandma was born in Sicily.", "User's grandma was born in Sicily"),
    ("My dad is from Ghana.", "User's dad is from Ghana"),
    ("My mum speaks Tagalog.", "User's mum speaks Tagalog"),
])
def test_where_family_come_from_and_what_they_speak_is_the_persons_to_tell(statement, fact):
    assert facts(statement) == [fact]


@pytest.mark.parametrize(("statement", "fact"), [
    ("we fly to Tokyo on the 14th of May, can you suggest a packing list?", "User flies to Tokyo on the 14th of May"),
    ("I'm coeliac, so could you suggest a cake?", "User is coeliac"),
])
def test_a_question_after_a_comma_leaves_the_statement_before_it(statement, fact):
    assert fact in facts(statement)


@pytest.mark.parametrize("statement", ["Where do I live, can you remind me?", "Do I have a dog, could you check?"])
def test_a_question_before_the_comma_is_still_a_question(statement):
    assert facts(statement) == []


@pytest.mark.parametrize(("statement", "fact"), [
    ("sorry, I got that wrong, it's aspirin I'm allergic to", "User is allergic to aspirin"),
    ("it's aspirin I'm allergic to", "User is allergic to aspirin"),  # the parse cuts it in two sentences
    ("honestly it's the cello I play most", "User plays the cello most"),
])
def test_a_cleft_after_other_words_or_cut_apart_is_read_in_its_plain_order(statement, fact):
    assert fact in facts(statement)


@pytest.mark.parametrize("statement", ["It's raining I think.", "it's great I love it", "it's a shame I can't come"])
def test_it_is_and_a_clause_without_a_gap_is_no_cleft(statement):
    assert _cleft_said_apart(parse(statement)) == ""


@pytest.mark.parametrize(("statement", "plan"), [
    ("I'm moving to Perth in June.", "User is moving to Perth in June"),
    ("We're moving to Leeds in the spring", "User is moving to Leeds in the spring"),
])
def test_a_move_under_way_is_a_plan_not_the_home_now(statement, plan):
    found = read(statement)
    assert [(r.slot, r.text) for r in found] == [("plan", plan)]


def test_a_move_said_as_done_or_now_is_the_home():
    assert [(r.slot, r.value) for r in read("we're moving to Leeds now")] == [("residence", "leeds")]
    assert [(r.slot, r.value) for r in read("I moved to Leeds in 2019")] == [("residence", "leeds")]


@pytest.mark.parametrize("statement", ["I moved my savings to Monzo", "moved everything over to Monzo"])
def test_moving_things_is_no_move_of_home(statement):
    assert all(r.slot != "residence" for r in read(statement))


def test_a_change_with_its_i_left_out_is_kept_and_an_outing_is_not():
    [switched] = read("switched to a Pixel 8 last week, android is taking some getting used to")
    assert switched.text == "User switched to a Pixel 8 last week" and switched.change
    assert read("went to Paris last week") == ()


def test_closing_an_account_says_what_ended():
    [closed] = read("closed the barclays account yesterday")
    assert closed.ended == "barclays account" and closed.change


@pytest.mark.parametrize(("statement", "fact"), [
    ("axolotl owner here 🦎 is it normal for the tank to go cloudy?", "User is an axolotl owner"),
    ("axolotl owner here 🦎 is it normal for the tank to go cloudy", "User is an axolotl owner"),  # no mark
    ("shellfish allergy over here 🦐 what can i order at a seafood place", "User has a shellfish allergy"),
    ("Nurse here.", "User works as a nurse"),
])
def test_a_label_and_here_opening_a_message_says_who_the_person_is(statement, fact):
    assert fact in facts(statement)


@pytest.mark.parametrize("statement", ["Same here, honestly.", "My kids here are driving me mad",
                                       "Island girl here, Samoa born, Auckland raised."])
def test_here_inside_a_sentence_or_before_more_of_the_label_is_left_alone(statement):
    assert not [fact for fact in facts(statement) if fact.startswith(("User is a", "User is an"))]


def test_a_report_without_what_was_said_is_no_fact():
    assert "User's head of department announced" not in facts("Our head of department announced she's retiring.")
    assert any(fact.startswith("User knit") for fact in facts("I knit, I bake sourdough, and I do the pub quiz."))


def test_a_shift_is_no_employer():
    assert [r.slot for r in read("I work the 4am shift at a bakery in Fitzroy.")] == ["work"]


def test_where_family_go_to_school_is_the_persons_to_tell():
    [school] = read("My son goes to Oakfield School.")
    assert (school.subject, school.slot, school.text) == ("son", "education", "User's son goes to Oakfield School")
    assert read("My coworker is studying for her exams") == ()
