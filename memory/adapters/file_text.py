"""What an attached file is and what text it holds: the type from its bytes, never from the name or
the type a client declares, and the text recall can use where the format has any.

- PDF (`%PDF-`): the text of its pages, read by pypdf; a PDF whose pages hold no text (a scan) is
  kept with none. One past pypdf's limits (a stream that inflates past 75 MB, a page tree of over
  100,000 entries, ...) is refused with the limit it hit.
- PNG, JPEG, GIF, WebP: opened by Pillow, which checks the image and gives its size; no text (the
  assistant has no OCR), so such a file is found by its name and the message it came with. One of
  more than `max_pixels` pixels is refused (its header alone can declare 60000x60000).

These readers bound what a file may make them do but not how long they take: a small PDF can
make pypdf parse one large content stream once per page. memory/adapters/file_reader.py runs them
in a worker process with a time and memory budget; `on_page` lets it keep what was read so far.
- Anything else must be UTF-8 text (a BOM is dropped); its type is the declared `text/*` one when
  there is one (text/markdown, text/csv), else text/plain. Other bytes are refused.
"""

from __future__ import annotations

import io
import logging
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

PDF = "application/pdf"
IMAGE_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
                    (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))
TEXT_SUBTYPES = frozenset({"text/plain", "text/markdown", "text/csv", "text/html", "text/x-python"})
IMAGE_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}
MAX_IMAGE_PIXELS = 89_478_485  # Pillow's own default: 0.25 GB of pixels at 3 bytes each


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


def media_type_of(data: bytes) -> str | None:
    """PDF or an image's type, from the bytes; None for anything else (text, or refused)."""
    if data.startswith(b"%PDF-"):
        return PDF
    return _image_type(data)


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _pdf_text(data: bytes, max_chars: int, on_page: Callable[[int, str | None], None] | None) -> FileText:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = len(reader.pages)
        if on_page is not None:
            on_page(pages, None)
        parts: list[str] = []
        size = 0
        for page in reader.pages:
            # A PDF's text operators may draw NUL or unpaired surrogates, which no database stores.
            text = _UNSTORABLE.sub("", page.extract_text() or "").strip()
            parts.append(text)
            size += len(text)
            if on_page is not None:
                on_page(pages, text)
            if size >= max_chars:
                break
    except LimitReachedError as error:
        raise FileTypeError(f"The PDF is past a limit of what is read from one: {error}") from None
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, AttributeError, IndexError,
            RecursionError, ZeroDivisionError, AssertionError) as error:
        raise FileTypeError(f"The PDF cannot be read: {error}") from None
    text = "\n\n".join(part for part in parts if part)[:max_chars]
    return FileText(PDF, text, pdf_extraction(pages))


def pdf_extraction(pages: int, read: int | None = None, note: str = "") -> str:
    """"pdf: 3 pages", or "pdf: 12 pages, text of 4 read (note)" when reading stopped early."""
    said = f"pdf: {pages} page{'s' if pages != 1 else ''}"
    return said if read is None else f"{said}, text of {read} read ({note})"


def _image(data: bytes, media_type: str, max_pixels: int) -> FileText:
    from PIL import Image

    Image.init()
    open_image, _accept = Image.OPEN[IMAGE_FORMATS[media_type]]
    try:
        # The format's own opener reads the header only, without Pillow's check of the size (which
        # raises past twice its limit and warns past it, process-wide): ours comes next.
        with open_image(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height <= max_pixels:
                image.verify()
    except Image.DecompressionBombError as error:  # WebP's opener checks the size itself
        pixels = re.search(r"\((\d+) pixels\)", str(error))
        declared = f"{int(pixels.group(1)):,} pixels" if pixels else "more pixels than Pillow opens"
        raise FileTypeError(f"The image declares {declared}; an image may have at most {max_pixels:,} pixels.") \
            from None
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError, KeyError) as error:
        raise FileTypeError(f"The image cannot be read: {error}") from None
    if width * height > max_pixels:
        raise FileTypeError(f"The image declares {width * height:,} pixels ({width}x{height}); an image may "
                            f"have at most {max_pixels:,} pixels.")
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


def file_text(data: bytes, *, declared_type: str = "", max_chars: int, max_pixels: int = MAX_IMAGE_PIXELS,
              on_page: Callable[[int, str | None], None] | None = None) -> FileText:
    """The file's type (from its bytes) and its text, at most `max_chars`; FileTypeError otherwise.
    A PDF's reading is told to `on_page`: (pages, None) once it is open, (pages, text) for each page read."""
    if not data:
        raise FileTypeError("The file is empty.")
    kind = media_type_of(data)  # the one reading of the bytes' type (file_reader routes by it too)
    if kind == PDF:
        return _pdf_text(data, max_chars, on_page)
    if kind is not None:
        return _image(data, kind, max_pixels)
    declared = (declared_type or "").split(";")[0].strip().lower()
    return _plain_text(data, declared, max_chars)
