"""What each text a write embeds adds to LoCoMo R@10 (issue 37, item 2): `bench retrieval` run with
one kind of write vector dropped, or derived from vectors the write has already, instead of embedded.

    .venv/bin/python scripts/ablate_write_embeddings.py VARIANT -- bench retrieval --data FILE [...]

VARIANT (one per run; every conversation is imported again under it, so each is a whole run):
- base: as the product writes;
- page-derived: a page's vector is the normalised mean of its utterances' vectors and of the
  context vectors of its utterances whose previous utterance is on the same page, not its text
  embedded;
- page-from-contexts: the normalised mean of those context vectors alone, or its one utterance's
  vector (a two-utterance LoCoMo page's one context is its text word for word; the product
  embeds the page's own text in the same call instead: see BENCHMARKS.md for why);
- segment-centroid: a segment's vector is the normalised mean of the vectors of the pages its
  summary is made of (the page that joins and the newest SUMMARY_PAGES before it), not its
  summary embedded;
- utterance-dropped: an utterance's point is its context vector alone (no utterance vector; the
  first utterance of a conversation, which has no context, keeps its own);
- facts-dropped: facts and agent traits promotion extracts get no vector (no "kb" points);
- facts-from-page: they get the vector of the page they were stated in instead.
Patches live in this script only; the product is unchanged by it. Run against the code before
issue 37's item 2 (the variants replace what it embedded), with the figures in BENCHMARKS.md,
"Writes at the embedding floor".
"""

from __future__ import annotations

import os
import sys
from itertools import pairwise
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")


def _unit(vectors) -> list[float]:
    total = np.sum(np.asarray(vectors, dtype=np.float64), axis=0)
    norm = float(np.linalg.norm(total)) or 1.0
    return (total / norm).astype(np.float32).tolist()


def _pages_derived(parts_of):
    """Patches whose import embeds the utterances and contexts alone, and gives each page the unit
    mean of the vectors of `parts_of(its utterance texts)`."""
    from memory.adapters import configured
    from memory.services import importing
    from memory.services.pages import page_text
    from memory.services.utterances import context_text, utterance_text

    def embed_up_front(items):
        spoken = [utterance_text({"speaker": who, "text": text}) for item in items for _, who, text in item.utterances]
        said = list(dict.fromkeys(spoken + [context_text(a, b) for a, b in pairwise(spoken)]))
        vectors = dict(zip(said, configured.embedder().embed(said), strict=True)) if said else {}
        pages = {}
        for item in items:
            own = [utterance_text({"speaker": who, "text": text}) for _, who, text in item.utterances]
            parts = parts_of(own, [context_text(a, b) for a, b in pairwise(own)])
            pages.setdefault(page_text(item.query, item.response), _unit([vectors[t] for t in parts]))
        return pages, vectors

    return [mock.patch.object(importing, "_embed_up_front", embed_up_front)]


def page_derived():
    return _pages_derived(lambda own, joined: own + joined)


def page_from_contexts():
    return _pages_derived(lambda own, joined: joined or own)


def segment_centroid():
    from memory.models import DialoguePage, bytes_to_vector
    from memory.services import segments

    real = segments._refresh_segment

    def refresh(segment, merged, page):
        recent = [] if segment._state.adding else list(
            DialoguePage.objects.filter(segment=segment).order_by("-seq")[:segments.SUMMARY_PAGES])
        members = [page] + recent
        vector = _unit([bytes_to_vector(p.embedding) for p in members if p.embedding])
        with mock.patch.object(segments, "embed_or_none", lambda texts: [vector]):
            real(segment, merged, page)

    return [mock.patch.object(segments, "_refresh_segment", refresh)]


def utterance_dropped():
    from memory.engine import hybrid_scoring

    def context_only(turn, context, *, mix):
        return _unit([context if context is not None else turn])

    return [mock.patch.object(hybrid_scoring, "context_vector", context_only)]


def facts_dropped():
    from memory.services import long_term

    return [mock.patch.object(long_term, "embed_or_none", lambda texts: None)]


def facts_from_page():
    from memory.models import bytes_to_vector
    from memory.services import long_term

    real = long_term._write_extraction

    def write(user_id, segment, extraction, vectors, at):
        pages = [page for _, page in extraction.facts] + [page for _, page in extraction.agent_traits]
        return real(user_id, segment, extraction, [list(bytes_to_vector(p.embedding)) for p in pages], at)

    return [mock.patch.object(long_term, "embed_or_none", lambda texts: None),
            mock.patch.object(long_term, "_write_extraction", write)]


VARIANTS = {"base": lambda: [], "page-derived": page_derived, "page-from-contexts": page_from_contexts,
            "segment-centroid": segment_centroid, "utterance-dropped": utterance_dropped,
            "facts-dropped": facts_dropped, "facts-from-page": facts_from_page}


def main() -> None:
    variant, rest = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    import django

    django.setup()
    from django.core.management import call_command

    patches = VARIANTS[variant]()
    for patch in patches:
        patch.start()
    try:
        call_command(*rest)
    finally:
        for patch in patches:
            patch.stop()


if __name__ == "__main__":
    main()
