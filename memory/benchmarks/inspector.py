"""`manage.py bench inspector`: the memory inspector's pages and figures, server side.

1. A synthetic user of `--pages` pages (10,000 by default) is built by `bench scale`'s bulk path with
   its full event history (pages added and moved, segments formed and merged, visits, promotions,
   facts and trait updates, at the memory's own time), then `--recalls` real recalls store their
   traces and visits.
2. Every inspector page (and its htmx partials) is requested `--requests` times through Django's
   test client, signed in as the user, in a shuffled order per round so that a slow stretch of the
   machine falls on all of them alike; the first request of each (the process's log cache still
   cold) is reported apart.
3. The replay steps: random events of the demo conversation (memory/formats/demo/, imported into a
   user of its own) and of the 10,000-page user, each a request for the tiers after that event.

Target: p95 < 300 ms per page at 10,000 pages; < 100 ms per replay step on the demo user.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from django.test import Client

from memory.adapters import configured
from memory.benchmarks import common
from memory.benchmarks.scale import StoreBuilder, TextGenerator, embedding_pool
from memory.models import RetrievalTrace, Segment
from memory.services.recall import recall_for_query
from persona.models import KnowledgeFact

DEMO = Path(__file__).resolve().parents[1] / "formats" / "demo" / "demo_conversation.json"
PAGE_TARGET_MS = 300.0
# The chat page, timed in the same shuffled rounds: the machine's speed varies from run to run, so
# each inspector page is also given as a ratio of its p50 to this page's.
BASELINE = "chat page (baseline)"
STEP_TARGET_MS = 100.0


def add_arguments(parser) -> None:
    parser.add_argument("--pages", type=int, default=10_000, help="pages of the synthetic user (default 10k)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per page (default 30)")
    parser.add_argument("--recalls", type=int, default=100, help="real recalls stored first (default 100)")
    parser.add_argument("--steps", type=int, default=200, help="timed replay steps per user (default 200)")
    parser.add_argument("--pool", type=int, default=2000, help="distinct page texts embedded (default 2000)")
    parser.add_argument("--seed", type=int, default=7)


def _urls(user) -> dict[str, tuple[str, bool]]:
    """Label -> (url, asked by htmx)."""
    name = user.get_username()
    base = f"/inspector/{name}"
    segment = Segment.objects.filter(user=user).order_by("-page_count").first()
    fact = KnowledgeFact.objects.filter(user=user).first()
    trace = RetrievalTrace.objects.filter(user=user).first()
    urls = {
        BASELINE: ("/", False),
        "overview": (f"{base}/", False), "short-term": (f"{base}/stm/", False),
        "mid-term (heat, membership, table)": (f"{base}/mtm/", False),
        "mid-term table (sorted, htmx)": (f"{base}/mtm/?part=table&sort=pages&page=2", True),
        "segment (largest)": (f"{base}/mtm/{segment.id}/", False),
        "long-term (90 traits)": (f"{base}/lpm/", False),
        "trait evidence": (f"{base}/lpm/traits/openness/", False),
        "provenance of the largest segment": (f"{base}/provenance/segment/{segment.id}/", False),
        "recalls": (f"{base}/recalls/", False),
        "recalls: search (a recall, no heat)": (f"{base}/recalls/?q=what+did+I+say+about+the+trail", False),
        "lifecycle": (f"{base}/events/", False), "lifecycle, segments only": (f"{base}/events/?group=segments", False),
        "replay page": (f"{base}/replay/", False),
    }
    traced = _trait_with_evidence_nodes(user)
    if traced:
        urls["provenance of a trait"] = (f"{base}/provenance/trait/{traced}/", False)
    if fact is not None:
        urls["provenance of a fact"] = (f"{base}/provenance/fact/{fact.id}/", False)
    if trace is not None:
        urls["a recall's trace"] = (f"{base}/recalls/{trace.id}/", False)
    return urls


def _trait_with_evidence_nodes(user) -> str | None:
    from memory.selectors.provenance import provenance

    keys = sorted(set(user.memory_events.filter(kind="trait_updated").values_list("subject_id", flat=True)))
    return next((key for key in keys if provenance(user=user, kind="trait", ident=key) is not None), None)


def _get(client: Client, url: str, htmx: bool) -> float:
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    ms, response = common.timed_ms(lambda: client.get(url, **headers))
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}")
    return ms


def time_pages(user, *, requests: int, seed: int, show: bool) -> dict[str, dict]:
    from memory.selectors.log import event_log_forget_cache

    event_log_forget_cache()
    client = Client()
    client.force_login(user)
    urls = _urls(user)
    first = {label: _get(client, url, htmx) for label, (url, htmx) in urls.items()}
    times: dict[str, list[float]] = {label: [] for label in urls}
    rng = random.Random(seed)
    for _ in common.progress_iter(range(requests), "inspector pages", show):
        order = list(urls)
        rng.shuffle(order)
        for label in order:
            url, htmx = urls[label]
            times[label].append(_get(client, url, htmx))
    return {label: {"first_ms": round(first[label], 1), **common.summarize_ms(values), "url": urls[label][0]}
            for label, values in times.items()}


def time_steps(user, *, steps: int, seed: int, show: bool) -> dict[str, Any]:
    from memory.selectors.log import replay_of

    client = Client()
    client.force_login(user)
    total = len(replay_of(user=user))
    rng = random.Random(seed)
    url = f"/inspector/{user.get_username()}/replay/"
    values = [_get(client, f"{url}?part=state&step={rng.randint(0, total)}", True)
              for _ in common.progress_iter(range(steps), f"replay steps ({total} events)", show)]
    return {"events": total, **common.summarize_ms(values)}


def _demo_user(env: common.BenchEnv, show: bool):
    from memory.formats.locomo import load_conversations
    from memory.services.importing import conversation_import

    if not DEMO.exists():
        return None
    user = env.make_user("demo")
    for conversation in load_conversations(DEMO):
        conversation_import(user=user, conversation=conversation, progress=show)
    return user


def run(options: dict, stdout) -> dict:
    show = not options.get("no_progress")
    configured.embedder().embed(["warm up"])
    pool = embedding_pool(min(options["pool"], options["pages"]), options["seed"], show)
    build_options = {"seed": options["seed"], "noise": 0.02, "segment_pages": 50}
    with common.bench_env() as env:
        builder = StoreBuilder(env, pages=options["pages"], options=build_options, pool=pool, full_history=True)
        build = builder.build(show)
        gen = TextGenerator(options["seed"] + 11)
        for _ in common.progress_iter(range(options["recalls"]), "recalls (traces, visits)", show):
            recall_for_query(user=builder.user, query=gen.query(), sona=builder.sona)
        pages = time_pages(builder.user, requests=options["requests"], seed=options["seed"], show=show)
        steps = {"synthetic": time_steps(builder.user, steps=options["steps"], seed=options["seed"], show=show)}
        demo = _demo_user(env, show)
        if demo is not None:
            steps["demo"] = time_steps(demo, steps=options["steps"], seed=options["seed"], show=show)
        events = sum(1 for _ in builder.user.memory_events.all().only("id").iterator())
    keys = ("pages", "requests", "recalls", "steps", "pool", "seed")
    result = {"benchmark": "inspector", "date": common.today(), "machine": common.machine(),
              "options": {k: options[k] for k in keys}, "build": build, "events": events, "pages": pages,
              "replay": steps, "targets": {
                  "page_p95_ms": PAGE_TARGET_MS, "pages_met": all(p["p95"] < PAGE_TARGET_MS for p in pages.values()),
                  "step_p95_ms": STEP_TARGET_MS,
                  "demo_steps_met": (steps["demo"]["p95"] < STEP_TARGET_MS) if "demo" in steps else None}}
    if show:
        print(render(result), file=sys.stderr, flush=True)
    return result


def _verdict(met: bool | None) -> str:
    return "not measured (no demo conversation)" if met is None else "yes" if met else "NO"


def render(result: dict) -> str:
    opts = result["options"]
    floor = result["pages"].get(BASELINE, {}).get("p50") or None
    rows = [[label, p["first_ms"], p["p50"], p["p95"], p["max"], p["n"],
             f"{p['p50'] / floor:.1f}" if floor else "-", "yes" if p["p95"] < PAGE_TARGET_MS else "NO"]
            for label, p in result["pages"].items()]
    pages = common.render_table(["page", "first", "p50", "p95", "max", "n", "p50 / chat", "p95 < 300"], rows,
                                title=f"Inspector pages, ms server side ({opts['pages']:,} pages, "
                                      f"{result['events']:,} events, {opts['recalls']} traces)")
    steps = common.render_table(
        ["replay of", "events", "p50", "p95", "max", "n"],
        [[name, s["events"], s["p50"], s["p95"], s["max"], s["n"]] for name, s in result["replay"].items()],
        title="Replay: the tiers after a random event, ms per step")
    met = result["targets"]
    notes = [f"{result['date']}, {result['machine']}.",
             f"all pages p95 < {PAGE_TARGET_MS:.0f} ms: {'yes' if met['pages_met'] else 'NO'}; "
             f"demo replay step p95 < {STEP_TARGET_MS:.0f} ms: "
             f"{_verdict(met['demo_steps_met'])}",
             "'first' is each page's first request (the log cache cold); the search page runs a real recall."]
    return "\n\n".join([pages, steps, "\n".join(notes)]) + "\n"
