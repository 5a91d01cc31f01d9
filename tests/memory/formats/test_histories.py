"""Reading ChatGPT and Claude exports and JSON Lines transcripts (memory/formats/histories.py), on
exports built here (tests/memory/formats/exports.py): the branch kept, what is skipped and counted,
times, long messages cut, and broken files refused whole with their place."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from datetime import UTC, datetime

import pytest

from memory.benchmarks.exports import (
    START,
    ChatGPTConversation,
    chatgpt_json,
    chatgpt_zip,
    claude_conversation,
    claude_json,
    transcript,
)
from memory.formats.histories import (
    HistoryFormatError,
    Limits,
    histories_summary,
    history_conversation,
    read_export,
)
from memory.formats.locomo import conversation_pages


def trip() -> ChatGPTConversation:
    chat = ChatGPTConversation("Trip to Porto", "conv-1")
    chat.add("system", "You are ChatGPT.", hidden=True)
    first = chat.add("user", "I'm planning a trip to Porto in June.")
    chat.add("assistant", "Lovely! How long will you stay?")
    chat.add("user", "Ten days, with my brother Daniel.")
    answered = chat.current
    chat.add("assistant", "Old answer that was regenerated.")
    chat.add("assistant", "Ten days is plenty for Porto and the Douro valley.", parent=answered)  # kept
    chat.add("tool", "search results", recipient="all")
    chat.add("assistant", "searching", recipient="browser")
    chat.add("user", None, content={"content_type": "multimodal_text",
                                    "parts": [{"content_type": "image_asset_pointer", "asset_pointer": "x"}]})
    chat.add("user", None, content={"content_type": "code", "text": "print(1)"})
    chat.add("user", "   ")
    chat.add("user", "Thanks, that settles it.")
    chat.add("assistant", "Boa viagem!")
    # An edit of the first message, on a branch that is not the current one: never read.
    chat.add("user", "I'm planning a trip to Lisbon instead.", parent=first.replace("m2", "m1"))
    chat.current = "conv-1-m13"
    return chat


def test_chatgpt_keeps_the_current_branch_and_counts_what_it_skips():
    kind, [history] = read_export(chatgpt_json([trip()]))
    assert kind == "chatgpt" and history.title == "Trip to Porto" and history.source_id == "conv-1"
    assert [(m.role, m.text) for m in history.messages] == [
        ("user", "I'm planning a trip to Porto in June."), ("assistant", "Lovely! How long will you stay?"),
        ("user", "Ten days, with my brother Daniel."),
        ("assistant", "Ten days is plenty for Porto and the Douro valley."),
        ("user", "Thanks, that settles it."), ("assistant", "Boa viagem!")]
    assert history.skipped == {"system": 1, "tool": 1, "hidden": 1, "not text": 2, "empty": 1}
    assert history.messages[0].time == datetime.fromtimestamp(START.timestamp() + 120, tz=UTC)


def test_the_zip_of_an_export_reads_as_its_conversations_json():
    assert read_export(chatgpt_zip([trip()]))[1][0].messages == read_export(chatgpt_json([trip()]))[1][0].messages


def test_a_message_without_a_time_takes_the_one_before():
    chat = ChatGPTConversation("t", "c")
    chat.add("user", "first")
    chat.add("assistant", "no time", create_time=None)
    _, [history] = read_export(chatgpt_json([chat]))
    assert history.messages[1].time == history.messages[0].time


def test_each_exchange_is_a_session_dated_by_its_first_message_and_long_messages_are_cut():
    _, [history] = read_export(chatgpt_json([trip()]))
    conversation = history_conversation(history, person="Maya", assistant="ChatGPT", max_chars=4000, prefix="g:")
    assert [len(turns) for _, _, turns in conversation.sessions] == [2, 2, 2]
    assert [date for _, date, _ in conversation.sessions] == [m.time for m in history.messages[::2]]
    pages = conversation_pages(conversation)
    assert pages[1].query == "Maya: Ten days, with my brother Daniel."
    assert pages[1].response == "ChatGPT: Ten days is plenty for Porto and the Douro valley."
    assert pages[1].source_ids == ("g:conv-1-m4", "g:conv-1-m6")

    long = "Sentence number one is here. " * 30  # 870 characters
    chat = ChatGPTConversation("long", "c")
    chat.add("user", long.strip())
    _, [history] = read_export(chatgpt_json([chat]))
    turns = history_conversation(history, person="Maya", assistant="ChatGPT", max_chars=300, prefix="").sessions[0][2]
    assert [t.dia_id for t in turns] == ["c-m1#1", "c-m1#2", "c-m1#3"]  # ten sentences, 290 characters, each
    assert all(len(f"Maya: {t.text}") <= 300 and t.text.endswith(".") for t in turns)
    assert " ".join(t.text for t in turns) == long.strip()


def test_claude_reads_senders_text_and_parts_and_skips_attachments_alone():
    conversation = claude_conversation("Sourdough", "cl-1", [
        ("human", "My starter is called Bubbles."), ("assistant", "What a name! How old is it?"),
        ("human", ""), ("human", "Two years old."), ("assistant", "")],
        **{"2": {"attachments": [{"file_name": "photo.jpg"}]}, "4": {"text": "", "content": [
            {"type": "text", "text": "A seasoned starter, then."}]}})
    kind, [history] = read_export(claude_json([conversation]))
    assert kind == "claude" and history.title == "Sourdough"
    assert [(m.role, m.text) for m in history.messages] == [
        ("user", "My starter is called Bubbles."), ("assistant", "What a name! How old is it?"),
        ("user", "Two years old."), ("assistant", "A seasoned starter, then.")]
    assert history.skipped == {"not text": 1}
    assert history.messages[2].time == datetime(2025, 1, 6, 9, 3, tzinfo=UTC)


def test_a_transcript_reads_roles_and_iso_or_unix_times():
    data = transcript([{"role": "system", "content": "Be kind."},
                       {"role": "user", "content": "I moved to Porto.", "time": "2025-03-01T10:00:00Z"},
                       {"role": "assistant", "content": "Welcome to Porto!", "time": 1740823260},
                       {"role": "user", "content": "Thanks"}])
    kind, [history] = read_export(data, name="notes.jsonl")
    assert kind == "transcript" and history.title == "notes"
    assert [m.time for m in history.messages] == [datetime(2025, 3, 1, 10, 0, tzinfo=UTC),
                                                  datetime(2025, 3, 1, 10, 1, tzinfo=UTC),
                                                  datetime(2025, 3, 1, 10, 1, tzinfo=UTC)]
    assert histories_summary([history]) == {"conversations": 1, "messages": 3, "skipped": {"system": 1}}


def broken_chatgpt(change) -> bytes:
    exported = [trip().export(), trip().export()]
    change(exported[1])
    return json.dumps(exported).encode()


@pytest.mark.parametrize("data, words", [
    (b"[{]", "not JSON (invalid object key"),
    (b"[{\"mapping\": ", "not JSON (the file ends too soon"),
    (b'{"a": 1}', "expected a list of conversations"),
    (b"[]", "holds no conversation"),
    (b'[{"title": "x"}]', "neither ChatGPT's export"),
    (b"\xff\xfe", "not UTF-8"),
    (b"PK\x03\x04broken", "the zip cannot be read"),
    (broken_chatgpt(lambda c: c.pop("current_node")),
     "conversation 2 ('Trip to Porto'): its messages are not where ChatGPT's export keeps them"),
    (broken_chatgpt(lambda c: c.update(current_node="gone")),
     "conversation 2 ('Trip to Porto'): message 'gone' is referred to but missing from the file"),
    (broken_chatgpt(lambda c: c["mapping"]["conv-1-m2"]["message"].update(create_time="yesterday")),
     "conversation 2 ('Trip to Porto'), message 'conv-1-m2', field 'create_time': unreadable time 'yesterday'"),
    (broken_chatgpt(lambda c: c["mapping"]["conv-1-m2"]["message"].update(create_time=-5)),
     "message 'conv-1-m2', field 'create_time': time -5 is outside 1990 to 2200"),
    (broken_chatgpt(lambda c: c["mapping"]["root"].update(parent="conv-1-m3")), "the messages' order loops back"),
    (broken_chatgpt(lambda c: c["mapping"]["conv-1-m4"]["message"]["content"].update(parts="x")),
     "message 'conv-1-m4': content.parts is missing or not a list"),
    (claude_json([claude_conversation("c", "u", [("human", "hi")], **{"0": {"created_at": "soon"}})]),
     "message 0, field 'created_at': unreadable time 'soon'"),
    (claude_json([{"uuid": "x", "chat_messages": [{"text": "hi"}]}]), "message 0: field 'sender' is missing"),
])
def test_a_broken_file_is_refused_whole_with_the_place_and_reason(data, words):
    with pytest.raises(HistoryFormatError) as refused:
        read_export(data)
    assert words in str(refused.value)


def test_a_broken_transcript_line_is_named():
    with pytest.raises(HistoryFormatError, match=r"notes.jsonl: line 2: not a JSON object"):
        read_export(b'{"role": "user", "content": "hi"}\n[1]\n', name="notes.jsonl")
    with pytest.raises(HistoryFormatError, match=r"line 1, field 'time': unreadable time"):
        read_export(b'{"role": "user", "content": "hi", "time": "noon"}\n{"role": "user", "content": "x"}\n',
                    name="notes.jsonl")


# --- limits: a file is read as a stream and refused at the first limit it passes -----------------

def many_chats(count: int) -> list[ChatGPTConversation]:
    chats = []
    for number in range(count):
        chat = ChatGPTConversation(f"Chat {number}", f"conv-{number}")
        chat.add("user", f"Note number {number} about the garden. " * 20)
        chat.add("assistant", "Noted.")
        chats.append(chat)
    return chats


def test_a_zip_that_inflates_past_the_limit_is_refused_at_the_limit():
    inflated = len(chatgpt_json(many_chats(200)))
    data = deflated_zip(chatgpt_json(many_chats(200)))
    assert len(data) < inflated / 5  # it compresses well: the zip's own size says little
    with pytest.raises(HistoryFormatError, match=r"in the zip\): more than 20,000 bytes once unpacked"):
        read_export(data, limits=Limits(max_bytes=20_000))
    assert len(read_export(data, limits=Limits(max_bytes=inflated))[1]) == 200


def deflated_zip(data: bytes, declared: int | None = None) -> bytes:
    """A compressed zip of `data` as conversations.json; with `declared`, the size its local header
    and directory state for it, in place of the true one."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", data)
    raw = bytearray(buffer.getvalue())
    if declared is not None:
        struct.pack_into("<I", raw, 22, declared)  # the local header's uncompressed size
        struct.pack_into("<I", raw, raw.index(b"PK\x01\x02") + 24, declared)
    return bytes(raw)


