"""Site-wide request checks that come before any view."""

from __future__ import annotations

import json
import re

from django.conf import settings
from django.http import HttpResponseBadRequest, JsonResponse

from memory.services.common import TextRefused, text_check, texts_check


class ApiBodyLimitMiddleware:
    """The REST API refuses a request body over MEMORYOS_API_MAX_BODY_BYTES (an upload to /api/memory/files:
    that plus MEMORYOS_MAX_FILE_BYTES) with 413 before reading it (the declared length) or after (a
    chunked body that turns out longer; an upload's file is measured by the service instead)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/") and request.method in ("POST", "PUT", "PATCH", "DELETE"):
            limit = settings.MEMORYOS_API["MAX_BODY_BYTES"]
            upload = request.path.rstrip("/") == "/api/memory/files" and request.method == "POST"
            if upload:  # the file's limit and room for the form; Django's multipart parser streams it
                limit += settings.MEMORYOS["MAX_FILE_BYTES"]  # to disk, and the service checks its size
            try:
                declared = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                declared = 0
            if upload and not declared and not _measured_upload(request, limit):
                declared = limit + 1
            if declared > limit or (not upload and len(request.body) > limit):
                return JsonResponse({"code": "body_too_large", "message": f"The request body is over {limit} bytes.",
                                     "detail": {"limit": limit}}, status=413)
        return self.get_response(request)


def _measured_upload(request, limit: int) -> bool:
    """An upload sent without its length (chunked): False when it is over `limit`; else its body is
    read (at most the limit: an ASGI server has it spooled already) and its length declared, which
    Django's multipart parser needs (it took a body without one for an empty form: "file field
    required", 422)."""
    body = request.read(limit + 1)
    if len(body) > limit:
        return False
    request._body = body  # Django's own cache of the body, which its parsers read from
    request.META["CONTENT_LENGTH"] = str(len(body))
    return True


# A JSON body can only carry NUL or a surrogate as an escape (raw, the one is no JSON and the other
# no UTF-8): bodies without one, nearly all, are not parsed twice.
_UNSTORABLE_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


class TextCheckMiddleware:
    """Every request's text checked once before any view: the address, the query's parameters, a
    form's fields and an API call's JSON body. NUL and lone surrogates are refused with 400 and the
    words every way in uses (memory/services/common.py text_check), naming the field; the websocket,
    MCP, imports and the services check the same way (an upload's file name is checked by its route)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        try:
            self._check(request)
        except TextRefused as exc:
            if request.path.startswith("/api/"):
                return JsonResponse({"code": "invalid", "message": str(exc), "detail": {"field": exc.field}},
                                    status=400)
            return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
        return self.get_response(request)

    def _check(self, request) -> None:
        text_check(request.path, field="address")
        for key, values in request.GET.lists():
            text_check(key, field="query parameter name")
            texts_check(values[0] if len(values) == 1 else values, field=f"query parameter {key!r}")
        if request.method not in ("POST", "PUT", "PATCH", "DELETE"):
            return
        api = request.path.startswith("/api/")
        # The API's one multipart route (an upload) checks its file's name itself: parsing its body
        # here would answer a broken one with Django's page instead of the API's JSON error.
        if request.content_type == "application/x-www-form-urlencoded" \
                or (request.content_type == "multipart/form-data" and not api):
            for key, values in request.POST.lists():
                text_check(key, field="form field name")
                texts_check(values[0] if len(values) == 1 else values, field=key)
            for _key, files in request.FILES.lists():
                for upload in files:
                    text_check(upload.name or "", field="file name")
        elif api and request.content_type == "application/json" \
                and _UNSTORABLE_ESCAPE.search(request.body):
            try:
                body = json.loads(request.body)
            except (ValueError, RecursionError):
                return  # not JSON: the API's parser answers that
            texts_check(body, field="")
