"""Site-wide request checks that come before any view."""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse


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
            if declared > limit or (not upload and len(request.body) > limit):
                return JsonResponse({"code": "body_too_large", "message": f"The request body is over {limit} bytes.",
                                     "detail": {"limit": limit}}, status=413)
        return self.get_response(request)
