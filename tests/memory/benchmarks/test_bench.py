"""`manage.py bench`: the dispatcher, scale on a tiny store, qa end to end against a fake endpoint.

These check that the benchmarks run and report what they say; the numbers come from commands
(BENCHMARKS.md), never from tests.
"""

from __future__ import annotations

import io
import json
import math
import types
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

from memory.adapters import configured
from memory.benchmarks import common, files, inspector, qa
from memory.management.commands import bench
from memory.management.commands.bench import BenchmarkUnavailable, load
from memory.models import DialoguePage
from memory.recall.base import get_policy, policy_names


def run_json(*args) -> dict:
    out = io.StringIO()
    call_command("bench", *args, "--json", "--no-progress", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


# --------------------------------------------------------------------------- helpers, no database


def test_percentiles_and_table():
    assert common.percentile([1, 2, 3, 4], 50) == 2.5
    assert common.percentile([10.0], 95) == 10.0
    summary = common.summarize_ms([float(v) for v in range(1, 101)])
    assert summary["n"] == 100 and summary["p50"] == 50.5 and summary["p95"] == 95.05
    table = common.render_table(["name", "ms"], [["a", 1.5], ["bb", 1234.0], ["c", None]], title="T")
    lines = table.splitlines()
    assert lines[0] == "T" and lines[1].split() == ["name", "ms"]
    assert lines[3].endswith(" 1.50") and lines[4].endswith("1,234") and lines[5].endswith("-")


def test_the_embedding_meter_counts_texts_and_time_and_gives_the_ceiling(monkeypatch):
    # hand-computed: 6 texts in 0.5 s over 3 pages = 2 texts and 166.67 ms a page, 6 pages/s at most
    assert common.EmbeddingMeter(calls=2, texts=6, seconds=0.5).per(3) == {
        "texts": 2.0, "ms": 166.67, "ceiling_per_s": 6.0}
    assert math.isnan(common.EmbeddingMeter().per(3)["ceiling_per_s"])

    class Fake:
        dimension = 2

        def embed(self, texts):
            return [[1.0, 0.0] for _ in texts]

    monkeypatch.setattr(configured, "embedder", lambda: Fake())
    total = common.EmbeddingMeter()
    for _ in range(2):
        with common.embeddings_metered(total) as meter:
            assert configured.embedder().embed(["a", "b", "c"]) == [[1.0, 0.0]] * 3
            assert configured.embedder().dimension == 2
            # one embedder for the block: caches kept per embedder (sona names) still hit
            assert configured.embedder() is configured.embedder()
    assert meter is total and (total.calls, total.texts) == (2, 6) and total.seconds > 0
    assert isinstance(configured.embedder(), Fake)  # put back after the block


def test_missing_benchmark_module_is_reported():
    with pytest.raises(BenchmarkUnavailable, match="not installed"):
        load("no_such_benchmark")


def test_benchmarks_run_without_debug_query_logging(monkeypatch, settings):
    """Measured as deployed: with DEBUG on every statement would also be timed and kept."""
    seen = {}

    def run(options, stdout):
        seen["debug"], seen["logged"] = django_settings.DEBUG, connection.queries_logged
        return {}

    fake = types.SimpleNamespace(add_arguments=lambda parser: None, run=run, render=lambda result: "done")
    monkeypatch.setattr(bench, "load", lambda name: fake)
    settings.DEBUG = True
    out = io.StringIO()
    call_command("bench", "embed", stdout=out, stderr=io.StringIO())

    assert seen == {"debug": False, "logged": False} and out.getvalue().strip() == "done"
    assert django_settings.DEBUG and connection.queries_logged  # restored afterwards


@pytest.mark.parametrize(("prediction", "gold", "category", "f1", "bleu"), [
    ("golden retriever", "a golden retriever", 4, 1.0, 1.0),
    ("The dog, a Golden Retriever!", "golden retriever", 4, 0.8, 0.6667),
    ("May 2023", "7 May 2023", 2, 0.8, 0.6065),
    ("painting, hiking and chess", "hiking, painting", 1, 0.8333, 0.6667),
    ("yes", "Likely yes; she loves hiking", 3, 0.6667, 0.3679),
    ("running", "she runs", 4, 0.6667, 0.0),  # stemmed for F1, not for BLEU-1
    ("", "anything", 4, 0.0, 0.0),
])
def test_locomo_scoring(prediction, gold, category, f1, bleu):
    got_f1, got_bleu = qa.score(prediction, gold, category)
    assert got_f1 == pytest.approx(f1, abs=1e-4)
    assert got_bleu == pytest.approx(bleu, abs=1e-4)


# --------------------------------------------------------------------------- scale


@pytest.mark.slow
@pytest.mark.real_adapters  # every part of a recall takes time, the embedding wait too: the fake embeds in no time
def test_scale_builds_measures_and_cleans_up(memory_env):
    result = run_json("scale", "--sizes", "40", "--queries", "4", "--write-sample", "2", "--pool", "48",
                      "--segment-pages", "10", "--in-place")
    [size] = result["runs"]
    build = size["build"]
    assert size["pages"] == 40 and build["stm"] == 7 and build["mtm"] == 33 and build["segments"] == 4
    # a page point and two utterance points per page, the segments, 100 KB facts, 100 agent traits
    assert build["points"] == 40 * 3 + 4 + 200
    for variant in ("plain", "hnsw"):
        latency = size["latency"][variant]
        assert set(latency["policies"]) == set(policy_names())  # every policy, measured side by side
        for policy, timing in latency["policies"].items():
            assert timing["recall"]["n"] == 4 and 0 < timing["recall"]["p50"] <= timing["recall"]["p95"]
            # the parts the traced recalls timed themselves, in the order they ran
            keywords = [get_policy(policy).early_part] if get_policy(policy).early_part else []
            assert list(timing["parts"]) == ["STM pages", "profile and traits", *keywords, "embedding wait",
                                             "facts and agent traits", get_policy(policy).rank_part,
                                             "segment visits", "trace"]
            assert all(part["n"] == 4 and part["p50"] > 0 for part in timing["parts"].values())
            assert timing["embedding"]["n"] == 4 and timing["embedding"]["p50"] > 0
            # each recall's embedding plus the searches it made: never under the embedding alone
            assert timing["serial_floor"]["n"] == 4
            assert timing["serial_floor"]["p50"] >= timing["embedding"]["p50"]
            assert sum(part["mean"] for part in timing["parts"].values()) <= timing["recall"]["mean"] * 1.01
        assert latency["search_all_turns"]["n"] == 4
    assert size["write"]["n"] == 2 and size["write"]["pages_per_s"] > 0
    # a write's time over its MiniLM time: the write includes its embeddings, so at least 1
    assert size["write"]["over_embedding"] >= 1.0
    assert size["shard_mb"] > 0 and size["db_mb"] > 0 and size["peak_rss_mb"] > 0
    # the throwaway user and its rows are gone; the settings' vector shard was never opened
    assert not get_user_model().objects.filter(username__startswith="scale-").exists()
    assert DialoguePage.objects.count() == 0
    assert not (memory_env.QDRANT_PATH).exists()


def test_recalls_are_timed_query_by_query_in_shuffled_orders_with_the_parts_of_the_traced_ones(
        memory_env, make_user, monkeypatch):
    from memory.benchmarks import scale
    from memory.services.recall import Recall

    calls = []

    def fake_recall(**kw):
        calls.append((kw["query"], kw["policy"], kw["record_trace"]))
        # a traced recall's parts say which recall they came from
        part_ms = 1.0 if kw["record_trace"] else 100.0
        return Recall(query=kw["query"], items=[], trace=None, timings_ms={"a part": part_ms, kw["policy"]: part_ms})

    monkeypatch.setattr(scale, "recall_for_query", fake_recall)
    queries = [f"question {n}" for n in range(6)]
    vector = [1.0] + [0.0] * 383

    result = scale.measure_retrieval(make_user(), None, queries, [vector] * 6, policies=["memoryos", "hybrid"],
                                     show=False, label="test", seed=1)

    timed = calls[5 * 4:]  # after the warm-up: the first five queries through every variant
    assert [query for query, _, _ in timed] == [query for query in queries for _ in range(4)]
    orders = {tuple(variant[1:] for variant in timed[n * 4:(n + 1) * 4]) for n in range(6)}
    assert len(orders) > 1 and all(len(set(order)) == 4 for order in orders)
    assert {result["policies"][p][v]["n"] for p in ("memoryos", "hybrid") for v in ("recall", "recall_no_trace")} == {6}
    # the parts are the timed traced recalls' own (not the warm-up's, not the untraced ones')
    for policy in ("memoryos", "hybrid"):
        assert result["policies"][policy]["parts"] == {
            name: {"n": 6, "mean": 1.0, "p50": 1.0, "p95": 1.0, "max": 1.0} for name in ("a part", policy)}
    assert result["search_all_turns"]["n"] == 6


@pytest.mark.slow
def test_inspector_times_every_page_beside_the_chat_page_and_the_replay_steps(memory_env):
    result = run_json("inspector", "--pages", "60", "--requests", "2", "--recalls", "2", "--steps", "3",
                      "--pool", "40")
    pages = result["pages"]
    assert inspector.BASELINE in pages and pages[inspector.BASELINE]["url"] == "/"
    assert {"overview", "short-term", "long-term (90 traits)", "recalls", "replay page"} <= set(pages)
    assert all(p["n"] == 2 and 0 < p["p50"] <= p["max"] for p in pages.values())
    assert result["replay"]["synthetic"]["n"] == 3 and result["replay"]["synthetic"]["events"] > 60
    table = inspector.render(result)
    assert "p50 / chat" in table and "chat page (baseline)" in table
    assert not get_user_model().objects.filter(pages__isnull=False).exists()  # the bench's users are gone


def test_scale_in_a_fresh_database_renders_tables(memory_env):
    out = io.StringIO()
    call_command("bench", "scale", "--sizes", "12", "--queries", "2", "--write-sample", "1", "--pool", "24",
                 "--hnsw", "off", "--policies", "memoryos", "--no-progress", stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    assert "Store size and ingest" in text and "Retrieval latency" in text and "write / MiniLM" in text
    assert "p95 / serial floor" in text
    stage_rows = text.split("Where a recall's time goes")[1].splitlines()
    assert "mid-term" in stage_rows[0] and "embedding" in stage_rows[1]
    # every part, p50 / p95 (memoryos runs the relevance core's keyword search while the query is embedded)
    assert any("memoryos" in line and line.count(" / ") == 8 for line in stage_rows)
    table = stage_rows[3:stage_rows.index("")]
    assert table and all(" memoryos " in line for line in table)  # only the policy asked for
    row = next(line for line in text.splitlines() if line.lstrip().startswith("12 ") and "memoryos" in line)
    assert row.split()[1] == "no"
    # the benchmark's database was dropped and the test database is back
    assert get_user_model().objects.count() == 0


# --------------------------------------------------------------------------- qa

TINY_LOCOMO = [{
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "10:00 am on 7 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a golden retriever today! He is Max."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Congratulations! A golden retriever is great."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "On weekends I love hiking and painting."},
            {"speaker": "Ben", "dia_id": "D1:4", "text": "Hiking with Max sounds lovely."},
        ],
        "session_2_date_time": "4:30 pm on 20 June, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "Max and I climbed a mountain trail last Sunday."},
            {"speaker": "Ben", "dia_id": "D2:2", "text": "Wow, how long did the hike take?",
             "blip_caption": "a dog on a mountain top"},
        ],
    },
    "qa": [
        {"question": "What pet does Ana have?", "answer": "a golden retriever", "evidence": ["D1:1"],
         "category": 4},
        {"question": "When did Ana adopt her dog?", "answer": "7 May 2023", "evidence": ["D1:1"],
         "category": 2},
        {"question": "What does Ana like to do on weekends?", "answer": "hiking, painting",
         "evidence": ["D1:3"], "category": 1},
        {"question": "What is Ben's dog called?", "adversarial_answer": "Max", "evidence": ["D1:1"],
         "category": 5},
        {"question": "Would Ana enjoy a trip to the mountains?", "answer": "Likely yes; she loves hiking",
         "evidence": ["D1:3", "D2:1"], "category": 3},
    ],
}]


