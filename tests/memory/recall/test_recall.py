"""Retrieval returns exactly the documented sets, records a trace, and never crosses users; the
MemoryOS policy's first stage keeps pages outside its top-m segments out."""

from __future__ import annotations

import numpy as np
import pytest
from django.utils import timezone

from memory.adapters import configured
from memory.engine.hybrid_scoring import PART_NAMES
from memory.engine.retrieval import FRAME_TOKENS
from memory.models import DialoguePage, RetrievalTrace, Segment, Tier
from memory.recall.base import get_policy
from memory.services.long_term import profile_update
from memory.services.pages import page_start
from memory.services.recall import recall_for_query
from memory.services.turns import page_complete, turn_run
from persona.models import UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")

TOPICS = {
    "dog": ["I adopted a golden retriever puppy called Max.", "Max loves chasing balls in the park.",
            "I take my dog Max to the vet on Fridays."],
    "cooking": ["I cooked a spicy Thai green curry for dinner.", "My homemade lasagna recipe uses three cheeses.",
                "I baked sourdough bread this morning."],
    "work": ["My manager asked me to lead the quarterly budget review.", "I have a job interview at a bank.",
             "The office moved to a new building downtown.", "My manager lets me bring my dog to the office."],
}


def tune(settings, **params):
    settings.MEMORYOS = {**settings.MEMORYOS, **params}


def fill(user, lines):
    for line in lines:
        page = page_start(user=user, query=line)
        page_complete(page=page, response="I see.", reply_model="test")


def test_recall_sets_and_trace(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=3, TOP_M_SEGMENTS=2, TOP_K_PAGES=2)
    user = make_user()
    profile_update(user=user, name="Ana", birth_year=1990)
    fill(user, [line for lines in TOPICS.values() for line in lines] + ["Filler one.", "Filler two.", "Filler 3."])
    recall = recall_for_query(user=user, query="What is my dog's name?", policy="memoryos")
    kinds = [item.kind for item in recall.items]
    # all of STM (3 pages), at most top-k MTM pages, the profile whole
    assert kinds.count("stm_page") == 3
    stm_refs = {i.ref for i in recall.items if i.kind == "stm_page"}
    assert stm_refs == {str(p.id) for p in DialoguePage.objects.filter(user=user, tier=Tier.STM)}
    mtm = [i for i in recall.items if i.kind == "mtm_page"]
    assert 1 <= len(mtm) <= 2
    assert "Max" in mtm[0].text  # the real MiniLM model puts the dog page first
    chosen = [s for s in recall.trace.payload["segments"] if s["chosen"]]
    assert len(chosen) <= 2
    assert {i.breakdown["segment_id"] for i in mtm} <= {s["id"] for s in chosen}
    # Fscore = relevance (the best page's, min-max over the candidate segments) + keyword Jaccard
    assert all(s["fscore"] == pytest.approx(s["relevance"] + s["jaccard"], abs=1e-3) for s in chosen)
    assert all(0.0 <= s["relevance"] <= 1.0 for s in recall.trace.payload["segments"])
    assert max(s["relevance"] for s in recall.trace.payload["segments"]) == 1.0
    assert kinds.count("profile") == 1 and "Ana" in recall.items[kinds.index("profile")].text
    trace = RetrievalTrace.objects.get(id=recall.trace.id)
    assert trace.payload["heat_changes"] and trace.payload["stm"]
    assert {c["segment_id"] for c in trace.payload["heat_changes"]} == {s["id"] for s in chosen}


def test_retrieval_bumps_visits_of_chosen_segments_only(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1, TOP_M_SEGMENTS=1)
    user = make_user()
    fill(user, TOPICS["dog"][:1] + TOPICS["work"][:1] + ["filler"])
    recall = recall_for_query(user=user, query="my puppy", policy="memoryos")
    chosen = [s["id"] for s in recall.trace.payload["segments"] if s["chosen"]]
    visits = dict(Segment.objects.filter(user=user).values_list("id", "n_visit"))
    assert len(chosen) == 1
    assert {str(k): v for k, v in visits.items()} == {
        str(k): (1 if str(k) == chosen[0] else 0) for k in visits}


