"""What an attached file is and what text it holds: the type from its bytes, never from the name or
the type a client declares, and the text recall can use where the format has any.

- PDF (`%PDF-`): the text of its pages, read by pypdf; a PDF whose pages hold no text (a scan) is
  kept with none.
- PNG, JPEG, GIF, WebP: opened by Pillow, which checks the image and gives its size; no text (the
  assistant has no OCR), so such a file is found by its name and the message it came with.
- Anything else must be UTF-8 text (a BOM is dropped); its type is the declared `text/*` one when
  there is one (text/markdown, text/csv), else text/plain. Other bytes are refused.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

PDF = "application/pdf"
IMAGE_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
                    (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))
TEXT_SUBTYPES = frozenset({"text/plain", "text/markdown", "text/csv", "text/html", "text/x-python"})


class FileTypeError(ValueError):
    """Bytes that are none of the kinds a turn may carry, or a file of such a kind that is broken."""


@dataclass(frozen=True)
class FileText:
    media_type: str
    text: str  # "" when the format has none
    extraction: str  # how the text was found: "utf-8", "pdf: 3 pages", "image 640x480", ...


def _image_type(data: bytes) -> str | None:
    for signature, media_type in IMAGE_SIGNATURES:
        if data.startswith(signature):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _pdf_text(data: bytes, max_chars: int) -> FileText:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        parts: list[str] = []
        size = 0
        for page in reader.pages:
            text = (page.extract_text() or "").strip()
            parts.append(text)
            size += len(text)
            if size >= max_chars:
                break
        pages = len(reader.pages)
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as error:
        raise FileTypeError(f"The PDF cannot be read: {error}") from None
    text = "\n\n".join(part for part in parts if part)[:max_chars]
    return FileText(PDF, text, f"pdf: {pages} page{'s' if pages != 1 else ''}")


def _image(data: bytes, media_type: str) -> FileText:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
            width, height = image.size
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
        raise FileTypeError(f"The image cannot be read: {error}") from None
    return FileText(media_type, "", f"image {width}x{height}, no text")


def _plain_text(data: bytes, declared: str, max_chars: int) -> FileText:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FileTypeError("Only text (UTF-8), PDF and images (PNG, JPEG, GIF, WebP) can be attached.") from None
    if "\x00" in text:
        raise FileTypeError("The file holds NUL characters: it is not text.")
    media_type = declared if declared in TEXT_SUBTYPES else "text/plain"
    return FileText(media_type, text.strip()[:max_chars], "utf-8")


def file_text(data: bytes, *, declared_type: str = "", max_chars: int) -> FileText:
    """The file's type (from its bytes) and its text, at most `max_chars`; FileTypeError otherwise."""
    if not data:
        raise FileTypeError("The file is empty.")
    if data.startswith(b"%PDF-"):
        return _pdf_text(data, max_chars)
    image_type = _image_type(data)
    if image_type is not None:
        return _image(data, image_type)
    declared = (declared_type or "").split(";")[0].strip().lower()
    return _plain_text(data, declared, max_chars)
