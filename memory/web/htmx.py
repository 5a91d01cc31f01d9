"""How an htmx form says no.

htmx swaps only 2xx answers into the page (and in DEBUG, django-htmx's script replaces the whole
document with a 4xx answer, to show Django's error pages). So a refused htmx form or action answers
200 with the form and its error, swapped in place where the person is looking; the same request
without htmx (a plain form post, a test client, curl) answers 400."""

from __future__ import annotations


def refused_status(request, refused: bool) -> int:
    """The status of an answer that shows a form, refused or not."""
    return 400 if refused and not getattr(request, "htmx", False) else 200
