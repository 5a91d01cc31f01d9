"""Contract tests for the VectorIndex adapters.

Every contract test runs against
- "edge": the embedded Qdrant Edge shard in a temporary directory;
- "server-local": ServerVectorIndex over qdrant-client's local mode, so the client code path is
  checked without a server (local mode is for tests only: far too slow for the product);
- "server": ServerVectorIndex against a real Qdrant, only when QDRANT_URL is set;
- "fake": tests/fakes.py's in-memory index, which the fast tier (`make test-fast`) runs services on:
  the same assertions keep it honest.
No database: these are plain pytest tests.
"""

from __future__ import annotations

import enum
import gc
import math
import os
import subprocess
import sys
import threading
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as edge
from qdrant_client import QdrantClient

from memory.adapters import vectors
from memory.adapters.vector_points import prepare_point
from memory.adapters.vectors import EdgeVectorIndex, ServerVectorIndex, open_vector_index, search_ms_taken
from memory.engine.ports import VectorIndex, VectorPoint
from tests.fakes import FakeVectorIndex

DIM = 4
REPO_ROOT = Path(__file__).resolve().parents[3]
QDRANT_URL = os.environ.get("QDRANT_URL")

Index = EdgeVectorIndex | ServerVectorIndex | FakeVectorIndex


def pid(n: int) -> str:
    """Readable, valid point ids: 00000000-0000-0000-0000-00000000000n."""
    return str(uuid.UUID(int=n))


def make_point(n: int, vector: list[float], *, user: str = "u1", kind: str = "page",
               text: str | None = None, **payload: Any) -> VectorPoint:
    return VectorPoint(id=pid(n), vector=vector, payload={"user_id": user, "kind": kind, **payload},
                       text=text)


def ids(hits: list[Any]) -> list[str]:
    return [hit.id for hit in hits]


def open_index(kind: str, tmp_path: Path, dimension: int) -> tuple[Index, Any]:
    """The adapter and a cleanup callback."""
    if kind == "edge":
        edge_index = EdgeVectorIndex(tmp_path / "vectors", dimension=dimension)
        return edge_index, edge_index.close
    if kind == "server-local":
        with warnings.catch_warnings():  # local mode warns that payload indexes do nothing
            warnings.simplefilter("ignore")
            local = ServerVectorIndex.from_client(QdrantClient(":memory:"), dimension=dimension)
        return local, local.close
    if kind == "fake":
        fake = FakeVectorIndex(dimension=dimension)
        return fake, fake.close
    if not QDRANT_URL:
        pytest.skip("QDRANT_URL is not set: no Qdrant server to run the server contract against")
    collection = f"memoryos_test_{uuid.uuid4().hex[:12]}"
    server = ServerVectorIndex(QDRANT_URL, dimension=dimension, collection=collection,
                               api_key=os.environ.get("QDRANT_API_KEY"))

    def drop() -> None:
        server.client.delete_collection(collection)
        server.close()

    return server, drop


# Qdrant's own behaviour is what the contract checks on the three real adapters; `pytest --fakes`
# keeps the fake's run of the same assertions.
QDRANT = pytest.mark.real_adapters


@pytest.fixture(params=[pytest.param("edge", marks=QDRANT), pytest.param("server-local", marks=QDRANT),
                        pytest.param("server", marks=QDRANT), "fake"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Index]:
    adapter, cleanup = open_index(request.param, tmp_path, DIM)
    yield adapter
    cleanup()


@pytest.fixture(params=[pytest.param("edge", marks=QDRANT), pytest.param("server", marks=QDRANT)])
def scale_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Index]:
    adapter, cleanup = open_index(request.param, tmp_path, 32)
    yield adapter
    cleanup()


# ---------------------------------------------------------------- dense search


def test_adapters_satisfy_the_port(index: Index) -> None:
    assert isinstance(index, VectorIndex)


def test_search_ranks_nearest_first(index: Index) -> None:
    index.upsert([
        make_point(1, [0.0, 1.0, 0.0, 0.0]),
        make_point(2, [1.0, 0.0, 0.0, 0.0]),
        make_point(3, [0.7, 0.7, 0.0, 0.0]),
        make_point(4, [-1.0, 0.0, 0.0, 0.0]),
    ])
    hits = index.search(user_id="u1", vector=[1.0, 0.1, 0.0, 0.0], limit=3)
    assert ids(hits) == [pid(2), pid(3), pid(1)]
    assert hits[0].score == pytest.approx(1.0 / math.sqrt(1.01), abs=1e-5)
    assert hits[0].payload == {"user_id": "u1", "kind": "page"}


def test_search_limit(index: Index) -> None:
    index.upsert([make_point(n, [1.0, n / 10, 0.0, 0.0]) for n in range(1, 6)])
    assert ids(index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=2)) == [pid(1), pid(2)]
    assert index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=0) == []


