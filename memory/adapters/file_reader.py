"""Reading an uploaded file within a budget: a PDF is read (memory/adapters/file_text.py) in a
worker process with a wall-clock limit and limits on its memory and CPU time, so that a small
hostile file costs at most the budget and the server's own process (its GIL included) goes on
serving other requests meanwhile. Text is decoded in place (linear in its size, which is capped),
and so is an image: Pillow reads its header and checks its chunks, decoding no pixel, and one that
declares too many is refused before that (2 ms for a 2.4 MB PNG, where a worker costs 0.3 s).

The worker is this module run by the interpreter that runs the server (`python -m
memory.adapters.file_reader`): a fresh process, 0.2 to 0.3 s to start with pypdf, that
inherits nothing of the server's (threads, open index, database connections). It reads the file
from its stdin and writes one JSON line per event: the PDF opened, each page's text as it is
read, then the result or why not. Past the time budget it is killed, and the file is kept with
the text of the pages read so far (`over_time="keep"`) or refused (`"refuse"`). Past its memory
limit, or any other way of dying, the file is refused.

At most `readers` workers run at once in a process (each costs its start and up to its memory
budget): an upload past them waits up to `wait_seconds` for one to end, then FileReadersBusy says
when to try again (the API answers 503 with Retry-After). A reader is shared fairly: one `owner`
(a person) holds at most one worker at a time, so that one account sending hostile PDFs cannot
keep every other person waiting; their next PDF is told at once to come back (OwnReaderBusy).
"""

from __future__ import annotations

import json
import logging
import math
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

from memory.adapters.file_text import PDF, FileText, FileTypeError, file_text, media_type_of, pdf_extraction

log = logging.getLogger(__name__)

OVER_TIME_CHOICES = ("keep", "refuse")
ROOT = Path(__file__).resolve().parents[2]  # where `memory` is imported from


@dataclass(frozen=True)
class ReadBudget:
    seconds: float = 10.0  # wall clock for one file, from the worker's start
    memory_bytes: int = 512 * 1024 * 1024  # the worker's address space
    over_time: str = "keep"  # "keep": the text read so far; "refuse"
    readers: int = 2  # workers at once in this process
    wait_seconds: float = 2.0  # for a worker's place, past `readers`


class FileReadersBusy(Exception):
    """Every file reader of this process is busy: nothing was read; try again in `retry_after` s."""

    def __init__(self, readers: int, retry_after: float) -> None:
        super().__init__(f"All {readers} file readers of this server are busy; try the upload again in "
                         f"{math.ceil(retry_after)} s.")
        self.retry_after = retry_after


class OwnReaderBusy(FileReadersBusy):
    """The person's own earlier PDF is still being read: one worker a person at a time."""

    def __init__(self, retry_after: float) -> None:
        Exception.__init__(self, f"Your previous PDF is still being read; send the next one in "
                                 f"{math.ceil(retry_after)} s.")
        self.retry_after = retry_after


