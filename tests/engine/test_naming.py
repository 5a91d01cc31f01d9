"""Segment names: the most distinctive keywords as the pages write them; fragments never shown."""

from __future__ import annotations

from memory.engine.naming import name_segments
from memory.engine.offline import extract_keywords


def keywords_of(texts):
    found = frozenset()
    for text in texts:
        found |= extract_keywords(text, limit=8)
    return found


PORTO = ["Maya: I'm moving to Porto in June, my brother Daniel found us a flat near the river.",
         "Sol: Porto in June sounds lovely. Will you bring a book for Lia's birthday?",
         "Maya: Yes, the flat in Porto has a balcony over the Douro. The move is booked."]
RUNNING = ["Maya: My long run was 16 km today, the half marathon is close.",
           "Sol: A 16 km long run is a great sign for the half marathon."]
LYON = ["Maya: We walked along the Saône in Lyon, the Saône is calm in the evening."]


def test_the_name_is_the_most_distinctive_words_not_the_alphabetically_first():
    segments = {"porto": (keywords_of(PORTO), PORTO), "run": (keywords_of(RUNNING), RUNNING)}
    frequency = {}
    for keywords, _ in segments.values():
        for k in keywords:
            frequency[k] = frequency.get(k, 0) + 1
    named = name_segments(segments, document_frequency=frequency, total=2)
    assert named["porto"].name.split(", ")[0] == "Porto"  # said three times, and by no other segment
    assert "birthday" not in named["porto"].name.split(", ")[:1]
    assert sorted(keywords_of(PORTO))[:3] != named["porto"].name.split(", ")
    assert "marathon" in named["run"].name


def test_fragments_of_a_word_are_never_shown():
    keywords = keywords_of(LYON)
    assert {"sa", "ne"} & keywords  # the keyword tokenizer splits "Saône" (recall keeps it as it is)
    named = name_segments({"lyon": (keywords, LYON)}, document_frequency={}, total=1)
    shown = {word.lower() for word in named["lyon"].keywords}
    assert not {"sa", "ne"} & shown
    assert "lyon" in shown


def test_a_segment_whose_keywords_are_no_words_of_its_text_has_no_name():
    named = name_segments({"x": (frozenset({"zz"}), ["Nothing here matches."])}, document_frequency={}, total=1)
    assert named["x"].name == "" and named["x"].keywords == ()