def test_upsert_replaces_a_point(index: Index) -> None:
    index.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0], tier="short")])
    index.upsert([make_point(1, [0.0, 1.0, 0.0, 0.0], tier="mid")])
    [hit] = index.search(user_id="u1", vector=[0.0, 1.0, 0.0, 0.0], limit=5)
    assert (hit.id, hit.payload["tier"], index.count(user_id="u1")) == (pid(1), "mid", 1)


def test_users_never_see_each_others_points(index: Index) -> None:
    same = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, same, user="alice", text="secret tea recipe"),
                  make_point(2, same, user="bob", text="secret tea recipe")])
    assert ids(index.search(user_id="alice", vector=same, limit=10)) == [pid(1)]
    assert ids(index.search(user_id="bob", vector=same, limit=10)) == [pid(2)]
    assert ids(index.search_text(user_id="alice", text="tea", limit=10)) == [pid(1)]
    assert index.search(user_id="carol", vector=same, limit=10) == []


def test_kind_match_and_match_any_filters(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([
        make_point(1, vector, kind="page", segment_id="s1", tier="short"),
        make_point(2, vector, kind="page", segment_id="s2", tier="mid"),
        make_point(3, vector, kind="segment", segment_id="s1", tier="mid"),
        make_point(4, vector, kind="trait", tier="long"),
    ])

    def found(**filters: Any) -> set[str]:
        return set(ids(index.search(user_id="u1", vector=vector, limit=10, **filters)))

    assert found(kind="page") == {pid(1), pid(2)}
    assert found(match={"segment_id": "s1"}) == {pid(1), pid(3)}
    assert found(kind="page", match={"segment_id": "s1"}) == {pid(1)}
    assert found(match_any={"tier": ["mid", "long"]}) == {pid(2), pid(3), pid(4)}
    assert found(kind="page", match_any={"tier": ["mid", "long"]}) == {pid(2)}
    assert found(match_any={"tier": []}) == set()
    assert found(kind="nothing") == set()


# ---------------------------------------------------------------- writes


def test_delete_only_touches_the_owners_points(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, vector), make_point(2, vector), make_point(3, vector, user="u2")])
    index.delete(user_id="u1", ids=[pid(1), pid(3)])  # pid(3) belongs to u2: left alone
    assert ids(index.search(user_id="u1", vector=vector, limit=10)) == [pid(2)]
    assert ids(index.search(user_id="u2", vector=vector, limit=10)) == [pid(3)]
    index.delete(user_id="u1", ids=[])
    assert index.count() == 2


def test_delete_user(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, vector), make_point(2, vector), make_point(3, vector, user="u2")])
    index.delete_user(user_id="u1")
    assert (index.count(user_id="u1"), index.count(user_id="u2"), index.count()) == (0, 1, 1)


def _files_holding(root: Path, needles: list[bytes]) -> int:
    """How many of `needles` appear in any file under `root`."""
    blobs = [path.read_bytes() for path in root.rglob("*") if path.is_file()]
    return sum(any(needle in blob for blob in blobs) for needle in needles)


@QDRANT
def test_delete_user_leaves_no_vector_bytes_in_the_shard(tmp_path: Path) -> None:
    """Erase (issue 49, finding 7): Edge keeps a deleted point's vector in its segment file; the
    erased user's vectors are overwritten first, so their bytes are gone from every file."""
    index = EdgeVectorIndex(tmp_path, dimension=32)
    rng = np.random.default_rng(7)

    def unit() -> list[float]:
        vector = rng.standard_normal(32).astype(np.float32)
        return (vector / np.linalg.norm(vector)).tolist()

    erased = [make_point(n, unit(), text="zebra secret") for n in range(40)]
    kept = [make_point(100 + n, unit(), user="u2") for n in range(40)]
    index.upsert([*erased, *kept])
    index.flush()
    needle = [np.asarray(point.vector[8:12], dtype=np.float32).tobytes() for point in erased]
    kept_needle = [np.asarray(point.vector[8:12], dtype=np.float32).tobytes() for point in kept]
    assert _files_holding(tmp_path, needle) == 40  # the probe sees the bytes where they are
    index.delete_user(user_id="u1")
    assert (_files_holding(tmp_path, needle), _files_holding(tmp_path, kept_needle)) == (0, 40)
    assert (index.count(user_id="u1"), index.count(user_id="u2")) == (0, 40)
    index.close()


