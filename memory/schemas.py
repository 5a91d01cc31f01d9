from __future__ import annotations

from ninja import Schema


class TurnIn(Schema):
    message: str
    sona: str | None = None


class RecalledOut(Schema):
    kind: str
    ref: str
    text: str
    score: float
    breakdown: dict


class TurnOut(Schema):
    page_id: str
    reply: str
    model: str
    offline: bool
    fallback_reason: str
    trace_id: str | None
    prompt_tokens: int
    recalled: list[RecalledOut]


class StatsOut(Schema):
    user: str
    stm_pages: int
    pending_pages: int
    mtm_pages: int
    archived_pages: int
    total_pages: int
    mtm_segments: int
    evicted_segments: int
    promoted_segments: int
    kb_facts: int
    user_traits: int
    agent_traits: int
    events: int
    traces: int
