"""The offline engine: keywords, extractive summaries, persona patterns and grounded replies."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.engine.offline import (
    compose_reply,
    extract_agent_traits,
    extract_keywords,
    stem,
    summarize,
)
from memory.engine.types import RecalledItem

ROOT = Path(__file__).resolve().parents[2]
MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
JUNE_1 = datetime(2023, 6, 1, 9, 0, tzinfo=UTC)


def make_item(text: str, *, kind: str = "mtm_page", score: float = 0.4,
              timestamp: datetime | None = MAY_8, ref: str = "r1") -> RecalledItem:
    return RecalledItem(kind=kind, ref=ref, text=text, score=score, timestamp=timestamp)


# --- keywords ---------------------------------------------------------------------------------

def test_same_topic_texts_share_keywords():
    first = extract_keywords("I adopted two dogs last month and we walk them in the park every day.")
    second = extract_keywords("My dog loves the park; walking her is the best part of my morning.")
    assert {"dog", "park", "walk"} <= first & second


def test_unrelated_topics_share_no_keywords():
    dogs = extract_keywords("I adopted two dogs last month and we walk them in the park every day.")
    thesis = extract_keywords("I finished my thesis on quantum physics at the university.")
    assert dogs & thesis == frozenset()
    assert thesis == {"finish", "thesis", "quantum", "physics", "university"}


@pytest.mark.parametrize(("variant", "base"), [
    ("dogs", "dog"), ("painting", "paint"), ("painted", "paint"), ("paints", "paint"),
    ("hiking", "hike"), ("stories", "story"), ("studied", "study"), ("running", "run"),
    ("travelled", "traveling"), ("used", "use"), ("movies", "movie"), ("siblings", "sibling"),
    ("introducing", "introduce"), ("structured", "structure"), ("ran", "run"), ("children", "child"),
])
def test_stemming_brings_variants_together(variant, base):
    assert stem(variant) == stem(base)


def test_stems_stay_readable():
    assert [stem(w) for w in ("painting", "hiking", "stories", "classes", "boxes", "bus")] == [
        "paint", "hike", "story", "class", "box", "bus"]


def test_stopwords_and_chatter_are_not_keywords():
    assert extract_keywords("Hey Mel! Yeah, thanks, that's really great and so awesome!") == frozenset()


def test_keywords_of_a_locomo_turn():
    text = "I went to a LGBTQ support group yesterday and it was so powerful."
    assert extract_keywords(text) == {"lgbtq", "support", "group", "powerful"}


def test_addressed_names_are_dropped_and_other_names_kept():
    keywords = extract_keywords("Thanks, Melanie! I played chess with James and Max at the lake.")
    assert "melanie" not in keywords
    assert {"chess", "james", "max", "lake"} <= keywords


def test_keywords_rank_by_frequency_and_respect_the_limit():
    text = "Guitar practice today. The guitar sounds better after practice. I also bought a metronome."
    assert extract_keywords(text, limit=2) == {"guitar", "practice"}
    assert extract_keywords(text, limit=0) == frozenset()
    assert len(extract_keywords(text * 5)) <= 8


def test_offline_functions_are_fast():
    texts = [f"On day {i} I went hiking with my dog Max near the lake, and we saw {i} deer. "
             "It was lovely. You should try the trail too!" for i in range(200)]
    start = time.perf_counter()
    for text in texts:
        extract_keywords(text)
        extract_agent_traits(text)
    per_text = (time.perf_counter() - start) / len(texts)
    assert per_text < 0.002  # two functions well under 1 ms each


# --- summaries --------------------------------------------------------------------------------

PUPPY_TEXTS = [
    "We took Max to the park on Sunday.",
    "The weather report said rain all week.",
    "Max the puppy loves the park.",
    "Our puppy Max chased a ball.",
]


def test_summary_picks_the_central_sentence():
    assert summarize(PUPPY_TEXTS, max_sentences=1) == "Max the puppy loves the park."


def test_summary_keeps_original_order():
    assert summarize(PUPPY_TEXTS, max_sentences=2) == (
        "Max the puppy loves the park. Our puppy Max chased a ball.")


def test_summary_respects_the_character_limit():
    summary = summarize(PUPPY_TEXTS, max_sentences=3, max_chars=40)
    assert summary == "Max the puppy loves the park."
    long_text = ["Max " + "and the puppy " * 40 + "went to the park."]
    cut = summarize(long_text, max_chars=50)
    assert len(cut) <= 50 and cut.endswith("…")


def test_summary_in_the_context_of_a_prompt():
    # The prompt's words weigh as much as the texts' most common word ("max", 3): the weather
    # sentence (weather, report, rain: (4 + 4 + 1) / √3) now beats the puppy one ((3 + 2 + 2) / √3).
    prompt = "What did the weather report say?"
    assert summarize(PUPPY_TEXTS, max_sentences=1, context=[prompt]) == "The weather report said rain all week."
    # the prompt is never quoted back, even when it is the best match for itself
    assert summarize(["Max the puppy loves the park."], max_sentences=1, context=[prompt]) == (
        "Max the puppy loves the park.")
    assert summarize([], context=[prompt]) == ""


def test_summary_of_nothing_is_empty():
    assert summarize([]) == ""
    assert summarize(["", "   "]) == ""


# --- agent traits -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "traits"), [
    ("You should try yoga with your kids.",
     ["Assistant suggested the user try yoga with the user's kids"]),
    ("I recommend Becoming Nicole by Amy Ellis Nutt.",
     ["Assistant recommended Becoming Nicole by Amy Ellis Nutt"]),
    ("Have you considered joining a running club?",
     ["Assistant suggested considering joining a running club"]),
    ("I'll remind you to take your meds tomorrow.",
     ["Assistant will remind the user to take the user's meds tomorrow"]),
    ("I'm a fitness coach.", ["Assistant is a fitness coach"]),
    ("How about a walk in the park?", ["Assistant suggested a walk in the park"]),
])
def test_assistant_suggestions_commitments_and_self_descriptions(text, traits):
    assert extract_agent_traits(text) == traits


@pytest.mark.parametrize("text", ["That sounds great!", "I'll let you know.", "What about you?"])
def test_assistant_chatter_gives_no_traits(text):
    assert extract_agent_traits(text) == []


@pytest.mark.parametrize("reply", [
    "Got it. I'll remember that you're a pharmacist and you work at Larkfield Hospital.",
    "Here's what I remember: On 12 May you told me: “I'm a pharmacist at Larkfield Hospital.”",
    "Corrected: from now on I know that you work at Northgate Pharmacy.",
])
def test_the_assistants_traits_never_take_the_persons_facts(reply):
    assert extract_agent_traits(reply) == []


def test_agent_subject_is_configurable():
    assert extract_agent_traits("I'm a running coach.", subject="Coach Maria") == [
        "Coach Maria is a running coach"]


# --- replies ----------------------------------------------------------------------------------

SUPPORT_GROUP = make_item(
    "User: I went to a LGBTQ support group yesterday. | Assistant: That's wonderful!", ref="p1")
CAT = make_item("User has a cat named Luna", kind="kb_fact", score=0.5, timestamp=JUNE_1, ref="f1")
MAY_3 = datetime(2026, 5, 3, 9, 0, tzinfo=UTC)
SAM = {"user_name": "Sam", "sona_name": "coach", "now": MAY_3, "user_aliases": ("Sam", "sam")}
# What recall hands the reply in the newcomer's run: the profile, the persona, a recent page that
# shares the word "name" with the question, and the utterance the question is about, with the
# cosines all-MiniLM-L6-v2 gives them against "What is my dog's name?".
PROFILE = RecalledItem(kind="profile", ref="profile", text="name: Sam Rivera", score=1.0)
PERSONA = RecalledItem(kind="agent_profile", ref="s1", text="coach: A patient running coach who plans training weeks",
                       score=1.0)
NAME_PAGE = RecalledItem(kind="stm_page", ref="p2", score=1.0, timestamp=MAY_3, breakdown={"similarity": 0.327},
                         text="User: My name is Sam Rivera and I work as a marine biologist in Lisbon | "
                              "Assistant: Got it, Sam. I'll remember that your name is Sam Rivera")
DOG_TURN = RecalledItem(kind="turn", ref="t1", score=2.1, timestamp=MAY_3, breakdown={"cosine": 0.548},
                        text="Sam: I have a golden retriever called Biscuit who is four years old.")


def test_a_question_is_answered_from_the_best_matching_evidence_not_the_profile():
    reply = compose_reply("What is my dog's name?", [PROFILE, PERSONA, NAME_PAGE, DOG_TURN], **SAM)
    assert reply == ("Here's what I remember, Sam: On 3 May 2026 (today) you told me: "
                     "“I have a golden retriever called Biscuit who is four years old.”")


def test_a_question_about_the_person_themself_is_answered_from_the_profile():
    reply = compose_reply("What is my name?", [PROFILE, NAME_PAGE, DOG_TURN], **SAM)
    assert reply.startswith("Here's what I remember, Sam: Your profile says name: Sam Rivera.")
    assert "Biscuit" not in reply


# "I'm divorced" has one content word; all-MiniLM-L6-v2 scores its page 0.553 against the question.
DIVORCED_PAGE = RecalledItem(kind="stm_page", ref="p3", score=1.0, timestamp=MAY_3, breakdown={"similarity": 0.553},
                             text="User: I'm divorced, have been since 2016. | Assistant: Got it.")


def test_a_statement_of_one_word_answers_when_its_meaning_is_plain():
    reply = compose_reply("What's my marital status?", [DIVORCED_PAGE], **SAM)
    assert "I'm divorced, have been since 2016." in reply


def test_a_statement_of_one_word_is_no_answer_by_a_loose_meaning():
    page = RecalledItem(kind="stm_page", ref="p3", score=1.0, timestamp=MAY_3, breakdown={"similarity": 0.45},
                        text="User: I'm divorced, have been since 2016. | Assistant: Got it.")
    assert "divorced" not in compose_reply("What's my marital status?", [page], **SAM)


def test_a_question_without_its_question_mark_is_still_a_question():
    reply = compose_reply("what is my dog called", [NAME_PAGE, DOG_TURN], **SAM)
    assert "Biscuit" in reply and not reply.startswith("Got it")


@pytest.mark.parametrize(("statement", "noted", "said"), [
    ("My sister Lena lives in Berlin", ["User's sister Lena lives in Berlin"], "your sister Lena lives in Berlin"),
    ("I'm allergic to peanuts.", ["User is allergic to peanuts"], "you're allergic to peanuts"),
    ("I'm coeliac and I don't drink.", ["User is coeliac", "User doesn't drink"],
     "you're coeliac and you don't drink"),
])
def test_a_statement_is_acknowledged_with_what_the_turn_stores(statement, noted, said):
    reply = compose_reply(statement, [PROFILE, PERSONA, DOG_TURN], noted=noted, **SAM)
    assert reply == f"Got it, Sam. I'll remember that {said}."


@pytest.mark.parametrize("statement", ["The ferry leaves at seven.", "lol ok", "I'm so tired today."])
def test_a_statement_that_stores_nothing_promises_nothing(statement):
    reply = compose_reply(statement, [], **SAM)
    assert "remember" not in reply.lower() and "noted" not in reply.lower()


def test_a_statement_is_linked_to_a_related_memory():
    bakery = RecalledItem(kind="turn", ref="t9", score=1.0, timestamp=datetime(2026, 4, 1, tzinfo=UTC),
                          breakdown={"cosine": 0.52}, text="Sam: Lena opened a bakery in Berlin last month.")
    reply = compose_reply("My sister Lena lives in Berlin", [bakery, DOG_TURN], noted=["User's sister Lena lives "
                                                                                         "in Berlin"], **SAM)
    assert reply == ("Got it, Sam. I'll remember that your sister Lena lives in Berlin. It goes with something "
                     "I remember: On 1 April 2026 (4 weeks ago) you told me: “Lena opened a bakery in Berlin last "
                     "month.” (last month: March 2026)")


def test_the_assistants_persona_is_never_a_fact_about_the_user():
    for question in ("What do you know about me?", "What do I do on weekends?", "What is my training plan?"):
        reply = compose_reply(question, [PERSONA, PROFILE], **SAM)
        assert "coach" not in reply.lower() and "From what I know of you" not in reply, question
    assert compose_reply("Who are you?", [PERSONA], **SAM) == (
        "I'm coach, a patient running coach who plans training weeks.")


def test_reply_cites_the_relevant_memory_with_its_date_and_what_yesterday_was():
    reply = compose_reply("When did I go to the support group?", [CAT, SUPPORT_GROUP])
    assert reply == ("Here's what I remember: On 8 May 2023 you told me: "
                     "“I went to a LGBTQ support group yesterday.” (yesterday: 7 May 2023)")
    assert "Luna" not in reply and "June" not in reply


def test_reply_says_when_relative_to_now():
    reply = compose_reply("Tell me about the support group", [SUPPORT_GROUP], user_name="Caroline",
                          now=datetime(2023, 5, 11, tzinfo=UTC))
    assert reply.startswith("Here's what I remember, Caroline: On 8 May 2023 (3 days ago) you told me:")


def test_reply_cites_facts_as_notes_said_to_the_user():
    reply = compose_reply("What is my cat called?", [CAT, SUPPORT_GROUP])
    assert reply == "Here's what I remember: On 1 June 2023 I noted that you have a cat named Luna."


def test_utterances_of_others_are_cited_by_who_said_them():
    turn = RecalledItem(kind="turn", ref="t2", score=1.0, timestamp=MAY_8, breakdown={"cosine": 0.6},
                        text="Caroline: I went to a LGBTQ support group yesterday.")
    reply = compose_reply("When did Caroline go to the support group?", [turn])
    assert reply == ("Here's what I remember: On 8 May 2023 Caroline said: “I went to a LGBTQ support group "
                     "yesterday.” (yesterday: 7 May 2023)")


def test_reply_admits_it_does_not_know():
    expected = "I don't recall anything about that yet. Tell me about it if you like."
    far = [make_item("User has a cat named Luna", kind="kb_fact", score=0.12, ref="f1"),
           make_item("User: I went to a LGBTQ support group yesterday.", score=0.08, ref="p1")]
    assert compose_reply("What is my favourite opera?", []) == expected
    assert compose_reply("What is my favourite opera?", far) == expected


def test_recent_pages_need_a_shared_word_or_a_close_meaning_to_be_cited():
    recent = make_item("User: I bought new running shoes. | Assistant: Nice!", kind="stm_page", score=1.0)
    assert "shoes" not in compose_reply("How was the opera?", [recent])
    assert "running shoes" in compose_reply("Which shoes did I buy?", [recent])
    close = RecalledItem(kind="stm_page", ref="p3", text=recent.text, score=1.0, timestamp=MAY_8,
                         breakdown={"similarity": 0.61})
    assert "running shoes" in compose_reply("What did I get for jogging?", [close])


def test_reply_mentions_at_most_three_memories_in_few_words():
    items = [make_item(f"User: I painted picture number {i} of the lake at sunrise, with orange and "
                       f"pink clouds over the water and the hills behind it all.", ref=f"p{i}")
             for i in range(6)]
    reply = compose_reply("What did I paint at the lake?", items)
    assert reply.count("you told me") == 3
    assert len(reply.split()) <= 120


def test_the_same_words_are_not_cited_twice():
    page = make_item("User: Biscuit is my golden retriever. He is four.", kind="stm_page", score=1.0, ref="p1")
    turn = RecalledItem(kind="turn", ref="t1", score=1.0, timestamp=MAY_8, breakdown={"cosine": 0.5},
                        text="Sam: Biscuit is my golden retriever. He is four.")
    reply = compose_reply("How old is Biscuit?", [page, turn], user_aliases=("Sam",))
    assert reply.count("Biscuit is my golden retriever") == 1


def test_greetings_get_a_greeting():
    assert compose_reply("hi", [SUPPORT_GROUP], user_name="Caroline") == (
        "Hi Caroline! Good to see you. What's on your mind today?")
    assert compose_reply("Good morning!", []) == "Hi! Good to see you. What's on your mind today?"
    assert compose_reply("thanks!", [], user_name="Caroline") == (
        "You're welcome, Caroline! Anything else on your mind?")


def test_reply_does_not_quote_the_question_or_an_earlier_offline_reply():
    asked = make_item("User: What did I paint? | Assistant: Here's what I remember: I painted",
                      kind="stm_page", score=1.0)
    assert compose_reply("What did I paint?", [asked]).startswith("I don't recall")
    acknowledged = make_item("User: Do you like it? | Assistant: Got it, Sam. I'll remember that you paint lakes",
                             kind="stm_page", score=1.0)
    assert compose_reply("What do I paint?", [acknowledged]).startswith("I don't recall")


def test_offline_and_traits_import_without_django():
    code = ("import sys, memory.engine.offline, memory.engine.traits\n"
            "heavy = {'django', 'numpy', 'torch', 'openai', 'qdrant_client', 'qdrant_edge'}\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""
