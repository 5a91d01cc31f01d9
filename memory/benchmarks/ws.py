"""`bench ws`: the browser chat's websocket under concurrent sessions, on loopback.

A fresh database (common.bench_env) gets --sessions users, each signed in (a session cookie);
daphne serves the real ASGI application in a subprocess on a free 127.0.0.1 port, with its own
Qdrant Edge directory and the channel layer and LLM the environment configures (in-memory and
the offline engine by default). Every session opens a socket to /ws/chat/ at once, waits for
"ready", then sends --messages messages one after another, each after the previous reply is
done. Measured: sessions held open until the end, time to first token (send → first
turn.token), time to the whole reply (send → turn.done), turns per second, how long after the
load the users' maintenance caught up, errors (refused sockets, error frames, turn.error,
timeouts), pages stored, the server's peak RSS.

The per-user rate limit is raised to --messages for the server under test: this measures the
chat's capacity, not its limiter. Bounded: --timeout seconds for the whole load.

--stalling-model: the same load twice, on an OpenAI-compatible model of tests/openai_server.py
(in this process): first one that answers (the baseline), then one that sends one token and
then only keep-alives. Measured on the second: every turn ends within the reply's time cap
(--reply-cap, MEMORYOS_REPLY_MAX_SECONDS) plus a second, and how many replies the offline engine
gave (the breaker open, or no reply worker free) and how fast; reply times as ratios to the baseline.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from django.test import Client

from memory.benchmarks import common
from memory.models import DialoguePage, PageStatus, UserMemoryState

ROOT = Path(__file__).resolve().parents[2]
TOPICS = ("my sourdough starter", "the marathon in May", "learning jazz piano", "our trip to Lisbon",
          "the tomato seedlings", "my sister's wedding", "a new job offer", "the book club")


def add_arguments(parser) -> None:
    parser.add_argument("--sessions", type=int, default=50,
                        help="concurrent sessions, one user each (default 50)")
    parser.add_argument("--messages", type=int, default=3, help="messages per session, in turn (default 3)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds the whole load may take (default 300)")
    parser.add_argument("--turn-timeout", type=float, default=120.0,
                        help="seconds one reply may take before it counts as an error (default 120)")
    parser.add_argument("--stalling-model", action="store_true",
                        help="a baseline on a model that answers, then a model that sends one token and stalls")
    parser.add_argument("--reply-cap", type=float, default=5.0,
                        help="with --stalling-model: MEMORYOS_REPLY_MAX_SECONDS for the server (default 5)")
    parser.add_argument("--reply-workers", type=int, default=0,
                        help="with --stalling-model: MEMORYOS_CHAT_REPLY_WORKERS (default: the setting's)")


@dataclass
class SessionStats:
    connected: bool = False
    held: bool = False
    first_token_ms: list[float] = field(default_factory=list)
    reply_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    offline: bool | None = None
    models_wait_ms: float = 0.0  # connected while the server still loaded its models: the wait for them
    models: str = ""  # the server's warm-up as the ready frame told it: off, loading, ready or failed
    offline_turns: list[bool] = field(default_factory=list)  # each reply: from the offline engine


# --------------------------------------------------------------------------- the server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url() -> str:
    cfg = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{cfg['NAME']}"
    auth = cfg.get("USER") or ""
    if cfg.get("PASSWORD"):
        auth += f":{cfg['PASSWORD']}"
    return f"postgres://{auth}@{cfg.get('HOST') or '127.0.0.1'}:{cfg.get('PORT') or 5432}/{cfg['NAME']}"


def _server_env(workdir: Path, messages: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("QDRANT_PATH", "MEMORYOS_VAR_DIR")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "memoryos_site.settings",
        "DATABASE_URL": _database_url(),
        "MEMORYOS_VAR_DIR": str(workdir / "server-var"),
        "QDRANT_PATH": str(workdir / "server-qdrant"),  # an embedded shard opens in one process only
        "MEMORYOS_CHAT_RATE_BURST": str(messages + 1),
        "MEMORYOS_CHANNEL_PREFIX": f"memoryos-wsbench-{os.getpid()}",
        "PYTHONPATH": str(ROOT),
        # the cookies were signed here: a server with its own var/ would make its own key and refuse them
        "SECRET_KEY": settings.SECRET_KEY,
    })
    if settings.QDRANT_URL:
        env["QDRANT_COLLECTION"] = settings.QDRANT_COLLECTION  # bench_env's throwaway collection
    env.update(extra or {})
    return env


class Server:
    """daphne serving memoryos_site.asgi on 127.0.0.1, stopped on exit."""

    def __init__(self, workdir: Path, messages: int, extra_env: dict[str, str] | None = None) -> None:
        self.port = _free_port()
        self.log = workdir / "daphne.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
             "memoryos_site.asgi:application"],
            cwd=ROOT, env=_server_env(workdir, messages, extra_env), stdout=self.log.open("w"),
            stderr=subprocess.STDOUT)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/chat/"

    def wait_until_up(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log.read_text()[-3000:]
                raise RuntimeError(f"daphne exited with {self.process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/accounts/login/", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"daphne did not answer within {timeout:.0f} s")

    def peak_rss_mb(self) -> float:
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
            kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
            return round(kib / 1024, 1)
        except (OSError, StopIteration, ValueError):
            return float("nan")

    def logged_errors(self, limit: int = 4000) -> str:
        """What the server logged as going wrong (warnings, errors, tracebacks), from the first such
        line on, at most the last `limit` characters; "" when nothing went wrong."""
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        bad = ("Traceback", "level=WARNING", "level=ERROR", "level=CRITICAL")
        first = next((i for i, line in enumerate(lines) if line.startswith(bad)), None)
        return "\n".join(lines[first:])[-limit:] if first is not None else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# --------------------------------------------------------------------------- the clients


async def _frames_until(sock, turn_id_of_ours: dict, stats: SessionStats, sent: float,
                        deadline: float) -> None:
    """Read frames of our turn until turn.done / turn.error; record first token and reply times."""
    first = True
    while True:
        raw = await asyncio.wait_for(sock.recv(), timeout=max(0.1, deadline - time.monotonic()))
        frame = json.loads(raw)
        kind = frame.get("type")
        if kind == "error":
            stats.errors.append(f"error frame: {frame.get('code')}")
            return
        if kind == "turn.user" and "id" not in turn_id_of_ours:
            turn_id_of_ours["id"] = frame.get("turn_id")
        if frame.get("turn_id") != turn_id_of_ours.get("id"):
            continue
        if kind == "turn.token" and first:
            stats.first_token_ms.append((time.perf_counter() - sent) * 1000)
            first = False
        elif kind == "turn.error":
            stats.errors.append("turn.error")
            return
        elif kind == "turn.done":
            stats.reply_ms.append((time.perf_counter() - sent) * 1000)
            stats.offline = bool(frame.get("offline"))
            stats.offline_turns.append(stats.offline)
            return


@dataclass
class Barrier:
    """Every socket is open (or has failed) before the first message; every session holds its socket
    until all are done, so that "held" means held at the same time."""

    total: int
    arrived: int = 0
    all_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def arrive(self) -> None:
        self.arrived += 1
        if self.arrived >= self.total:
            self.all_arrived.set()


async def _session(stats: SessionStats, url: str, cookie: str, origin: str, index: int, options: dict,
                   barrier: Barrier) -> None:
    import websockets

    arrived = False
    try:
        async with websockets.connect(url, origin=origin, additional_headers={"Cookie": cookie},
                                      open_timeout=60, max_size=2**22) as sock:
            ready = json.loads(await asyncio.wait_for(sock.recv(), timeout=60))
            stats.connected = ready.get("type") == "ready"
            stats.models = str(ready.get("models", ""))
            if ready.get("models") == "loading":  # the server's warm-up is still running
                started = time.perf_counter()
                while json.loads(await asyncio.wait_for(sock.recv(), timeout=600)).get("type") != "models.ready":
                    pass
                stats.models_wait_ms = (time.perf_counter() - started) * 1000
            barrier.arrive()
            arrived = True
            await barrier.all_arrived.wait()
            for n in range(options["messages"]):
                topic = TOPICS[(index + n) % len(TOPICS)]
                text = f"Session {index}, message {n}: let me tell you about {topic}."
                sent = time.perf_counter()
                await sock.send(json.dumps({"type": "message", "text": text}))
                try:
                    await _frames_until(sock, {}, stats, sent, time.monotonic() + options["turn_timeout"])
                except TimeoutError:
                    stats.errors.append("reply timed out")
            stats.held = True
            await barrier.release.wait()
    except Exception as exc:  # a refused or dropped socket is a result, not a crash
        stats.held = False
        stats.errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
    finally:
        if not arrived:
            barrier.arrive()


async def load(url: str, cookies: list[str], origin: str, options: dict) -> tuple[list[SessionStats], float]:
    barrier = Barrier(total=len(cookies))
    sessions = [SessionStats() for _ in cookies]
    started = time.perf_counter()
    tasks = [asyncio.create_task(_session(stats, url, cookie, origin, i, options, barrier))
             for i, (stats, cookie) in enumerate(zip(sessions, cookies, strict=True))]
    deadline = time.monotonic() + options["timeout"]
    pairs = list(zip(tasks, sessions, strict=True))
    while time.monotonic() < deadline and not all(t.done() or s.held for t, s in pairs):
        await asyncio.sleep(0.05)
    wall = time.perf_counter() - started
    for task, stats in pairs:  # held = still open now, when every session has finished its messages
        stats.held = stats.held and not task.done()
    barrier.release.set()
    _, pending = await asyncio.wait(tasks, timeout=30)
    for task in pending:
        task.cancel()
        sessions[tasks.index(task)].errors.append("load timed out")
    return sessions, wall


# --------------------------------------------------------------------------- the run


def signed_in_users(env: common.BenchEnv, count: int) -> tuple[list, list[str]]:
    users, cookies = [], []
    for _ in range(count):
        user = env.make_user("ws")
        client = Client()
        client.force_login(user)
        users.append(user)
        cookies.append(f"sessionid={client.cookies['sessionid'].value}")
    return users, cookies


def run(options: dict, stdout) -> dict:
    if options.get("stalling_model"):
        return _run_stalling(options)
    show = not options.get("no_progress")
    with common.bench_env() as env:
        users, cookies = signed_in_users(env, options["sessions"] + 1)
        server = Server(env.workdir, options["messages"])
        try:
            server.wait_until_up()
            origin = f"http://127.0.0.1:{server.port}"
            if show:
                print(f"daphne on {server.url}; warming up (the server loads its model)", file=sys.stderr)
            warm, _ = asyncio.run(load(server.url, cookies[:1], origin, {**options, "messages": 1}))
            sessions, wall = asyncio.run(load(server.url, cookies[1:], origin, options))
            settled_s = _maintenance_settled(users[1:], timeout=options["timeout"])
            server_rss = server.peak_rss_mb()
        finally:
            server.stop()
        server_errors = server.logged_errors()
        stored = DialoguePage.objects.filter(user__in=users[1:], status=PageStatus.COMPLETE).count()
        layer = settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1]
        database = connection.vendor
    # The first reply after the server started (the warm-up session's), and how long that session,
    # connected as soon as the server answered, waited for the models (MEMORYOS_WARMUP).
    first_reply = warm[0].reply_ms[0] if warm[0].reply_ms else float("nan")
    return summarize(sessions, wall, options, stored=stored, server_rss=server_rss, layer=layer,
                     database=database, warm_errors=warm[0].errors, server_errors=server_errors,
                     first_reply_ms=round(first_reply, 1), models_wait_ms=round(warm[0].models_wait_ms, 1),
                     warm_up="off" if warm[0].models == "off" else "on", settled_s=settled_s)


def _one_load(options: dict, extra_env: dict[str, str]) -> tuple[list[SessionStats], float, str]:
    """One server on `extra_env`, a warm-up session, then the load: the sessions, the wall time and
    what the server logged as going wrong."""
    with common.bench_env() as env:
        _, cookies = signed_in_users(env, options["sessions"] + 1)
        server = Server(env.workdir, options["messages"], extra_env)
        try:
            server.wait_until_up()
            origin = f"http://127.0.0.1:{server.port}"
            asyncio.run(load(server.url, cookies[:1], origin, {**options, "messages": 1}))
            sessions, wall = asyncio.run(load(server.url, cookies[1:], origin, options))
        finally:
            server.stop()
        return sessions, wall, server.logged_errors()


def _run_stalling(options: dict) -> dict:
    from tests.openai_server import run_openai_server  # the tests' OpenAI-compatible server

    cap = options["reply_cap"]
    phases = {}
    with run_openai_server() as model:
        model.keepalive_s = 0.5
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": model.api_key, "OPENAI_CHAT_MODEL": "bench",
               "MEMORYOS_REPLY_MAX_SECONDS": str(cap), "OPENAI_FIRST_TOKEN_TIMEOUT": str(cap),
               "MEMORYOS_MAINTENANCE_MODE": "off"}  # the model's own load only: no summaries behind it
        if options["reply_workers"]:
            env["MEMORYOS_CHAT_REPLY_WORKERS"] = str(options["reply_workers"])
        for phase in ("answering", "stalling"):
            model.clear_faults()
            if phase == "stalling":
                model.fail("stall_after_first", times=None)
            sessions, wall, logged = _one_load(options, env)
            reply = [ms for s in sessions for ms in s.reply_ms]
            offline = [ms for s in sessions for ms, off in zip(s.reply_ms, s.offline_turns, strict=True) if off]
            errors: dict[str, int] = {}
            for s in sessions:
                for error in s.errors:
                    errors[error] = errors.get(error, 0) + 1
            phases[phase] = {"replies": len(reply), "reply_ms": common.summarize_ms(reply),
                             "max_reply_ms": round(max(reply), 1) if reply else float("nan"),
                             "offline_replies": len(offline), "offline_reply_ms": common.summarize_ms(offline),
                             "errors": errors, "wall_s": round(wall, 1),
                             "turns_per_s": round(len(reply) / wall, 2) if wall else float("nan"),
                             "server_logged_errors": bool(logged)}
    base, stalled = phases["answering"], phases["stalling"]
    return {"benchmark": "ws-stalling-model", "date": common.today(), "machine": common.machine(),
            "sessions": options["sessions"], "messages_per_session": options["messages"],
            "sent": options["sessions"] * options["messages"], "reply_cap_s": cap,
            "reply_workers": options["reply_workers"] or settings.MEMORYOS_CHAT["REPLY_WORKERS"],
            "phases": phases,
            "every_turn_within_cap_plus_1s": stalled["replies"] == options["sessions"] * options["messages"]
            and stalled["max_reply_ms"] <= (cap + 1) * 1000,
            "reply_p50_ratio": round(stalled["reply_ms"]["p50"] / base["reply_ms"]["p50"], 2)
            if base["reply_ms"]["p50"] else float("nan"),
            "turns_per_s_ratio": round(stalled["turns_per_s"] / base["turns_per_s"], 2)
            if base["turns_per_s"] else float("nan")}


def _render_stalling(result: dict) -> str:
    rows = [[name, phase["replies"], phase["offline_replies"], phase["reply_ms"]["p50"], phase["reply_ms"]["p95"],
             phase["max_reply_ms"], phase["offline_reply_ms"]["p50"], phase["turns_per_s"],
             sum(phase["errors"].values())] for name, phase in result["phases"].items()]
    table = common.render_table(["model", "replies", "offline replies", "reply p50 ms", "reply p95 ms",
                                 "reply max ms", "offline reply p50 ms", "turns/s", "errors"], rows,
                                title=f"Websocket chat with a model that stalls after one token "
                                      f"(reply cap {result['reply_cap_s']:g} s, {result['reply_workers']} "
                                      f"reply workers)")
    return (f"{table}\n\nevery turn ended within the cap plus 1 s: {result['every_turn_within_cap_plus_1s']}; "
            f"stalled / answering: reply p50 x{result['reply_p50_ratio']}, turns/s x{result['turns_per_s_ratio']}"
            f"\n{result['date']}, {result['machine']}.")


def _maintenance_settled(users: list, *, timeout: float) -> float:
    """Seconds after the load until no user's maintenance is due (the work after the replies caught
    up), NaN if it did not within `timeout`."""
    started = time.perf_counter()
    while UserMemoryState.objects.filter(user__in=users, maintenance_due=True).exists():
        if time.perf_counter() - started > timeout:
            return float("nan")
        time.sleep(0.1)
    return round(time.perf_counter() - started, 1)


def summarize(sessions: list[SessionStats], wall: float, options: dict, **extra: Any) -> dict:
    first = [ms for s in sessions for ms in s.first_token_ms]
    reply = [ms for s in sessions for ms in s.reply_ms]
    errors: dict[str, int] = {}
    for s in sessions:
        for error in s.errors:
            errors[error] = errors.get(error, 0) + 1
    offline = {s.offline for s in sessions if s.offline is not None}
    return {
        "benchmark": "ws", "date": common.today(), "machine": common.machine(),
        "sessions": options["sessions"], "messages_per_session": options["messages"],
        "connected": sum(s.connected for s in sessions), "held": sum(s.held for s in sessions),
        "sent": options["sessions"] * options["messages"], "replies": len(reply),
        "first_token_ms": common.summarize_ms(first), "reply_ms": common.summarize_ms(reply),
        # each session's first message, its second, ...: the first ones all come at once
        "first_token_ms_by_message": [common.summarize_ms([s.first_token_ms[n] for s in sessions
                                                           if len(s.first_token_ms) > n])
                                      for n in range(options["messages"])],
        "turns_per_s": round(len(reply) / wall, 2) if wall else float("nan"), "wall_s": round(wall, 1),
        "errors": errors, "error_count": sum(errors.values()),
        "engine": "offline" if offline == {True} else "llm" if offline == {False} else "mixed/none",
        **extra,
    }


def render(result: dict) -> str:
    if result.get("benchmark") == "ws-stalling-model":
        return _render_stalling(result)
    table = common.render_table(
        ["sessions", "held", "messages", "replies", "pages stored", "errors", "first token p50 ms",
         "first token p95 ms", "reply p50 ms", "reply p95 ms", "turns/s", "wall s", "server peak RSS MB"],
        [[result["sessions"], result["held"], result["sent"], result["replies"], result["stored"],
          result["error_count"], result["first_token_ms"]["p50"], result["first_token_ms"]["p95"],
          result["reply_ms"]["p50"], result["reply_ms"]["p95"], result["turns_per_s"], result["wall_s"],
          result["server_rss"]]],
        title=f"Websocket chat on loopback ({result['engine']} engine, {result['layer']}, "
              f"{result['database']})")
    errors = ", ".join(f"{k} x{v}" for k, v in result["errors"].items()) or "none"
    by_message = "; ".join(f"message {n}: {ms['p50']} / {ms['p95']}"
                           for n, ms in enumerate(result.get("first_token_ms_by_message", []), start=1))
    table += f"\n\nfirst token p50 / p95 ms by each session's message: {by_message}" if by_message else ""
    settled = (f"\n\nmaintenance caught up {result['settled_s']} s after the last reply"
               if "settled_s" in result else "")
    start = (f"{settled}\n\nafter the server started (warm-up {result.get('warm_up')}): the first session waited "
             f"{result.get('models_wait_ms')} ms for the models, then its first reply took "
             f"{result.get('first_reply_ms')} ms")
    logged = f"\n\nthe server logged:\n{result['server_errors']}" if result.get("server_errors") else ""
    return f"{table}{start}\n\nerrors: {errors}{logged}\n{result['date']}, {result['machine']}."
