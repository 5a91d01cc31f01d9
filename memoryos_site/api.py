"""The REST API: one NinjaAPI, a router per app."""

from __future__ import annotations

from ninja import NinjaAPI
from ninja.security import django_auth

from memory.api import router as memory_router
from memory.services import MemoryInputError

api = NinjaAPI(title="MemoryOS", version="1", auth=django_auth)
api.add_router("/memory/", memory_router)


@api.exception_handler(MemoryInputError)
def memory_input_error(request, exc: MemoryInputError):
    return api.create_response(request, {"detail": str(exc)}, status=400)
