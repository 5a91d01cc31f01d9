"""Accounts a newcomer meets: the secret key a server refuses to start without, the password
rules of sign-up, and failed sign-ins throttled per account and per address (django-axes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[3]
LOGIN = "/accounts/login/"


def _boot(**env: str) -> subprocess.CompletedProcess:
    """Load the settings in a fresh process, as any server or command does first."""
    environ = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "MEMORYOS_DEBUG")}
    environ.update(DJANGO_SETTINGS_MODULE="memoryos_site.settings", **env)
    code = "import django; django.setup(); from django.conf import settings; print('started'); print(settings.DEBUG)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                          env=environ, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("key", ["", "   "])
def test_an_empty_secret_key_is_refused_when_debug_is_off(key):
    booted = _boot(DEBUG="0", SECRET_KEY=key)
    assert booted.returncode != 0 and "started" not in booted.stdout
    assert "ImproperlyConfigured: Set SECRET_KEY" in booted.stderr


def test_a_real_secret_key_starts_and_debug_may_run_without_one():
    assert _boot(DEBUG="0", SECRET_KEY="a-real-key-" + "x" * 40).stdout.split() == ["started", "False"]
    assert _boot(DEBUG="1", SECRET_KEY="").stdout.split() == ["started", "True"]  # the development key


def test_debug_is_off_unless_asked_for_and_a_local_key_is_made_once(tmp_path):
    """`make run` sets nothing: DEBUG stays off (no tracebacks in answers) and the server starts with a
    key of its own, kept under var/ so that sessions outlive a restart."""
    assert _boot(MEMORYOS_VAR_DIR=str(tmp_path)).stdout.split() == ["started", "False"]
    key = (tmp_path / "secret_key").read_text()
    assert len(key) >= 50 and (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert _boot(MEMORYOS_VAR_DIR=str(tmp_path)).returncode == 0
    assert (tmp_path / "secret_key").read_text() == key
    assert _boot(MEMORYOS_VAR_DIR=str(tmp_path), MEMORYOS_DEBUG="1").stdout.split() == ["started", "True"]


@pytest.mark.django_db
def test_an_error_answer_carries_no_traceback(make_user, monkeypatch):
    """A failure inside a handler is a plain 500, whatever went wrong, with DEBUG off as it is by default."""
    from memory.web import api_sonas

    def broken(*args, **kwargs):
        raise RuntimeError("secret detail /srv/app/settings.py")

    monkeypatch.setattr(api_sonas, "caller_of", broken)
    client = Client(raise_request_exception=False)
    client.force_login(make_user("ana"))
    response = client.get("/api/memory/sonas")
    assert response.status_code == 500
    assert b"secret detail" not in response.content and b"Traceback" not in response.content
    # The documented JSON error, not Django's HTML page (issue 35, finding 9).
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "internal" and set(response.json()) == {"code", "message", "detail"}


@pytest.mark.django_db
@pytest.mark.parametrize(("password", "reason"), [
    ("12345678", b"This password is entirely numeric."),
    ("password", b"This password is too common."),
    ("zoe-walker", b"The password is too similar to the username."),
    ("short", b"at least 8 characters"),
    (" " * 8, b"cannot be only spaces"),
    ("\t \u3000 \n \t ", b"cannot be only spaces"),
    ("\u200b" * 8, b"cannot be only spaces"),  # zero-width spaces (issue 35, finding 8)
    ("\u200b\u2060\ufeff\u00ad \u200d\u180e\u2063", b"cannot be only spaces"),
    # the seven of issue 49 (finding 8): fillers and blanks that are letters, symbols or marks by category
    *[(character * 8, b"cannot be only spaces") for character in "\u3164\uffa0\u2800\u303f\u034f\ufe0f\u17b4"],
    ("\u3164\uffa0\u2800\u303f\u034f\ufe0f\u17b4\u115f", b"cannot be only spaces"),
])
def test_sign_up_refuses_weak_passwords(client, password, reason):
    response = client.post("/accounts/signup/", {"username": "zoe-walker", "password1": password,
                                                 "password2": password})
    assert response.status_code == 200 and reason in response.content
    assert not response.wsgi_request.user.is_authenticated


@pytest.mark.django_db
@pytest.mark.parametrize("password", ["\u200bcorrect horse\u200b", "caf\u00e9 cr\u00e8me \u3164",
                                      "\u2800\u2801\u2802\u2803\u2804\u2805\u2806\u2807"])
def test_sign_up_takes_a_password_with_visible_characters_among_invisible_ones(client, password):
    response = client.post("/accounts/signup/", {"username": "zoe-walker", "password1": password,
                                                 "password2": password})
    assert response.status_code == 302


def _sign_in(username: str, password: str, *, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})


@pytest.fixture
def accounts(make_user, settings):
    settings.AXES_FAILURE_LIMIT = 5
    return make_user("ana"), make_user("ben")


def test_failed_sign_ins_lock_the_account_from_every_address(accounts):
    for _ in range(4):
        assert _sign_in("ana", "wrong-password").status_code == 200  # the form, with its error
    assert _sign_in("ana", "wrong-password").status_code == 429  # the fifth failure locks
    locked = _sign_in("ana", "pw-123456789", address="10.0.0.2")  # the right password, elsewhere
    assert locked.status_code == 429
    assert b"Too many failed sign-ins" in locked.content and b"Try again in" in locked.content
    assert _sign_in("ben", "pw-123456789", address="10.0.0.2").status_code == 302  # others are not


def test_failed_sign_ins_lock_the_address_for_every_account(accounts):
    for name in ("ghost1", "ghost2", "ghost3", "ghost4"):
        assert _sign_in(name, "guess", address="10.0.0.9").status_code == 200
    assert _sign_in("ghost5", "guess", address="10.0.0.9").status_code == 429
    assert _sign_in("ben", "pw-123456789", address="10.0.0.9").status_code == 429
    assert _sign_in("ben", "pw-123456789", address="10.0.0.3").status_code == 302


def test_a_successful_sign_in_clears_the_failures(accounts):
    for _ in range(4):
        _sign_in("ana", "wrong-password")
    assert _sign_in("ana", "pw-123456789").status_code == 302
    for _ in range(4):
        assert _sign_in("ana", "wrong-password").status_code == 200
    assert _sign_in("ana", "pw-123456789").status_code == 302


def _via_proxy(username: str, password: str, *, forwarded: str | None, proxy: str = "127.0.0.1"):
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return Client(REMOTE_ADDR=proxy, **extra).post(LOGIN, {"username": username, "password": password})


@pytest.mark.parametrize("forwarded", [None, "", "not-an-address", "127.0.0.1"])
def test_behind_a_proxy_without_the_client_address_only_accounts_are_locked(accounts, forwarded):
    """Everyone arrives from the proxy: one person's wrong passwords must not lock everyone out."""
    for name in ("ghost1", "ghost2", "ghost3", "ghost4", "ghost5", "ghost6"):
        assert _via_proxy(name, "guess", forwarded=forwarded).status_code == 200
    assert _via_proxy("ben", "pw-123456789", forwarded=forwarded).status_code == 302
    for _ in range(5):
        _via_proxy("ana", "wrong-password", forwarded=forwarded)
    assert _via_proxy("ana", "pw-123456789", forwarded=forwarded).status_code == 429  # the account still is