@pytest.fixture
def llm_endpoint(memory_env, openai_server):
    memory_env.LLM_ENABLED = True
    memory_env.OPENAI_BASE_URL = openai_server.base_url
    memory_env.OPENAI_API_KEY = openai_server.api_key
    memory_env.OPENAI_CHAT_MODEL = "tiny-test-model"
    configured.chat_model.cache_clear()
    yield openai_server
    configured.chat_model.cache_clear()


@pytest.mark.slow
def test_qa_end_to_end_against_an_openai_compatible_server(llm_endpoint, tmp_path):
    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    llm_endpoint.reply("golden retriever", "May 2023", "painting, hiking and chess", "yes")

    result = run_json("qa", "--data", str(data), "--in-place")

    summary = result["summary"]
    assert summary["answers"] == 4  # category 5 skipped
    cats = summary["categories"]
    assert cats["single-hop"] == {"n": 1, "f1": 1.0, "bleu1": 1.0}
    assert cats["temporal"]["f1"] == pytest.approx(0.8)
    assert cats["multi-hop"]["f1"] == pytest.approx(0.8333, abs=1e-4)
    assert cats["open-domain"]["f1"] == pytest.approx(0.6667, abs=1e-4)
    assert summary["llm_calls_per_answer"] == 1.0 and summary["answer_failures"] == 0
    # three pages stay in STM, so maintenance asks the model nothing and the scripted replies
    # go to the answers in order
    assert summary["maintenance_llm_calls"] == 0
    chats = llm_endpoint.chat_requests()
    assert len(chats) == 4
    # each answer's prompt carries the retrieved memory and the question; the server counts words
    first = chats[0].body["messages"]
    assert "golden retriever" in first[0]["content"] and first[-1]["content"] == "What pet does Ana have?"
    words = sum(len(m["content"].split()) for c in chats for m in c.body["messages"])
    assert summary["prompt_tokens_per_answer"] == pytest.approx(words / 4, abs=0.1)
    [conv] = result["runs"]
    assert conv["pages"] == 3 and conv["turns"] == 6
    assert [a["prediction"] for a in conv["answers"]][0] == "golden retriever"
    assert not get_user_model().objects.filter(username__startswith="qa-").exists()


