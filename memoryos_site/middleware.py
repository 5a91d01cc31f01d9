"""Site-wide request checks that come before any view."""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse


class ApiBodyLimitMiddleware:
    """The REST API refuses a request body over MEMORYOS_API_MAX_BODY_BYTES with 413 before reading
    it (the declared length) or after (a chunked body that turns out longer)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/") and request.method in ("POST", "PUT", "PATCH", "DELETE"):
            limit = settings.MEMORYOS_API["MAX_BODY_BYTES"]
            try:
                declared = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                declared = 0
            if declared > limit or len(request.body) > limit:
                return JsonResponse({"code": "body_too_large", "message": f"The request body is over {limit} bytes.",
                                     "detail": {"limit": limit}}, status=413)
        return self.get_response(request)