def test_count(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    assert index.count() == 0
    index.upsert([make_point(1, vector), make_point(2, vector, kind="segment"),
                  make_point(3, vector, user="u2"), make_point(4, vector, user="u2", kind="trait")])
    assert index.count() == 4
    assert index.count(user_id="u1") == 2
    assert index.count(user_id="u1", kind="segment") == 1
    assert index.count(kind="page") == 2
    assert index.count(user_id="nobody") == 0


def test_set_payload_moves_a_page_between_filters(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, vector, tier="short", segment_id="s1"),
                  make_point(2, vector, tier="short", segment_id="s1"),
                  make_point(3, vector, user="u2", tier="short")])
    index.set_payload(user_id="u1", ids=[pid(1)], payload={"tier": "mid", "segment_id": "s9"})
    index.set_payload(user_id="u1", ids=[pid(3)], payload={"tier": "mid"})  # not u1's: ignored

    def tier(user: str, value: str) -> list[str]:
        return ids(index.search(user_id=user, vector=vector, limit=10, match={"tier": value}))

    assert tier("u1", "mid") == [pid(1)]
    assert tier("u1", "short") == [pid(2)]
    assert tier("u2", "short") == [pid(3)]
    [moved] = index.search(user_id="u1", vector=vector, limit=1, match={"segment_id": "s9"})
    assert moved.payload == {"user_id": "u1", "kind": "page", "tier": "mid", "segment_id": "s9"}
    with pytest.raises(ValueError):
        index.set_payload(user_id="u1", ids=[pid(1)], payload={"user_id": "u2"})


def test_get_vectors_returns_stored_unit_vectors_of_the_owner(index: Index) -> None:
    index.upsert([make_point(1, [3.0, 4.0, 0.0, 0.0]), make_point(2, [0.0, 0.0, 2.0, 0.0]),
                  make_point(3, [1.0, 0.0, 0.0, 0.0], user="u2")])
    vectors = index.get_vectors(user_id="u1", ids=[pid(1), pid(3), pid(99)])
    assert list(vectors) == [pid(1)]
    assert vectors[pid(1)] == pytest.approx([0.6, 0.8, 0.0, 0.0], abs=1e-6)  # cosine normalises
    assert {type(x) for x in vectors[pid(1)]} == {float}  # Edge's list is taken as its binding builds it
    assert index.get_vectors(user_id="u1", ids=[]) == {}


def test_get_payloads_returns_the_named_fields_of_the_owners_points(index: Index) -> None:
    index.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0], kind="turn", seq=4, speaker="Ann", page_id="p1"),
                  make_point(2, [0.0, 1.0, 0.0, 0.0], kind="turn", seq=5),
                  make_point(3, [1.0, 0.0, 0.0, 0.0], user="u2", kind="turn", seq=9, speaker="Eve")])

    found = index.get_payloads(user_id="u1", ids=[pid(1), pid(2), pid(3), pid(99)], fields=("seq", "speaker"))

    assert found == {pid(1): {"seq": 4, "speaker": "Ann"}, pid(2): {"seq": 5}}
    assert index.get_payloads(user_id="u1", ids=[], fields=("seq",)) == {}


def test_search_without_payload_returns_ids_and_scores(index: Index) -> None:
    index.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0], kind="turn", seq=4, text="hello there"),
                  make_point(2, [0.0, 1.0, 0.0, 0.0], kind="turn", seq=5, text="hello again")])

    [hit] = index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=1, kind="turn", fields=())
    keyword = index.search_text(user_id="u1", text="hello", limit=2, kind="turn", fields=())

    assert (hit.id, hit.payload) == (pid(1), {})
    assert hit.score == pytest.approx(1.0, abs=1e-6)
    assert sorted(ids(keyword)) == [pid(1), pid(2)] and all(h.payload == {} for h in keyword)


def test_integer_ids_work_beside_uuids(index: Index) -> None:
    big = str((1 << 63) + 5)
    index.upsert([VectorPoint(id="42", vector=[1.0, 0.0, 0.0, 0.0], payload={"user_id": "u1", "kind": "turn"}),
                  VectorPoint(id=big, vector=[0.9, 0.1, 0.0, 0.0], payload={"user_id": "u1", "kind": "turn"}),
                  make_point(3, [0.0, 1.0, 0.0, 0.0], kind="turn")])

    assert ids(index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=3)) == ["42", big, pid(3)]
    assert set(index.get_vectors(user_id="u1", ids=["42", pid(3)])) == {"42", pid(3)}
    index.delete(user_id="u1", ids=["42"])
    assert ids(index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=3)) == [big, pid(3)]
    with pytest.raises(ValueError, match="UUID or an unsigned 64-bit integer"):
        index.upsert([VectorPoint(id=str(1 << 64), vector=[1.0, 0.0, 0.0, 0.0],
                                  payload={"user_id": "u1", "kind": "turn"})])


def test_ids_come_back_canonical(index: Index) -> None:
    raw = uuid.UUID(int=7)
    index.upsert([VectorPoint(id=raw.hex.upper(), vector=[1.0, 0.0, 0.0, 0.0],
                              payload={"user_id": "u1", "kind": "page"})])
    assert ids(index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=1)) == [str(raw)]