def test_users_never_see_each_others_memory(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    alice, bob = make_user("alice"), make_user("bob")
    fill(alice, ["My secret diary password is tangerine.", "Alice filler."])
    fill(bob, ["I like trains.", "Bob filler."])
    recall = recall_for_query(user=bob, query="What is the secret diary password?")
    assert all("tangerine" not in item.text for item in recall.items)
    alice_ids = {str(i) for i in DialoguePage.objects.filter(user=alice).values_list("id", flat=True)}
    assert not alice_ids & {item.ref for item in recall.items}
    hits = configured.vector_index().search(user_id=str(bob.pk), vector=[0.05] * 384, limit=50)
    assert hits and not alice_ids & {h.id for h in hits}


def test_traits_enter_recall_whole(make_user, memory_env):
    user = make_user()
    UserTrait.objects.create(user=user, key="music_interest", score=0.6)
    UserTrait.objects.create(user=user, key="food_interest", score=0.0)
    recall = recall_for_query(user=user, query="anything")
    traits = [i for i in recall.items if i.kind == "user_trait"]
    assert [t.ref for t in traits] == ["music_interest"]


def test_reply_context_respects_token_budget(make_user, memory_env):
    budget = 120 + FRAME_TOKENS  # the memory's frame (the rule, the block's tags) is counted as the system text is
    tune(memory_env, PROMPT_TOKEN_BUDGET=budget)
    user = make_user()
    fill(user, ["A fairly long message about my garden, roses, tulips and the compost heap. " * 3] * 5)
    result = turn_run(user=user, message="What grows in my garden?")
    assert result.prompt.tokens <= budget + 40  # budget plus the per-section headers
    assert result.prompt.included and result.prompt.dropped


def test_hybrid_policy_ranks_single_utterances(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    profile_update(user=user, name="Ana")
    fill(user, [line for lines in TOPICS.values() for line in lines] + ["Filler."])
    recall = recall_for_query(user=user, query="Which bank is my interview with?", policy="hybrid")
    turns = [i for i in recall.items if i.kind == "turn"]
    assert turns and turns[0].text == "Ana: I have a job interview at a bank."
    top = turns[0].breakdown
    assert top["score"] == pytest.approx(sum(top[name] for name in PART_NAMES), abs=1e-3)
    assert set(PART_NAMES) == {"dense", "sparse", "feedback", "hop", "speaker", "time", "long_term"}
    assert top["time"] == 0.0
    assert recall.trace.payload["policy"] == "hybrid" and recall.trace.payload["turns"]
    assert RetrievalTrace.objects.get(id=recall.trace.id).policy == "hybrid"
    assert {i.text.split(": ")[0] for i in turns} == {"Ana", "assistant"}
    assert "Ana: Filler." not in {i.text for i in turns}  # STM is in the prompt whole, not searched


def test_hybrid_boosts_the_named_speaker(make_user, memory_env):
    from memory.engine.hybrid_scoring import HybridParams
    from memory.formats.locomo import parse_sample
    from memory.services.importing import conversation_import

    tune(memory_env, STM_CAPACITY=1)
    raw = {"sample_id": "t", "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went hiking in the hills."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "I went hiking in the hills too."},
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "We should paint the fence."},
            {"speaker": "Melanie", "dia_id": "D1:4", "text": "Sure."},
        ]}}
    user = make_user()
    conversation_import(user=user, conversation=parse_sample(raw, 0))
    for name, expected in (("Melanie", "D1:2"), ("Caroline", "D1:1")):
        recall = recall_for_query(user=user, query=f"Where did {name} go hiking?", policy="hybrid",
                                  record_trace=False, update_heat=False)
        turns = [i for i in recall.items if i.kind == "turn"]
        assert turns[0].source_ids == (expected,)
        assert turns[0].breakdown["speaker"] == HybridParams().speaker_boost


