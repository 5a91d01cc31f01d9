"""Recollections: clustering real MiniLM embeddings of the demo conversation, the guard, the summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime, timedelta

import numpy as np
import pytest

from memory.adapters.embeddings import build_embedder
from memory.formats.locomo import conversation_pages, load_conversations
from memory.policies.exocortex.engine.decay import (
    CORE,
    DecaySettings,
    exocortex_weight,
    recencies,
    relevance_from_cosine,
)
from memory.policies.exocortex.engine.recollection import (
    HDBSCAN_ONLY,
    NONE,
    SINGLE,
    UMAP_HDBSCAN,
    Candidate,
    Cluster,
    RecollectionParams,
    cluster_recollections,
    gather_candidates,
    summarize_recollection,
)
from tests.data import DEMO, REPOSITORY

PROMPT = "When does Maya's evening class in European Portuguese meet?"
# What was said just before the prompt (the short-term items that bring their own memories).
RECENT = ("Maya: I ran 18 km on Sunday, my longest training run before the half marathon.",
          "Maya: We put the eighth coat of varnish on Kittiwake's new oak transom at the boatyard.")
PER_ANCHOR = 16
WIDE = RecollectionParams(max_recollections=8)  # keep every cluster, to look at all of them


class Conversation:
    """The demo conversation's pages embedded by the real MiniLM model, the prompt and the recent items too."""

    def __init__(self) -> None:
        pages = conversation_pages(load_conversations(DEMO)[0])
        embedder = build_embedder(backend="minilm")
        self.texts = [f"{p.query} {p.response}".strip() for p in pages]
        self.times = [p.timestamp for p in pages]
        self.vectors = np.asarray(embedder.embed(self.texts), dtype=np.float64)
        self.anchors = np.asarray(embedder.embed([PROMPT, *RECENT]), dtype=np.float64)
        self.prompt = self.anchors[0]
        now = self.times[-1] + timedelta(days=1)
        ages = [(now - t).total_seconds() for t in self.times]
        self.recency = recencies(ages, oldest_age_seconds=max(ages), settings=DecaySettings())

    def candidate(self, index: int) -> Candidate:
        """Page `index` weighted as the Exocortex weighs it against the prompt."""
        relevance = relevance_from_cosine(float(np.clip(self.vectors[index] @ self.prompt, -1, 1)))
        weight = exocortex_weight(relevance=relevance, recency=float(self.recency[index]), kind=CORE).weight
        return Candidate(id=f"page-{index:03d}", text=self.texts[index], embedding=tuple(self.vectors[index]),
                         weight=weight, timestamp=self.times[index])

    def brought(self, anchor: np.ndarray, count: int = PER_ANCHOR) -> list[Candidate]:
        return [self.candidate(int(i)) for i in np.argsort(-(self.vectors @ anchor))[:count]]

    def all_anchors(self, count: int = PER_ANCHOR) -> list[list[Candidate]]:
        return [self.brought(anchor, count) for anchor in self.anchors]


@pytest.fixture(scope="module")
def conv() -> Conversation:
    return Conversation()


def unit(vectors) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float64)
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


def member_vectors(cluster: Cluster) -> np.ndarray:
    return unit([m.embedding for m in cluster.members])


# --- real embeddings --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.real_adapters
@pytest.mark.parametrize("scenario", ["three topics", "one topic"])
def test_members_are_each_closer_to_their_cluster_than_to_any_other(conv, scenario):
    # One topic (the prompt alone brings 48 pages, most about Maya's Portuguese) is the hard case:
    # HDBSCAN's clusters there overlap, and the guard has to move members (or drop them).
    anchors = conv.all_anchors() if scenario == "three topics" else [conv.brought(conv.prompt, 48)]
    plan = cluster_recollections(prompt_embedding=conv.prompt, anchors=anchors, params=WIDE)

    assert plan.method == UMAP_HDBSCAN and len(plan.pool) > 30
    assert len(plan.clusters) >= 3
    groups = [member_vectors(c) for c in plan.clusters]
    for number, own in enumerate(groups):
        for i, vector in enumerate(own):
            within = np.delete(own @ vector, i).mean()
            across = max((other @ vector).mean() for k, other in enumerate(groups) if k != number)
            assert within > across, f"member {i} of cluster {number}: {within:.3f} within, {across:.3f} across"
    if scenario == "one topic":
        assert plan.moved + plan.dropped["torn_memories"] > 0


