"""A server loads the embedder and the vector index as it starts, not on the first turn; commands
and tests that never need them do not load them; the chat says when a turn waits for them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
REPORT = ("from memory.adapters import configured; "
          "print(configured.adapters_state(), configured.embedder.cache_info().currsize, "
          "configured.vector_index.cache_info().currsize)")


def _python(code: str, tmp_path, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("QDRANT_URL", "QDRANT_PATH", "MEMORYOS_VAR_DIR")}
    environ.update(DJANGO_SETTINGS_MODULE="memoryos_site.settings", MEMORYOS_VAR_DIR=str(tmp_path), HF_HUB_OFFLINE="1",
                   **env)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=300, check=True)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.real_adapters  # a child process builds the real adapters: --fakes cannot reach it
def test_starting_the_asgi_server_loads_the_models_before_any_turn(tmp_path):
    code = ("import memoryos_site.asgi; from memory.adapters import configured; "
            "print(configured.adapters_state()); assert configured.adapters_wait_ready(240); " + REPORT)
    assert _python(code, tmp_path) == "ready 1 1"


def test_commands_and_a_server_told_not_to_leave_the_models_unloaded(tmp_path):
    assert _python("import django; django.setup(); " + REPORT, tmp_path) == "off 0 0"
    assert _python("import memoryos_site.asgi; " + REPORT, tmp_path, MEMORYOS_WARMUP="0") == "off 0 0"


def test_a_socket_hears_when_the_models_are_loading_and_when_they_are_ready(memory_env, make_user, monkeypatch):
    from channels.testing import WebsocketCommunicator
    from django.test import Client

    from memoryos_site.asgi import application

    loaded = threading.Event()
    monkeypatch.setattr("memory.web.consumers.adapters_state", lambda: "ready" if loaded.is_set() else "loading")
    monkeypatch.setattr("memory.runtime.chat.adapters_state", lambda: "ready" if loaded.is_set() else "loading")
    monkeypatch.setattr("memory.web.consumers.adapters_wait_ready", lambda timeout=None: loaded.wait(timeout))
    client = Client()
    client.force_login(make_user("early"))
    name = memory_env.SESSION_COOKIE_NAME
    cookie = f"{name}={client.cookies[name].value}"

    async def talk() -> tuple[dict, list[dict], dict]:
        socket = WebsocketCommunicator(application, "/ws/chat/", headers=[
            (b"origin", b"http://testserver"), (b"host", b"testserver"), (b"cookie", cookie.encode())])
        assert (await socket.connect())[0]
        ready = await socket.receive_json_from(10)
        await socket.send_json_to({"type": "message", "text": "I keep bees on my roof."})
        frames = [await socket.receive_json_from(60)]
        while frames[-1]["type"] != "turn.done":
            frames.append(await socket.receive_json_from(60))
        loaded.set()
        done = await socket.receive_json_from(10)
        await socket.disconnect()
        return ready, frames, done

    ready, frames, done = asyncio.run(talk())
    assert ready["type"] == "ready" and ready["models"] == "loading"
    started = next(f for f in frames if f["type"] == "turn.started")
    assert started["loading"] is True  # the chat shows the turn waiting for the models
    assert "models.ready" not in [f["type"] for f in frames]
    assert done == {"type": "models.ready", "models": "ready"}
