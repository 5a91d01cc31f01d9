"""`bench scale`: the cost of memory as one user's store grows to 1k, 10k, 100k pages.

Per size, in a fresh database and vector shard (common.bench_env):
1. Build the store by the bulk path (below), timed.
2. Retrieval latency p50/p95 of the real `recall_for_query` (query embedding included), with
   the retrieval trace recorded (the product's path) and without; the query embedding alone; the
   parts of a recall each alone; single searches over all of the user's pages and utterances
   (`measure_retrieval` says how they are interleaved).
3. Ingest through the real write path for a sample, one page at a time, as a chat turn writes
   it: page_start, the page's text embedded, page_reply_store, then maintenance_run (which embeds
   and indexes the page's utterances).
4. Database size, vector shard size, peak RSS; then Edge's `optimize()` (HNSW) and step 2 again.

The bulk path: rows created with bulk_create in the tiers and segments maintenance would have
put them in (the last STM_CAPACITY pages in STM, the rest in MTM segments of about
--segment-pages pages, at most MTM_CAPACITY segments, with their lifecycle events; a full
persona), vectors upserted in batches. The graph is the product's: nodes, CIDs and edges made by
memory.services.graph (row_nodes_add, edges_add, node_put, edge_put inside one readdress_once),
so a page written on top of the store re-addresses the same graph maintenance would have built.
Any error on the write path stops the benchmark (a CommandError): a rate over failed writes is
no rate. Page texts come from templates
over 24 topics, each page its own text. Embeddings: real MiniLM for a pool of --pool texts;
every other page reuses the vector of a pool text of its topic with Gaussian noise added
(--noise) and renormalised. Segment, KB-fact, agent-trait and query embeddings are all real.
"""

from __future__ import annotations

import functools
import math
import sys
import time
import uuid
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from unittest import mock

import numpy as np
from django.core.management.base import CommandError
from django.db import transaction
from django.utils import timezone

from memory.adapters import configured
from memory.adapters.vectors import search_ms_taken
from memory.benchmarks import common
from memory.config import memory_params
from memory.engine import offline
from memory.engine.content_ids import trait_evidence_object_id
from memory.engine.hybrid_scoring import HybridParams
from memory.engine.long_term import normalise_fact
from memory.engine.ports import VectorPoint
from memory.engine.traits import TRAITS_BY_KEY
from memory.models import (
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    PageStatus,
    Segment,
    Sona,
    Tier,
    UserMemoryState,
    bytes_to_vector,
    vector_to_bytes,
)
from memory.recall.base import default_policy_name, get_policy, policy_names
from memory.recall.pipeline import EMBED_PART, PROFILE_PART, SIMILAR_PART, STM_PART
from memory.services import graph
from memory.services.maintenance import maintenance_run
from memory.services.pages import page_point, page_reply_store, page_start, page_text
from memory.services.recall import TRACE_PART, VISITS_PART, recall_for_query
from memory.services.segments import segment_point, segment_text
from memory.services.utterances import remember_facts, turn_points
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait

TRAIT_KEYS = sorted(TRAITS_BY_KEY)
TOPICS: dict[str, tuple[str, ...]] = {
    "hiking": ("trail", "summit", "boots", "backpack", "ridge", "campsite"),
    "cooking": ("recipe", "pasta", "oven", "spices", "sourdough", "risotto"),
    "running": ("marathon", "pace", "sneakers", "intervals", "track", "race"),
    "painting": ("canvas", "watercolor", "brushes", "easel", "portrait", "palette"),
    "gardening": ("tomatoes", "compost", "seedlings", "roses", "greenhouse", "soil"),
    "music": ("guitar", "chords", "concert", "piano", "album", "rehearsal"),
    "travel": ("flight", "hostel", "passport", "itinerary", "museum", "train"),
    "work": ("deadline", "manager", "promotion", "meeting", "project", "spreadsheet"),
    "family": ("sister", "grandmother", "cousins", "reunion", "parents", "nephew"),
    "pets": ("puppy", "kitten", "vet", "leash", "aquarium", "parrot"),
    "reading": ("novel", "library", "chapter", "poetry", "author", "bookclub"),
    "fitness": ("gym", "squats", "yoga", "stretching", "weights", "cardio"),
    "movies": ("cinema", "thriller", "director", "documentary", "sequel", "popcorn"),
    "finance": ("budget", "savings", "mortgage", "taxes", "investments", "loan"),
    "health": ("doctor", "allergy", "vitamins", "sleep", "therapy", "checkup"),
    "school": ("exam", "lecture", "thesis", "professor", "homework", "semester"),
    "volunteering": ("shelter", "charity", "fundraiser", "donations", "mentoring", "community"),
    "photography": ("camera", "lens", "sunset", "tripod", "exposure", "portraits"),
    "cycling": ("bike", "helmet", "gears", "commute", "tires", "downhill"),
    "games": ("chess", "puzzle", "console", "tournament", "boardgame", "strategy"),
    "home": ("apartment", "furniture", "renovation", "kitchen", "landlord", "garden"),
    "friends": ("party", "birthday", "roommate", "brunch", "neighbor", "wedding"),
    "crafts": ("knitting", "pottery", "sewing", "quilt", "woodwork", "beads"),
    "language": ("spanish", "vocabulary", "grammar", "tutor", "accent", "flashcards"),
}
TOPIC_NAMES = tuple(TOPICS)
PEOPLE = ("sister", "brother", "mom", "dad", "best friend", "partner", "coworker", "neighbor", "coach")
WHEN = ("yesterday", "last weekend", "this morning", "on Friday", "last month", "two days ago",
        "after work", "on my birthday", "during the holidays")
