"""The MCP server through the mcp client library: over streamable HTTP at /mcp of the real ASGI app
(uvicorn on a local port) with API tokens, where a token sees only its own user's memory, and over
stdio from `manage.py mcp` in a subprocess."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memory.engine.ipld import node_verify
from memory.models import MemoryNode
from memory.services.files import file_upload
from memory.services.remember import memory_add
from memory.services.tokens import token_create

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]
UNKNOWN_CID = "bafyreigdmqpykrgxyaxtlafqpqhzrb7qy2rh75nldvfd4tucqmdtuo7kxq"


@pytest.fixture
def server_url(asgi_url):
    return f"{asgi_url}/mcp"


def http_client(url: str, token: str) -> Client:
    transport = streamable_http_client(url, http_client=create_mcp_http_client(
        headers={"Authorization": f"Bearer {token}"}))
    return Client(transport)


def calls(url: str, token: str, *steps: tuple[str, dict]) -> list:
    """Run tool calls ("tool", args) or resource reads ("read", {"uri"}) in one session."""

    async def run():
        results = []
        async with http_client(url, token) as client:
            for name, args in steps:
                if name == "read":
                    results.append(await client.read_resource(args["uri"]))
                else:
                    results.append(await client.call_tool(name, args))
        return results

    return anyio.run(run)


def test_tools_over_http_act_for_the_token_s_user_only(make_user, server_url):
    alice, bob = make_user("alice"), make_user("bob")
    _, alice_token = token_create(user=alice, name="mcp")
    _, bob_token = token_create(user=bob, name="mcp")
    bob_page = memory_add(user=bob, text="Bob's locker code is 4417.")

    added, = calls(server_url, alice_token, ("add_memory", {"text": "My sister Lena plays the cello in Vienna.",
                                                             "sona": "friend"}))
    assert not added.is_error, added
    first = added.structured_content["cid"]
    node = MemoryNode.objects.get(user=alice, cid=first)
    assert node_verify(cid=first, block=bytes(node.block)).data["query"].startswith("My sister Lena")

    second, got, recalled, resource, refused, foreign = calls(
        server_url, alice_token,
        ("add_memory", {"text": "Lena's concert is on Friday.", "dependencies": {"about": [0.5, first]}}),
        ("get_memory", {"cid": first}),
        ("recall", {"prompt": "What instrument does Lena play?", "sona": "friend"}),
        ("read", {"uri": f"memory://{first}"}),
        ("get_memory", {"cid": bob_page.cid}),
        ("add_memory", {"text": "Depends on Bob.", "dependencies": {"x": [1.0, bob_page.cid]}}),
    )
    assert not second.is_error
    second_node = MemoryNode.objects.get(user=alice, cid=second.structured_content["cid"])
    second_deps = node_verify(cid=second_node.cid, block=bytes(second_node.block)).dependencies
    assert second_deps["about"] == (0.5, first)  # (maintenance may add "follows": the chain)
    assert got.structured_content["node"]["data"]["query"] == "My sister Lena plays the cello in Vienna."
    assert got.structured_content["memory"]["kind"] == "page"
    assert "cello" in json.dumps(recalled.structured_content["items"])
    assert json.loads(resource.contents[0].text)["cid"] == first
    # Alice's token reaches nothing of Bob's, not even as a dependency, and the refusal changed nothing.
    assert refused.is_error and "No memory with content id" in refused.content[0].text
    assert foreign.is_error and alice.pages.count() == 2

    bob_sees, bob_recall = calls(server_url, bob_token, ("get_memory", {"cid": first}),
                                 ("recall", {"prompt": "What instrument does Lena play?"}))
    assert bob_sees.is_error
    assert "cello" not in json.dumps(bob_recall.structured_content["items"])
    assert "4417" in json.dumps(bob_recall.structured_content["items"])


def test_recall_of_an_unknown_persona_is_refused_and_creates_nothing(make_user, server_url):
    from memory.models import Sona

    alice = make_user("alice")
    _, token = token_create(user=alice, name="mcp")
    memory_add(user=alice, text="My sister Lena plays the cello.", sona="friend")
    before = list(Sona.objects.filter(user=alice).values_list("name", flat=True).order_by("name"))

    unknown, known = calls(server_url, token, ("recall", {"prompt": "Lena?", "sona": "stranger"}),
                           ("recall", {"prompt": "Lena?", "sona": "FRIEND"}))
    assert unknown.is_error and "Unknown sona 'stranger'" in unknown.content[0].text
    assert not known.is_error
    assert list(Sona.objects.filter(user=alice).values_list("name", flat=True).order_by("name")) == before


def test_a_file_resource_gives_its_bytes_to_its_owner_only(make_user, server_url):
    alice, bob = make_user("alice"), make_user("bob")
    _, alice_token = token_create(user=alice, name="mcp")
    _, bob_token = token_create(user=bob, name="mcp")
    report = file_upload(user=alice, name="report.txt", data=b"Revenue grew by 12 percent.")

    by_content, by_node = calls(server_url, alice_token, ("read", {"uri": f"memory://file/{report.content_cid}"}),
                                ("read", {"uri": f"memory://file/{report.cid}"}))
    for read in (by_content, by_node):
        assert base64.b64decode(read.contents[0].blob) == b"Revenue grew by 12 percent."

    async def bob_reads() -> str:
        async with http_client(server_url, bob_token) as client:
            try:
                await client.read_resource(f"memory://file/{report.content_cid}")
            except Exception as error:  # the client's McpError: the server's refusal
                return str(error)
        return "read"

    assert "No file with content id" in anyio.run(bob_reads)


def test_http_without_a_valid_token_is_refused_before_mcp(make_user, server_url):
    for headers in ({}, {"Authorization": "Bearer mos_not-a-token"}):
        response = httpx.post(server_url, headers={**headers, "Accept": "application/json, text/event-stream"},
                              json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert response.status_code == 401 and response.json()["code"] == "unauthorized"


@pytest.mark.real_adapters  # a child process builds the real adapters: --fakes cannot reach it
def test_tools_over_stdio_from_the_management_command(tmp_path):
    env = {**os.environ, "MEMORYOS_VAR_DIR": str(tmp_path), "PYTHONPATH": str(ROOT), "MEMORYOS_WARMUP": "0",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "HF_HUB_OFFLINE": "1",
           "MEMORYOS_MAINTENANCE_MODE": "sync"}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True, cwd=ROOT)
    subprocess.run([*manage, "shell", "-c", "from django.contrib.auth import get_user_model as g; "
                    "g().objects.create_user('carol', password='pw-123456789')"], env=env, check=True, cwd=ROOT)
    params = StdioServerParameters(command=sys.executable, args=[str(ROOT / "manage.py"), "mcp", "--user", "carol"],
                                   env=env, cwd=str(ROOT))

    async def run():
        async with Client(params) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            added = await client.call_tool("add_memory", {"text": "Carol keeps bees on her roof."})
            got = await client.call_tool("get_memory", {"cid": added.structured_content["cid"]})
            recalled = await client.call_tool("recall", {"prompt": "What does Carol keep on her roof?"})
            missing = await client.call_tool("get_memory", {"cid": UNKNOWN_CID})
            return tools, added, got, recalled, missing

    tools, added, got, recalled, missing = anyio.run(run)
    assert tools == {"recall", "add_memory", "get_memory"}
    assert added.structured_content["cid"].startswith("bafyrei")
    assert got.structured_content["node"]["data"]["query"] == "Carol keeps bees on her roof."
    assert "bees" in json.dumps(recalled.structured_content["items"])
    assert missing.is_error

    bad = subprocess.run([*manage, "mcp", "--user", "nobody"], env=env, cwd=ROOT, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    assert bad.returncode != 0 and "No user 'nobody'" in bad.stderr