@pytest.mark.parametrize("policy", ["memoryos", "hybrid"])
def test_recall_times_its_parts_and_the_trace_keeps_them(make_user, monkeypatch, policy):
    import time

    from memory.recall import long_term as persona_selectors

    user = make_user()
    fill(user, [line for lines in TOPICS.values() for line in lines])
    similar = persona_selectors.similar_items

    def slow_similar(**kw):  # 200 ms more in one part: the stopwatch must put them there
        time.sleep(0.2)
        return similar(**kw)

    monkeypatch.setattr(persona_selectors, "similar_items", slow_similar)
    recall = recall_for_query(user=user, query="What is my dog's name?", policy=policy)

    parts = recall.timings_ms
    # both read the relevance core's keyword list while the query is embedded
    # the facts are read before ranking: the relevance core lifts the turns they were learned from
    assert list(parts) == ["STM pages", "profile and traits", "keyword search", "embedding wait",
                           "facts and agent traits", get_policy(policy).rank_part, "segment visits", "trace"]
    assert parts["facts and agent traits"] >= 200
    assert all(ms < 200 for name, ms in parts.items() if name != "facts and agent traits")
    # the trace keeps every part but its own writing, and they add up to the latency it records
    stored = RetrievalTrace.objects.get(id=recall.trace.id)
    assert stored.payload["timings_ms"] == {name: ms for name, ms in parts.items() if name != "trace"}
    assert sum(stored.payload["timings_ms"].values()) == pytest.approx(stored.latency_ms, abs=0.5)
    assert stored.payload["embedding_ms"] == recall.embedding_ms > 0

    given = recall_for_query(user=user, query="my dog", query_vector=configured.embedder().embed(["my dog"])[0],
                             policy=policy, record_trace=False)
    assert "embedding wait" not in given.timings_ms and given.embedding_ms is None and given.trace is None


def test_the_query_is_embedded_on_another_thread_while_the_keyword_list_is_read(make_user, monkeypatch):
    import threading

    from memory.recall import hybrid as recall_module

    user = make_user()
    fill(user, [line for lines in TOPICS.values() for line in lines])
    searched = threading.Event()
    keyword_turns = recall_module.keyword_turns

    def keyword_turns_then_signal(**kw):
        hits = keyword_turns(**kw)
        searched.set()
        return hits

    embedder = configured.embedder()
    embed, seen = embedder.embed, {}

    def embed_once_searched(texts):  # done one after the other, this waits out its timeout
        seen["thread"], seen["overlapped"] = threading.current_thread(), searched.wait(timeout=10)
        return embed(texts)

    monkeypatch.setattr(recall_module, "keyword_turns", keyword_turns_then_signal)
    monkeypatch.setattr(embedder, "embed", embed_once_searched)
    recall = recall_for_query(user=user, query="What is my dog's name?", policy="hybrid")

    assert seen["overlapped"] and seen["thread"] is not threading.current_thread()
    assert "Max" in next(item for item in recall.items if item.kind == "turn").text


def test_an_embedder_failure_reaches_the_caller(make_user, monkeypatch):
    user = make_user()
    fill(user, TOPICS["dog"])

    def broken(texts):
        raise RuntimeError("embedder down")

    monkeypatch.setattr(configured.embedder(), "embed", broken)
    with pytest.raises(RuntimeError, match="embedder down"):
        recall_for_query(user=user, query="my dog", policy="hybrid")


def test_unknown_policy_is_refused(make_user):
    with pytest.raises(ValueError, match="unknown recall policy 'magic'"):
        recall_for_query(user=make_user(), query="x", policy="magic")


class PayloadReadsCounted:
    """The index's payload reads, each call's ids appended to `reads`."""

    def __init__(self, index, reads: list[list[str]]) -> None:
        self.index, self.reads = index, reads

    def get_payloads(self, *, user_id, ids, fields):
        self.reads.append(list(ids))
        return self.index.get_payloads(user_id=user_id, ids=ids, fields=fields)