def test_qa_without_an_endpoint_says_so(memory_env, tmp_path):
    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    with pytest.raises(CommandError, match="needs an LLM endpoint"):
        call_command("bench", "qa", "--data", str(data), stdout=io.StringIO(), stderr=io.StringIO())


def test_qa_rejects_a_malformed_file(llm_endpoint, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"conversation": ')
    with pytest.raises(CommandError, match="Malformed conversation file"):
        call_command("bench", "qa", "--data", str(bad), stdout=io.StringIO(), stderr=io.StringIO())


# --------------------------------------------------------------------------- ws


@pytest.mark.slow
def test_ingest_times_three_imports_with_the_same_end_state(memory_env, tmp_path):
    from memory.benchmarks import ingest

    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    result = run_json("ingest", str(data))
    assert result["turns"] == 6 and result["pages"] == 3 and result["same_end_state"]
    assert list(result["variants"]) == [ingest.BASELINE, ingest.TURN_BY_TURN, ingest.BATCHED]
    assert all(v["turns_per_s"] > 0 and len(v["seconds"]) == 1 for v in result["variants"].values())
    assert "vs before" in ingest.render(result)
    # every import embeds its turns; the embeddings alone allow more turns a second than the whole import
    for variant in result["variants"].values():
        embedded = variant["embeddings_per_turn"]
        assert embedded["texts"] >= 1 and embedded["ceiling_per_s"] >= variant["turns_per_s"]
    assert not get_user_model().objects.filter(username__startswith="ingest-").exists()


def test_ingest_stops_when_an_import_fails(memory_env, tmp_path, monkeypatch):
    from memory.services import importing

    def broken(**kwargs):
        raise ValueError("not a CID: 'deadbeef'")

    monkeypatch.setattr(importing, "conversation_import", broken)
    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    with pytest.raises(CommandError, match="import failed .*not a CID.*no rate"):
        run_json("ingest", str(data))


@pytest.mark.real_adapters  # a child process builds the real adapters: --fakes cannot reach it (a live server)
def test_ws_load_against_a_live_server(memory_env):
    result = run_json("ws", "--sessions", "3", "--messages", "2", "--timeout", "120")
    assert result["connected"] == 3 and result["held"] == 3
    assert result["sent"] == 6 and result["replies"] == 6 and result["stored"] == 6
    assert result["error_count"] == 0 and result["engine"] == "offline"
    assert 0 < result["first_token_ms"]["p50"] <= result["reply_ms"]["p95"]
    assert [ms["n"] for ms in result["first_token_ms_by_message"]] == [3, 3]  # each session's 1st, 2nd
    assert result["server_rss"] > 0
    assert result["settled_s"] >= 0  # the maintenance of every turn caught up after the load (NaN: it did not)
    assert result["server_errors"] == ""  # no degraded recall, no socket that died with a traceback
    # the server loaded its models as it started (its ready frame said so); the first reply is timed apart
    assert result["warm_up"] == "on" and result["models_wait_ms"] >= 0 and result["first_reply_ms"] > 0


# --------------------------------------------------------------------------- retrieval


@pytest.mark.slow
def test_retrieval_scores_every_method_on_answerable_questions(memory_env, tmp_path):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY_LOCOMO))

    result = run_json("retrieval", "--data", str(data))

    # the adversarial question (category 5) is left out; the others count once each
    assert result["questions"] == 4
    assert result["questions_per_category"] == {"all": 4, "1": 1, "2": 1, "3": 1, "4": 1}
    assert set(result["recall"]) == {"bm25", "dense", "memoryos", "hybrid", "memoria", "exocortex",
                                     "generative_agents"}
    for name, recall in result["recall"].items():
        assert all(0.0 <= value <= 1.0 for value in recall.values()), name
    # six turns in all: a method that ranks every turn holds all the evidence within 20
    assert result["recall"]["dense"]["all/R@20"] == 1.0
    assert result["latency_ms"]["query embedding"]["n"] == 4
    assert result["ingest"]["conversations"][0]["turns"] == 6
    margin = result["targets"]["hybrid"]["all"]
    assert margin["margin"] == pytest.approx(margin["r10"] - margin["best_baseline"], abs=1e-4)
    assert margin["best_baseline"] == result["recall"]["bm25"]["all/R@10"]  # the target is BM25 + 0.05
    # all@10: the share of questions whose whole evidence is within the first 10 turns
    assert all(0.0 <= recall["all/all@10"] <= recall["all/R@10"] for recall in result["recall"].values())
    # one conversation: its fold is the whole set
    (fold,) = result["folds"].values()
    assert fold["hybrid"]["all/R@10"] == result["recall"]["hybrid"]["all/R@10"]
    text = io.StringIO()
    call_command("bench", "retrieval", "--data", str(data), "--no-progress", stdout=text, stderr=io.StringIO())
    assert "query embedding alone: p50" in text.getvalue() and "R@10 at least 0.05 above bm25" in text.getvalue()
    assert "Per conversation" in text.getvalue()