def test_a_zip_that_declares_less_than_it_holds_is_refused():
    whole = chatgpt_json(many_chats(50))
    with pytest.raises(HistoryFormatError, match="the zip cannot be read"):
        read_export(deflated_zip(whole, 100), limits=Limits(max_bytes=10 * len(whole)))
    assert len(read_export(deflated_zip(whole, len(whole)))[1]) == 50  # the same zip, telling the truth


def test_messages_past_the_limit_are_refused_in_exports_and_transcripts():
    data = chatgpt_json(many_chats(3))  # six messages
    assert histories_summary(read_export(data, limits=Limits(max_messages=6))[1])["messages"] == 6
    with pytest.raises(HistoryFormatError, match="more than 5 messages; at most 5 are read"):
        read_export(data, limits=Limits(max_messages=5))
    lines = transcript([{"role": "user", "content": f"line {n}", "time": 1_700_000_000 + n} for n in range(4)])
    with pytest.raises(HistoryFormatError, match="notes.jsonl: more than 3 messages"):
        read_export(lines, name="notes.jsonl", limits=Limits(max_messages=3))


@pytest.mark.parametrize("data, limits, words", [
    (b"[" * 100, Limits(max_depth=32), "nests deeper than 32 levels"),
    (b'[{"mapping": {}, "junk": [' + b"[]," * 5000 + b"[]]}]", Limits(max_values=1000),
     "one conversation holds more than 1,000 values"),
    (b'[{"mapping": {"a": "' + b"x" * 300_000 + b'"}}]', Limits(max_conversation_bytes=100_000),
     "one conversation or line spans more than 100,000 bytes"),
    (b'{"role": "user", "content": "' + b"x" * 300_000 + b'"}', Limits(max_conversation_bytes=100_000),
     "notes.jsonl: one conversation or line spans more"),
])
def test_one_conversation_past_its_limits_is_refused_before_it_is_built(data, limits, words):
    with pytest.raises(HistoryFormatError, match=words):
        read_export(data, limits=limits, name="notes.jsonl" if data[:1] == b"{" else "conversations.json")