@cache
def _reader_places(readers: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(max(1, readers))


_reading: set[str] = set()  # the owners holding a worker now
_reading_lock = threading.Lock()


@dataclass
class _Progress:
    pages: int | None = None  # known once the PDF is open
    texts: list[str] = field(default_factory=list)

    def kept(self, max_chars: int, note: str) -> FileText:
        text = "\n\n".join(t for t in self.texts if t)[:max_chars]
        return FileText(PDF, text, pdf_extraction(self.pages or 0, len(self.texts), note))


def file_text_within(data: bytes, *, declared_type: str = "", max_chars: int, max_pixels: int,
                     budget: ReadBudget, owner: str | None = None) -> FileText:
    """file_text, with a PDF read in a worker within `budget`; FileTypeError when it
    cannot be read, when it is past a limit, or (unless over_time is "keep" and the PDF was opened)
    when reading it takes longer than the budget. `owner`: whose file it is (module doc)."""
    if media_type_of(data) != PDF:
        return file_text(data, declared_type=declared_type, max_chars=max_chars, max_pixels=max_pixels)
    retry_after = max(1.0, budget.seconds)
    if owner is not None:
        with _reading_lock:
            if owner in _reading:
                log.warning("event=file_reader_own_busy owner=%s", owner)
                raise OwnReaderBusy(retry_after)
            _reading.add(owner)
    try:
        places = _reader_places(budget.readers)
        if not places.acquire(timeout=max(0.0, budget.wait_seconds)):
            log.warning("event=file_readers_busy readers=%s", budget.readers)
            raise FileReadersBusy(budget.readers, retry_after=retry_after)
        try:
            return _read_pdf(data, declared_type=declared_type, max_chars=max_chars, max_pixels=max_pixels,
                             budget=budget)
        finally:
            places.release()
    finally:
        if owner is not None:
            with _reading_lock:
                _reading.discard(owner)


def _read_pdf(data: bytes, *, declared_type: str, max_chars: int, max_pixels: int, budget: ReadBudget) -> FileText:
    request = {"declared_type": declared_type, "max_chars": max_chars, "max_pixels": max_pixels,
               "memory_bytes": budget.memory_bytes, "cpu_seconds": math.ceil(budget.seconds) + 1}
    started = time.monotonic()
    worker = _worker_start(data, request)
    progress = _Progress()
    try:
        with closing(_events(worker, deadline=started + budget.seconds)) as events:
            for event in events:
                if "pages" in event:
                    progress.pages = event["pages"]
                elif "page" in event:
                    progress.texts.append(event["page"])
                elif "done" in event:
                    return FileText(**event["done"])
                elif "refused" in event:
                    raise FileTypeError(event["refused"])
                else:  # its output closed without a result: it died (killed past its memory or CPU limit)
                    log.warning("file reader stopped with exit code %s", worker.wait())
                    raise FileTypeError(f"Reading it was stopped past the reader's limits "
                                        f"({budget.memory_bytes // 2**20} MB of memory, {budget.seconds:g} s).")
        return _over_time(progress, budget, max_chars)
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait()
        worker.stdout.close()


def _worker_start(data: bytes, request: dict) -> subprocess.Popen:
    """The worker, reading `data` from a temporary file as its stdin."""
    with tempfile.TemporaryFile() as source:
        source.write(data)
        source.seek(0)
        try:
            return subprocess.Popen([sys.executable, "-m", "memory.adapters.file_reader", json.dumps(request)],
                                    stdin=source, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
                                    env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
        except OSError as error:  # out of processes or memory: the server's state, not the file's
            log.error("file reader could not start: %s", error)
            raise FileTypeError(f"The server could not start its file reader ({error.strerror or error}); "
                                "try again later.") from None


def _events(worker: subprocess.Popen, *, deadline: float):
    """The worker's JSON lines, then {"closed": true} if it closes its output before the deadline."""
    pending = b""
    with selectors.DefaultSelector() as selector:
        selector.register(worker.stdout, selectors.EVENT_READ)
        while (remaining := deadline - time.monotonic()) > 0:
            if not selector.select(remaining):
                continue
            chunk = os.read(worker.stdout.fileno(), 1 << 16)
            if not chunk:
                yield {"closed": True}
                return
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                try:
                    yield json.loads(line)
                except ValueError:  # not ours: something in the reader printed to stdout
                    log.warning("file reader wrote %r", line[:200])


def _over_time(progress: _Progress, budget: ReadBudget, max_chars: int) -> FileText:
    if budget.over_time == "keep" and progress.pages is not None:
        log.info("file reading stopped at its budget: %d of %d pages read", len(progress.texts), progress.pages)
        return progress.kept(max_chars, f"reading stopped after {budget.seconds:g} s")
    read = f" ({len(progress.texts)} of {progress.pages} pages read)" if progress.pages is not None else ""
    raise FileTypeError(f"Reading it takes longer than the {budget.seconds:g} s a file may take{read}.")


# ------------------------------------------------------------------ the worker

def _emit(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _on_page(pages: int, text: str | None) -> None:
    _emit({"pages": pages} if text is None else {"page": text})


def main() -> None:
    import resource

    request = json.loads(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (request["memory_bytes"], request["memory_bytes"]))
    # The caller's clock stops it first; this stops it should the caller be gone.
    resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_seconds"], request["cpu_seconds"] + 1))
    try:
        data = sys.stdin.buffer.read()
        found = file_text(data, declared_type=request["declared_type"], max_chars=request["max_chars"],
                          max_pixels=request["max_pixels"], on_page=_on_page)
        _emit({"done": asdict(found)})
    except FileTypeError as error:
        _emit({"refused": str(error)})
    except MemoryError:
        _emit({"refused": f"Reading it needs more than {request['memory_bytes'] // 2**20} MB of memory."})
    except Exception as error:  # a reader's bug met by a hostile file: refused, never a server error
        _emit({"refused": f"The file cannot be read: {type(error).__name__}: {error}"})


if __name__ == "__main__":
    main()
