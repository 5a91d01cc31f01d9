"""The Exocortex's decay settings and curves of one user."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from django.utils import timezone

from memory.inspector import charts
from memory.models import DialoguePage, UserMemoryState
from memory.policies.exocortex.engine import decay as exo
from memory.policies.exocortex.ranking import decay_settings_of


def decay_settings_initial(*, user) -> dict[str, float]:
    """The user's two Exocortex decay settings, for the profile page's form (defaults until changed)."""
    found = UserMemoryState.objects.filter(user=user).values("short_term_minutes", "long_term_threshold").first()
    defaults = {field: UserMemoryState._meta.get_field(field).default
                for field in ("short_term_minutes", "long_term_threshold")}
    return found or defaults


@dataclass
class DecayView:
    settings: exo.DecaySettings
    oldest_seconds: float
    short_term_threshold: float
    crossing_seconds: float | None
    figure: str


def exocortex_curves(*, user, now: datetime | None = None) -> DecayView:
    """The user's own recency and nostalgia curves over their memory's actual age (the span from
    their oldest page to now), and the recency curve with the short-term duration doubled and with
    the seed's plotting threshold 0.1, so the figure shows how the two settings move it."""
    now = now or timezone.now()
    own = decay_settings_of(user.pk)
    first = DialoguePage.objects.filter(user=user).order_by("seq").values_list("timestamp", flat=True).first()
    oldest = max(0.0, (now - first).total_seconds()) if first else 0.0
    variants = [("yours", own, True),
                (f"short-term {2 * own.short_term_seconds / 60:g} min",
                 replace(own, short_term_seconds=2 * own.short_term_seconds), False)]
    if own.long_term_threshold != 0.1:
        variants.append(("long-term threshold 0.1", replace(own, long_term_threshold=0.1), False))
    lines = []
    for label, decay, mine in variants:
        points = exo.curve_points(oldest_age_seconds=oldest, settings=decay)
        lines.append(charts.DecayLine(
            label=label, ages_seconds=[p.age_seconds for p in points], recency=[p.recency for p in points],
            nostalgia=[p.nostalgia for p in points] if mine else None,
            crossing_seconds=exo.intersection_age(oldest_age_seconds=oldest, settings=decay),
            dash="solid" if mine else "dash"))
    curve = exo.decay_curve(oldest_age_seconds=oldest, settings=own)
    figure = charts.decay_figure(lines, oldest_seconds=oldest, short_term_seconds=own.short_term_seconds)
    return DecayView(settings=own, oldest_seconds=oldest, short_term_threshold=curve.short_term_threshold,
                     crossing_seconds=lines[0].crossing_seconds, figure=figure)