FEELINGS = ("exhausting", "wonderful", "stressful", "relaxing", "surprising", "fun", "frustrating",
            "peaceful", "exciting")
QUERIES = (
    "I spent some time on {topic} {when} with my {person}; the {a} was {feel} and the {b} even more.",
    "Do you remember the {a} I told you about? I want to try it again with the {b} {when}.",
    "My {person} thinks the {a} matters more than the {b} for {topic}. What do you think?",
    "{When} I finally sorted out the {a} and bought a new {b}. {topic} is getting {feel}.",
    "Can you remind me what I said about the {a}? I keep thinking about {topic} and the {b}.",
    "Honestly {topic} has been {feel} lately: the {a} broke and my {person} lost the {b}.",
)
RESPONSES = (
    "That sounds {feel}! How did your {person} like the {a}?",
    "You mentioned {topic} before; maybe focus on the {b} next time and keep the {a} simple.",
    "I remember the {a}. Trying the {b} {when} sounds like a good plan.",
    "It is normal for {topic} to feel {feel} sometimes. What would make the {b} easier?",
)
FACTS = ("I love {a}", "my {person} is into {topic}", "I am saving up for a {b}", "I work on {topic} weekly")
AGENT_TRAITS = ("I suggested trying the {a} for {topic}", "I promised to ask about the {b} next time")