@pytest.mark.parametrize("bad", [
    VectorPoint(id="not-a-uuid", vector=[1.0, 0.0, 0.0, 0.0], payload={"user_id": "u1", "kind": "p"}),
    VectorPoint(id=pid(1), vector=[1.0, 0.0, 0.0], payload={"user_id": "u1", "kind": "p"}),
    VectorPoint(id=pid(1), vector=[1.0, 0.0, 0.0, 0.0], payload={"kind": "p"}),
    VectorPoint(id=pid(1), vector=[1.0, 0.0, 0.0, 0.0], payload={"user_id": "u1"}),
])
def test_upsert_rejects_a_bad_batch_whole(index: Index, bad: VectorPoint) -> None:
    with pytest.raises(ValueError):
        index.upsert([make_point(2, [1.0, 0.0, 0.0, 0.0]), bad])
    assert index.count() == 0


def test_clear_drops_everything_and_stays_usable(index: Index) -> None:
    index.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0]), make_point(2, [1.0, 0.0, 0.0, 0.0], user="u2")])
    index.clear()
    assert index.count() == 0
    index.upsert([make_point(3, [1.0, 0.0, 0.0, 0.0], text="tea")])
    assert ids(index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=5)) == [pid(3)]
    assert ids(index.search_text(user_id="u1", text="tea", limit=5)) == [pid(3)]


# ---------------------------------------------------------------- keyword search


def idf(docs: int, with_term: int) -> float:
    """Qdrant's IDF modifier."""
    return math.log(1 + (docs - with_term + 0.5) / (with_term + 0.5))


def test_text_search_ranks_the_rare_term_first(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([
        make_point(1, vector, text="Hiking trip with friends"),
        make_point(2, vector, text="hiking, hiking and hiking boots"),
        make_point(3, vector, text="The zeppelin museum visit"),
        make_point(4, vector, text="cooking fresh pasta"),
        # Another user's zeppelin pages neither show up nor dilute u1's IDF.
        *[make_point(10 + n, vector, user="u2", text="zeppelin zeppelin") for n in range(5)],
    ])
    hits = index.search_text(user_id="u1", text="Zeppelin hikes", limit=10)
    assert ids(hits) == [pid(3), pid(2), pid(1)]
    # 3 tokens (zeppelin museum visit), tf 1: 2.2 / (1 + 1.2·(0.25 + 0.75·3/30)) = 2.2 / 1.39
    assert hits[0].score == pytest.approx(idf(4, 1) * 2.2 / 1.39, rel=1e-3)
    # "hik" is in 2 of u1's 4 documents. 4 tokens (hik hik hik boot), tf 3:
    # 6.6 / (3 + 1.2·(0.25 + 0.1)); then 3 tokens (hik trip friend), tf 1.
    assert hits[1].score == pytest.approx(idf(4, 2) * 6.6 / 3.42, rel=1e-3)
    assert hits[2].score == pytest.approx(idf(4, 2) * 2.2 / 1.39, rel=1e-3)


@QDRANT
def test_the_searches_time_is_counted_on_their_thread_and_taken_once(tmp_path: Path) -> None:
    """bench scale's serial floor: a recall's embedding plus the searches it made, one after another."""
    edge_index, close = open_index("edge", tmp_path, DIM)
    try:
        edge_index.upsert([make_point(n, [1.0, n / 10, 0.0, 0.0], text="hiking boots") for n in range(1, 50)])
        search_ms_taken()
        edge_index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=5)
        edge_index.search_text(user_id="u1", text="boots", limit=5)
        taken = search_ms_taken()
        assert taken > 0.0
        assert search_ms_taken() == 0.0
        edge_index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=0)  # no search made, none counted
        assert search_ms_taken() == 0.0
        other = threading.Thread(target=lambda: edge_index.search_text(user_id="u1", text="boots", limit=5))
        other.start()
        other.join()
        assert search_ms_taken() == 0.0  # another thread's search is that thread's
    finally:
        close()


def test_text_search_filters_and_edge_cases(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, vector, kind="page", text="green tea", tier="short"),
                  make_point(2, vector, kind="segment", text="tea ceremony", tier="mid"),
                  make_point(3, vector, kind="page")])  # no text: never a keyword hit
    assert set(ids(index.search_text(user_id="u1", text="tea", limit=10))) == {pid(1), pid(2)}
    assert ids(index.search_text(user_id="u1", text="tea", limit=10, kind="segment")) == [pid(2)]
    assert ids(index.search_text(user_id="u1", text="tea", limit=10, match={"tier": "short"})) == [pid(1)]
    assert ids(index.search_text(user_id="u1", text="tea", limit=10,
                                 match_any={"tier": ["mid", "long"]})) == [pid(2)]
    assert index.search_text(user_id="u1", text="the and of", limit=10) == []
    assert index.search_text(user_id="u1", text="coffee", limit=10) == []