@pytest.mark.slow
@pytest.mark.real_adapters
def test_clusters_follow_the_topics_the_prompt_and_recent_items_brought(conv):
    plan = cluster_recollections(prompt_embedding=conv.prompt, anchors=conv.all_anchors(), params=WIDE)

    topics_seen = set()
    for cluster in plan.clusters:
        topics = np.argmax(member_vectors(cluster) @ unit(conv.anchors).T, axis=1)  # the anchor each is closest to
        main = np.bincount(topics).argmax()
        assert (topics == main).mean() >= 0.8, topics
        topics_seen.add(int(main))
    assert topics_seen == {0, 1, 2}  # the Portuguese class, the training run, the boat: none blended away
    # the closest to the prompt is about the prompt's topic
    assert np.argmax(member_vectors(plan.clusters[0]) @ unit(conv.anchors).T, axis=1).tolist().count(0) >= 3


@pytest.mark.slow
@pytest.mark.real_adapters
def test_clustering_is_deterministic(conv):
    anchors = conv.all_anchors()
    first = cluster_recollections(prompt_embedding=conv.prompt, anchors=anchors, params=WIDE).trace()
    again = cluster_recollections(prompt_embedding=conv.prompt, anchors=anchors, params=WIDE).trace()
    reordered = cluster_recollections(prompt_embedding=conv.prompt, anchors=[list(reversed(a)) for a in anchors[::-1]],
                                      params=WIDE).trace()
    assert first == again == reordered
    # The same memories at other weights fall into the same groups (UMAP sees them in id order;
    # nothing is trimmed here, so only the order within each cluster may change).
    roomy = RecollectionParams(max_cluster_memories=48, max_recollections=8)
    flat = [[Candidate(id=c.id, text=c.text, embedding=c.embedding, weight=0.5, timestamp=c.timestamp) for c in a]
            for a in anchors]
    groups = [cluster_recollections(prompt_embedding=conv.prompt, anchors=given, params=roomy).trace()["clusters"]
              for given in (anchors, flat)]
    assert [sorted(c["members"]) for c in groups[0]] == [sorted(c["members"]) for c in groups[1]]


@pytest.mark.slow
@pytest.mark.real_adapters
def test_the_guard_reports_its_numbers(conv):
    anchors = conv.all_anchors()
    plan = cluster_recollections(prompt_embedding=conv.prompt, anchors=anchors, params=WIDE)
    trace = plan.trace()
    centroids = unit([member_vectors(c).sum(axis=0) for c in plan.clusters])
    # similarity to the prompt: the centroid's cosine; most similar first
    assert [c["prompt_similarity"] for c in trace["clusters"]] == pytest.approx(
        (centroids @ unit(conv.prompt)).tolist(), abs=1e-4)
    assert [c.prompt_similarity for c in plan.clusters] == sorted((c.prompt_similarity for c in plan.clusters),
                                                                 reverse=True)
    # inter-cluster similarity: the mean cosine over pairs across two clusters; cohesion on the diagonal
    groups = [member_vectors(c) for c in plan.clusters]
    matrix = np.array(trace["inter_cluster_similarity"])
    for a, first in enumerate(groups):
        count = len(first)
        assert matrix[a, a] == pytest.approx(((first @ first.T).sum() - count) / (count * (count - 1)), abs=1e-4)
        for b, second in enumerate(groups):
            if a != b:
                assert matrix[a, b] == pytest.approx((first @ second.T).mean(), abs=1e-4)
                assert matrix[a, b] < min(matrix[a, a], matrix[b, b])  # different from each other
    assert trace["max_inter_cluster_similarity"] < WIDE.merge_similarity
    assert sum(len(c["members"]) for c in trace["clusters"]) + sum(
        trace["dropped"][k] for k in ("noise_memories", "trimmed_memories", "torn_memories")) == trace["pool"]


