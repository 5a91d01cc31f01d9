from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema

from memory.services.users import SONA_NAME_MAX_CHARS, SONA_PROFILE_MAX_CHARS


class TurnIn(Schema):
    # The limits (MEMORYOS_MAX_MESSAGE_CHARS, MEMORYOS_MAX_FILES_PER_TURN) are checked where the
    # websocket and the services check them (memory/services/turn_input.py): a 400 says which.
    message: str = Field(..., description="The message: not empty, at most MEMORYOS_MAX_MESSAGE_CHARS "
                                          "(default 4000) characters without the spaces around it.")
    # A sona of the user's by name (default: their default one). An unknown name is refused
    # unless create_sona is true; the new sona then gets sona_profile.
    sona: str | None = Field(None, min_length=1, max_length=SONA_NAME_MAX_CHARS)
    create_sona: bool = False
    sona_profile: str = Field("", max_length=SONA_PROFILE_MAX_CHARS)
    policy: str | None = None  # a recall policy by name; default: the sona's, else the server's
    files: list[str] = Field(default_factory=list, description=(
        "Content ids of files uploaded to /api/memory/files for this turn to carry: at most "
        "MEMORYOS_MAX_FILES_PER_TURN (default 5)."))


class RecalledOut(Schema):
    kind: str
    ref: str
    text: str
    score: float
    breakdown: dict


class FileOut(Schema):
    """A file uploaded for a turn; `cid` names its bytes (CIDv1, raw codec), `node_cid` its graph node."""

    cid: str
    node_cid: str
    name: str
    media_type: str
    size: int
    page_id: str | None = None  # the turn that carries it; none yet after an upload
    created_at: datetime
    extraction: str
    text_chars: int
    text_preview: str


class TurnOut(Schema):
    page_id: str
    reply: str
    model: str
    offline: bool
    fallback_reason: str
    trace_id: str | None
    prompt_tokens: int
    policy: str
    recalled: list[RecalledOut]
    files: list[FileOut] = []  # the files the turn carries


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


class ErrorOut(Schema):
    """Every error the API answers with."""

    code: str
    message: str
    detail: Any = None


class MemoryOut(Schema):
    """One memory of any kind: what it says, where it is, how operators steered it."""

    kind: str
    id: str
    cid: str = ""
    text: str
    tier: str | None = None
    segment_id: str | None = None
    timestamp: datetime | None = None
    score: float | None = None
    pinned: bool
    repressed: bool
    version: int
    detail: dict[str, Any] = {}


class FlagIn(Schema):
    value: bool = True
    reason: str = Field("", max_length=500)


class CorrectIn(Schema):
    """A correction: the version read, and the fields of the memory's kind (page: query, response;
    segment: summary, keywords; fact and agent trait: text; trait: score and note)."""

    version: int | None = None
    reason: str = Field("", max_length=500)
    query: str | None = Field(None, max_length=4000)
    response: str | None = Field(None, max_length=20000)
    summary: str | None = Field(None, max_length=4000)
    keywords: list[str] | None = None
    text: str | None = Field(None, max_length=500)
    score: float | None = None
    note: str | None = Field(None, max_length=500)


class BlastRadiusOut(Schema):
    kind: str
    ident: str
    title: str
    pages: list[dict]
    segments_deleted: list[dict]
    segments_rederived: list[dict]
    facts_removed: list[dict]
    facts_kept: list[dict]
    agent_traits_removed: list[dict]
    agent_traits_kept: list[dict]
    traits_removed: list[dict]
    traits_rescored: list[dict]
    recollections_removed: list[dict] = []
    files_removed: list[dict] = []
    traces: int
    final: bool
    deleted: bool


class RecallIn(Schema):
    query: str = Field(..., min_length=1, max_length=4000)
    policy: str | None = None
    sona: str | None = Field(None, max_length=40)
    update_heat: bool = False  # a recall through the API changes nothing unless asked
    record_trace: bool = False


class RecallOut(Schema):
    query: str
    policy: str
    items: list[RecalledOut]
    timings_ms: dict[str, float]
    trace_id: str | None = None


class EventOut(Schema):
    id: int
    kind: str
    subject_id: str
    occurred_at: datetime
    created_at: datetime
    payload: dict


class TraceOut(Schema):
    id: str
    query: str
    policy: str
    latency_ms: float
    prompt_tokens: int
    created_at: datetime
    page_id: str | None = None
    payload: dict | None = None


class SonaOut(Schema):
    """A sona (the assistant's voice) and how many memories belong to it."""

    id: str
    name: str
    profile: str
    recall_policy: str  # "" : the server's default
    is_default: bool
    memories: int
    created_at: datetime


class SonaIn(Schema):
    name: str = Field(..., min_length=1, max_length=SONA_NAME_MAX_CHARS)
    profile: str = Field("", max_length=SONA_PROFILE_MAX_CHARS)
    recall_policy: str = Field("", max_length=32)


class SonaRenameIn(Schema):
    name: str = Field(..., min_length=1, max_length=SONA_NAME_MAX_CHARS)


class SonaMemoryOut(Schema):
    """A memory of a sona: its node, what it says, and how it joined (where it happened, or bubbled up)."""

    cid: str
    kind: str
    text: str
    via: str
    joined_at: datetime

# ---------------------------------------------------------------- long-term memory


class ProfileOut(Schema):
    name: str
    gender: str
    birth_year: int | None
    extra: dict
    since: dict  # when each current value became true (ISO times)
    history: list[dict]  # the values it replaced, each with valid_from and valid_until


class ProfileIn(Schema):
    name: str | None = Field(None, max_length=120)
    gender: str | None = Field(None, max_length=40)
    birth_year: int | None = None


class TraitOut(Schema):
    key: str
    name: str
    category: str
    description: str
    score: float
    pinned: bool
    repressed: bool
    evidence: list[dict]


class EntryOut(Schema):
    id: str
    text: str
    timestamp: datetime | None
    segment_id: str | None
    source_page_ids: list[str]
    pinned: bool
    repressed: bool
    version: int
    cid: str
    # A superseded fact is history: when it stopped, what took its place, and its period in words
    # ("until March 2026; superseded").
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    period: str = ""