@pytest.mark.slow
def test_retrieval_ablations_and_the_floors_gate(memory_env, tmp_path):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    result = run_json("retrieval", "--data", str(data), "--policy", "hybrid", "--policy", "exocortex",
                      "--ablate", "core-hop", "--ablate", "exocortex-decay", "--ablate", "memoryos-segments")
    # a core ablation runs on hybrid, a policy's own on that policy; one for a policy not measured runs nowhere
    assert {"hybrid core-hop", "exocortex exocortex-decay"} <= set(result["recall"])
    assert not any(name.endswith("memoryos-segments") for name in result["recall"])

    measured = result["recall"]["hybrid"]["all/R@10"]
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"r10": {"hybrid": measured}}))
    passed = run_json("retrieval", "--data", str(data), "--policy", "hybrid", "--check-floors", str(floors))
    assert passed["floors"]["hybrid"] == {"r10": measured, "floor": measured, "ok": True}
    floors.write_text(json.dumps({"r10": {"hybrid": measured + 0.021}}))
    with pytest.raises(CommandError, match="memory quality fell below the recorded floors: hybrid"):
        run_json("retrieval", "--data", str(data), "--policy", "hybrid", "--check-floors", str(floors))
    floors.write_text(json.dumps({"r10": {"memoryos": 0.5}}))
    with pytest.raises(CommandError, match="no floor recorded for policy 'hybrid'"):
        run_json("retrieval", "--data", str(data), "--policy", "hybrid", "--check-floors", str(floors))
    floors.write_text(json.dumps({"data": "another.json", "r10": {"hybrid": 0.0}}))
    with pytest.raises(CommandError, match="the floors were recorded on another.json, not tiny.json"):
        run_json("retrieval", "--data", str(data), "--policy", "hybrid", "--check-floors", str(floors))
    floors.write_text("not json")
    with pytest.raises(CommandError, match="cannot read the floors"):
        run_json("retrieval", "--data", str(data), "--policy", "hybrid", "--check-floors", str(floors))


