"""REST routes for files attached to turns: upload (multipart), list, metadata, the bytes, delete an
upload no turn carries. A turn names its files by content id (`files` in POST /turns). Handlers
parse, call one service or selector, return; `?user=NAME` acts for another user (staff, audited)."""

from urllib.parse import quote

from django.http import HttpResponse
from ninja import File, Router
from ninja.files import UploadedFile
from ninja.pagination import paginate

from memory.selectors.files import attached_files
from memory.services.common import text_check
from memory.services.files import file_delete, file_of, file_open, file_upload
from memory.web.api import ERRORS, file_out
from memory.web.api_auth import ApiError, caller_of
from memory.web.pagination import Pages
from memory.web.schemas import ErrorOut, FileOut

router = Router(tags=["files"])
def _found(user, cid: str):
    row = file_of(user=user, cid=cid)
    if row is None:
        raise ApiError(404, "not_found", f"No file with content id {cid} here.")
    return row


@router.post("/files", response={200: FileOut, **ERRORS, 503: ErrorOut})
def upload_file(request, file: File[UploadedFile], user: str | None = None):
    """Upload a file (multipart field `file`: text, PDF or an image, at most MEMORYOS_MAX_FILE_BYTES)
    for a turn to carry: send its `cid` in the turn's `files`. The same content is stored once."""
    caller = caller_of(request, user)
    text_check(file.name or "file", field="file name")  # as every way in checks text
    return file_out(file_upload(user=caller.user, name=file.name or "file", data=file.read(),
                                declared_type=file.content_type or ""))


@router.get("/files", response={200: list[FileOut], **ERRORS})
@paginate(Pages)
def list_files(request, user: str | None = None):
    caller = caller_of(request, user)
    return [file_out(row) for row in attached_files(user=caller.user)]


@router.get("/files/{cid}", response={200: FileOut, **ERRORS})
def get_file(request, cid: str, user: str | None = None):
    return file_out(_found(caller_of(request, user).user, cid))


@router.get("/files/{cid}/content", response={200: None, **ERRORS},
            openapi_extra={"responses": {200: {"description": "The file's bytes",
                                               "content": {"application/octet-stream": {"schema": {}}}}}})
def get_file_content(request, cid: str, user: str | None = None):
    """The bytes, as uploaded (checked against the content id), sent as a download."""
    row, data = file_open(user=caller_of(request, user).user, cid=cid)  # another user's: 404
    response = HttpResponse(data, content_type=row.media_type)
    response["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(row.name, safe='')}"
    response["X-Content-Type-Options"] = "nosniff"
    response["ETag"] = f'"{row.content_cid}"'
    return response


@router.delete("/files/{cid}", response={200: FileOut, **ERRORS})
def delete_file(request, cid: str, user: str | None = None):
    """Delete an upload no turn carries yet (a turn's files go with its page)."""
    return file_out(file_delete(user=caller_of(request, user).user, cid=cid))
