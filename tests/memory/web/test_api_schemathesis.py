"""schemathesis against the live API (daphne, as `make run` serves it), from its own OpenAPI schema:
for every operation, generated requests (valid and invalid) never get a 5xx, and every answer
matches the schema (status codes, content types, bodies, headers)."""

from __future__ import annotations

import urllib.request

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402

from tests.browser.conftest import migrate, running_server, server_env  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.real_adapters]  # a child process (the live server) builds the real adapters

SETUP = """
from memory.services.tokens import token_create
from memory.services.turns import turn_run
from memory.services.users import user_ensure
user, _ = user_ensure(username="fuzz", password="a-long-secret-1")
for text in ("I grow tomatoes on my balcony.", "My bike is a green Brompton.", "I swim on Tuesdays."):
    turn_run(user=user, message=text)
print(token_create(user=user, name="schemathesis")[1])
"""


@pytest.fixture(scope="module")
def live_api(tmp_path_factory):
    var_dir = tmp_path_factory.mktemp("schemathesis-var")
    # No warm-up: the setup shell below writes to the embedded vector shard, which one process only
    # may open; the server opens it at its first request, after the shell has exited.
    env = server_env(var_dir, MEMORYOS_API_RATE="100000/m", MEMORYOS_API_ANON_RATE="100000/m",
                     MEMORYOS_WARMUP="0")
    migrate(env)
    with running_server(env, var_dir / "daphne.log") as server:
        token = server.manage("shell", "-c", SETUP).strip().splitlines()[-1]
        warm = urllib.request.Request(f"{server.url}/api/memory/memories/search?q=tomatoes",
                                      headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(warm, timeout=180) as response:  # the server loads its embedder
            assert response.status == 200
        yield server, token


def test_every_operation_answers_as_its_schema_says(live_api):
    from hypothesis import given

    server, token = live_api
    schema = schemathesis.openapi.from_url(f"{server.url}/api/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 19  # every route of the API (memory and persona)
    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            # Every default check but "schema-valid data is accepted": some valid-looking requests break
            # a rule no schema states (a policy that is not registered, a stale version, a message of
            # spaces), and the API answers those with a documented 400.
            case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, timeout=120,
                                   excluded_checks=[schemathesis.checks.positive_data_acceptance])

        check()