def test_the_recorded_floors_name_every_policy_and_the_sample_ci_runs():
    from memory.benchmarks.retrieval import FLOORS_FILE
    from memory.recall.base import policy_names

    floors = json.loads(FLOORS_FILE.read_text())
    assert set(floors["r10"]) == set(policy_names())
    assert floors["sample"] == 0 and all(0.5 < value <= 1.0 for value in floors["r10"].values())
    assert "--check-floors" in (Path(__file__).parents[3] / ".ci" / "run").read_text()


# --------------------------------------------------------------------------- embed


@pytest.mark.real_adapters  # it times MiniLM's own ONNX query encoder, whatever the configured embedder
def test_bench_embed_times_each_thread_setting_quiet_and_beside_a_busy_core(monkeypatch):
    from memory.benchmarks import embed

    monkeypatch.delenv("EMBED_QUERY_THREADS", raising=False)
    result = run_json("embed", "--queries", "3")

    rows = result["settings"]
    assert [(r["threads"], r["spinning"]) for r in rows] == [(1, False), (2, True), (2, False)]
    assert [r["default"] for r in rows] == [False, False, True]
    assert all(r[load]["n"] == 3 and r[load]["p50"] > 0 for r in rows for load in ("quiet", "busy_core"))
    text = embed.render(result)
    assert "busy core p95" in text and text.count(" block ") == 2 and text.count(" spin ") == 1


