"""Maintenance with a language model: segment summaries, recollections and persona extraction.

Used only when an LLM endpoint is configured, always off the reply path and outside database
transactions. The answers are checked against memory/engine/model_output.py (with one retry
inside complete_json); a failure is recorded as a lifecycle event and the offline engine's
result is kept, never silently replaced by "nothing found".
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memory.adapters import configured
from memory.adapters.llm import complete_json
from memory.engine.model_output import (
    PERSONA_PROMPT,
    RECOLLECTION_PROMPT,
    SUMMARY_PROMPT,
    LongTermExtraction,
    SegmentSummary,
    pages_text,
    validate_long_term,
    validate_recollection,
    validate_summary,
)
from memory.engine.ports import ChatMessage, ModelError
from memory.engine.supersession import CONFIRM_PROMPT, Confirmation, confirmation_texts, validate_confirmation
from memory.engine.traits import TRAITS_BY_KEY
from memory.models import LifecycleEvent
from memory.services.events import event_record

log = logging.getLogger(__name__)


def _ask(user_id: int, task: str, system: str, texts: Sequence[str], validate):
    model = configured.chat_model()
    if model is None:
        return None
    messages = [ChatMessage("system", system), ChatMessage("user", pages_text(texts))]
    try:
        return complete_json(model, messages, validate=validate, max_tokens=600)
    except ModelError as exc:
        log.warning("event=model_output_rejected user=%s task=%s error=%r", user_id, task, exc)
        event_record(user_id=user_id, kind=LifecycleEvent.Kind.MODEL_OUTPUT_REJECTED, task=task,
                     error=str(exc)[:500])
        return None


def summarise_segment(*, user_id: int, texts: Sequence[str]) -> SegmentSummary | None:
    return _ask(user_id, "segment_summary", SUMMARY_PROMPT, texts, validate_summary)


def summarise_recollection(*, user_id: int, prompt: str, memories: Sequence[str]) -> str | None:
    """A recollection's text by the model: the memories (dated) in the context of the new message."""
    return _ask(user_id, "recollection_summary", RECOLLECTION_PROMPT, [f"New message: {prompt}", *memories],
                validate_recollection)


def extract_long_term(*, user_id: int, texts: Sequence[str]) -> LongTermExtraction | None:
    system = PERSONA_PROMPT + ", ".join(sorted(TRAITS_BY_KEY))
    return _ask(user_id, "long_term_extraction", system, texts, validate_long_term)


def confirm_supersession(*, user_id: int, old: str, statement: str) -> Confirmation | None:
    """The model's verdict on a detector's candidate: does the newer statement end the older fact?"""
    return _ask(user_id, "supersession_confirm", CONFIRM_PROMPT, confirmation_texts(old, statement),
                validate_confirmation)
