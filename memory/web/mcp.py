"""The MCP server (Memoria's endpoints, the `mcp` package): tools `recall(prompt, sona, policy)`,
`add_memory(text, sona, dependencies)` and `get_memory(cid)`, each memory as a resource
`memory://{cid}` and each file attached to a turn as `memory://file/{cid}` (its bytes). Every
call is about one user's memory: over HTTP (`/mcp` in the ASGI app) the user of the API token in
`Authorization: Bearer ...`, checked on every request and again by every tool; over stdio
(`manage.py mcp --user NAME`) the user the command was started for.

Tools only parse, call one service or selector (in a thread: the ORM is synchronous) and return.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings

from memory.engine.ipld import Link, NodeError, node_decode
from memory.recall.base import UnknownPolicyError
from memory.selectors.memories import memory_by_cid, memory_node_by_cid
from memory.selectors.sonas import sona_named
from memory.services.common import MemoryInputError, texts_check
from memory.services.files import file_open
from memory.services.recall import recall_for_query
from memory.services.remember import memory_add
from memory.services.tokens import token_authenticate
from memory.web.api_memories import memory_out

MCP_PATH = "/mcp"
TOKEN_REQUIRED = "A valid API token is required (Authorization: Bearer ...)."
INSTRUCTIONS = ("A MemoryOS memory (Memoria's endpoints): `recall` what would be remembered for a prompt in a sona, "
                "`add_memory` to remember something (optionally depending on memories by content id), "
                "`get_memory` (or the resource memory://{cid}) to read a memory and its IPLD node by content id; "
                "memory://file/{cid} for the bytes of a file attached to a turn.")

UserOf = Callable[[Context], Awaitable[Any]]


def _ipld_json(value: Any) -> Any:
    """A decoded node's value as DAG-JSON shapes: a link is {"/": cid}, bytes {"/": {"bytes": base64}}."""
    if isinstance(value, Link):
        return {"/": value.cid}
    if isinstance(value, bytes):
        return {"/": {"bytes": base64.b64encode(value).decode("ascii").rstrip("=")}}
    if isinstance(value, list | tuple):
        return [_ipld_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _ipld_json(item) for key, item in value.items()}
    return value


def _known_sona(user, name: str):
    """The sona a recall names: a recall changes nothing, so an unknown one is refused, not made."""
    found = sona_named(user=user, name=name)
    if found is None:
        raise MemoryInputError(f"Unknown sona {name.strip()!r}: recall changes nothing, so it makes no sona "
                               "(add_memory with this sona, or the chat, makes one).")
    return found


def _texts(**arguments: Any) -> None:
    """A tool's arguments, checked as every way in checks text (memory/services/common.py)."""
    try:
        texts_check(arguments, field="")
    except MemoryInputError as error:
        raise ToolError(str(error)) from None


def _recall(user, prompt: str, sona: str, policy: str) -> dict[str, Any]:
    _texts(prompt=prompt, sona=sona, policy=policy)
    try:
        sona_row = _known_sona(user, sona) if sona else None
        found = recall_for_query(user=user, query=prompt, sona=sona_row, policy=policy or None,
                                 update_heat=False, record_trace=False)
    except (UnknownPolicyError, MemoryInputError) as error:
        raise ToolError(str(error)) from None
    return {"prompt": prompt, "policy": found.policy,
            "items": [{"kind": item.kind, "ref": item.ref, "text": item.text, "score": item.score,
                       "breakdown": dict(item.breakdown)} for item in found.items]}


def _add(user, text: str, sona: str, dependencies: dict[str, Any] | None) -> dict[str, Any]:
    _texts(text=text, sona=sona, dependencies=dependencies)
    try:
        page = memory_add(user=user, text=text, sona=sona or None, dependencies=dependencies or {})
    except MemoryInputError as error:
        raise ToolError(str(error)) from None
    return {"cid": page.cid, "kind": "page", "id": str(page.id), "sona": page.sona.name if page.sona else None}


def _get(user, cid: str) -> dict[str, Any]:
    _texts(cid=cid)
    node = memory_node_by_cid(user=user, cid=cid)
    if node is None or not node.block:
        raise ToolError(f"No memory with content id {cid} here.")
    try:
        decoded = node_decode(bytes(node.block))
    except NodeError as error:  # a stored block is ours; this would be a bug worth seeing
        raise ToolError(f"The stored node of {cid} cannot be read: {error}") from None
    found = memory_by_cid(user=user, cid=node.cid)
    out: dict[str, Any] = {
        "cid": node.cid, "kind": node.kind,
        "node": {"kind": decoded.kind, "timestamp": decoded.timestamp, "data": _ipld_json(decoded.data),
                 "dependencies": {name: [dep.weight, {"/": dep.cid}] for name, dep in decoded.dependencies.items()}},
        "block_base64": base64.b64encode(bytes(node.block)).decode("ascii"),
    }
    if found is not None:
        out["memory"] = json.loads(json.dumps(memory_out(*found), default=str))
    return out


