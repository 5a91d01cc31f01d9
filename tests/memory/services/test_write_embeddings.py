"""A write embeds each of its texts once, in one call: the page's text, its utterances and their
contexts. A segment's vector is derived from its pages' vectors (issue 37, item 2)."""

from __future__ import annotations

import numpy as np
import pytest

from memory.adapters import configured
from memory.models import DialoguePage, Segment, Tier, bytes_to_vector
from memory.services.maintenance import maintenance_run
from memory.services.pages import page_reply_store, page_start
from memory.services.utterances import turn_point_id
from tests.memory.services.conftest import unit

pytestmark = pytest.mark.usefixtures("memory_env")


def test_a_live_write_embeds_its_text_utterances_and_contexts_once_in_one_call(make_user, counting, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    first = page_start(user=user, query="I adopted a puppy named Max.")
    page_reply_store(page=first, response="How is Max settling in?", reply_model="test")
    maintenance_run(user_id=user.pk)
    counting.calls.clear()

    page = page_start(user=user, query="Max chewed my shoes again.")
    page_reply_store(page=page, response="Get Max some chew toys.", reply_model="test")
    report = maintenance_run(user_id=user.pk)  # the first page moves into a segment: nothing embedded

    name = user.get_username()
    a, b = f"{name}: Max chewed my shoes again.", "assistant: Get Max some chew toys."
    before = "assistant: How is Max settling in?"
    text = "Max chewed my shoes again.\nGet Max some chew toys."
    assert counting.calls == [[text, a, f"{before}\n{a}", b, f"{a}\n{b}"]]
    assert report.moved == 1 and report.turns_indexed == 0  # indexed with the reply
    page.refresh_from_db()
    assert page.turns_indexed and page.tier == Tier.STM
    v = dict(zip(counting.calls[0], counting.inner.embed(counting.calls[0]), strict=True))
    assert np.allclose(bytes_to_vector(page.embedding), unit(v[text]), atol=1e-6)  # its own text's
    index = configured.vector_index()
    assert index.count(user_id=str(user.pk), kind="turn") == 4
    stored = index.get_payloads(user_id=str(user.pk), ids=[turn_point_id(page, 0)], fields=("page_id",))
    assert stored[turn_point_id(page, 0)]["page_id"] == str(page.id)


def test_a_segment_vector_is_the_unit_mean_of_the_pages_its_summary_is_made_of(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    for query, reply in (("I adopted a puppy named Max.", "A puppy! How is Max?"),
                         ("Max the puppy chewed my shoes.", "Puppies chew; get Max toys."),
                         ("Anything else?", "")):
        page = page_start(user=user, query=query)
        page_reply_store(page=page, response=reply, reply_model="test")
        maintenance_run(user_id=user.pk)
    moved = list(DialoguePage.objects.filter(user=user, tier=Tier.MTM).order_by("seq"))
    assert len(moved) == 2 and moved[0].segment_id == moved[1].segment_id
    segment = Segment.objects.get(id=moved[0].segment_id)
    expected = unit(np.add(bytes_to_vector(moved[0].embedding), bytes_to_vector(moved[1].embedding)))
    assert np.allclose(bytes_to_vector(segment.embedding), expected, atol=1e-6)
