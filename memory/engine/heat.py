"""Segment heat (MemoryOS paper, Eq. 4) and its recency term."""

from __future__ import annotations

import math
from datetime import datetime

from .types import MemoryParams, SegmentView


def recency(*, last_access: datetime, now: datetime, mu_seconds: float) -> float:
    """R_recency = exp(-Δt / μ), Δt in seconds since the last access (never negative)."""
    elapsed = max(0.0, (now - last_access).total_seconds())
    return math.exp(-elapsed / mu_seconds)


def segment_heat(segment: SegmentView, *, now: datetime, params: MemoryParams) -> float:
    """Heat = α·N_visit + β·L_interaction + γ·R_recency."""
    return (
        params.heat_alpha * segment.n_visit
        + params.heat_beta * segment.l_interaction
        + params.heat_gamma * recency(last_access=segment.last_access, now=now,
                                      mu_seconds=params.recency_mu_seconds)
    )


def heat_breakdown(segment: SegmentView, *, now: datetime, params: MemoryParams) -> dict[str, float]:
    """The three weighted terms and their sum, for traces and the inspector."""
    rec = recency(last_access=segment.last_access, now=now, mu_seconds=params.recency_mu_seconds)
    parts = {
        "visits": params.heat_alpha * segment.n_visit,
        "interaction": params.heat_beta * segment.l_interaction,
        "recency": params.heat_gamma * rec,
    }
    parts["heat"] = parts["visits"] + parts["interaction"] + parts["recency"]
    return parts
