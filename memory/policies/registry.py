"""The hooks a memory model plugs into the core with, and the one place that loads the models.

- `on_page_stored(hook, policies=..., always=...)`: work on a page once its reply is stored, inside
  the reply's transaction. It runs when the page's turn was recalled by one of the model's policies,
  or on every page when the model says it `always` needs them (its data must be whole when a user
  switches to it later).
- `on_maintenance(name, step)`: a step run at the end of a user's maintenance run, after the
  tiers' work, for a live turn's context (a bulk import leaves them out).
- `on_bench(name, module, summary)`: a `manage.py bench <name>` subcommand kept in the model's
  package; `on_ablation(name, summary, switch_off, applies)`: an ablation of `bench retrieval`.
- `on_urls(patterns)`: a model's pages (memory/web/urls.py includes them); `on_page_context(page,
  context, template=...)`: what a model adds to a core page's template context
  (`context(user=...) -> dict`) and the section template the page includes (`model_sections`).
- After-reply work is registered by name with memory.services.policy_work.register_after_reply
  and asked for by a policy's `after_reply` declaration.

`load()` imports each package in memory.policies.MODELS once and calls its `register()`, before any
hook is read: the package's `__init__` stays light, so importing one of its modules from another
package (an after-reply task) does not register anything half-imported.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory.policies import MODELS

PageHook = Callable[..., None]  # (*, page, node, text: str, new: bool) -> None
MaintenanceStep = Callable[..., list]  # (*, user_id: int, now) -> what it stored


@dataclass(frozen=True)
class _PageHook:
    work: PageHook
    policies: frozenset[str]
    always: bool


_page_hooks: dict[str, _PageHook] = {}
_maintenance_steps: dict[str, MaintenanceStep] = {}
_benches: dict[str, tuple[str, str]] = {}  # name -> (module, summary)
# name -> (summary, a context manager factory that switches the term off, which policies it applies to)
_urls: list = []
_page_contexts: dict[str, list[tuple[Callable[..., dict], str | None]]] = {}
_ablations: dict[str, tuple[str, Callable[[], Any], Callable[[str], bool]]] = {}
_loaded = False
_load_lock = threading.Lock()


def load() -> None:
    """Import the installed models once; each registers its policies and hooks as it is imported."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if not _loaded:
            for module in MODELS:
                importlib.import_module(module).register()
            _loaded = True


def on_page_stored(name: str, work: PageHook, *, policies: frozenset[str] = frozenset(), always: bool = False) -> None:
    """Run `work` on each stored page whose turn one of `policies` recalled, or on every page (`always`)."""
    _page_hooks[name] = _PageHook(work=work, policies=frozenset(policies), always=always)


def on_maintenance(name: str, step: MaintenanceStep) -> None:
    _maintenance_steps[name] = step


def on_bench(name: str, module: str, summary: str) -> None:
    _benches[name] = (module, summary)


def on_ablation(name: str, summary: str, switch_off: Callable[[], Any], applies: Callable[[str], bool]) -> None:
    _ablations[name] = (summary, switch_off, applies)


def on_urls(patterns: list) -> None:
    _urls.extend(patterns)


def on_page_context(page: str, context: Callable[..., dict], *, template: str | None = None) -> None:
    _page_contexts.setdefault(page, []).append((context, template))


def page_stored(*, page, node, text: str, new: bool, policy: Callable[[], str]) -> None:
    """The models' work on a page whose reply was just stored; `policy` names the policy in use for
    the page's turn, asked only when a hook depends on it."""
    load()
    in_use: str | None = None
    for hook in _page_hooks.values():
        if not hook.always:
            in_use = policy() if in_use is None else in_use
            if in_use not in hook.policies:
                continue
        hook.work(page=page, node=node, text=text, new=new)


def maintenance_steps() -> dict[str, MaintenanceStep]:
    """The models' maintenance steps by name, in the order they registered."""
    load()
    return dict(_maintenance_steps)


def benches() -> dict[str, tuple[str, str]]:
    """The models' benchmarks: name -> (module, one line for --help)."""
    load()
    return dict(_benches)


def ablations() -> dict[str, tuple[str, Callable[[], Any], Callable[[str], bool]]]:
    """The models' ablations of `bench retrieval`, as memory/benchmarks/retrieval.py's ABLATIONS has them."""
    load()
    return dict(_ablations)


def urlpatterns() -> list:
    """The models' URL patterns, for memory/web/urls.py."""
    load()
    return list(_urls)


def page_context(page: str, *, user) -> dict:
    """What the models add to a page's template context, for `user`; `model_sections` lists the
    templates the page includes, in the order the models registered."""
    load()
    context: dict = {"model_sections": []}
    for part, template in _page_contexts.get(page, ()):
        context.update(part(user=user))
        if template:
            context["model_sections"].append(template)
    return context


def registered() -> dict[str, Any]:
    """What the models registered, by hook (for tests and the inspector)."""
    load()
    return {"page_stored": dict(_page_hooks), "maintenance": dict(_maintenance_steps), "bench": dict(_benches),
            "ablation": dict(_ablations)}
