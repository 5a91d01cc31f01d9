"""`bench v1`: the OpenAI-compatible endpoint (/v1/chat/completions) under a burst, beside the
websocket chat, on one server in one run.

The server and users are `bench ws`'s (memory/benchmarks/ws.py): daphne serving the real ASGI
application on a free 127.0.0.1 port, its own database and vectors, the offline engine unless an
LLM is configured. First --sessions websocket sessions send --messages messages each (bench ws's
load); then --sessions other people, each with an API token, send as many through the official
`openai` client with `stream: true`, one after another, all clients at once. Measured for each way
in: turns answered, pages stored (a turn lost is a page missing), time to first token (request
sent → first content chunk; message sent → first turn.token), time to the whole reply, errors.
A load that ends with any error or a missing page fails the command: no rate is printed from it.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from typing import Any

from django.core.management import CommandError

from memory.benchmarks import common, ws
from memory.models import DialoguePage, PageStatus
from memory.services.tokens import token_create

MODEL = "offline-engine"


def add_arguments(parser) -> None:
    ws.add_arguments(parser)


async def _client(stats: ws.SessionStats, client, index: int, options: dict) -> None:
    stats.connected = True
    try:
        for n in range(options["messages"]):
            topic = ws.TOPICS[(index + n) % len(ws.TOPICS)]
            text = f"Client {index}, message {n}: let me tell you about {topic}."
            sent = time.perf_counter()
            first = True
            stream = await client.chat.completions.create(model=MODEL, stream=True,
                                                          messages=[{"role": "user", "content": text}])
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content and first:
                    stats.first_token_ms.append((time.perf_counter() - sent) * 1000)
                    first = False
                extra = (chunk.model_extra or {}).get("memoryos")
                if extra:
                    stats.offline = bool(extra.get("offline"))
            stats.reply_ms.append((time.perf_counter() - sent) * 1000)
        stats.held = True
    except Exception as exc:  # a refused request or a broken stream is a result, not a crash
        stats.errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
    finally:
        await client.close()


async def _burst(base_url: str, tokens: list[str], options: dict) -> tuple[list[ws.SessionStats], float]:
    import openai

    # Each client made before the clock starts, as an application holds its client.
    clients = [openai.AsyncOpenAI(base_url=base_url, api_key=token, max_retries=0, timeout=options["turn_timeout"])
               for token in tokens]
    sessions = [ws.SessionStats() for _ in tokens]
    began = time.perf_counter()
    tasks = [asyncio.create_task(_client(stats, client, i, options))
             for i, (stats, client) in enumerate(zip(sessions, clients, strict=True))]
    done, pending = await asyncio.wait(tasks, timeout=options["timeout"])
    wall = time.perf_counter() - began
    for task in pending:
        task.cancel()
        sessions[tasks.index(task)].errors.append("load timed out")
    return sessions, wall


def run(options: dict, stdout) -> dict:
    show = not options.get("no_progress")
    for name in ("httpx", "httpx2"):  # a line per request otherwise
        logging.getLogger(name).setLevel(logging.WARNING)
    count = options["sessions"]
    with common.bench_env() as env:
        users, cookies = ws.signed_in_users(env, count + 1)
        api_users = [env.make_user("v1") for _ in range(count)]
        tokens = [token_create(user=user, name="bench")[1] for user in api_users]
        server = ws.Server(env.workdir, options["messages"])
        try:
            server.wait_until_up()
            origin = f"http://127.0.0.1:{server.port}"
            if show:
                print(f"daphne on {origin}; warming up, then {count} websocket sessions, then {count} /v1 "
                      "clients", file=sys.stderr)
            asyncio.run(ws.load(server.url, cookies[:1], origin, {**options, "messages": 1}))
            sockets, socket_wall = asyncio.run(ws.load(server.url, cookies[1:], origin, options))
            clients, client_wall = asyncio.run(_burst(f"{origin}/v1", tokens, options))
            server_rss = server.peak_rss_mb()
        finally:
            server.stop()
        server_errors = server.logged_errors()
        stored = {way: DialoguePage.objects.filter(user__in=group, status=PageStatus.COMPLETE).count()
                  for way, group in (("websocket", users[1:]), ("openai", api_users))}
    result = {
        "benchmark": "v1", "date": common.today(), "machine": common.machine(),
        "websocket": ws.summarize(sockets, socket_wall, options, stored=stored["websocket"]),
        "openai": ws.summarize(clients, client_wall, options, stored=stored["openai"]),
        "server_rss": server_rss, "server_errors": server_errors,
    }
    _fail_on_errors(result)
    return result


def _fail_on_errors(result: dict) -> None:
    """A load with an error or a lost turn prints no rate: it fails, saying what went wrong."""
    problems = []
    for way in ("websocket", "openai"):
        part = result[way]
        if part["error_count"]:
            problems.append(f"{way}: {part['error_count']} errors {part['errors']}")
        if part["stored"] != part["sent"]:
            problems.append(f"{way}: {part['sent']} messages sent, {part['stored']} pages stored")
    if problems:
        raise CommandError("bench v1 failed: " + "; ".join(problems)
                           + (f"\nthe server logged:\n{result['server_errors']}" if result["server_errors"] else ""))


def render(result: dict) -> str:
    rows: list[list[Any]] = []
    for way, label in (("websocket", "websocket /ws/chat/"), ("openai", "openai client, /v1 stream")):
        part = result[way]
        rows.append([label, part["sessions"], part["sent"], part["replies"], part["stored"], part["error_count"],
                     part["first_token_ms"]["p50"], part["first_token_ms"]["p95"], part["reply_ms"]["p50"],
                     part["reply_ms"]["p95"], part["turns_per_s"]])
    ratio = _ratio(result["openai"]["first_token_ms"]["p95"], result["websocket"]["first_token_ms"]["p95"])
    table = common.render_table(
        ["way in", "clients", "messages", "replies", "pages stored", "errors", "first token p50 ms",
         "first token p95 ms", "reply p50 ms", "reply p95 ms", "turns/s"], rows,
        title=f"A burst through each way in, one server ({result['openai']['engine']} engine)")
    return (f"{table}\n\n/v1 first-token p95 / websocket first-token p95 = {ratio}\n"
            f"server peak RSS {result['server_rss']} MB\n{result['date']}, {result['machine']}.")


def _ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}" if baseline and value == value and baseline == baseline else "n/a"
