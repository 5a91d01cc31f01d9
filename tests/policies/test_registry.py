"""The memory models' registry: what each model plugs in, and page work only where it is wanted."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memory.policies import MODELS, registry
from memory.recall.base import get_policy, policy_names


@pytest.fixture
def hooks_kept():
    saved = dict(registry._page_hooks)  # noqa: SLF001  (the test restores what it registers)
    yield
    registry._page_hooks.clear()  # noqa: SLF001
    registry._page_hooks.update(saved)  # noqa: SLF001


def test_the_installed_models_register_their_policies_and_hooks():
    found = registry.registered()
    assert set(policy_names()) >= {"memoria", "exocortex", "generative_agents"}
    assert all(type(get_policy(name)).__module__.startswith(MODELS) for name in ("memoria", "exocortex",
                                                                              "generative_agents"))
    # Memoria's graph stays whole whatever the policy: a sona switched to Memoria later finds its pages.
    assert found["page_stored"]["memoria_sona_membership"].always
    assert list(found["maintenance"]) == ["recollections"]
    assert set(found["bench"]) == {"memoria"}
    assert set(found["ablation"]) == {"memoria-terms", "exocortex-decay"}
    assert any(pattern.name == "decay_settings" for pattern in registry.urlpatterns())


def test_page_work_runs_for_the_policy_in_use_or_when_a_model_always_wants_pages(hooks_kept):
    calls, asked = [], []
    registry.load()
    registry._page_hooks.clear()  # noqa: SLF001
    registry.on_page_stored("theirs", lambda **kw: calls.append("theirs"), policies=frozenset({"theirs"}))
    registry.on_page_stored("always", lambda **kw: calls.append("always"), always=True)

    def policy(name):
        return lambda: asked.append(name) or name

    page = SimpleNamespace()
    registry.page_stored(page=page, node=None, text="", new=True, policy=policy("hybrid"))
    assert calls == ["always"]
    registry.page_stored(page=page, node=None, text="", new=True, policy=policy("theirs"))
    assert calls == ["always", "theirs", "always"]
    assert asked == ["hybrid", "theirs"]  # asked once a page, and only because a hook depends on it