def test_turn_facts_are_read_from_the_index_once_and_per_user(make_user, memory_env):
    from memory.engine.candidates import TurnFact
    from memory.recall.turn_facts import TurnFacts
    from memory.services.utterances import turn_point_id

    tune(memory_env, STM_CAPACITY=1)
    ana, bob = make_user(), make_user()
    profile_update(user=ana, name="Ana")
    fill(ana, TOPICS["dog"] + ["Filler."])
    fill(bob, TOPICS["work"] + ["Filler."])
    first = DialoguePage.objects.get(user=ana, seq=1)
    ana_ids = [turn_point_id(first, 0), turn_point_id(first, 1)]
    bob_id = turn_point_id(DialoguePage.objects.get(user=bob, seq=1), 0)
    reads: list[list[str]] = []
    facts, counting = TurnFacts(size=2), PayloadReadsCounted(configured.vector_index(), reads)
    found = facts.get(counting, user_id=str(ana.pk), ids=[*ana_ids, bob_id])
    again = facts.get(counting, user_id=str(ana.pk), ids=ana_ids)

    assert set(found) == set(ana_ids)  # Bob's point is not Ana's to read
    said = first.timestamp.timestamp()  # the page's time, for time windows and sessions
    assert found[ana_ids[0]] == TurnFact(seq=1, pos=0, speaker="Ana", timestamp=said)
    assert found[ana_ids[1]] == TurnFact(seq=1, pos=1, speaker="assistant", timestamp=said)
    assert found[ana_ids[0]].day == int(said // 86400)
    assert again == {key: found[key] for key in ana_ids}
    assert reads == [[*ana_ids, bob_id]]  # the second call came from memory
    rewritten = found[ana_ids[0]]._replace(speaker="Ana Lopez")  # a re-indexed page's new facts
    facts.put(counting, {ana_ids[0]: rewritten})
    assert facts.get(counting, user_id=str(ana.pk), ids=ana_ids)[ana_ids[0]] == rewritten
    assert len(reads) == 1 and len(facts) == 2


def test_turn_facts_of_one_index_are_never_served_for_another():
    from memory.recall.turn_facts import TurnFacts

    class OneStore:  # the same integer id names another turn in each store (ids repeat)
        def __init__(self, speaker: str) -> None:
            self.speaker = speaker

        def get_payloads(self, *, user_id, ids, fields):
            return {key: {"seq": 1, "pos": 0, "speaker": self.speaker} for key in ids}

    facts, old, new = TurnFacts(size=10), OneStore("Ana"), OneStore("Bob")
    assert facts.get(old, user_id="1", ids=["1099511627776"])["1099511627776"].speaker == "Ana"
    assert facts.get(new, user_id="1", ids=["1099511627776"])["1099511627776"].speaker == "Bob"
    assert len(facts) == 1


def test_turn_facts_keep_at_most_their_size_dropping_the_oldest(make_user, memory_env):
    from memory.recall.turn_facts import TurnFacts
    from memory.services.utterances import turn_point_id

    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    fill(user, TOPICS["cooking"] + ["Filler."])
    ids = [turn_point_id(page, 0) for page in DialoguePage.objects.filter(user=user, tier=Tier.MTM).order_by("seq")]
    reads: list[list[str]] = []
    facts, counting = TurnFacts(size=2), PayloadReadsCounted(configured.vector_index(), reads)
    facts.get(counting, user_id=str(user.pk), ids=ids)
    facts.get(counting, user_id=str(user.pk), ids=ids[1:])  # the two newest: still there
    facts.get(counting, user_id=str(user.pk), ids=ids[:1])  # the oldest: read again

    assert len(ids) == 3 and len(facts) == 2
    assert reads == [ids, ids[:1]]


def test_maintenance_puts_the_facts_of_the_turns_it_indexes(make_user, memory_env, monkeypatch):
    from memory.engine.candidates import TurnFact
    from memory.recall.turn_facts import turn_facts
    from memory.services.utterances import turn_point_id

    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    profile_update(user=user, name="Ana")
    fill(user, TOPICS["dog"] + ["Filler."])
    index = configured.vector_index()
    reads: list[list[str]] = []
    monkeypatch.setattr(index, "get_payloads", lambda **kwargs: reads.append(kwargs["ids"]) or {})
    page = DialoguePage.objects.get(user=user, seq=2)

    found = turn_facts().get(index, user_id=str(user.pk), ids=[turn_point_id(page, 0)])

    assert found == {turn_point_id(page, 0): TurnFact(seq=2, pos=0, speaker="Ana",
                                                      timestamp=page.timestamp.timestamp())}
    assert reads == []  # recall found them in memory: maintenance had put them there


def test_turn_point_ids_pack_user_seq_and_position():
    import uuid

    from memory.services.utterances import legacy_turn_point_id, turn_point_id, turn_point_ids

    page = DialoguePage(id=uuid.UUID(int=9), user_id=3, seq=5, utterances=[{}, {}])
    huge_user = DialoguePage(id=uuid.UUID(int=9), user_id=1 << 23, seq=5)

    assert turn_point_id(page, 1) == "3298534884609"  # 3·2^40 + 5·2^8 + 1
    assert turn_point_id(huge_user, 1) == legacy_turn_point_id(page.id, 1) == str(uuid.UUID(
        legacy_turn_point_id(page.id, 1)))
    assert turn_point_ids(page) == ["3298534884608", "3298534884609",
                                    legacy_turn_point_id(page.id, 0), legacy_turn_point_id(page.id, 1)]


def test_a_recall_writes_its_visits_and_its_trace_together_or_not_at_all(make_user, memory_env, monkeypatch):
    tune(memory_env, STM_CAPACITY=1, TOP_M_SEGMENTS=1)
    user = make_user()
    fill(user, TOPICS["dog"][:1] + ["filler"])

    def failing_create(**fields):
        raise RuntimeError("the trace table is unavailable")

    with monkeypatch.context() as patched:
        patched.setattr(RetrievalTrace.objects, "create", failing_create)
        with pytest.raises(RuntimeError, match="unavailable"):
            recall_for_query(user=user, query="my puppy", policy="memoryos")
    assert list(Segment.objects.filter(user=user).values_list("n_visit", flat=True)) == [0]
    recall_for_query(user=user, query="my puppy", policy="memoryos")  # the same recall, the trace stored
    assert list(Segment.objects.filter(user=user).values_list("n_visit", flat=True)) == [1]


def test_recall_bookkeeping_does_not_wait_for_the_flush_on_postgresql(memory_env):
    from django.db import connection

    from memory.services.recall import _bookkeeping

    if connection.vendor != "postgresql":
        pytest.skip("synchronous_commit is PostgreSQL's")

    def setting() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    with _bookkeeping(writes=True):
        assert setting() == "off"
    assert setting() == "on"
    with _bookkeeping(writes=False):
        assert setting() == "on"


def test_memoryos_returns_pages_of_the_top_m_segments_only_even_a_relevant_one_outside(make_user, memory_env,
                                                                                     monkeypatch):
    from memory.recall import memoryos
    from memory.recall.relevance import turn_relevance

    tune(memory_env, STM_CAPACITY=1, TOP_M_SEGMENTS=1, TOP_K_PAGES=10)
    user = make_user()
    fill(user, [line for lines in TOPICS.values() for line in lines] + ["Filler."])
    query, now = "What is my dog's name?", timezone.now()
    query_vector = configured.embedder().embed([query])[0]

    def recall(segments_first: bool):
        monkeypatch.setattr(memoryos, "SEGMENTS_FIRST", segments_first)
        found = recall_for_query(user=user, query=query, query_vector=query_vector, now=now, policy="memoryos",
                                 update_heat=False)
        return [i for i in found.items if i.kind == "mtm_page"], found.trace.payload["segments"]

    # By hand: a page's relevance is its best turn's score; a segment's, its best page's, min-max
    # over the segments; Fscore adds the keyword Jaccard; stage one keeps the best segment.
    page_score = turn_relevance(user=user, query=query, query_vector=query_vector, now=now).page_scores()
    pages = {page.seq: page for page in DialoguePage.objects.filter(user=user, tier=Tier.MTM)}
    best: dict[str, float] = {}
    for seq, score in page_score.items():
        sid = str(pages[seq].segment_id)
        best[sid] = max(score, best.get(sid, -np.inf))
    low, high = min(best.values()), max(best.values())
    items, segments = recall(segments_first=True)
    assert len(segments) == len(best) >= 3
    for segment in segments:
        assert segment["relevance"] == pytest.approx((best[segment["id"]] - low) / (high - low), abs=1e-4)
        assert segment["fscore"] == pytest.approx(segment["relevance"] + segment["jaccard"], abs=1e-3)
    chosen = [s["id"] for s in segments if s["chosen"]]
    assert chosen == [max(segments, key=lambda s: s["fscore"])["id"]]
    assert {i.breakdown["segment_id"] for i in items} == set(chosen)
    assert "Max" in items[0].text
    # A page outside the chosen segment that the core scores above the candidates' mean (z-scale:
    # above 0; here "Max loves chasing balls", which segmentation left on its own) is still left out.
    returned = {i.ref for i in items}
    outside = [page for seq, page in pages.items() if str(page.segment_id) not in chosen and page_score[seq] > 0]
    assert outside and not {str(page.id) for page in outside} & returned
    # Without the first stage every segment is chosen and stage two ranks all pages by relevance.
    everything, segments = recall(segments_first=False)
    assert all(s["chosen"] for s in segments)
    assert {str(page.id) for page in outside} <= {i.ref for i in everything}
    assert [i.breakdown["relevance"] for i in everything] == sorted(
        (round(page_score[seq], 4) for seq in pages), reverse=True)
