"""Re-addressing a segment of N pages after one page joins it: graph._readdress as it was
before branch graph-fast (17c2469, copied below as OLD) against the module's current one, on the
same store, alternating.

Each round: inside readdress_once, the segment's data changes (as _refresh_segment's row_node_put
does), a new page node is put and the segment gets its "contains" edge to it; the exit re-addresses
them and their dependents. Each round runs twice from the same state: the first variant inside a
rolled-back transaction, the second kept (the variant that goes first alternates); both leave the
same nodes, blocks and aliases (checked every round).

Since the page trees (issue 51) the old variant writes the old block format, so the states differ:
`--only new` times the current code alone (run the script on main beside it for the before).

usage: .venv/bin/python scripts/bench_readdress.py N [ROUNDS] [--profile new|old] [--only new]"""
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
import django  # noqa: E402

django.setup()
from django.db import transaction  # noqa: E402

from memory.benchmarks import common, scale  # noqa: E402
from memory.config import memory_params  # noqa: E402
from memory.engine.content_ids import dependency_map  # noqa: E402
from memory.models import MemoryAlias, MemoryEdge, MemoryNode, Segment  # noqa: E402
from memory.services import graph  # noqa: E402


# ------------------------------------------------------------------ 17c2469's _readdress, verbatim: the baseline
def _readdress_old(marked):
    closure, frontier = set(marked), set(marked)
    while frontier:
        found = set()
        for chunk in graph._chunks(frontier):
            found.update(MemoryEdge.objects.filter(target_id__in=chunk).values_list("source_id", flat=True))
        frontier = found - closure
        closure |= frontier
    nodes = {}
    edges = {pk: [] for pk in closure}
    for chunk in graph._chunks(closure):
        nodes.update((n.pk, n) for n in MemoryNode.objects.filter(pk__in=chunk).only(
            "id", "user_id", "kind", "object_id", "cid", "block"))
        for source, relation, weight, target, target_cid in MemoryEdge.objects.filter(
                source_id__in=chunk).values_list("source_id", "relation", "weight", "target_id", "target__cid"):
            edges[source].append((relation, weight, target, target_cid))
    new_cid = {}
    changed = []
    for pk in graph._dependency_order(closure, edges):
        node = nodes[pk]
        if not node.block:
            continue
        cid, block = _block_with_dependencies_old(bytes(node.block), dependency_map(
            (relation, weight, new_cid.get(target, target_cid)) for relation, weight, target, target_cid in edges[pk]))
        new_cid[pk] = cid
        old = marked.get(pk, node.cid)
        if cid != node.cid or block != bytes(node.block) or old != node.cid:
            node.cid, node.block, node.previous_cid = cid, block, old
            changed.append(node)
    _readdress_write_old(changed)


def _block_with_dependencies_old(block, dependencies):
    from memory.engine.content_ids import content_block
    from memory.engine.ipld import node_decode
    node = node_decode(block)
    return content_block(kind=node.kind, data=node.data, timestamp=node.timestamp, dependencies=dependencies)


def _readdress_write_old(changed):
    MemoryNode.objects.bulk_update(changed, ["cid", "block"], batch_size=500)
    moved = [n for n in changed if n.previous_cid != n.cid]
    MemoryAlias.objects.bulk_create([MemoryAlias(user_id=n.user_id, node=n, cid=n.previous_cid)
                                     for n in moved if n.previous_cid], ignore_conflicts=True)
    for node in moved:
        if node.previous_cid:
            MemoryAlias.objects.filter(node=node, cid=node.cid).delete()
    by_model = {}
    for node in moved:
        model = graph.ROW_MODELS.get(node.kind)
        if model is not None and "@" not in node.object_id:
            by_model.setdefault(model, []).append(model(pk=model._meta.pk.to_python(node.object_id), cid=node.cid))
    for model, rows in by_model.items():
        model.objects.bulk_update(rows, ["cid"], batch_size=500)


# ------------------------------------------------------------------ the bench
NEW = graph._readdress
VARIANTS = {"old": _readdress_old, "new": NEW}


def snapshot(user_id):
    nodes = sorted(MemoryNode.objects.filter(user_id=user_id).values_list("id", "cid", "block"))
    aliases = sorted(MemoryAlias.objects.filter(user_id=user_id).values_list("node_id", "cid"))
    rows = sorted(Segment.objects.filter(user_id=user_id).values_list("id", "cid"))
    return nodes, aliases, rows


