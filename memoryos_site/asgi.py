"""ASGI entry point: HTTP through Django (/mcp through the MCP server, /v1 through the OpenAI-compatible
endpoint), websockets through Channels.

Importing it is what starting a server does (daphne, runserver): the embedder and the vector index
start loading then, on a thread of their own, so the first turn does not wait for them
(MEMORYOS_WARMUP=0 turns this off), and the due work a crash left (memory/runtime/due_work.py)
resumes on another (MEMORYOS_DUE_WORK=0 turns it off). Commands never import this module; tests
turn both off.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
# Django must be set up before anything imports models (Channels' tutorial order).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from memory.adapters.configured import adapters_warm_up_in_background  # noqa: E402
from memory.runtime.due_work import due_work_start_in_background  # noqa: E402
from memory.services.facts import fact_reader_warm_up  # noqa: E402
from memory.web.mcp import McpHttpApp, is_mcp_path  # noqa: E402
from memory.web.openai_api import OpenAIApp, is_openai_path  # noqa: E402
from memory.web.routing import websocket_urlpatterns  # noqa: E402
from memoryos_site.websocket_origin import SameOriginValidator  # noqa: E402

mcp_app = McpHttpApp()
openai_app = OpenAIApp()


async def http_app(scope, receive, send):
    """/mcp is the MCP server (memory/web/mcp.py), /v1 the OpenAI-compatible endpoint
    (memory/web/openai_api.py); everything else is Django."""
    if is_mcp_path(scope["path"]):
        return await mcp_app(scope, receive, send)
    if is_openai_path(scope["path"]):
        return await openai_app(scope, receive, send)
    return await django_asgi_app(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": AllowedHostsOriginValidator(
            SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
    }
)

if settings.MEMORYOS_WARMUP:
    adapters_warm_up_in_background(also=[fact_reader_warm_up])
if settings.MEMORYOS_DUE_WORK and settings.MEMORYOS["MAINTENANCE_MODE"] != "off":
    due_work_start_in_background(interval_s=settings.MEMORYOS_DUE_WORK_INTERVAL_S)
