"""Fixtures the service tests share."""

from __future__ import annotations

import numpy as np
import pytest

from memory.adapters import configured


class CountingEmbedder:
    """The configured embedder, recording each call's texts (`calls`) and all of them in order (`texts`)."""

    def __init__(self) -> None:
        self.inner, self.calls = configured.embedder(), []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call]

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)


@pytest.fixture
def counting(monkeypatch) -> CountingEmbedder:
    """The configured embedder, counting: what a write or an import asks MiniLM for."""
    embedder = CountingEmbedder()
    monkeypatch.setattr(configured, "embedder", lambda: embedder)
    return embedder


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)
