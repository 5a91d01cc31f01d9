"""`manage.py bench memoria` runs and reports what it says (the numbers come from the command, not
from here): every content-id method on the same nodes, the archive of all of them, the recalls."""

from __future__ import annotations

import io
import json
import random

import pytest
from django.core.management import CommandError, call_command

from memory.engine.ipld import node_cid
from memory.policies.memoria.bench import build_nodes


def test_bench_memoria_reports_each_part():
    out = io.StringIO()
    call_command("bench", "memoria", "--nodes", "45", "--queries", "3", "--candidates", "12", "--json",
                 "--no-progress", stdout=out, stderr=io.StringIO())
    result = json.loads(out.getvalue())
    assert result["nodes"] == 45
    methods = [row["method"] for row in result["content_ids"]]
    assert methods[0].startswith("sha256 of JSON") and result["content_ids"][0]["ratio"] == 1.0
    assert "libipld" in methods[1] and "dag-cbor" in methods[2]
    assert result["car"]["blocks"] == 45 and result["car"]["read_ratio"] > 0
    assert result["recall"]["rank"]["n"] == result["recall"]["recall"]["n"] == 3
    assert result["recall"]["pulled_in_mean"] > 0  # chains and segments give the seeds something to pull


def test_the_generated_conversation_is_a_chain_with_segments():
    nodes = build_nodes(23, random.Random(1))
    pages = [node for node in nodes if node.kind == "page"]
    segments = [node for node in nodes if node.kind == "segment"]
    assert (len(nodes), len(pages), len(segments)) == (23, 21, 2)
    assert pages[1].dependencies["previous"].cid == node_cid(pages[0])
    assert {dep.cid for dep in segments[0].dependencies.values()} == {node_cid(page) for page in pages[:10]}


def test_bench_memoria_refuses_a_store_too_small():
    with pytest.raises(CommandError, match="--nodes must be at least 20"):
        call_command("bench", "memoria", "--nodes", "3", stdout=io.StringIO(), stderr=io.StringIO())