def _file(user, cid: str) -> bytes:
    _texts(cid=cid)
    try:
        return file_open(user=user, cid=cid)[1]
    except MemoryInputError as error:
        raise ToolError(str(error)) from None


def build_server(*, user_of: UserOf) -> MCPServer:
    """The MCP server; `user_of(ctx)` says whose memory a call is about (or raises ToolError)."""
    server = MCPServer(name="memoryos", instructions=INSTRUCTIONS)

    @server.tool()
    async def recall(ctx: Context, prompt: str, sona: str = "", policy: str = "") -> dict[str, Any]:
        """What would be recalled for `prompt` in `sona` (default: the user's), best first, each with its
        score breakdown; `policy` names a recall policy (default: the sona's or the server's). Changes nothing."""
        return await sync_to_async(_recall)(await user_of(ctx), prompt, sona, policy)

    @server.tool()
    async def add_memory(ctx: Context, text: str, sona: str = "",
                         dependencies: dict[str, tuple[float, str]] | None = None) -> dict[str, Any]:
        """Remember `text` in `sona`, depending on stored memories: {name: [weight 0..1, content id]}.
        Returns the new memory's content id."""
        return await sync_to_async(_add)(await user_of(ctx), text, sona, dependencies)

    @server.tool()
    async def get_memory(ctx: Context, cid: str) -> dict[str, Any]:
        """The memory with content id `cid` (or an id it had before): its IPLD node and its stored row."""
        return await sync_to_async(_get)(await user_of(ctx), cid)

    @server.resource("memory://{cid}", mime_type="application/json")
    async def memory_resource(cid: str, ctx: Context) -> str:
        """A memory by content id, as `get_memory` returns it."""
        user = await user_of(ctx)
        try:
            return json.dumps(await sync_to_async(_get)(user, cid))
        except ToolError as error:  # a resource's refusal reaches the client as one, not as a crash
            raise ResourceError(str(error)) from None

    @server.resource("memory://file/{cid}", mime_type="application/octet-stream")
    async def file_resource(cid: str, ctx: Context) -> bytes:
        """A file attached to a turn, by content id (of its bytes or of its node): the bytes."""
        user = await user_of(ctx)
        try:
            return await sync_to_async(_file)(user, cid)
        except ToolError as error:
            raise ResourceError(str(error)) from None

    return server


# ------------------------------------------------------------------ who is calling

def _token_owner(text: str):
    found = token_authenticate(text=text) if text else None
    return found.user if found is not None else None


def _bearer(headers) -> str:
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def token_user(ctx: Context):
    """The user of the request's API token (each token sees only its user's memory)."""
    user = await sync_to_async(_token_owner)(_bearer(ctx.headers or {}))
    if user is None:
        raise ToolError(TOKEN_REQUIRED)
    return user


def fixed_user(user) -> UserOf:
    async def user_of(ctx: Context):
        return user
    return user_of


# ------------------------------------------------------------------ /mcp in the ASGI app

class McpHttpApp:
    """`/mcp` over streamable HTTP (stateless, JSON answers). A request without a valid token is
    refused with 401 before MCP sees it, and one for a host outside ALLOWED_HOSTS with 400 (Django's
    own check; the SDK's rebinding check is off so that it does not need a second host list).
    Django's ASGI servers send no lifespan to a mounted app, so the SDK's session manager is started
    with the first request, once per event loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._app = None
        self._task: asyncio.Task | None = None

    async def _started(self):
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            server = build_server(user_of=token_user)
            app = server.streamable_http_app(
                streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
            ready = asyncio.Event()

            async def serve() -> None:
                async with server.session_manager.run():
                    ready.set()
                    await asyncio.Event().wait()

            self._task = loop.create_task(serve())
            await ready.wait()
            self._app = app
        return self._app

    async def __call__(self, scope, receive, send) -> None:
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", [])}
        domain, _ = split_domain_port(headers.get("host", ""))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            return await _refuse(send, 400, "bad_host", "This host is not among ALLOWED_HOSTS.")
        if await sync_to_async(_token_owner)(_bearer(headers)) is None:
            return await _refuse(send, 401, "unauthorized", TOKEN_REQUIRED)
        app = await self._started()
        await app(scope, receive, send)


async def _refuse(send, status: int, code: str, message: str) -> None:
    body = json.dumps({"code": code, "message": message, "detail": None}).encode()
    extra = [(b"www-authenticate", b'Bearer realm="memoryos"')] if status == 401 else []
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra]})
    await send({"type": "http.response.body", "body": body})


def is_mcp_path(path: str) -> bool:
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")
