"""A live MemoryOS server (daphne in a subprocess, its own var dir) and Debian's Chromium.

The server runs exactly as `make run` serves it: SQLite and a Qdrant Edge shard under a fresh
MEMORYOS_VAR_DIR, the in-memory channel layer, the offline engine, maintenance inline.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
RATE_BURST = 10
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# Settings the server must not inherit: it has its own database, vectors, layer and model.
ISOLATED = ("DATABASE_URL", "QDRANT_URL", "QDRANT_PATH", "REDIS_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
            "EMBEDDING_BACKEND", "MEMORYOS_VAR_DIR")


@dataclass
class LiveServer:
    url: str
    env: dict[str, str]
    log: Path

    def manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True,
                              capture_output=True, text=True, timeout=120)
        return done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_up(url: str, process: subprocess.Popen, log: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/accounts/login/", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"daphne did not answer within {timeout} s:\n{log.read_text()[-3000:]}")


def server_env(var_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ISOLATED}
    env.update(MEMORYOS_VAR_DIR=str(var_dir), MEMORYOS_MAINTENANCE_MODE="sync", HF_HUB_OFFLINE="1",
               DJANGO_SETTINGS_MODULE="memoryos_site.settings", DEBUG="1", PYTHONUNBUFFERED="1",
               # A test types faster than a person: room for nine turns in a few seconds, not for a flood.
               MEMORYOS_CHAT_RATE_BURST=str(RATE_BURST), MEMORYOS_CHAT_RATE_PER_MINUTE="60")
    env.update(extra)
    return env


def migrate(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                   check=True, timeout=300)


@contextmanager
def running_server(env: dict[str, str], log: Path) -> Iterator[LiveServer]:
    """daphne on a free loopback port, stopped (and only it) on exit."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                    "memoryos_site.asgi:application"], cwd=ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        _wait_until_up(url, process, log)
        yield LiveServer(url=url, env=env, log=log)
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def require_browser() -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: `make install` installs Debian's chromium (apt-get)")
    pytest.importorskip("playwright.sync_api",
                        reason="playwright is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def memoryos_server(tmp_path_factory) -> Iterator[LiveServer]:
    require_browser()
    var_dir = tmp_path_factory.mktemp("live-var")
    env = server_env(var_dir)
    migrate(env)
    with running_server(env, var_dir / "daphne.log") as server:
        yield server


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    require_browser()
    var_dir = tmp_path_factory.mktemp("inspector-var")
    # DEBUG off, as `make run` serves: the pages people see (the 404 page too), static files from
    # collectstatic through whitenoise.
    env = server_env(var_dir, DEBUG="0", SECRET_KEY="browser-tests-only-" + "k" * 40)
    migrate(env)
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                   check=True, timeout=300)
    # As `make run` does, before the server starts: a server opens its embedded vector shard as it
    # starts (its warm-up), and a shard is opened by one process at a time.
    out = subprocess.run([sys.executable, "manage.py", "demo_user"], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=600).stdout
    assert "mid-term segments" in out, out
    with running_server(env, var_dir / "daphne.log") as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                              args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def sign_up(page, url: str, username: str, password: str, *, skip_profile: bool = True) -> None:
    """Sign up as a new person in the page and land on the chat; skip the profile card unless asked."""
    page.goto(f"{url}/accounts/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", password)
    page.fill("#id_password2", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/")
    if skip_profile:
        page.click("#profile-card button.ghost")
