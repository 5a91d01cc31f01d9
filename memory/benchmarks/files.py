"""`manage.py bench files`: what files attached to turns cost.

Generates three files (nothing is read from disk or downloaded): a text file of --text-kb
kilobytes of words, a PDF of --pdf-pages pages of text (written by `pdf_document`, below), and a
noisy 1024x768 PNG. Then, in one isolated run (common.bench_env: a fresh database, private vectors,
maintenance inline):

- reading each file: file_prepare (the type from the bytes, the text extracted, the CIDv1 of the
  bytes), --repeat times;
- a whole turn, offline engine, maintenance included: without files (the baseline of the ratios)
  and carrying a text file, a PDF or an image (its upload timed apart; other files each turn), --turns of each,
  alternating so that a slower stretch of the machine falls on all of them alike. "reply" is the
  time until the reply's last token (what the person waits for; maintenance runs after it, in a
  worker when deployed), "turn" the whole call with maintenance inline.
"""

from __future__ import annotations

import io
import random
import sys
import time
import zlib
from collections.abc import Sequence
from functools import partial

from memory.benchmarks import common

WORDS = ("harbour", "ferry", "ticket", "island", "morning", "bread", "market", "lemon", "river", "bridge",
         "letter", "garden", "concert", "cello", "sister", "recipe", "flour", "train", "station", "museum")


def add_arguments(parser) -> None:
    parser.add_argument("--turns", type=int, default=15, help="turns of each kind timed (default 15)")
    parser.add_argument("--repeat", type=int, default=10, help="times each file is read (default 10)")
    parser.add_argument("--text-kb", type=int, default=256, help="size of the text file in kB (default 256)")
    parser.add_argument("--pdf-pages", type=int, default=50, help="pages of the PDF (default 50)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated words (default 7)")


def pdf_document(pages: Sequence[Sequence[str]]) -> bytes:
    """A PDF whose pages show the given lines in Helvetica (compressed content streams, a correct
    cross-reference table): what a word processor's "save as PDF" holds for plain text."""
    font = 3 + 2 * len(pages)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
                   b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(len(pages))), len(pages))]
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 11 Tf", "72 740 Td", "13 TL"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops += [f"({escaped}) Tj", "T*"]
        stream = zlib.compress("\n".join([*ops, "ET"]).encode("latin-1"))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font, 4 + 2 * i))
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return pdf_of(objects)


