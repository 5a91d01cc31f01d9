"""Hostile uploads, made here byte by byte: images whose headers declare 60000x60000 pixels, PDFs
that inflate past pypdf's limits, that list more pages than it reads, or whose pages share one
content stream that is slow to read, and a multipart body whose file name is over Django's limit."""

from __future__ import annotations

import struct
import zlib

from memory.benchmarks.files import pdf_document, pdf_of

BOMB_SIDE = 60_000


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_header(width: int, height: int) -> bytes:
    """A PNG with a valid IHDR (and CRC) declaring the size, an empty IDAT and IEND."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", b"")
            + _png_chunk(b"IEND", b""))


def gif_header(width: int, height: int) -> bytes:
    """A GIF89a whose screen and first frame declare the size, with no pixels."""
    return (b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00"
            + b"," + struct.pack("<HHHH", 0, 0, width, height) + b"\x00\x02\x00;")


def jpeg_header(width: int, height: int) -> bytes:
    """A baseline JPEG whose SOF0 declares the size, with an empty scan."""
    sof = b"\x08" + struct.pack(">HH", height, width) + b"\x03\x01\x11\x00\x02\x11\x00\x03\x11\x00"
    sos = b"\x03\x01\x00\x02\x00\x03\x00\x00\x3f\x00"
    return (b"\xff\xd8\xff\xc0" + struct.pack(">H", len(sof) + 2) + sof
            + b"\xff\xda" + struct.pack(">H", len(sos) + 2) + sos + b"\xff\xd9")


def webp_header(width: int, height: int) -> bytes:
    """An extended WebP whose VP8X chunk declares the canvas size, with no frame."""
    vp8x = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    body = b"WEBP" + b"VP8X" + struct.pack("<I", len(vp8x)) + vp8x
    return b"RIFF" + struct.pack("<I", len(body)) + body


IMAGE_BOMBS = {"bomb.png": png_header, "bomb.gif": gif_header, "bomb.jpg": jpeg_header, "bomb.webp": webp_header}


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of these objects (1 the catalog) with a correct cross-reference table."""
    return pdf_of(objects)


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"


def _deflated_zeros(size: int) -> bytes:
    compressor = zlib.compressobj(9)
    block = b"\x00" * (1 << 20)
    out = [compressor.compress(block) for _ in range(size >> 20)]
    return b"".join(out) + compressor.flush()


def _page(contents: int, font: int) -> bytes:
    return (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (font, contents))


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def pdf_inflation_bomb(inflated_bytes: int = 300 * 1024 * 1024) -> bytes:
    """One page whose content stream is `inflated_bytes` of zeros, deflated (1,024 to 1 or so)."""
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                 _page(4, 5), _stream(_deflated_zeros(inflated_bytes)), FONT])


def pdf_many_pages(fan_out: int = 400) -> bytes:
    """A page tree of fan_out x fan_out entries (160,000 pages by default) built of one page
    referenced again and again: a few kilobytes."""
    kids = b" ".join([b"3 0 R"] * fan_out)
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>",
                 b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, fan_out * fan_out),
                 b"<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count %d >>" % (b" ".join([b"4 0 R"] * fan_out), fan_out),
                 _page(5, 6), _stream(zlib.compress(b"BT /F1 11 Tf 72 740 Td (Page) Tj ET")), FONT])


def pdf_slow_pages(pages: int = 12, stream_bytes: int = 2 * 1024 * 1024, *, quick_pages: int = 0) -> bytes:
    """`quick_pages` pages of a line each ("Quick page N."), then `pages` pages that share one
    content stream of about `stream_bytes` of text operators: a few kilobytes on disk, seconds of
    pypdf's time a page (it parses the whole stream for every page that shows it)."""
    op = b"0 0 Td () Tj\n"
    content = b"BT /F1 11 Tf 72 740 Td (Shared words) Tj\n" + op * (stream_bytes // len(op)) + b"ET"
    total = quick_pages + pages
    font, shared = 3 + 2 * total, 4 + 2 * total
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(total)),
                                                             total)]
    for i in range(total):
        quick = i < quick_pages
        objects.append(_page(4 + 2 * i if quick else shared, font))
        line = b"BT /F1 11 Tf 72 740 Td (Quick page %d.) Tj ET" % (i + 1)
        objects.append(_stream(zlib.compress(line if quick else b"")))  # unused by the slow pages
    objects += [FONT, _stream(zlib.compress(content, 9))]
    return _pdf(objects)


def pdf_pages(count: int) -> bytes:
    """A good PDF of `count` pages, each saying its number."""
    return pdf_document([[f"Page {i} of the report."] for i in range(1, count + 1)])


def multipart(name: str, data: bytes, *, field: str = "file", content_type: str = "text/plain",
              boundary: str = "hostileboundary") -> tuple[bytes, str]:
    """A multipart/form-data body with one file part, its name as given (Django's test client cuts
    names to 255 characters; a browser or curl does not)."""
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n").encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"
