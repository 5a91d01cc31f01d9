"""Utterance points: each distinct text embedded once; texts embedded already are not embedded again."""

from __future__ import annotations

import datetime as dt
import io

import numpy as np
from django.core.management import call_command

from memory.adapters import configured
from memory.engine.hybrid_scoring import HybridParams
from memory.models import DialoguePage
from memory.services.utterances import turn_points
from tests.memory.services.conftest import unit

AT = dt.datetime(2023, 5, 8, 13, 0, tzinfo=dt.UTC)


def page(seq: int, *said: tuple[str, str]) -> DialoguePage:
    return DialoguePage(user_id=7, seq=seq, timestamp=AT, tier="stm",
                        utterances=[{"id": f"D1:{seq}.{i}", "speaker": who, "text": text}
                                    for i, (who, text) in enumerate(said)])


def test_each_text_is_embedded_once_and_the_context_is_the_joined_text(counting):
    pages = [page(1, ("Ana", "I adopted a puppy."), ("Ben", "What breed?")),
             page(2, ("Ana", "I adopted a puppy."), ("Ben", "What breed?"))]
    points = turn_points(pages, None, HybridParams(context_mix=0.5))

    a, b = "Ana: I adopted a puppy.", "Ben: What breed?"
    assert counting.texts == [a, b, f"{a}\n{b}", f"{b}\n{a}"]  # the repeated ones once
    v = {text: np.asarray(vector) for text, vector in
         zip(counting.texts, counting.inner.embed(counting.texts), strict=True)}
    # hand-computed: the first turn has no context; the others unit(v + 0.5 · v(previous + turn))
    expected = [unit(v[a]), unit(v[b] + 0.5 * v[f"{a}\n{b}"]), unit(v[a] + 0.5 * v[f"{b}\n{a}"]),
                unit(v[b] + 0.5 * v[f"{a}\n{b}"])]
    assert [p.payload["pos"] for p in points] == [0, 1, 0, 1]
    for point, want in zip(points, expected, strict=True):
        assert np.allclose(point.vector, want, atol=1e-6)


def test_the_utterance_before_is_context_and_known_vectors_are_not_embedded_again(counting):
    before = {"id": "D1:0", "speaker": "Ben", "text": "How was the weekend?"}
    first = page(3, ("Ana", "We hiked the ridge trail on Saturday."))
    texts = ["Ana: We hiked the ridge trail on Saturday.",
             "Ben: How was the weekend?\nAna: We hiked the ridge trail on Saturday."]
    known = {text: np.asarray(v) for text, v in zip(texts, counting.inner.embed(texts), strict=True)}

    points = turn_points([first], before, HybridParams(context_mix=0.5), known)

    assert counting.texts == []
    assert np.allclose(points[0].vector, unit(known[texts[0]] + 0.5 * known[texts[1]]), atol=1e-6)
    assert points[0].id == str((7 << 40) | (3 << 8))


def test_each_point_says_whether_its_turn_asks_and_ends_its_page(counting):
    pages = [page(1, ("Ana", "I adopted a puppy."), ("Ben", "What breed? A terrier?")),
             page(2, ("Ana", "Is it yours?"))]
    points = turn_points(pages, None, HybridParams())

    assert [(p.payload["asks"], p.payload["last"]) for p in points] == [(False, False), (True, True), (True, True)]


def test_the_backfill_writes_the_flags_into_points_indexed_before_them(make_user, memory_env):
    from memory.formats.locomo import parse_sample
    from memory.services.importing import conversation_import
    from memory.services.utterances import turn_flags_backfill, turn_point_id

    user = make_user()
    conversation_import(user=user, conversation=parse_sample({"sample_id": "p", "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "Any plans?"},
                      {"speaker": "Ben", "dia_id": "D1:2", "text": "A trip to Lisbon."},
                      {"speaker": "Ana", "dia_id": "D1:3", "text": "Nice."}]}}, 0))
    pages = list(DialoguePage.objects.filter(user=user, turns_indexed=True).order_by("seq"))
    index, uid = configured.vector_index(), str(user.pk)
    ids = [turn_point_id(p, pos) for p in pages for pos in range(len(p.utterances))]
    written = index.get_payloads(user_id=uid, ids=ids, fields=("asks", "last"))
    old = turn_points(pages, None, HybridParams())  # the same points as a store before the flags held them
    for point in old:
        del point.payload["asks"], point.payload["last"]
    index.upsert(old)
    assert index.get_payloads(user_id=uid, ids=ids, fields=("asks", "last")) == {key: {} for key in ids}

    assert turn_flags_backfill(user_id=user.pk) == len(pages)
    assert index.get_payloads(user_id=uid, ids=ids, fields=("asks", "last")) == written
    assert [written[key]["asks"] for key in ids] == [True, False, False]
    index.upsert(old)
    out = io.StringIO()
    call_command("backfill_turn_flags", stdout=out)  # every user's, then the shard is optimised
    assert index.get_payloads(user_id=uid, ids=ids, fields=("asks", "last")) == written
    assert out.getvalue().startswith(f"{len(pages)} pages' turn points flagged")