def test_a_trusted_proxy_s_forwarded_address_is_locked_on_its_own(accounts, settings):
    settings.MEMORYOS_TRUSTED_PROXIES = ["10.1.0.0/16"]
    for name in ("ghost1", "ghost2", "ghost3", "ghost4"):
        assert _via_proxy(name, "guess", forwarded="203.0.113.9", proxy="10.1.0.5").status_code == 200
    assert _via_proxy("ghost5", "guess", forwarded="198.51.100.1, 203.0.113.9", proxy="10.1.0.5").status_code == 429
    assert _via_proxy("ben", "pw-123456789", forwarded="203.0.113.9", proxy="10.1.0.6").status_code == 429
    assert _via_proxy("ben", "pw-123456789", forwarded="203.0.113.10", proxy="10.1.0.5").status_code == 302


def test_a_forwarded_header_from_an_untrusted_client_is_ignored(accounts):
    """A client cannot escape its address's lock by naming another address itself."""
    for number, name in enumerate(("ghost1", "ghost2", "ghost3", "ghost4", "ghost5")):
        _via_proxy(name, "guess", forwarded=f"198.51.100.{number}", proxy="10.0.0.9")
    assert _via_proxy("ben", "pw-123456789", forwarded="198.51.100.77", proxy="10.0.0.9").status_code == 429
