"""The real ASGI application served by uvicorn on a loopback port, in this test's process and
database: for clients that speak HTTP themselves (the MCP client, the official `openai` client)."""

from __future__ import annotations

import socket
import threading
import time

import pytest


@pytest.fixture
def asgi_url(memory_env):
    """The base URL of memoryos_site.asgi.application, served for this test."""
    import uvicorn

    from memoryos_site.asgi import application

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(application, host="127.0.0.1", port=port, lifespan="off",
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
