"""Peak memory while an upload is read (issue 49, finding 1): zips of about 0.5 MB whose
conversations.json inflates to about 500 MB (or 1 GB), each read as the upload's request reads it
(memory/services/history_import.py history_read), alone and four at once through the page's reader
turns (MEMORYOS_HISTORY_IMPORT_READERS). Peak RSS (getrusage) minus the RSS before the read; a
refusal is the expected outcome, and its reason is printed.

    .venv/bin/python scripts/upload_bombs.py [DIR]

The zips are written once into DIR (default: a folder in the system's temporary directory).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

MB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[1]


def _conversation(number: int, text: str) -> str:
    def node(ident, parent, children, role, seconds):
        message = None if role is None else {
            "id": f"m{number}{ident}", "author": {"role": role}, "create_time": 1_700_000_000 + number + seconds,
            "content": {"content_type": "text", "parts": [text]}}
        return {"id": ident, "parent": parent, "children": children, "message": message}
    return json.dumps({"id": f"c{number}", "title": f"Chat {number}", "create_time": 1_700_000_000 + number,
                       "current_node": "b", "mapping": {"root": node("root", None, ["a"], None, 0),
                                                        "a": node("a", "root", ["b"], "user", 0),
                                                        "b": node("b", "a", [], "assistant", 1)}})


def _ordinary():
    yield "["
    size, number = 0, 0
    while size < 500 * MB:
        chunk = ("," if number else "") + _conversation(number, "I went hiking in the Alps last summer. " * 40)
        yield chunk
        size, number = size + len(chunk), number + 1
    yield "]"


def _string():
    yield '[{"id": "x", "mapping": {"a": "'
    yield from ("a" * MB for _ in range(500))
    yield '"}, "current_node": "a"}]'


def _deep():
    yield from ("[" * MB for _ in range(500))


def _empties():
    yield '[{"id": "x", "mapping": {}, "current_node": "a", "junk": ['
    yield from ("[]," * (MB // 3) for _ in range(500))
    yield "[]]}]"


def _long_messages():
    yield "["
    yield from (("," if n else "") + _conversation(n, "Long notes on the trip. " * 1800) for n in range(12_000))
    yield "]"


BOMBS = {"ordinary": _ordinary, "string": _string, "deep": _deep, "empties": _empties, "long": _long_messages}


def _write(path: Path, chunks) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, \
            archive.open("conversations.json", "w", force_zip64=True) as member:
        for chunk in chunks:
            member.write(chunk.encode())


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS"))


def _measure(paths: list[str]) -> None:
    """In a process of its own: read each path at once on its own thread, print the peak."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
    import django

    django.setup()
    from memory.services.common import MemoryInputError
    from memory.services.history_import import history_read
    from memory.web.history_import import _reader_turn

    class Person:
        long_term_profile = None

        def get_username(self) -> str:
            return "probe"

    outcomes: list[str] = []

    def one(path: str) -> None:
        turn = _reader_turn()
        turn.acquire()
        try:
            with open(path, "rb") as stream:
                read = history_read(user=Person(), data=stream, name=os.path.basename(path))
            outcomes.append(f"accepted ({read.pages} pages)")
        except MemoryInputError as exc:
            outcomes.append(f"refused: {str(exc).removeprefix('Nothing was imported: ')[:110]}")
        finally:
            turn.release()

    idle, started = _rss_mb(), time.perf_counter()
    threads = [threading.Thread(target=one, args=(path,)) for path in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    names = " + ".join(Path(p).stem for p in paths)
    print(f"{names}: peak {peak - idle:.0f} MB above idle ({idle:.0f} MB), {time.perf_counter() - started:.1f} s")
    for outcome in dict.fromkeys(outcomes):
        print(f"    {outcome}")


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        _measure(sys.argv[2:])
        return
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.gettempdir()) / "memoryos-upload-bombs"
    folder.mkdir(parents=True, exist_ok=True)
    for name, chunks in BOMBS.items():
        if not (folder / f"{name}.zip").exists():
            _write(folder / f"{name}.zip", chunks())
    runs = [[folder / f"{name}.zip"] for name in BOMBS] + [[folder / "long.zip"] * 4,
                                                          [folder / f"{n}.zip" for n in list(BOMBS)[:4]]]
    for paths in runs:  # each in a fresh process: getrusage's peak is the process's whole life
        subprocess.run([sys.executable, __file__, "--measure", *map(str, paths)], cwd=ROOT, check=True,
                       env={**os.environ, "DJANGO_LOG_LEVEL": "WARNING"})


if __name__ == "__main__":
    main()