def round_(user_id, seg_row, k, name, keep, profile=None):
    page_id, at = uuid.UUID(int=k + 1), datetime(2025, 1, 1, tzinfo=UTC) + timedelta(days=k)
    spent = []

    def timed(marked):
        started = time.perf_counter()
        if profile is not None:
            profile.enable()
        VARIANTS[name](marked)
        if profile is not None:
            profile.disable()
        spent.append(time.perf_counter() - started)

    graph._readdress = timed
    try:
        with transaction.atomic():
            with graph.readdress_once():
                seg_row.summary = f"bench summary {k}"
                seg_row.save(update_fields=["summary"])
                seg_node = graph.row_node_put(user_id=user_id, kind=MemoryNode.Kind.SEGMENT, row=seg_row)
                page = graph.node_put(user_id=user_id, kind=MemoryNode.Kind.PAGE, object_id=str(page_id),
                                      data={"query": f"q {k}", "response": f"r {k}"}, timestamp=at)
                graph.edge_put(user_id=user_id, source=seg_node, target=page, relation="contains")
            state = snapshot(user_id)
            if not keep:
                transaction.set_rollback(True)
    finally:
        graph._readdress = NEW
    return spent[0] * 1000, state


def slow_segment_cid(seg_node_pk):
    """The segment's CID from scratch: its block's data with every edge it has now."""
    node = MemoryNode.objects.get(pk=seg_node_pk)
    edges = MemoryEdge.objects.filter(source_id=seg_node_pk).values_list("relation", "weight", "target__cid")
    return _block_with_dependencies_old(bytes(node.block), dependency_map(edges)), node


def main():
    n = int(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 and not sys.argv[2].startswith("-") else 20
    prof_of = sys.argv[sys.argv.index("--profile") + 1] if "--profile" in sys.argv else None
    stm = memory_params().stm_capacity
    with common.bench_env(isolate_db=True, keep=False) as env:
        builder = scale.store_built(env, n + stm, pool=60, noise=0.05, segment_pages=n)
        user_id = builder.user.pk
        seg_row = builder.seg_rows[0]
        seg_node = MemoryNode.objects.get(user_id=user_id, kind="segment", object_id=str(seg_row.pk))
        # A store of many segments has a fact or two extracted from each, not all of them (the
        # stale blocks of the facts cut loose do not matter: they are no longer in the closure).
        keep_dependents = int(sys.argv[sys.argv.index("--dependents") + 1]) if "--dependents" in sys.argv else 2
        dependents = list(MemoryEdge.objects.filter(target=seg_node).order_by("pk").values_list("pk", flat=True))
        MemoryEdge.objects.filter(pk__in=dependents[keep_dependents:]).delete()
        print(f"N={n}: segment edges {MemoryEdge.objects.filter(source=seg_node).count()}, "
              f"dependents {MemoryEdge.objects.filter(target=seg_node).count()}, segments {builder.n_segments}")
        times = {"old": [], "new": []}
        profile = cProfile.Profile() if prof_of else None
        mismatches = 0
        only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
        for k in range(rounds + 2):
            first, second = ("old", "new") if k % 2 == 0 else ("new", "old")
            if only:
                first = second = only
            ms1, state1 = round_(user_id, seg_row, k, first, keep=False,
                                 profile=profile if first == prof_of and k >= 2 else None)
            ms2, state2 = round_(user_id, seg_row, k, second, keep=True,
                                 profile=profile if second == prof_of and k >= 2 else None)
            if state1 != state2:
                mismatches += 1
            if k >= 2:  # two warm-up rounds
                times[first].append(ms1)
                times[second].append(ms2)
        if only:
            print(f"N={n} rounds={rounds}: {only} {statistics.median(times[only]):.2f} ms "
                  f"(mean {statistics.mean(times[only]):.2f})")
        else:
            report(times, mismatches, n, rounds, seg_node)
        if profile is not None:
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("cumtime").print_stats(35)
            print(out.getvalue())


def report(times, mismatches, n, rounds, seg_node):
    if True:
        (cid, block), node = slow_segment_cid(seg_node.pk)
        assert (cid, block) == (node.cid, bytes(node.block)), "segment differs from its from-scratch block"
        old_ms, new_ms = statistics.median(times["old"]), statistics.median(times["new"])
        print(f"N={n} rounds={rounds}: old {old_ms:.2f} ms  new {new_ms:.2f} ms  new/old {new_ms / old_ms:.3f}  "
              f"(means {statistics.mean(times['old']):.2f} / {statistics.mean(times['new']):.2f})  "
              f"state mismatches {mismatches}  segment == from scratch: True")


main()
