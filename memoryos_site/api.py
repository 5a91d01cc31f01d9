"""The REST API: one NinjaAPI, a router per app; OpenAPI at /api/docs, served with the Swagger UI
that django-ninja ships ("ninja" in INSTALLED_APPS), from the app: nothing from a CDN.

Authentication: a personal token (`Authorization: Bearer mos_…`, made on /settings/tokens/) or the
browser's session (with its CSRF token). Rate limits per token (per user for a session) through
Django's cache, which is Redis, shared by every server process, when REDIS_URL is set. Every error
is JSON {"code", "message", "detail"} with its HTTP status.
"""

from __future__ import annotations

import logging
import math

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.throttling import AnonRateThrottle, AuthRateThrottle

from memory.adapters.file_reader import FileReadersBusy
from memory.services.common import MemoryInputError, MemoryNotFound
from memory.web.api import router as memory_router
from memory.web.api_auth import ApiError, BrowserSessionAuth, TokenAuth
from memory.web.api_files import router as files_router
from memory.web.api_long_term import router as long_term_router
from memory.web.api_memories import router as memories_router
from memory.web.api_sonas import router as sonas_router
from memory.web.api_supersessions import router as supersessions_router

log = logging.getLogger(__name__)
api = NinjaAPI(
    title="MemoryOS", version="1",
    description="A memory operating system for chat assistants: turns, memories (list, search, correct, pin, "
                "repress, delete), recall with any policy, long-term memory, the lifecycle log and "
                "retrieval traces. Authenticate with a personal API token (Bearer) or the browser session.",
    auth=[TokenAuth(), BrowserSessionAuth()],
    throttle=[AuthRateThrottle(settings.MEMORYOS_API["RATE"]), AnonRateThrottle(settings.MEMORYOS_API["ANON_RATE"])],
)
api.add_router("/memory/", memory_router)
api.add_router("/memory/", memories_router)
api.add_router("/memory/", files_router)
api.add_router("/memory/", sonas_router)
api.add_router("/memory/", supersessions_router)
api.add_router("/long-term/", long_term_router)


def error(request, status: int, code: str, message: str, detail=None):
    return api.create_response(request, {"code": code, "message": message, "detail": detail}, status=status)


@api.exception_handler(MemoryInputError)
def memory_input_error(request, exc: MemoryInputError):
    if isinstance(exc, MemoryNotFound):
        return error(request, 404, "not_found", str(exc))
    return error(request, 400, "invalid", str(exc))


@api.exception_handler(ApiError)
def api_error(request, exc: ApiError):
    response = error(request, exc.status_code, exc.code, exc.message, exc.detail)
    if exc.status_code == 429 and isinstance(exc.detail, dict) and "retry_after" in exc.detail:
        response["Retry-After"] = str(max(1, math.ceil(exc.detail["retry_after"])))
    return response


@api.exception_handler(ValidationError)
def validation_error(request, exc: ValidationError):
    return error(request, 422, "validation_error", "The request does not match the schema.", exc.errors)


@api.exception_handler(MultiPartParserError)
def multipart_error(request, exc: MultiPartParserError):
    """A multipart body Django cannot parse: 400 with its reason (ninja would answer 500 in DEBUG,
    Django a bare 400 page)."""
    message = f"The multipart body cannot be read: {exc}"
    if "header size" in str(exc):  # Django reads at most 1,024 bytes of a part's headers
        message += " A part's headers, its file name among them, may be at most 1,024 bytes: shorten the file name."
    return error(request, 400, "invalid_upload", message)


@api.exception_handler(TooManyFilesSent)
@api.exception_handler(TooManyFieldsSent)
@api.exception_handler(RequestDataTooBig)
def request_parse_refused(request, exc: SuspiciousOperation):
    """A body Django refuses as it parses it (over DATA_UPLOAD_MAX_* of fields, files or bytes)."""
    if isinstance(exc, RequestDataTooBig):
        return error(request, 413, "body_too_large", str(exc))
    return error(request, 400, "invalid_upload", str(exc))


@api.exception_handler(FileReadersBusy)
def file_readers_busy(request, exc: FileReadersBusy):
    response = error(request, 503, "busy", str(exc), {"retry_after": math.ceil(exc.retry_after)})
    response["Retry-After"] = str(math.ceil(exc.retry_after))
    return response


@api.exception_handler(AuthenticationError)
def authentication_error(request, exc: AuthenticationError):
    if request.headers.get("Authorization"):
        return error(request, 401, "unauthorized", "The API token is unknown, revoked or malformed "
                     "(send `Authorization: Bearer mos_…`, a token made on /settings/tokens/).")
    return error(request, 401, "unauthorized", "Authenticate with a valid API token or a signed-in session.")


@api.exception_handler(Http404)
def not_found(request, exc: Http404):
    return error(request, 404, "not_found", str(exc) or "Not found.")


@api.exception_handler(Exception)
def server_error(request, exc: Exception):
    """Anything else: the documented JSON error with 500, never Django's HTML page; the traceback
    goes to the log, not to the caller."""
    log.error("event=api_server_error path=%s", request.path, exc_info=exc)
    return error(request, 500, "internal", "The server failed to answer this request; it is logged. "
                 "Please try again later.")


@api.exception_handler(HttpError)
def http_error(request, exc: HttpError):
    codes = {429: "rate_limited", 403: "forbidden", 405: "method_not_allowed"}
    return error(request, exc.status_code, codes.get(exc.status_code, "error"), str(exc))
