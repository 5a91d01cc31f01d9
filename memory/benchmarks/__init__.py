"""Benchmarks behind `manage.py bench <name>`; each module exposes add_arguments, run and render.

retrieval: LoCoMo evidence recall against baselines · scale: cost as a store grows ·
qa: LoCoMo answer quality with an LLM · ws: the websocket chat under concurrent sessions.
Shared helpers are in common.py.
"""