def test_text_search_idf_counts_the_users_points_that_have_text(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, vector, text="zeppelin museum"), make_point(2, vector, text="cooking pasta"),
                  make_point(3, vector), make_point(4, vector, text="the and of"),  # no keyword: no text
                  make_point(5, vector, kind="segment", text="green tea")])
    # N = 3 (points 1, 2, 5: the kind filter narrows the hits, not the IDF corpus), n = 1;
    # 2 tokens, tf 1: 2.2 / (1 + 1.2·(0.25 + 0.75·2/30)).
    [hit] = index.search_text(user_id="u1", text="zeppelin", limit=5, kind="page")
    assert hit.score == pytest.approx(idf(3, 1) * 2.2 / (1 + 1.2 * 0.3), rel=1e-3)


def test_text_search_idf_follows_the_users_writes(index: Index) -> None:
    """The IDF a search uses counts the user's points as they are now: a replaced text leaves the
    counts and its new text joins them, a deleted point leaves them (the embedded index keeps
    these counts itself once a search has asked for the user's)."""
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, vector, text="zeppelin museum"), make_point(2, vector, text="cooking pasta"),
                  make_point(3, vector, text="zeppelin hangar"), make_point(4, vector, text="green tea")])
    two_tokens = 2.2 / (1 + 1.2 * 0.3)  # tf 1 in 2 tokens: 2.2 / (1 + 1.2·(0.25 + 0.75·2/30))
    [first, _] = index.search_text(user_id="u1", text="zeppelin", limit=5)
    assert first.score == pytest.approx(idf(4, 2) * two_tokens, rel=1e-3)

    index.upsert([make_point(3, vector, text="bread baking")])  # no longer a zeppelin
    index.delete(user_id="u1", ids=[pid(4)])
    index.upsert([make_point(5, vector, user="u2", text="zeppelin zeppelin")])  # another user's counts
    [hit] = index.search_text(user_id="u1", text="zeppelin", limit=5)
    assert (hit.id, hit.score) == (pid(1), pytest.approx(idf(3, 1) * two_tokens, rel=1e-3))

    index.upsert([make_point(6, vector, text="zeppelin ride"), make_point(7, vector)])  # 7 has no text
    assert index.search_text(user_id="u1", text="zeppelin", limit=5)[0].score == pytest.approx(
        idf(4, 2) * two_tokens, rel=1e-3)

    index.delete_user(user_id="u1")
    index.upsert([make_point(8, vector, text="zeppelin ride")])
    [alone] = index.search_text(user_id="u1", text="zeppelin", limit=5)
    assert alone.score == pytest.approx(idf(1, 1) * two_tokens, rel=1e-3)


class Tier(enum.StrEnum):  # as Django's TextChoices, which services pass in payloads and filters
    MID = "mid"
    LONG = "long"


def test_str_enum_members_are_stored_and_matched_as_their_strings(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, vector, tier=Tier.MID), make_point(2, vector, tier="long")])

    [mid] = index.search(user_id="u1", vector=vector, limit=5, match={"tier": Tier.MID})
    either = index.search(user_id="u1", vector=vector, limit=5, match_any={"tier": [Tier.MID, Tier.LONG]})
    index.set_payload(user_id="u1", ids=[pid(2)], payload={"tier": Tier.MID})

    assert mid.id == pid(1) and type(mid.payload["tier"]) is str and mid.payload["tier"] == "mid"
    assert sorted(ids(either)) == [pid(1), pid(2)]
    assert index.count(user_id="u1") == len(index.search(user_id="u1", vector=vector, limit=5, match={"tier": "mid"}))


# ---------------------------------------------------------------- what the port promises and what it does not


def test_ties_keep_no_order_but_a_limit_takes_only_tied_points(index: Index) -> None:
    """Equal scores come back in an order neither Qdrant adapter promises (Edge's and local
    mode's differ, and neither is insertion or id order): callers must not rely on it."""
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(n, vector, text="tea time") for n in (5, 3, 9, 1)])
    index.upsert([make_point(7, [0.0, 1.0, 0.0, 0.0], text="tea and cake")])

    everything = index.search(user_id="u1", vector=vector, limit=10)
    two = index.search(user_id="u1", vector=vector, limit=2)
    keyword = index.search_text(user_id="u1", text="tea", limit=10)

    assert set(ids(everything[:4])) == {pid(n) for n in (5, 3, 9, 1)} and ids(everything)[4] == pid(7)
    assert [hit.score for hit in everything] == sorted((hit.score for hit in everything), reverse=True)
    assert len(two) == 2 and set(ids(two)) <= {pid(n) for n in (5, 3, 9, 1)}
    assert set(ids(keyword)) == {pid(n) for n in (1, 3, 5, 7, 9)}
    assert [hit.score for hit in keyword] == sorted((hit.score for hit in keyword), reverse=True)


