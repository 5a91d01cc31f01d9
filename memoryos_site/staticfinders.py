"""Static files that come from installed packages rather than from static/: plotly.js, which the
plotly package ships, served as vendor/plotly.min.js by the app itself (no CDN)."""

from __future__ import annotations

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

VENDOR = {"vendor/plotly.min.js": Path(plotly.__file__).parent / "package_data" / "plotly.min.js"}


class VendorFinder(BaseFinder):
    def check(self, **kwargs):
        return [f"{name}: missing {path}" for name, path in VENDOR.items() if not path.exists()]

    def find(self, path, find_all=False, **kwargs):
        found = str(VENDOR[path]) if path in VENDOR else None
        if find_all:
            return [found] if found else []
        return found

    def list(self, ignore_patterns):
        for name, path in VENDOR.items():
            storage = FileSystemStorage(location=str(path.parent))
            storage.prefix = str(Path(name).parent)
            yield path.name, storage
