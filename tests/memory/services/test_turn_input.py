"""The one check of a turn's input (memory/services/turn_input.py): what it keeps, what it refuses
and in which words, and limits read from the settings on every call. No database."""

from __future__ import annotations

import pytest

from memory.services.common import MemoryInputError
from memory.services.recall import policy_choose
from memory.services.turn_input import TurnInput, turn_input_limits, turn_input_parse

CID = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"  # 59 characters, as an upload returns


def test_a_good_input_is_kept_stripped_and_in_order():
    checked = turn_input_parse(message="  I keep bees.\n", files=[f" {CID} ", "bafkreiaaaa"], sona="chef",
                               policy="memoria")
    assert checked == TurnInput(message="I keep bees.", files=(CID, "bafkreiaaaa"), sona="chef", policy="memoria")


@pytest.mark.parametrize("empty", [None, "", 0, []])
def test_no_persona_or_policy_means_the_default(empty):
    checked = turn_input_parse(message="hi", files=None, sona=empty, policy=empty)
    assert checked == TurnInput(message="hi", files=(), sona=None, policy=None)


@pytest.mark.parametrize("fields, error", [
    ({"message": None}, "The message must be text."),
    ({"message": {"nested": "object"}}, "The message must be text."),
    ({"message": " \n\t "}, "The message is empty."),
    ({"message": "x" * 4001}, "The message is 4001 characters long; the limit is 4000."),
    ({"message": "hi", "files": CID}, "Files are named by a list of content ids, each the one its upload returned."),
    ({"message": "hi", "files": [1, 2]}, "Files are named by a list of content ids, each the one its upload returned."),
    ({"message": "hi", "files": ["  "]}, "Files are named by a list of content ids, each the one its upload returned."),
    ({"message": "hi", "files": ["x" * 101]},
     "Files are named by a list of content ids, each the one its upload returned."),
    ({"message": "hi", "files": [CID] * 6}, "A turn carries at most 5 files; got 6."),
    ({"message": "hi", "sona": 7}, "The sona is named by text of at most 100 characters."),
    ({"message": "hi", "policy": "p" * 101}, "The recall policy is named by text of at most 100 characters."),
    ({"message": "hi", "policy": "nostalgia"}, None),  # the registry's own words (memory/recall/base.py)
    # The message is checked first: a caller learns of the worst problem before the small ones.
    ({"message": "", "files": [CID] * 6}, "The message is empty."),
])
def test_bad_input_is_refused_with_a_clear_reason(fields, error):
    with pytest.raises(MemoryInputError) as refused:
        turn_input_parse(**fields)
    if error is None:
        with pytest.raises(MemoryInputError) as by_recall:
            policy_choose(requested=fields["policy"])
        error = str(by_recall.value)
        assert "nostalgia" in error
    assert str(refused.value) == error


def test_a_message_at_the_limit_passes_and_one_over_it_does_not():
    assert turn_input_parse(message=" " + "x" * 4000 + " ").message == "x" * 4000  # spaces do not count
    assert len(turn_input_parse(message="hi", files=[CID] * 5).files) == 5
    with pytest.raises(MemoryInputError, match="4001 characters long"):
        turn_input_parse(message="x" * 4001)


def test_the_limits_are_read_from_the_settings_on_every_call(settings):
    settings.MEMORYOS = {**settings.MEMORYOS, "MAX_MESSAGE_CHARS": 10, "MAX_FILES_PER_TURN": 1}
    assert turn_input_limits() == {"max_message_chars": 10, "max_files": 1}
    assert turn_input_parse(message="x" * 10, files=[CID]).message == "x" * 10
    with pytest.raises(MemoryInputError, match=r"^The message is 11 characters long; the limit is 10\.$"):
        turn_input_parse(message="x" * 11)
    with pytest.raises(MemoryInputError, match=r"^A turn carries at most 1 files; got 2\.$"):
        turn_input_parse(message="hi", files=[CID, CID])