def pdf_of(objects: Sequence[bytes]) -> bytes:
    """A PDF of these objects (1 the catalog) with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "."


def sample_files(*, text_kb: int, pdf_pages: int, seed: int) -> dict[str, tuple[str, bytes]]:
    """{label: (file name, bytes)} for the text file, the PDF and the image."""
    from PIL import Image

    rng = random.Random(seed)
    text = bytearray()
    while len(text) < text_kb * 1024:
        text += (_sentence(rng) + "\n").encode()
    pdf = pdf_document([[_sentence(rng) for _ in range(40)] for _ in range(pdf_pages)])
    image = Image.frombytes("RGB", (1024, 768), rng.randbytes(1024 * 768 * 3))
    png = io.BytesIO()
    image.save(png, format="PNG")
    return {"text": ("notes.txt", bytes(text[:text_kb * 1024])), "pdf": ("report.pdf", pdf),
            "image": ("photo.png", png.getvalue())}


def _time_reads(files: dict[str, tuple[str, bytes]], repeat: int, show: bool) -> dict[str, dict]:
    from memory.services.files import file_prepare

    out = {}
    for label, (name, data) in common.progress_iter(list(files.items()), "reading files", show):
        times, prepared = [], None
        for _ in range(repeat):
            elapsed, prepared = common.timed_ms(partial(file_prepare, name=name, data=data))
            times.append(elapsed)
        out[label] = {"bytes": len(data), "media_type": prepared.media_type, "text_chars": len(prepared.text),
                      "extraction": prepared.extraction, **common.summarize_ms(times)}
    return out


def _mark(times: list[float], _token: str) -> None:
    times.append(time.perf_counter())


def _time_turns(env, options: dict, kinds_of_files: Sequence[str], show: bool) -> dict[str, dict]:
    from memory.services.files import file_upload
    from memory.services.turns import turn_run

    user = env.make_user("files")
    kinds = ["none", *kinds_of_files]
    turns = options["turns"]
    turn_ms: dict[str, list[float]] = {kind: [] for kind in kinds}
    reply_ms: dict[str, list[float]] = {kind: [] for kind in kinds}
    upload_ms: dict[str, list[float]] = {kind: [] for kind in kinds_of_files}
    rng = random.Random(11)
    bar = common.progress(turns * len(kinds), "turns", show)
    for i in range(turns):
        # Other files every turn, as a person sends them (the same file each time would pile its
        # pages into one ever larger topic segment).
        files = sample_files(text_kb=options["text_kb"], pdf_pages=options["pdf_pages"], seed=options["seed"] + 1 + i)
        for kind in kinds:
            cids = []
            if kind != "none":
                name, data = files[kind]
                elapsed, row = common.timed_ms(partial(file_upload, user=user, name=name, data=data))
                upload_ms[kind].append(elapsed)
                cids = [row.content_cid]
            message = f"Turn {i}: {_sentence(rng)}"
            tokens: list[float] = []
            started = time.perf_counter()
            elapsed, _ = common.timed_ms(partial(turn_run, user=user, message=message, files=cids,
                                                 on_token=partial(_mark, tokens)))
            turn_ms[kind].append(elapsed)
            reply_ms[kind].append((tokens[-1] - started) * 1000.0)
            bar.update(1)
    bar.close()
    return {kind: {**common.summarize_ms(turn_ms[kind]), "reply": common.summarize_ms(reply_ms[kind]),
                   "upload": common.summarize_ms(upload_ms[kind]) if kind in upload_ms else None}
            for kind in kinds}


def run(options: dict, stdout) -> dict:
    from memory.adapters import configured

    show = not options.get("no_progress")
    configured.embedder().embed(["warm up"])
    files = sample_files(text_kb=options["text_kb"], pdf_pages=options["pdf_pages"], seed=options["seed"])
    reads = _time_reads(files, options["repeat"], show)
    with common.bench_env() as env:
        turns = _time_turns(env, options, list(files), show)
    keys = ("turns", "repeat", "text_kb", "pdf_pages", "seed")
    result = {"benchmark": "files", "date": common.today(), "machine": common.machine(),
              "options": {k: options[k] for k in keys}, "reads": reads, "turns": turns}
    if show:
        print(render(result), file=sys.stderr, flush=True)
    return result


def render(result: dict) -> str:
    reads = common.render_table(
        ["file", "bytes", "type", "text chars", "how", "p50", "p95", "n"],
        [[label, r["bytes"], r["media_type"], r["text_chars"], r["extraction"], r["p50"], r["p95"], r["n"]]
         for label, r in result["reads"].items()],
        title="Reading a file (type from the bytes, text, CID), ms")
    none = result["turns"]["none"]
    rows = []
    for kind, t in result["turns"].items():
        upload, reply = t["upload"], t["reply"]
        rows.append([kind, upload["p50"] if upload else "-", reply["p50"], reply["p95"],
                     f"{reply['p50'] / none['reply']['p50']:.2f}" if none["reply"]["p50"] else "-",
                     t["p50"], t["p95"], f"{t['p50'] / none['p50']:.2f}" if none["p50"] else "-", t["n"]])
    turns = common.render_table(
        ["turn carrying", "upload p50", "reply p50", "reply p95", "reply / no file", "turn p50", "turn p95",
         "turn / no file", "n"], rows,
        title="A turn (offline engine): until the reply's last token, and whole with maintenance inline, ms")
    return "\n\n".join([reads, turns, f"{result['date']}, {result['machine']}."]) + "\n"