def test_match_compares_value_and_type_and_looks_into_lists(index: Index) -> None:
    vector = [1.0, 0.0, 0.0, 0.0]
    index.upsert([make_point(1, vector, seq=3, tags=["a", "b"]), make_point(2, vector, seq=4, tags=["c"])])

    def found(**filters: Any) -> set[str]:
        return set(ids(index.search(user_id="u1", vector=vector, limit=10, **filters)))

    assert found(match={"seq": 3}) == {pid(1)}
    assert found(match={"seq": "3"}) == set()
    assert found(match={"tags": "a"}) == {pid(1)}
    assert found(match_any={"tags": ["b", "c"]}) == {pid(1), pid(2)}
    assert found(match_any={"seq": [4, 5]}) == {pid(2)}
    assert found(match={"missing": "x"}) == set()


def test_zero_vectors_score_zero_and_negative_limits_find_nothing(index: Index) -> None:
    index.upsert([make_point(1, [0.0, 0.0, 0.0, 0.0]), make_point(2, [-1.0, 0.0, 0.0, 0.0])])

    hits = index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=5)
    zero_query = index.search(user_id="u1", vector=[0.0, 0.0, 0.0, 0.0], limit=5)

    assert [(hit.id, round(hit.score, 5)) for hit in hits] == [(pid(1), 0.0), (pid(2), -1.0)]
    assert sorted(ids(zero_query)) == [pid(1), pid(2)] and {hit.score for hit in zero_query} == {0.0}
    assert index.get_vectors(user_id="u1", ids=[pid(1)]) == {pid(1): [0.0, 0.0, 0.0, 0.0]}
    assert index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=-1) == []


def test_fields_select_payload_in_both_searches(index: Index) -> None:
    index.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0], seq=3, speaker="Ann", text="hello there")])

    [dense] = index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=1, fields=("seq", "nope"))
    [keyword] = index.search_text(user_id="u1", text="hello", limit=1, fields=("speaker",))

    assert (dense.payload, keyword.payload) == ({"seq": 3}, {"speaker": "Ann"})


@pytest.mark.parametrize("call", [
    lambda index: index.search(user_id="", vector=[1.0, 0.0, 0.0, 0.0], limit=1),
    lambda index: index.search(user_id="u1", vector=[1.0, 0.0, 0.0], limit=1),
    lambda index: index.search_text(user_id=None, text="tea", limit=1),
    lambda index: index.delete_user(user_id=None),
    lambda index: index.delete(user_id="u1", ids=["not-an-id"]),
    lambda index: index.get_vectors(user_id="u1", ids=[str(1 << 64)]),
    lambda index: index.set_payload(user_id="u1", ids=[pid(1)], payload={"user_id": "u2"}),
], ids=["empty-user", "wrong-dimension", "no-user", "delete-no-user", "bad-id", "id-too-big", "move-to-another-user"])
def test_bad_arguments_raise_value_error_and_change_nothing(index: Index, call: Any) -> None:
    index.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0], tier="short")])
    with pytest.raises(ValueError):
        call(index)
    [hit] = index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=5)
    assert (hit.id, hit.payload) == (pid(1), {"user_id": "u1", "kind": "page", "tier": "short"})


# ---------------------------------------------------------------- scale


def test_filtered_search_at_10k_points(scale_index: Index) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((10_000, 32)).astype(np.float32)
    users = [f"user{n % 5}" for n in range(10_000)]
    kinds = ["page" if n % 3 else "segment" for n in range(10_000)]
    scale_index.upsert([make_point(n + 1, vectors[n].tolist(), user=users[n], kind=kinds[n])
                        for n in range(10_000)])
    assert scale_index.count() == 10_000
    assert scale_index.count(user_id="user3") == 2_000

    target = 4_253  # user3, kind page
    assert (users[target], kinds[target]) == ("user3", "page")
    hits = scale_index.search(user_id="user3", vector=vectors[target].tolist(), limit=10, kind="page")
    assert hits[0].id == pid(target + 1)
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert {(hit.payload["user_id"], hit.payload["kind"]) for hit in hits} == {("user3", "page")}
    assert len(hits) == 10
    # The same vector asked for by another user finds only that user's points.
    others = scale_index.search(user_id="user1", vector=vectors[target].tolist(), limit=10)
    assert pid(target + 1) not in ids(others)
    assert {hit.payload["user_id"] for hit in others} == {"user1"}


# ---------------------------------------------------------------- Edge specifics


