"""A person's memory to carry away: one zip any computer opens, that imports back.

- `index.html`: a page to read in any browser, everything kept about the person: facts with the
  words that told them and their periods, earlier facts, profile, traits, the assistant's notes,
  every conversation turn, and the files.
- `memory.json`: the same, as data (memory/selectors/export.py).
- `files/`: the files attached to turns, under their names.
- `memoryos.car`: the verified archive (memory/services/portable.py): what an import restores,
  every block checked as ever.

`memory_import_bundle` takes the zip (or the bare archive) back: in the browser's import page
and with `manage.py memory_import`.
"""

from __future__ import annotations

import html
import io
import json
import zipfile
from typing import Any, BinaryIO

from memory.services.common import MemoryInputError
from memory.services.files import blob_read
from memory.services.portable import Summary, memory_export, memory_import

ARCHIVE = "memoryos.car"
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # a bundle's archive, once unpacked


def _page(data: dict[str, Any]) -> str:
    e = html.escape

    def items(rows, line) -> str:
        return "<ul>" + "".join(f"<li>{line(r)}</li>" for r in rows) + "</ul>" if rows else "<p>None.</p>"

    def told(f) -> str:
        words = "".join(f"<br><small>you said on {e(t['at'][:10])}: “{e(t['words'])}”</small>" for t in f["told"])
        period = f" <small>({e(f['period'])})</small>" if f["period"] else ""
        return f"{e(f['fact'][:1].upper() + f['fact'][1:])}{period}{words}"

    def linked(f) -> str:
        return '<a href="{}">{}</a> ({})'.format(e(f["path"]), e(f["name"]), e(f["type"]))

    turns = "".join(f"<tr><td>{t['turn']}</td><td>{e(t['at'][:16].replace('T', ' '))}</td><td>{e(t['you'])}</td>"
                    f"<td>{e(t['assistant'])}</td></tr>" for t in data["conversation"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MemoryOS: what is kept about {e(data['person'])}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}}
table{{border-collapse:collapse;width:100%}}td{{border-top:1px solid #ccc;padding:.3rem;vertical-align:top}}
small{{color:#555}}</style></head><body>
<h1>What MemoryOS kept about {e(data['person'])}</h1>
<p>Exported {e(data['exported_at'][:16].replace('T', ' '))} UTC. To bring it back, import this zip on the
“Bring your history” page (or <code>manage.py memory_import</code>); <code>memoryos.car</code> inside is
the verified archive, <code>memory.json</code> the same as data.</p>
<h2>Facts</h2>{items(data['facts'], told)}
<h2>Earlier facts</h2>{items(data['earlier_facts'], told)}
<h2>Profile</h2>{items(data['profile'], lambda v: f"{e(v['what'])}: {e(v['value'])}")}
<h2>Traits</h2>{items(data['traits'], lambda t: f"{e(t['trait'])} ({t['score']})")}
<h2>The assistant's notes</h2>{items(data['assistant_notes'], lambda n: e(n['note']))}
<h2>Files</h2>{items(data['files'], linked)}
<h2>Conversation ({len(data['conversation'])} turns)</h2>
<table><tr><th>#</th><th>when</th><th>you</th><th>assistant</th></tr>{turns}</table>
</body></html>
"""


def memory_export_bundle(*, user, out: BinaryIO, data: dict[str, Any]) -> Summary:
    """Write the person's memory to `out` as the zip of the module doc, `data` read by its caller
    (memory/selectors/export.py export_data); what the archive holds."""
    archive = io.BytesIO()
    summary = memory_export(user=user, out=archive)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("index.html", _page(data))
        bundle.writestr("memory.json", json.dumps(data, ensure_ascii=False, indent=1))
        for entry in data["files"]:
            try:
                bundle.writestr(entry["path"], blob_read(entry["content_id"]))
            except OSError:  # a file whose bytes are gone is listed, not carried
                continue
        bundle.writestr(ARCHIVE, archive.getvalue())
    return summary


def is_bundle(stream: BinaryIO) -> bool:
    """Whether a seekable stream is this module's zip (it holds memoryos.car); the stream is rewound."""
    try:
        if stream.read(4) != b"PK\x03\x04":
            return False
        stream.seek(0)
        return ARCHIVE in zipfile.ZipFile(stream).namelist()
    except (zipfile.BadZipFile, OSError):
        return False
    finally:
        stream.seek(0)


def memory_import_bundle(*, user, source: BinaryIO, into_existing: bool = False) -> Summary:
    """Restore an export: this module's zip, or the bare archive (memory/services/portable.py
    memory_import, whose checks refuse a tampered one)."""
    if not is_bundle(source):
        return memory_import(user=user, source=source, into_existing=into_existing)
    with zipfile.ZipFile(source) as bundle:
        info = bundle.getinfo(ARCHIVE)
        if info.file_size > MAX_ARCHIVE_BYTES:
            raise MemoryInputError(f"The export's archive is {info.file_size:,} bytes; at most "
                                   f"{MAX_ARCHIVE_BYTES:,} are read.")
        try:
            with bundle.open(info) as archive:
                data = archive.read(MAX_ARCHIVE_BYTES + 1)
        except (zipfile.BadZipFile, OSError) as exc:
            raise MemoryInputError(f"The export cannot be read: {exc}") from None
    return memory_import(user=user, source=io.BytesIO(data), into_existing=into_existing)