@pytest.mark.slow
@pytest.mark.real_adapters
def test_too_similar_clusters_are_merged_and_far_ones_dropped(conv):
    anchors = conv.all_anchors()
    kept = cluster_recollections(prompt_embedding=conv.prompt, anchors=anchors, params=WIDE)
    # At a threshold every pair reaches, the clusters merge (most similar first) into one, which
    # keeps its max_cluster_memories heaviest members.
    merged = cluster_recollections(prompt_embedding=conv.prompt, anchors=anchors,
                                   params=RecollectionParams(merge_similarity=0.1, max_recollections=8))
    assert len(merged.clusters) == 1 and len(merged.merges) >= len(kept.clusters) - 1
    assert all(s >= 0.1 for s in merged.merges) and list(merged.merges) == sorted(merged.merges, reverse=True)
    assert len(merged.clusters[0].members) == 16
    # Clusters farther from the prompt than asked are dropped, and counted.
    strict = cluster_recollections(prompt_embedding=conv.prompt, anchors=anchors,
                                   params=RecollectionParams(min_prompt_similarity=0.5, max_recollections=8))
    assert all(c.prompt_similarity >= 0.5 for c in strict.clusters)
    assert strict.dropped["off_prompt_clusters"] == sum(c.prompt_similarity < 0.5 for c in kept.clusters) > 0
    # At most max_recollections, the closest to the prompt.
    capped = cluster_recollections(prompt_embedding=conv.prompt, anchors=anchors,
                                   params=RecollectionParams(max_recollections=2))
    assert [c.members for c in capped.clusters] == [c.members for c in kept.clusters[:2]]
    assert capped.dropped["surplus_clusters"] == len(kept.clusters) - 2


@pytest.mark.slow
@pytest.mark.real_adapters
def test_small_pools_degrade_without_umap(conv):
    brought = conv.brought(conv.prompt, 40)
    empty = cluster_recollections(prompt_embedding=conv.prompt, anchors=[])
    assert (empty.method, empty.clusters) == (NONE, ())
    two = cluster_recollections(prompt_embedding=conv.prompt, anchors=[brought[:2]])
    assert two.method == SINGLE and [len(c.members) for c in two.clusters] == [2]
    # Under min_points_for_umap: HDBSCAN on cosine distances, the same guarantees.
    small = cluster_recollections(prompt_embedding=conv.prompt, anchors=[brought[:8], conv.brought(conv.anchors[2], 6)],
                                  params=WIDE)
    assert small.method == HDBSCAN_ONLY and len(small.pool) == 14
    assert small.clusters
    assert all(len(c.members) >= 2 for c in small.clusters)
    if len(small.clusters) > 1:
        assert small.trace()["max_inter_cluster_similarity"] < min(c.cohesion for c in small.clusters)


@pytest.mark.slow
@pytest.mark.real_adapters
def test_a_recollection_quotes_its_members_by_date_in_the_prompts_context(conv):
    plan = cluster_recollections(prompt_embedding=conv.prompt, anchors=conv.all_anchors())
    cluster = plan.clusters[0]
    recollection = summarize_recollection(cluster=cluster, prompt=PROMPT, max_quoted=4, max_chars=700)

    text = recollection.text
    assert len(text) <= 700 and text.startswith(f"Recollection for “{PROMPT}”: {len(cluster.members)} memories")
    quoted = re.findall(r"\[(\d{1,2} [A-Z][a-z]+ \d{4})\] ([^\[]+)", text)
    assert 2 <= len(quoted) <= 4
    member_dates = {f"{m.timestamp.day} {m.timestamp:%B} {m.timestamp.year}" for m in cluster.members}
    assert {date for date, _ in quoted} <= member_dates
    days = [datetime.strptime(d, "%d %B %Y") for d, _ in quoted]
    assert days == sorted(days)  # oldest first
    for _, sentence in quoted:
        body = sentence.strip().rstrip("…").strip()
        assert any(body[:40] in m.text for m in cluster.members), body
    assert recollection.first == min(m.timestamp for m in cluster.members)
    assert recollection.last == max(m.timestamp for m in cluster.members)
    # edges: one per member, the member's share of the cluster's weight
    total = sum(m.weight for m in cluster.members)
    assert [e.member_id for e in recollection.edges] == [m.id for m in cluster.members]
    assert [e.weight for e in recollection.edges] == pytest.approx([m.weight / total for m in cluster.members])
    assert sum(e.weight for e in recollection.edges) == pytest.approx(1.0)
    assert recollection.prompt_similarity == cluster.prompt_similarity


# --- mechanics (no model) ---------------------------------------------------------------------