class TextGenerator:
    """Synthetic pages and queries over TOPICS; deterministic for a seed."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def _fill(self, template: str, topic: str) -> str:
        words = TOPICS[topic]
        a, b = self.rng.choice(len(words), size=2, replace=False)
        pick = self.rng.choice
        when = str(pick(WHEN))
        return template.format(topic=topic, a=words[a], b=words[b], person=pick(PEOPLE), when=when,
                               When=when[:1].upper() + when[1:], feel=pick(FEELINGS))

    def page(self, topic: str) -> tuple[str, str]:
        return (self._fill(str(self.rng.choice(QUERIES)), topic),
                self._fill(str(self.rng.choice(RESPONSES)), topic))

    def query(self) -> str:
        return self._fill(str(self.rng.choice(QUERIES)), str(self.rng.choice(TOPIC_NAMES)))

    def sentence(self, templates: tuple[str, ...], topic: str) -> str:
        return self._fill(str(self.rng.choice(templates)), topic)


def add_arguments(parser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000],
                        help="pages of the synthetic user; a fresh store per size (default 1k 10k 100k)")
    parser.add_argument("--policies", nargs="+", choices=policy_names(), default=list(policy_names()),
                        help="recall policies to time (default: all)")
    parser.add_argument("--queries", type=int, default=200, help="timed recalls per variant (default 200)")
    parser.add_argument("--write-sample", type=int, default=50,
                        help="pages sent through the real write path per size (default 50)")
    parser.add_argument("--segment-pages", type=int, default=50,
                        help="pages per MTM segment; segments are capped at MTM_CAPACITY (default 50)")
    parser.add_argument("--pool", type=int, default=3_000,
                        help="distinct page texts embedded with MiniLM; the rest reuse them (default 3000)")
    parser.add_argument("--noise", type=float, default=0.02,
                        help="std of the noise added to reused embeddings, per dimension (default 0.02)")
    parser.add_argument("--hnsw", choices=("both", "off", "on"), default="both",
                        help="measure before and/or after Edge's optimize() builds HNSW (default both)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--in-place", action="store_true",
                        help="use the configured database with a throwaway user instead of a fresh database")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (vector shard)")


# --------------------------------------------------------------------------- the bulk path


@dataclass
class Pool:
    """Real MiniLM vectors of --pool page texts, by topic."""

    vectors: dict[str, np.ndarray]
    seconds: float


_POOLS: dict[tuple[int, int], Pool] = {}
WORD_TOPIC = {word: topic for topic, words in TOPICS.items() for word in words} | {t: t for t in TOPICS}


# The store the scripts beside this benchmark build (scripts/write_steps.py, bm25_idf_cost.py,
# bench_readdress.py) and its tests: `bench scale`'s options, with a smaller MiniLM pool to start
# sooner.
SCRIPT_STORE = {"seed": 7, "pool": 1000, "noise": 0.02, "segment_pages": 50}


def store_built(env: common.BenchEnv, pages: int, **changes: Any) -> StoreBuilder:
    """A store of `pages` pages built by the bulk path with SCRIPT_STORE's options, as `changes`
    change them, and no progress bars."""
    options = {**SCRIPT_STORE, **changes}
    builder = StoreBuilder(env, pages=pages, options=options,
                           pool=embedding_pool(min(options["pool"], pages), options["seed"], False))
    builder.build(False)
    return builder


def embedding_pool(size: int, seed: int, show: bool) -> Pool:
    """Embedded once per process and reused by every size (same seed, same texts)."""
    if (size, seed) not in _POOLS:
        gen = TextGenerator(seed + 1)
        per_topic = max(1, math.ceil(size / len(TOPIC_NAMES)))
        bar = common.progress(per_topic * len(TOPIC_NAMES), "embed pool", show)
        started, vectors = time.perf_counter(), {}
        for topic in TOPIC_NAMES:
            texts = [page_text(*gen.page(topic)) for _ in range(per_topic)]
            vectors[topic] = np.asarray(configured.embedder().embed(texts), dtype=np.float32)
            bar.update(len(texts))
        bar.close()
        _POOLS[(size, seed)] = Pool(vectors=vectors, seconds=time.perf_counter() - started)
    return _POOLS[(size, seed)]


class PoolEmbedder:
    """Stands in for MiniLM while the bulk path builds points: a text gets the vector of a random
    pool text of its topic (found by its topic words) plus Gaussian noise, renormalised."""

    name = "pool"

    def __init__(self, pool: Pool, rng: np.random.Generator, noise: float) -> None:
        self.pool, self.rng, self.noise = pool, rng, noise
        self.dimension = next(iter(pool.vectors.values())).shape[1]

    def topic_of(self, text: str) -> str:
        for word in text.lower().replace(".", " ").replace(",", " ").replace("?", " ").split():
            if word in WORD_TOPIC:
                return WORD_TOPIC[word]
        return TOPIC_NAMES[self.rng.integers(len(TOPIC_NAMES))]

    def vector(self, topic: str) -> np.ndarray:
        rows = self.pool.vectors[topic]
        base = rows[self.rng.integers(len(rows))]
        vector = base + self.rng.normal(0.0, self.noise, size=base.shape).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed(self, texts) -> list[list[float]]:
        return [self.vector(self.topic_of(text)).tolist() for text in texts]


@contextmanager
def _embedder_replaced(embedder):
    """Product code that embeds (memory.services.utterances) gets the pool embedder while points are built."""
    with mock.patch.object(configured, "embedder", lambda: embedder):
        yield


BATCH = 2_000
USER_NAME = "Sam"


class StoreBuilder:
    """Builds one synthetic user's store the way maintenance would have left it (see the module doc)."""

    def __init__(self, env: common.BenchEnv, *, pages: int, options: dict, pool: Pool,
                 full_history: bool = False) -> None:
        self.params = memory_params()
        self.pages = pages
        self.gen = TextGenerator(options["seed"] + pages)
        self.rng = np.random.default_rng(options["seed"])
        self.embedder = PoolEmbedder(pool, self.rng, options["noise"])
        self.user = env.make_user("scale")
        self.sona = Sona.objects.create(user=self.user, name="assistant", profile="A helpful assistant.",
                                        is_default=True)
        self.now = timezone.now()
        self.stm = min(self.params.stm_capacity, pages)
        self.mtm = pages - self.stm
        wanted = max(1, math.ceil(self.mtm / options["segment_pages"]))
        self.n_segments = min(self.params.mtm_capacity, wanted) if self.mtm else 0
        self.vector_seconds = 0.0
        self.last_utterance: dict | None = None
        # The inspector's benchmark wants every kind of event a real history has (segments formed,
        # visits, promotions, facts, traits) at the memory's own time; the scale benchmark does not.
        self.full_history = full_history
        self.started_segments: set[uuid.UUID] = set()

    def build(self, show: bool) -> dict:
        started = time.perf_counter()
        with graph.readdress_once():  # every node's CID made once, from its final edges
            self._segments()
            bar = common.progress(self.pages, f"build {self.pages:,} pages", show)
            for start in range(0, self.pages, BATCH):
                batch = [self._page(seq) for seq in range(start + 1, min(self.pages, start + BATCH) + 1)]
                self._write(batch)
                self._timed_upsert(self._page_points(batch))
                bar.update(len(batch))
            bar.close()
            self._timed_upsert([segment_point(s) for s in self.seg_rows])
            self._persona()
        UserMemoryState.objects.create(user=self.user, next_seq=self.pages + 1, last_maintenance_at=self.now)
        configured.vector_index().flush()
        _analyze_if_postgres()
        seconds = time.perf_counter() - started
        return {"segments": self.n_segments, "stm": self.stm, "mtm": self.mtm,
                "points": configured.vector_index().count(user_id=str(self.user.pk)),
                "seconds": round(seconds, 2), "vector_seconds": round(self.vector_seconds, 2),
                "pages_per_s": round(self.pages / seconds, 1)}

    def _segments(self) -> None:
        """Topic-coherent segments, already promoted once (as maintenance would have done long ago)."""
        self.seg_topics = [TOPIC_NAMES[i % len(TOPIC_NAMES)] for i in range(self.n_segments)]
        self.seg_rows = []
        for topic in self.seg_topics:
            lines = " ".join(self.gen.page(topic)[0] for _ in range(3))
            seg = Segment(id=uuid.uuid4(), user=self.user, summary=lines[:400],
                          keywords=sorted(offline.extract_keywords(lines)),
                          n_visit=int(self.rng.integers(0, 3)), l_interaction=0, page_count=0,
                          promoted_count=1, last_promoted_at=self.now,
                          last_access=self.now - timedelta(days=int(self.rng.integers(0, 60))))
            self.seg_rows.append(seg)
        texts = [segment_text(s) for s in self.seg_rows]
        vectors = configured.embedder().embed(texts) if texts else []
        for seg, vector in zip(self.seg_rows, vectors, strict=True):
            seg.embedding = vector_to_bytes(vector)
        self.assignment = self.rng.integers(0, max(self.n_segments, 1), size=self.mtm)
        for index in self.assignment:
            self.seg_rows[index].page_count += 1
        Segment.objects.bulk_create(self.seg_rows)
        nodes = graph.row_nodes_add(user_id=self.user.pk, kind=MemoryNode.Kind.SEGMENT, rows=self.seg_rows)
        self.seg_nodes = {s.id: n for s, n in zip(self.seg_rows, nodes, strict=True)}
        self.seg_page_node: dict[uuid.UUID, MemoryNode] = {}  # a page of each segment (facts are stated in one)

    def _history(self, p: DialoguePage) -> list[LifecycleEvent]:
        """A page's events as the services would have written them over the months: it is added,
        moves into its segment (forming it when first), recalls visit segments now and then, and
        every fiftieth page its segment is promoted with a fact and a trait update."""
        user, kinds, at = self.user, LifecycleEvent.Kind, p.timestamp

        def event(kind: str, subject, **payload) -> LifecycleEvent:
            return LifecycleEvent(user=user, kind=kind, subject_id=str(subject), occurred_at=at, payload=payload)

        events = [event(kinds.PAGE_ADDED, p.id, seq=p.seq, sona=self.sona.name)]
        if not p.segment_id:
            return events
        first = p.segment_id not in self.started_segments
        self.started_segments.add(p.segment_id)
        events += [event(kinds.MOVED_TO_MTM, p.id, seq=p.seq, segment_id=str(p.segment_id)),
                   event(kinds.SEGMENT_CREATED if first else kinds.SEGMENT_MERGED, p.segment_id,
                         page_id=str(p.id), seq=p.seq)]
        if p.seq % 4 == 0:
            visited = {str(self.seg_rows[i].id) for i in self.rng.integers(0, self.n_segments, size=2)}
            events.append(event(kinds.SEGMENTS_VISITED, "", segments=sorted(visited)))
        if p.seq % 50 == 0:
            trait = TRAIT_KEYS[p.seq % len(TRAIT_KEYS)]
            events += [event(kinds.SEGMENT_PROMOTED, p.segment_id, heat=6.0, facts=1, agent_traits=0, trait_hits=1),
                       event(kinds.FACT_ADDED, uuid.uuid4(), text=f"{USER_NAME} said: {p.query[:120]}",
                             segment_id=str(p.segment_id), page_id=str(p.id)),
                       event(kinds.TRAIT_UPDATED, trait, name=TRAITS_BY_KEY[trait].name, before=0.0, after=0.5,
                             matched=[], page_id=str(p.id))]
        return events

    def _evidence_nodes(self, p: DialoguePage) -> None:
        """The graph node of the trait evidence `_history` records for every fiftieth page, as
        memory.services.long_term._trait_update writes it."""
        if not p.segment_id or p.seq % 50:
            return
        key = TRAIT_KEYS[p.seq % len(TRAIT_KEYS)]
        node = graph.node_put(user_id=self.user.pk, kind=MemoryNode.Kind.USER_TRAIT,
                              object_id=trait_evidence_object_id(key, str(p.id)),
                              data={"trait": key, "weight": 0.5, "matched": []}, timestamp=p.timestamp)
        graph.edge_put(user_id=self.user.pk, source=node, target=self.seg_nodes[p.segment_id],
                       relation="evidence_from", weight=0.5)

    def _page(self, seq: int) -> DialoguePage:
        in_mtm = seq <= self.mtm
        segment = self.seg_rows[self.assignment[seq - 1]] if in_mtm else None
        topic = self.seg_topics[self.assignment[seq - 1]] if in_mtm else TOPIC_NAMES[seq % len(TOPIC_NAMES)]
        query, response = self.gen.page(topic)
        page_id = uuid.uuid4()
        timestamp = self.now - timedelta(days=730) + timedelta(days=730) * seq / self.pages
        return DialoguePage(
            id=page_id, user=self.user, sona=self.sona, seq=seq, query=query, response=response,
            status=PageStatus.COMPLETE, timestamp=timestamp, tier=Tier.MTM if in_mtm else Tier.STM,
            segment=segment, chain_id=page_id, chain_done=True, meta_chain=query[:300],
            keywords=sorted(offline.extract_keywords(f"{query}\n{response}")),
            embedding=vector_to_bytes(self.embedder.vector(topic)), reply_model="bench-synthetic",
            utterances=[{"id": "", "speaker": USER_NAME, "text": query},
                        {"id": "", "speaker": self.sona.name, "text": response}],
            turns_indexed=True, moved_at=timestamp if in_mtm else None)

    def _write(self, batch: list[DialoguePage]) -> None:
        """The rows maintenance leaves behind: the page, its graph node and edge, its lifecycle events."""
        user, kinds = self.user, LifecycleEvent.Kind
        with transaction.atomic():
            DialoguePage.objects.bulk_create(batch)
            nodes = graph.row_nodes_add(user_id=user.pk, kind=MemoryNode.Kind.PAGE, rows=batch)
            graph.edges_add(user_id=user.pk, edges=[(self.seg_nodes[p.segment_id], node, "contains", 1.0)
                                                    for p, node in zip(batch, nodes, strict=True) if p.segment_id])
            self.seg_page_node.update((p.segment_id, node) for p, node in zip(batch, nodes, strict=True)
                                      if p.segment_id)
            events = []
            for p in batch:
                if self.full_history:
                    events += self._history(p)
                    self._evidence_nodes(p)
                    continue
                events.append(LifecycleEvent(user=user, kind=kinds.PAGE_ADDED, subject_id=str(p.id),
                                             payload={"seq": p.seq, "sona": self.sona.name}))
                if p.segment_id:
                    segment_id = str(p.segment_id)
                    events += [LifecycleEvent(user=user, kind=kinds.MOVED_TO_MTM, subject_id=str(p.id),
                                              payload={"seq": p.seq, "segment_id": segment_id}),
                               LifecycleEvent(user=user, kind=kinds.SEGMENT_MERGED, subject_id=segment_id,
                                              payload={"page_id": str(p.id)})]
            LifecycleEvent.objects.bulk_create(events)

    def _page_points(self, batch: list[DialoguePage]) -> list[VectorPoint]:
        """Page points and utterance ("turn") points, laid out by the product's own functions
        (memory.services.utterances builds the turn points exactly as maintenance's index_turns does)."""
        points = [page_point(p, list(bytes_to_vector(p.embedding))) for p in batch]
        with _embedder_replaced(self.embedder):
            points += turn_points(batch, self.last_utterance, HybridParams())
        self.last_utterance = batch[-1].utterances[-1]
        return points

    def _timed_upsert(self, points: list[VectorPoint]) -> None:
        """Upsert, and keep the turn facts as index_turns does: the store is measured as the
        server that indexed it holds it (a restarted one reads them back, recall by recall)."""
        started = time.perf_counter()
        if points:
            index = configured.vector_index()
            index.upsert(points)
            remember_facts(index, points)
        self.vector_seconds += time.perf_counter() - started

    def _persona(self) -> None:
        """A full LPM: profile, KB and agent traits at FIFO capacity, a quarter of the trait dimensions."""
        UserProfile.objects.create(user=self.user, name=USER_NAME, extra={"city": "Lisbon"})
        keys = list(TRAITS_BY_KEY)[: len(TRAITS_BY_KEY) // 4]
        scores = self.rng.uniform(0.1, 0.9, len(keys))
        UserTrait.objects.bulk_create([UserTrait(user=self.user, key=key, score=float(score))
                                       for key, score in zip(keys, scores, strict=True)])
        points = []
        for model, kind, templates, capacity in (
                (KnowledgeFact, "kb", FACTS, self.params.kb_capacity),
                (AgentTrait, "agent_trait", AGENT_TRAITS, self.params.agent_trait_capacity)):
            texts = {}
            for n in range(capacity):
                text = self.gen.sentence(templates, TOPIC_NAMES[n % len(TOPIC_NAMES)]) + f" (note {n + 1})"
                texts.setdefault(normalise_fact(text)[:500], text)
            extra = {"sona": self.sona} if model is AgentTrait else {}
            rows = model.objects.bulk_create([model(user=self.user, text=text, normalised=norm, **extra)
                                              for norm, text in texts.items()])
            self._lpm_nodes(rows, MemoryNode.Kind.FACT if kind == "kb" else MemoryNode.Kind.AGENT_TRAIT)
            vectors = configured.embedder().embed([r.text for r in rows])
            points += [VectorPoint(id=str(r.id), vector=v, text=r.text,
                                   payload={"user_id": str(self.user.pk), "kind": kind, "timestamp": 0.0})
                       for r, v in zip(rows, vectors, strict=True)]
        self._timed_upsert(points)


    def _lpm_nodes(self, rows: list, kind: str) -> None:
        """Nodes with their provenance, as a promotion writes them: extracted from a segment, stated
        in one of its pages."""
        nodes = graph.row_nodes_add(user_id=self.user.pk, kind=kind, rows=rows)
        segments = list(self.seg_nodes.items())
        if segments:
            picked = [segments[i % len(segments)] for i in range(len(nodes))]
            graph.edges_add(user_id=self.user.pk, edges=[
                edge for node, (seg_id, seg_node) in zip(nodes, picked, strict=True)
                for edge in ((node, seg_node, "extracted_from", 1.0),
                             *([(node, self.seg_page_node[seg_id], "stated_in", 1.0)]
                               if seg_id in self.seg_page_node else []))])


# --------------------------------------------------------------------------- measurements


def measure_retrieval(user, sona, queries: list[str], query_vectors: list[list[float]], *,
                      policies: list[str], show: bool, label: str, seed: int = 7) -> dict[str, Any]:
    """recall_for_query per policy, with and without the trace, and where each recall's time went
    (the parts it times itself, Recall.timings_ms); then single searches over all of the user's
    points, each alone.

    The recall variants are timed query by query, in a shuffled order per query: they cover the
    same stretch of time, so a slow minute of a shared machine falls on all of them alike (one
    variant after another, the first pass after `optimize()` came out 10 ms slower than the next
    at 10,000 pages, and which one that was decided the comparison). The parts are those of the
    recalls that store their trace (the product's path), so they add up to those recalls: each
    part pays for the CPU caches the others leave it, as it does in the product (timed alone, back
    to back, each part took half to two thirds as long).
    """
    variants = {(policy, name): functools.partial(_recall, user, sona, policy, record)
                for policy in policies for name, record in (("recall", True), ("recall_no_trace", False))}
    pairs = list(zip(queries, query_vectors, strict=True))
    for query, _ in pairs[:5]:  # warm-up: statement caches, the model's first forward
        for call in variants.values():
            call(query)
    rng = np.random.default_rng(seed)
    keys = list(variants)
    timings: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
    parts: dict[str, dict[str, list[float]]] = {policy: {} for policy in policies}
    embeddings: dict[str, list[float]] = {policy: [] for policy in policies}  # beside the first parts
    floors: dict[str, list[float]] = {policy: [] for policy in policies}  # embedding + its searches, serially
    for query, _ in common.progress_iter(pairs, f"{label} recall", show):
        for position in rng.permutation(len(keys)):
            policy, name = keys[position]
            search_ms_taken()
            elapsed, recall = common.timed_ms(functools.partial(variants[policy, name], query))
            searched = search_ms_taken()
            timings[policy, name].append(elapsed)
            if name == "recall":
                for part, ms in recall.timings_ms.items():
                    parts[policy].setdefault(part, []).append(ms)
                if recall.embedding_ms is not None:
                    embeddings[policy].append(recall.embedding_ms)
                    floors[policy].append(recall.embedding_ms + searched)
    result: dict[str, Any] = {"policies": {policy: {} for policy in policies}}
    for (policy, name), values in timings.items():
        result["policies"][policy][name] = common.summarize_ms(values)
    for policy, by_part in parts.items():
        result["policies"][policy]["parts"] = {part: common.summarize_ms(values) for part, values in by_part.items()}
        if embeddings[policy]:
            result["policies"][policy]["embedding"] = common.summarize_ms(embeddings[policy])
            result["policies"][policy]["serial_floor"] = common.summarize_ms(floors[policy])

    index, uid = configured.vector_index(), str(user.pk)
    alone: dict[str, Any] = {
        "search_all_pages": lambda q, v: index.search(user_id=uid, vector=v, limit=10, kind="page"),
        "search_all_turns": lambda q, v: index.search(user_id=uid, vector=v, limit=80, kind="turn",
                                                      match_any={"tier": [Tier.MTM]}),
        "keyword_search_all_turns": lambda q, v: index.search_text(user_id=uid, text=q, limit=80, kind="turn",
                                                                   match_any={"tier": [Tier.MTM]}),
    }
    for name, call in alone.items():
        result[name] = _timed_alone(call, pairs, f"{label} {name}", show)
    return result


def _recall(user, sona, policy: str, record: bool, query: str):
    return recall_for_query(user=user, query=query, sona=sona, record_trace=record, policy=policy)


def _timed_alone(call, pairs: list[tuple[str, list[float]]], label: str, show: bool) -> dict[str, float]:
    """One search over every (query, vector), back to back, after a short warm-up."""
    for query, vector in pairs[:5]:
        call(query, vector)
    return common.summarize_ms([common.timed_ms(functools.partial(call, query, vector))[0]
                                for query, vector in common.progress_iter(pairs, label, show)])


BEFORE_WRITE, WRITE = "re-addressed per move (before)", "re-addressed once per run"


def page_write(user, sona, message: tuple[str, str]) -> DialoguePage:
    """One page stored as a chat turn stores it (memory/services/turns.py): the message, then the
    reply with the page's vector, its text embedded alone as the reply's thread embeds it.
    Maintenance embeds and indexes its utterances (memory/services/utterances.py)."""
    query, response = message
    page = page_start(user=user, query=query, sona=sona, timestamp=timezone.now())
    vectors = configured.embedder().embed([page_text(query, response, "bench")])
    return page_reply_store(page=page, response=response, reply_model="bench", embedding=vectors[0])


def measure_writes(user, sona, count: int, seed: int, show: bool) -> dict[str, Any]:
    """Pages through page_write (a chat turn's store, real embedding) + maintenance_run, one at a
    time, `count` per variant: the product's path (the graph re-addressed once per maintenance
    run) and, as the baseline in the same run, the graph re-addressed on every write as before
    (graph.readdress_once turned off). The variants take turns page by page, on the same store.
    Any error stops the benchmark: a rate over failed writes is no rate."""
    gen = TextGenerator(seed + 99)
    messages = [gen.page(TOPIC_NAMES[n % len(TOPIC_NAMES)]) for n in range(2 * count)]
    variants = {BEFORE_WRITE: common.readdress_per_write, WRITE: nullcontext}
    timings: dict[str, list[float]] = {name: [] for name in variants}
    meters = {name: common.EmbeddingMeter() for name in variants}
    for n, message in enumerate(common.progress_iter(messages, "write path", show)):
        name = list(variants)[n % 2]
        started = time.perf_counter()
        try:
            with variants[name](), common.embeddings_metered(meters[name]):
                page_write(user, sona, message)
                maintenance_run(user_id=user.pk)
        except Exception as exc:
            raise CommandError(f"the write path failed on page {n + 1} of {len(messages)} ({name}): "
                               f"{type(exc).__name__}: {exc}; no write rate is reported") from exc
        timings[name].append((time.perf_counter() - started) * 1000)
    result: dict[str, Any] = {}
    for name, values in timings.items():
        summary: dict[str, Any] = common.summarize_ms(values)
        summary["pages_per_s"] = round(1000 * len(values) / sum(values), 2) if values else math.nan
        summary["embeddings"] = meters[name].per(len(values))
        summary["over_embedding"] = over_embedding(summary["mean"], summary["embeddings"]["ms"])
        result[name] = summary
    product = result[WRITE]
    ratio = product["pages_per_s"] / result[BEFORE_WRITE]["pages_per_s"] if count else math.nan
    return {**product, "speedup": round(ratio, 2), "variants": result,
            "burst": measure_burst(user, sona, [gen.page(TOPIC_NAMES[n % len(TOPIC_NAMES)]) for n in range(count)])}


def over_embedding(write_ms: float, embedding_ms: float) -> float:
    """The whole write's time over its MiniLM calls' (1.0: nothing but embedding; issue 37's target
    is at most 1.3 at every store size)."""
    return round(write_ms / embedding_ms, 2) if embedding_ms and math.isfinite(embedding_ms) else math.nan


def measure_burst(user, sona, messages: list[tuple[str, str]]) -> dict[str, Any]:
    """The same path under a burst: every page stored as it comes (page_write, the page's embedding
    included), then one maintenance_run that takes them all (utterances indexed in batches, one
    eviction and promotion pass). pages/s = pages / (the whole burst and the maintenance that
    caught up with it): what the product sees when pages come faster than maintenance runs. Any
    error stops the benchmark."""
    started = time.perf_counter()
    pages = []
    try:
        with common.embeddings_metered() as meter:
            for message in messages:
                pages.append(page_write(user, sona, message))
            stored = time.perf_counter()
            maintenance_run(user_id=user.pk)
    except Exception as exc:
        raise CommandError(f"the write path failed in a burst of {len(messages)} pages: "
                           f"{type(exc).__name__}: {exc}; no write rate is reported") from exc
    # Maintenance indexes every page's utterances: a page left out would make the rate a false one.
    indexed = DialoguePage.objects.filter(id__in=[p.id for p in pages], turns_indexed=True).count()
    if indexed != len(messages):
        raise CommandError(f"{indexed} of a burst's {len(messages)} pages had their utterances indexed; "
                           "no write rate is reported")
    seconds = time.perf_counter() - started
    embeddings = meter.per(len(messages))
    return {"pages": len(messages), "seconds": round(seconds, 2), "store_s": round(stored - started, 2),
            "maintenance_s": round(seconds - (stored - started), 2),
            "pages_per_s": round(len(messages) / seconds, 2) if messages else math.nan,
            "embeddings": embeddings,
            "over_embedding": over_embedding(1000 * seconds / len(messages), embeddings["ms"]) if messages
            else math.nan}


def run_size(pages: int, options: dict, show: bool) -> dict:
    pool = embedding_pool(min(options["pool"], pages), options["seed"], show)
    gen = TextGenerator(options["seed"] + 1_000_003)
    queries = [gen.query() for _ in range(options["queries"])]
    query_vectors = configured.embedder().embed(queries)
    measure = {"policies": options["policies"], "show": show}
    with common.bench_env(isolate_db=not options["in_place"], keep=options["keep"]) as env:
        builder = StoreBuilder(env, pages=pages, options=options, pool=pool)
        result: dict[str, Any] = {"pages": pages, "build": builder.build(show), "latency": {},
                                  "pool_texts": min(options["pool"], pages),
                                  "pool_seconds": round(pool.seconds, 2),
                                  "db_mb": common.database_size_mb(), "shard_mb": env.shard_size_mb()}
        user, sona = builder.user, builder.sona
        if options["hnsw"] in ("both", "off"):
            result["latency"]["plain"] = measure_retrieval(user, sona, queries, query_vectors, label="plain",
                                                           seed=options["seed"], **measure)
        if options["write_sample"]:
            result["write"] = measure_writes(user, sona, options["write_sample"], options["seed"], show)
        if options["hnsw"] in ("both", "on"):
            result["optimize_seconds"] = round(common.timed_ms(env.index.optimize)[0] / 1000, 1)
            result["shard_mb_hnsw"] = env.shard_size_mb()
            result["latency"]["hnsw"] = measure_retrieval(user, sona, queries, query_vectors, label="hnsw",
                                                          seed=options["seed"], **measure)
        result["database"] = _database_vendor()
        result["vectors"] = env.vector_location
    result["peak_rss_mb"] = common.peak_rss_mb()
    return result


def _analyze_if_postgres() -> None:
    """PostgreSQL's autovacuum would have analysed tables that grew over months; a bulk build is
    measured minutes later, so give the planner its statistics now. SQLite gathers none unless
    told to, and the product never tells it: it is measured as it is."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def _database_vendor() -> str:
    from django.db import connection

    return connection.vendor


def run(options: dict, stdout) -> dict:
    show = not options.get("no_progress")
    configured.embedder().embed(["warm up"])
    baseline_rss = common.peak_rss_mb()
    runs = []
    for pages in sorted(set(options["sizes"])):  # ascending: the process's peak RSS is then this size's
        runs.append(run_size(pages, options, show))
        if show:  # on stderr, with the progress bars: stdout may be carrying --json
            print(render_latency_table(runs[-1:]), file=sys.stderr, flush=True)
    keys = ("sizes", "policies", "queries", "write_sample", "segment_pages", "pool", "noise", "hnsw", "seed")
    return {"benchmark": "scale", "date": common.today(), "machine": common.machine(),
            "baseline_rss_mb": baseline_rss, "options": {k: options[k] for k in keys}, "runs": runs}


def render(result: dict) -> str:
    runs, opts = result["runs"], result["options"]
    notes = [
        f"{result['date']}, {result['machine']}; database {runs[0]['database'] if runs else '-'}; "
        f"peak RSS with only the model loaded {result['baseline_rss_mb']} MB.",
        "Stores built by the bulk path: rows in their tiers and segments, vectors upserted in batches. "
        f"Embeddings: real MiniLM for a pool of {opts['pool']:,} texts, reused with Gaussian noise "
        f"(sigma {opts['noise']}) for the other pages and utterances; segments, persona and queries real.",
        "recall = memory.services.recall.recall_for_query, query embedding and heat update included; "
        "'trace' = the retrieval trace is stored (the product's path); embedding = the query embedding's "
        "own time inside those recalls (Recall.embedding_ms). The parts are the recalls' own timings "
        "(Recall.timings_ms), in the order they ran; they add up to the recall. The embedding runs on "
        "another thread beside STM, profile and BM25: 'embedding wait' is what of it they did not hide. "
        "'trace' is writing the trace and committing the visits with it.",
        "all-pages / all-turns search = one dense search over all of the user's page / MTM utterance points; "
        "all-turns BM25 = one keyword search over the user's MTM utterances (the hybrid policy makes both).",
        "write path = a chat turn's store (page_start, the page's text embedded, page_reply_store) + "
        "maintenance_run (the utterances embedded and indexed) per page, on the built store, "
        "the graph re-addressed once per maintenance run; 'before' = the same with the graph re-addressed on "
        "every write (the baseline, measured in the same run, turn about with the product's path); 'burst' = as many "
        "pages again stored back to back, then one maintenance run that takes them all, pages / the whole time. "
        "Any write error stops the benchmark. 'by the embeddings alone' = pages / the seconds the product's "
        "MiniLM calls took inside those writes (texts embedded and ms a page beside it): the rate no saving "
        "elsewhere in the write path can pass; 'write / MiniLM' = a write's mean time over its MiniLM time "
        "(1.0: nothing but embedding).",
    ]
    return "\n\n".join([render_store_table(runs), render_latency_table(runs), render_stage_table(runs),
                        "\n".join(notes)])


def render_store_table(runs: list[dict]) -> str:
    rows = []
    for r in runs:
        write = r.get("write") or {}
        before = (write.get("variants") or {}).get(BEFORE_WRITE) or {}
        embedded = write.get("embeddings") or {}
        rows.append([r["pages"], r["build"]["segments"], r["build"]["points"], r["build"]["seconds"],
                     r["build"]["pages_per_s"], write.get("pages_per_s"), write.get("p50"), write.get("p95"),
                     before.get("pages_per_s"), before.get("p50"), write.get("speedup"),
                     (write.get("burst") or {}).get("pages_per_s"),
                     embedded.get("texts"), embedded.get("ms"), embedded.get("ceiling_per_s"),
                     write.get("over_embedding"),
                     ((write.get("burst") or {}).get("embeddings") or {}).get("ceiling_per_s"),
                     (write.get("burst") or {}).get("over_embedding"),
                     r["db_mb"], r["shard_mb"],
                     r.get("shard_mb_hnsw"), r.get("optimize_seconds"), r["peak_rss_mb"]])
    return common.render_table(
        ["pages", "segments", "points", "bulk s", "bulk pages/s", "write pages/s", "write p50 ms",
         "write p95 ms", "before pages/s", "before p50 ms", "write / before", "burst pages/s",
         "texts embedded/page", "embedding ms/page", "pages/s by the embeddings alone", "write / MiniLM",
         "burst pages/s by the embeddings alone", "burst write / MiniLM", "DB MB", "shard MB",
         "shard MB HNSW", "optimize s", "peak RSS MB"],
        rows, title="Store size and ingest")


def floor_ms(lat: dict, policy: str) -> float | None:
    """A recall's floor in one run (issue 37): the policy's query embedding p50 (inside its
    recalls) plus one dense search p95 over the user's MTM utterances."""
    embedding = lat["policies"][policy].get("embedding", {}).get("p50")
    search = lat.get("search_all_turns", {}).get("p95")
    return None if embedding is None or search is None else embedding + search


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return round(numerator / denominator, 2) if numerator is not None and denominator else None


def render_latency_table(runs: list[dict]) -> str:
    """One row per size, index and policy; beside the milliseconds, the ratios issue 37 sets
    targets on: recall p95 / the floor (floor_ms) and a policy's recall p95 / the default
    policy's (the hybrid one)."""
    default = default_policy_name()
    rows = []
    for r in runs:
        for variant in ("plain", "hnsw"):
            lat = r["latency"].get(variant)
            hybrid = ((lat or {}).get("policies", {}).get(default) or {}).get("recall", {}).get("p95")
            for policy, timing in (lat or {}).get("policies", {}).items():
                floor, serial = floor_ms(lat, policy), timing.get("serial_floor", {}).get("p95")
                rows.append([r["pages"], "yes" if variant == "hnsw" else "no", policy,
                             timing["recall"]["p50"], timing["recall"]["p95"],
                             timing["recall_no_trace"]["p50"], timing["recall_no_trace"]["p95"],
                             timing.get("embedding", {}).get("p50"), lat["search_all_pages"]["p95"],
                             lat["search_all_turns"]["p95"], lat.get("keyword_search_all_turns", {}).get("p95"),
                             _ratio(timing["recall"]["p95"], floor), serial, _ratio(timing["recall"]["p95"], serial),
                             _ratio(timing["recall"]["p95"], hybrid)])
    return common.render_table(
        ["pages", "HNSW", "policy", "recall p50", "recall p95", "no trace p50", "no trace p95",
         "embedding p50", "all-pages search p95", "all-turns search p95", "all-turns BM25 p95",
         "p95 / floor", "serial floor p95", "p95 / serial floor", f"p95 / {default} p95"], rows,
        title="Retrieval latency, ms (recall includes the query embedding; floor = embedding p50 + "
              "all-turns search p95; serial floor = each recall's embedding + the searches it made, one "
              "after another)")


def render_stage_table(runs: list[dict]) -> str:
    """One row per size, index and policy; a column per part, "p50 / p95"; the early search (the
    hybrid policy's BM25 list) and the mid-term part are the policy's own (RecallPolicy.parts)."""
    columns = {STM_PART: "STM", PROFILE_PART: "profile, traits", "early": "BM25 (early search)",
               EMBED_PART: "embedding wait", SIMILAR_PART: "facts, agent traits", "mid-term": "mid-term",
               VISITS_PART: "visits", TRACE_PART: "trace"}
    rows = []
    for r in runs:
        for variant in ("plain", "hnsw"):
            for policy, timing in (r["latency"].get(variant) or {}).get("policies", {}).items():
                own = get_policy(policy)
                generic = {own.rank_part: "mid-term", own.early_part: "early"}
                parts = {generic.get(name, name): t for name, t in timing.get("parts", {}).items()}
                rows.append([r["pages"], "yes" if variant == "hnsw" else "no", policy,
                             *(f"{parts[name]['p50']:.1f} / {parts[name]['p95']:.1f}" if name in parts else "-"
                               for name in columns)])
    return common.render_table(["pages", "HNSW", "policy", *columns.values()], rows,
                               title="Where a recall's time goes, p50 / p95 ms (the parts the traced recalls timed; "
                                     "mid-term = segments then pages, or utterances)")