@QDRANT  # the Edge shard itself
def test_edge_reopen_keeps_data_and_indexes(tmp_path: Path) -> None:
    first = EdgeVectorIndex(tmp_path, dimension=DIM)
    first.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0], text="zeppelin museum"),
                  make_point(2, [0.0, 1.0, 0.0, 0.0], tier="mid")])
    first.close()
    first.close()  # idempotent

    second = EdgeVectorIndex(tmp_path, dimension=DIM)
    assert ids(second.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=5)) == [pid(1), pid(2)]
    assert ids(second.search_text(user_id="u1", text="zeppelin", limit=5)) == [pid(1)]
    assert ids(second.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=5,
                             match={"tier": "mid"})) == [pid(2)]
    assert set(second._box[0].info().payload_schema) == {"user_id", "kind", "segment_id", "tier"}
    second.close()


@QDRANT  # the Edge shard itself
def test_edge_counts_the_users_terms_again_after_a_reopen(tmp_path: Path) -> None:
    """A process that opens the shard counts a user's terms from their points on first search,
    and gets the scores the writing process had."""
    first = EdgeVectorIndex(tmp_path, dimension=DIM)
    first.upsert([make_point(n, [1.0, 0.0, 0.0, 0.0], text=text) for n, text in
                  enumerate(["zeppelin museum", "cooking pasta", "zeppelin hangar", "green tea"], start=1)])
    first.search_text(user_id="u1", text="tea", limit=5)  # counts held from here on
    first.upsert([make_point(2, [1.0, 0.0, 0.0, 0.0], text="zeppelin pasta")])
    before = [(hit.id, hit.score) for hit in first.search_text(user_id="u1", text="zeppelin pasta", limit=5)]
    first.close()
    second = EdgeVectorIndex(tmp_path, dimension=DIM)
    after = [(hit.id, hit.score) for hit in second.search_text(user_id="u1", text="zeppelin pasta", limit=5)]
    assert after == before
    assert [hit_id for hit_id, _ in after][0] == pid(2)
    second.close()


@QDRANT  # the Edge shard itself
def test_edge_prepare_counts_a_users_words_before_their_first_search(tmp_path: Path) -> None:
    first = EdgeVectorIndex(tmp_path, dimension=DIM)
    first.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0], text="zeppelin museum"),
                  make_point(2, [1.0, 0.0, 0.0, 0.0], user="u2", text="green tea")])
    first.close()
    second = EdgeVectorIndex(tmp_path, dimension=DIM)
    assert "u1" not in second._terms
    second.prepare(user_id="u1")
    held = second._terms.held("u1")
    assert held is not None and held.documents == 1 and "u2" not in second._terms
    with pytest.raises(ValueError):
        second.prepare(user_id="")
    second.close()


def _write_legacy_shard(shard_dir: Path) -> None:
    """A shard as the index wrote it before queries carried IDF: Edge's IDF modifier on text."""
    legacy = vectors._edge_config(DIM, idf_modifier=True)
    shard_dir.mkdir(parents=True)
    shard = edge.EdgeShard.create(str(shard_dir), legacy)
    points = [make_point(n, [1.0, n / 10, 0.0, 0.0], text=text) for n, text in
              enumerate(["zeppelin museum", "cooking pasta", "zeppelin hangar", "green tea"], start=1)]
    shard.update(edge.UpdateOperation.upsert_points(
        [vectors._edge_point(prepare_point(point, DIM)) for point in points]))
    shard.flush()
    shard.close()


@QDRANT  # the Edge shard itself
def test_edge_reindexes_a_shard_written_with_the_idf_modifier(tmp_path: Path) -> None:
    shard_dir = tmp_path / f"shard-{DIM}d"
    _write_legacy_shard(shard_dir)
    index = EdgeVectorIndex(tmp_path, dimension=DIM)
    assert index.count(user_id="u1") == 4
    assert ids(index.search(user_id="u1", vector=[1.0, 0.4, 0.0, 0.0], limit=1)) == [pid(4)]
    [first, _] = index.search_text(user_id="u1", text="zeppelin", limit=5)
    assert first.score == pytest.approx(idf(4, 2) * 2.2 / (1 + 1.2 * 0.3), rel=1e-3)
    assert set(index._box[0].info().payload_schema) == {"user_id", "kind", "segment_id", "tier"}
    index.close()
    assert "modifier" not in (shard_dir / "edge_config.json").read_text()
    assert sorted(path.name for path in tmp_path.iterdir()) == [shard_dir.name]


@QDRANT  # the Edge shard itself
def test_edge_finishes_a_reindex_stopped_between_its_renames(tmp_path: Path) -> None:
    shard_dir = tmp_path / f"shard-{DIM}d"
    _write_legacy_shard(shard_dir)
    EdgeVectorIndex(tmp_path, dimension=DIM).close()  # re-indexed
    shard_dir.rename(tmp_path / f"shard-{DIM}d.next")  # as if stopped after moving the old one away
    _write_legacy_shard(tmp_path / f"shard-{DIM}d.legacy")
    index = EdgeVectorIndex(tmp_path, dimension=DIM)
    assert index.count(user_id="u1") == 4
    assert "modifier" not in (shard_dir / "edge_config.json").read_text()
    index.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == [shard_dir.name]