def make(id_: str, weight: float, vector=(1.0, 0.0), text: str = "A memory.") -> Candidate:
    return Candidate(id=id_, text=text, embedding=tuple(vector), weight=weight)


def test_gathering_keeps_each_memory_once_at_its_highest_weight():
    anchors = [[make("a", 0.2), make("b", 0.9)], [make("a", 0.7), make("c", 0.7)], [make("d", 0.1)]]
    pool = gather_candidates(anchors, limit=3)
    assert [(c.id, c.weight) for c in pool] == [("b", 0.9), ("a", 0.7), ("c", 0.7)]
    with pytest.raises(ValueError, match="weight"):
        gather_candidates([[make("a", float("nan"))]], limit=3)
    with pytest.raises(ValueError, match="weight"):
        gather_candidates([[make("a", -0.1)]], limit=3)


def test_bad_embeddings_and_parameters_are_refused():
    with pytest.raises(ValueError, match="differ in dimension"):
        cluster_recollections(prompt_embedding=(1.0, 0.0), anchors=[[make("a", 1, (1.0, 0.0)), make("b", 1, (1.0,))]])
    with pytest.raises(ValueError, match="finite and non-zero: b"):
        cluster_recollections(prompt_embedding=(1.0, 0.0), anchors=[[make("a", 1), make("b", 1, (0.0, 0.0))]])
    with pytest.raises(ValueError, match="prompt's embedding has 3 dimensions"):
        cluster_recollections(prompt_embedding=(1.0, 0.0, 0.0), anchors=[[make("a", 1)]])
    with pytest.raises(ValueError, match="min_cluster_size"):
        RecollectionParams(min_cluster_size=1)
    with pytest.raises(ValueError, match="min_points_for_umap"):
        RecollectionParams(dimensions=20)  # UMAP's spectral start needs more points than dimensions + 1
    with pytest.raises(ValueError, match="at least one member"):
        summarize_recollection(cluster=Cluster(members=(), prompt_similarity=0.0, cohesion=1.0), prompt="x")


def test_separated_groups_cluster_without_umap_and_edges_share_the_weight():
    rng = np.random.default_rng(7)
    directions = np.eye(6)[:3]
    anchors = [[make(f"{g}{i}", 0.5 + 0.01 * i, directions[g] + 0.05 * rng.normal(size=6), f"Group {g} item {i}.")
                for i in range(4)] for g in range(3)]
    plan = cluster_recollections(prompt_embedding=directions[0] + 0.5 * directions[1], anchors=anchors,
                                 params=RecollectionParams(max_recollections=3))
    assert plan.method == HDBSCAN_ONLY
    assert [sorted({m.id[0] for m in c.members}) for c in plan.clusters] == [["0"], ["1"]]  # group 2: off the prompt
    assert plan.dropped["off_prompt_clusters"] == 1
    recollection = summarize_recollection(cluster=plan.clusters[0], prompt="What about group zero?")
    assert [e.weight for e in recollection.edges] == pytest.approx([0.53 / 2.06, 0.52 / 2.06, 0.51 / 2.06, 0.5 / 2.06])
    assert "4 memories." in recollection.text and recollection.first is None


@pytest.mark.slow
@pytest.mark.real_adapters
def test_clustering_leaves_torchs_thread_count_as_it_was():
    # torch shares libgomp with numba, whose first parallel launch in a process can set the
    # OpenMP thread count to all CPUs (it did here after a small pool went through HDBSCAN alone,
    # with torch's count read before, as the embedder reads it): EMBED_THREADS must survive.
    # A fresh process, so that the launch is the first.
    code = (
        "import numpy as np, torch\n"
        "from memory.engine.clusters import cluster_labels\n"
        "torch.set_num_threads(1)\n"
        "torch.ones(64, 64) @ torch.ones(64, 64)  # torch's OpenMP pool starts, as the embedder's does\n"
        "vectors = np.random.default_rng(0).normal(size=(40, 16))\n"
        "vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)\n"
        "shape = dict(dimensions=3, min_cluster_size=3, neighbours=15, min_points_for_umap=16, random_state=42)\n"
        "before = torch.get_num_threads()\n"
        "methods = [cluster_labels(vectors[:size], **shape)[1] for size in (10, 40)]\n"
        "print(*methods, before, torch.get_num_threads())\n"
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split("\n")[-2] == "hdbscan umap+hdbscan 1 1"