def test_the_busy_core_is_a_running_child_stopped_after_the_block():
    import time

    from memory.benchmarks import embed

    with embed.busy_core() as child:
        assert child.poll() is None
        with open(f"/proc/{child.pid}/stat") as stat:
            ticks_before = sum(int(v) for v in stat.read().split()[13:15])
        time.sleep(0.3)
        with open(f"/proc/{child.pid}/stat") as stat:
            ticks_after = sum(int(v) for v in stat.read().split()[13:15])
        assert ticks_after > ticks_before  # it uses CPU, not sleeping
    assert child.poll() is not None


def test_files_reads_each_kind_and_times_turns_against_a_turn_without_files(memory_env, tmp_path):
    from django.core.files.storage import storages

    before = storages["memory_files"].location
    result = run_json("files", "--turns", "2", "--repeat", "2", "--text-kb", "4", "--pdf-pages", "3")
    reads = result["reads"]
    assert reads["pdf"]["media_type"] == "application/pdf" and reads["pdf"]["extraction"] == "pdf: 3 pages"
    assert reads["pdf"]["text_chars"] > 3 * 40 * 50  # forty sentences a page, each over fifty characters
    assert reads["text"]["bytes"] == 4096 and reads["image"]["extraction"] == "image 1024x768, no text"
    turns = result["turns"]
    assert set(turns) == {"none", "text", "pdf", "image"} and all(t["n"] == 2 for t in turns.values())
    assert turns["none"]["upload"] is None and turns["pdf"]["upload"]["n"] == 2
    assert all(t["reply"]["n"] == 2 and 0 < t["reply"]["p50"] <= t["max"] for t in turns.values())
    assert "reply / no file" in files.render(result)
    assert storages["memory_files"].location == before  # the run's files went to its own folder
    assert not get_user_model().objects.filter(pages__isnull=False).exists()
