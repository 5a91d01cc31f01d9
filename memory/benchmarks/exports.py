"""Chat exports made here, in ChatGPT's, Claude's and the transcript's shapes (no one's real data):
builders for the tests (tests/memory/formats/test_histories.py and the importing tests) and for
`bench ingest --chatgpt-messages N`."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


class ChatGPTConversation:
    """A ChatGPT `mapping` tree, grown message by message; `branch_from` starts a sibling branch
    (an edited message or a regenerated reply), and the last message added is `current_node`."""

    def __init__(self, title: str, ident: str, start: datetime = START) -> None:
        self.title, self.ident, self.start = title, ident, start
        self.mapping: dict[str, dict[str, Any]] = {"root": {"id": "root", "message": None, "parent": None,
                                                            "children": []}}
        self.current = "root"
        self.count = 0

    def add(self, role: str, text: str | None = None, *, minutes: float | None = None, content: dict | None = None,
            hidden: bool = False, recipient: str = "all", parent: str | None = None,
            create_time: Any = "auto") -> str:
        self.count += 1
        ident = f"{self.ident}-m{self.count}"
        parent = parent or self.current
        when = self.start + timedelta(minutes=self.count if minutes is None else minutes)
        message = {
            "id": ident, "author": {"role": role, "name": None, "metadata": {}},
            "create_time": when.timestamp() if create_time == "auto" else create_time,
            "content": content or {"content_type": "text", "parts": [text or ""]},
            "status": "finished_successfully", "weight": 1.0, "recipient": recipient,
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
        }
        self.mapping[ident] = {"id": ident, "message": message, "parent": parent, "children": []}
        self.mapping[parent]["children"].append(ident)
        self.current = ident
        return ident

    def export(self) -> dict[str, Any]:
        return {"title": self.title, "create_time": self.start.timestamp(), "update_time": self.start.timestamp(),
                "mapping": self.mapping, "current_node": self.current, "conversation_id": self.ident,
                "id": self.ident}


def chatgpt_json(conversations: list[ChatGPTConversation]) -> bytes:
    return json.dumps([c.export() for c in conversations]).encode()


def chatgpt_zip(conversations: list[ChatGPTConversation]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("conversations.json", chatgpt_json(conversations))
        archive.writestr("user.json", json.dumps({"id": "user-1"}))
        archive.writestr("chat.html", "<html></html>")
    return buffer.getvalue()


def claude_json(conversations: list[dict[str, Any]]) -> bytes:
    return json.dumps(conversations).encode()


def claude_conversation(name: str, ident: str, messages: list[tuple[str, str]], start: datetime = START,
                        **extra_per_message: dict) -> dict[str, Any]:
    chat = []
    for index, (sender, text) in enumerate(messages):
        chat.append({"uuid": f"{ident}-{index}", "sender": sender, "text": text,
                     "content": [{"type": "text", "text": text}] if text else [],
                     "created_at": (start + timedelta(minutes=index)).isoformat().replace("+00:00", "Z"),
                     "attachments": [], "files": [], **extra_per_message.get(str(index), {})})
    return {"uuid": ident, "name": name, "created_at": start.isoformat(), "updated_at": start.isoformat(),
            "chat_messages": chat, "account": {"uuid": "account-1"}}


def transcript(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode()


TOPICS = ("my sourdough starter", "the allotment's tomatoes", "a cycling trip along the Loire",
          "learning the cello", "my sister's wedding in Lyon", "a job interview at the museum",
          "repairing an old bicycle", "the book club's next novel")


def large_chatgpt_export(messages: int, *, per_conversation: int = 20) -> bytes:
    """A ChatGPT export of about `messages` messages (user and assistant alternating), with a
    regenerated reply in every fifth conversation, for `bench ingest`."""
    conversations = []
    count = 0
    while count < messages:
        number = len(conversations)
        chat = ChatGPTConversation(f"Chat {number}: {TOPICS[number % len(TOPICS)]}", f"c{number:05d}",
                                   START + timedelta(days=number))
        chat.add("system", "You are a helpful assistant.", hidden=True)
        for turn in range(per_conversation // 2):
            topic = TOPICS[(number + turn) % len(TOPICS)]
            chat.add("user", f"Conversation {number}, turn {turn}: let me tell you about {topic}. "
                             f"It has been on my mind since week {turn + 1}.")
            asked = chat.current
            chat.add("assistant", f"Thanks for telling me about {topic}. What would you like to do next "
                                  f"about it? (reply {turn})")
            if number % 5 == 0 and turn == 0:  # a regenerated reply: the second is the branch kept
                chat.add("assistant", f"Regenerated: tell me more about {topic}.", parent=asked)
            count += 2
        conversations.append(chat)
    return chatgpt_json(conversations)