@QDRANT  # the Edge shard itself
def test_edge_dropped_object_releases_the_directory(tmp_path: Path) -> None:
    first = EdgeVectorIndex(tmp_path, dimension=DIM)
    first.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0])])
    del first
    gc.collect()
    second = EdgeVectorIndex(tmp_path, dimension=DIM)
    assert second.count() == 1
    second.close()


@QDRANT  # the Edge shard itself
def test_edge_data_survives_a_process_that_never_closed(tmp_path: Path) -> None:
    code = (
        "import os, sys, uuid\n"
        "from pathlib import Path\n"
        "from memory.engine.ports import VectorPoint\n"
        "from memory.adapters.vectors import EdgeVectorIndex\n"
        "index = EdgeVectorIndex(Path(sys.argv[1]), dimension=4)\n"
        "index.upsert([VectorPoint(id=str(uuid.UUID(int=1)), vector=[1, 0, 0, 0],\n"
        "              payload={'user_id': 'u1', 'kind': 'page'}, text='zeppelin')])\n"
        "os._exit(0)  # no close, no flush, no finalizer\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=REPO_ROOT)
    reopened = EdgeVectorIndex(tmp_path, dimension=DIM)
    assert ids(reopened.search_text(user_id="u1", text="zeppelin", limit=5)) == [pid(1)]
    reopened.close()


@QDRANT  # the Edge shard itself
def test_edge_directory_is_one_process_only(tmp_path: Path) -> None:
    first = EdgeVectorIndex(tmp_path, dimension=DIM)
    with pytest.raises(Exception, match="WAL"):
        EdgeVectorIndex(tmp_path, dimension=DIM)
    first.close()


@QDRANT  # the Edge shard itself
def test_edge_dimension_gets_its_own_shard(tmp_path: Path) -> None:
    small = EdgeVectorIndex(tmp_path, dimension=DIM)
    small.upsert([make_point(1, [1.0, 0.0, 0.0, 0.0])])
    small.close()
    large = EdgeVectorIndex(tmp_path, dimension=8)  # a new embedder: empty, ready for reindex
    assert large.count() == 0
    large.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["shard-4d", "shard-8d"]


@QDRANT  # the Edge shard itself
def test_edge_closed_index_refuses_calls(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, dimension=DIM)
    index.close()
    with pytest.raises(RuntimeError, match="closed"):
        index.count()


@QDRANT  # the Edge shard itself
def test_edge_shared_between_threads(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, dimension=DIM)
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        try:
            for n in range(50):
                index.upsert([make_point(offset + n, [1.0, n / 50, 0.0, 0.0], text=f"note {n}")])
                index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=3)
                index.search_text(user_id="u1", text="note", limit=3)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(1000 * t + 1,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert index.count(user_id="u1") == 200
    index.close()


@QDRANT  # the Edge shard itself
def test_edge_optimize_keeps_results(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, dimension=DIM)
    index.upsert([make_point(n, [1.0, n / 100, 0.0, 0.0]) for n in range(1, 101)])
    index.delete(user_id="u1", ids=[pid(n) for n in range(50, 101)])
    index.optimize()
    assert index.count() == 49
    assert ids(index.search(user_id="u1", vector=[1.0, 0.0, 0.0, 0.0], limit=2)) == [pid(1), pid(2)]
    index.close()


@QDRANT  # the Edge shard itself
def test_open_vector_index_picks_edge_without_url(tmp_path: Path) -> None:
    index = open_vector_index(url=None, path=tmp_path, dimension=DIM)
    assert isinstance(index, EdgeVectorIndex)
    assert isinstance(index, VectorIndex)
    index.close()


def test_get_vectors_reads_every_owned_point_asked_for_at_once(index: Index) -> None:
    """Recall reads the vectors of its best 100 turns in one call (smoothing by meaning): all of
    them come back, repeated ids once, another user's never (Edge reads them with one scroll
    filtered by owner and ids, no payload)."""
    index.upsert([make_point(n, [1.0, float(n), 0.0, 0.0]) for n in range(1, 151)]
                 + [make_point(n, [0.0, 1.0, 0.0, 0.0], user="u2") for n in range(151, 161)])
    wanted = [pid(n) for n in range(160, 0, -1)] + [pid(7)]

    vectors = index.get_vectors(user_id="u1", ids=wanted)

    assert set(vectors) == {pid(n) for n in range(1, 151)}
    assert vectors[pid(7)] == pytest.approx([1 / 50 ** 0.5, 7 / 50 ** 0.5, 0.0, 0.0], abs=1e-6)
