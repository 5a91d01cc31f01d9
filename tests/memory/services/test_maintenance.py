"""STM → MTM → LPM with the real MiniLM model and a real Qdrant Edge shard."""

from __future__ import annotations

import pytest
from django.utils import timezone

from memory.adapters import configured
from memory.models import (
    INTERRUPTED_MODEL_NAME,
    DialoguePage,
    LifecycleEvent,
    MemoryEdge,
    PageStatus,
    Segment,
    Tier,
    UserMemoryState,
)
from memory.services.maintenance import maintenance_run
from memory.services.pages import page_start
from memory.services.recall import recall_for_query
from memory.services.segments import page_move_to_mtm
from memory.services.turns import RESUMED_NOTE, page_complete
from persona.models import AgentTrait, KnowledgeFact, UserTrait
from tests.conftest import stopped_mid_turn

pytestmark = pytest.mark.usefixtures("memory_env")


def tune(settings, **params):
    settings.MEMORYOS = {**settings.MEMORYOS, **params}


def add_page(user, query, response="", **kw):
    page = page_start(user=user, query=query, **kw)
    return page_complete(page=page, response=response, reply_model="test")


def test_same_topic_pages_share_a_segment_and_others_start_one(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    add_page(user, "I adopted a puppy named Max last week.", "A puppy! How is Max settling in?")
    add_page(user, "Max the puppy chewed my shoes again.", "Puppies chew a lot; get Max some chew toys.")
    add_page(user, "My quarterly tax filing is due on Friday.", "Do you have your receipts ready?")
    add_page(user, "Anything else?", "")
    seg_of = {p.query[:12]: p.segment_id for p in DialoguePage.objects.filter(user=user, tier=Tier.MTM)}
    assert seg_of["I adopted a "] == seg_of["Max the pupp"]
    assert seg_of["My quarterly"] != seg_of["I adopted a "]
    merged = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.SEGMENT_MERGED)
    assert merged.payload["best_fscore"] > 0.6
    created = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.SEGMENT_CREATED)
    assert created.count() == 2
    assert created.last().payload["best_fscore"] is None
    assert created.first().payload["best_fscore"] <= 0.6


def test_segment_gets_keywords_summary_and_graph_edges(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    add_page(user, "I started learning the violin in September.", "How are the violin lessons going?")
    add_page(user, "Next topic.", "")
    segment = Segment.objects.get(user=user)
    assert "violin" in segment.keywords
    assert "violin" in segment.summary
    assert segment.l_interaction == 1 and segment.page_count == 1
    assert MemoryEdge.objects.filter(user=user, relation="contains").count() == 1
    assert configured.vector_index().count(user_id=str(user.pk), kind="segment") == 1


def test_moving_a_page_twice_is_a_no_op(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    first = add_page(user, "I like tea.", "Green or black?")
    add_page(user, "Second page.", "")
    assert page_move_to_mtm(user_id=user.pk, page_id=str(first.id)) is None
    assert DialoguePage.objects.filter(user=user, tier=Tier.MTM).count() == 1


def test_over_capacity_the_coldest_segment_is_evicted(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1, MTM_CAPACITY=2)
    user = make_user()
    topics = ["I repaired my bicycle chain today.", "My grandmother bakes the best apple pie.",
              "The stock market fell sharply this week.", "Last topic to push the others."]
    for text in topics:
        add_page(user, text, "")
    # three segments were made, one over capacity: the first (oldest access, same heat) went
    evicted = Segment.objects.get(user=user, status=Segment.Status.EVICTED)
    first_page = DialoguePage.objects.get(user=user, seq=1)
    assert evicted.id == first_page.segment_id
    assert first_page.tier == Tier.ARCHIVED
    assert Segment.objects.filter(user=user, status=Segment.Status.ACTIVE).count() == 2
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.SEGMENT_EVICTED)
    assert event.subject_id == str(evicted.id)
    index = configured.vector_index()
    assert index.count(user_id=str(user.pk), kind="segment") == 2
    hits = index.search(user_id=str(user.pk), vector=list(first_page.to_engine().embedding), limit=5, kind="page")
    assert str(first_page.id) not in {h.id for h in hits}


def test_hot_segment_is_promoted_with_provenance_and_resets(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1, FACTS_AT_TURN=False)  # promotion's own facts, not the turns'
    user = make_user()
    lines = [
        "I love hiking in the mountains with my dog.",
        "I went hiking on the Pico trail last weekend with my dog.",
        "My favorite hiking trail is the Pico trail.",
        "I bought new hiking boots for the mountain trails.",
        "I'm planning a hiking trip to the Alps in June.",
        "I hiked up the mountain again with my dog on Sunday.",
    ]
    for line in lines:
        add_page(user, line, "You should try the ridge trail next time.")
    add_page(user, "Unrelated closing line about taxes.", "")
    promoted = Segment.objects.filter(user=user, promoted_count__gt=0)
    assert promoted.count() == 1
    segment = promoted.get()
    # heat = 0 visits + L + 1 > 5 once the segment holds 5 pages; afterwards L restarts from 0
    assert segment.l_interaction == segment.page_count - 5
    facts = KnowledgeFact.objects.filter(user=user)
    assert facts.exists() and all(f.segment_id == segment.id for f in facts)
    assert any("hiking" in f.text.lower() for f in facts)
    assert UserTrait.objects.filter(user=user, key="travel_interest", score__gt=0).exists() or \
        UserTrait.objects.filter(user=user, score__gt=0).exists()
    assert AgentTrait.objects.filter(user=user).exists()
    assert MemoryEdge.objects.filter(user=user, relation="extracted_from").count() == facts.count() + \
        AgentTrait.objects.filter(user=user).count()
    assert MemoryEdge.objects.filter(user=user, relation="stated_in").exists()
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.SEGMENT_PROMOTED).count() == 1
    assert configured.vector_index().count(user_id=str(user.pk), kind="kb") == facts.count()


def test_promotion_reads_only_segments_that_could_pass_tau(make_user, memory_env, monkeypatch):
    """Promotion reads the segments whose heat without recency is above τ − γ: a segment that only
    its recency lifts over τ is still promoted; the cold and the already-promoted are not read."""
    from memory.engine import mid_term
    from memory.services import maintenance

    tune(memory_env, HEAT_THRESHOLD=4.5)  # floor 3.5 with γ 1
    user = make_user()
    now = timezone.now()

    def segment(name, last_access=now, **counts):
        return Segment.objects.create(user=user, summary=name, last_access=last_access, **counts)

    lifted = segment("lifted", l_interaction=4)  # 4 + recency 1 = 5 > 4.5
    faded = segment("faded", l_interaction=4, last_access=now - timezone.timedelta(days=3650))  # 4 + ~0
    segment("cold", l_interaction=3)  # at most 3 + 1 = 4
    segment("visited", n_visit=9)  # hot, but nothing new since its promotion
    Segment.objects.create(user=user, summary="gone", l_interaction=9, last_access=now,
                           status=Segment.Status.EVICTED)
    seen, promoted = [], []
    real_plan = mid_term.plan_promotions

    def plan(segments, **kw):
        segments = list(segments)
        seen.extend(s.summary for s in segments)
        return real_plan(segments, **kw)

    monkeypatch.setattr(maintenance.mid_term, "plan_promotions", plan)
    monkeypatch.setattr(maintenance, "promote_segment", lambda **kw: promoted.append(kw["segment_id"]) or True)
    assert maintenance._promote(user.pk, now) == [str(lifted.id)]
    assert sorted(seen) == ["faded", "lifted"] and promoted == [str(lifted.id)]
    assert faded.id not in promoted


def test_kb_and_agent_traits_stay_fifo_bounded(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1, KB_CAPACITY=3, AGENT_TRAIT_CAPACITY=2, HEAT_THRESHOLD=0.5,
         FACTS_AT_TURN=False)  # promotion's own facts, not the turns'
    user = make_user()
    # every page is its own hot segment (τ = 0.5) and yields one fact and one agent trait
    facts = ["I love sailing.", "I love pottery.", "I love chess.", "I love baking bread.", "I love cycling."]
    for text in facts:
        add_page(user, text, "I recommend joining a local club.")
    add_page(user, "Closing page.", "")
    kb = list(KnowledgeFact.objects.filter(user=user).order_by("created_at").values_list("text", flat=True))
    assert len(kb) == 3
    assert "chess" in kb[0].lower() and "cycling" in kb[-1].lower()
    assert AgentTrait.objects.filter(user=user).count() <= 2
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.FACT_DROPPED).count() == 2
    assert configured.vector_index().count(user_id=str(user.pk), kind="kb") == 3


def test_failed_maintenance_is_recorded_and_resumes(make_user, memory_env, monkeypatch):
    tune(memory_env, STM_CAPACITY=1, MAINTENANCE_MODE="off")
    user = make_user()
    add_page(user, "I like jazz.", "")
    add_page(user, "I like blues.", "")

    def boom(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("memory.services.maintenance.page_move_to_mtm", boom)
    with pytest.raises(RuntimeError):
        maintenance_run(user_id=user.pk)
    state = UserMemoryState.objects.get(user=user)
    assert state.maintenance_due and state.maintenance_failures == 1 and "disk full" in state.last_error
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.MAINTENANCE_FAILED).exists()
    monkeypatch.undo()
    report = maintenance_run(user_id=user.pk)
    assert report.moved == 1
    state.refresh_from_db()
    assert not state.maintenance_due and state.maintenance_failures == 0
    assert maintenance_run(user_id=user.pk).moved == 0  # idempotent


def test_page_without_embedding_is_embedded_by_maintenance(make_user, memory_env, monkeypatch):
    user = make_user()
    monkeypatch.setattr("memory.services.pages.embed_or_none", lambda texts: None)
    page = add_page(user, "Embedder was down for this one.", "")
    assert page.embedding == b""
    monkeypatch.undo()
    maintenance_run(user_id=user.pk)
    page.refresh_from_db()
    assert len(page.embedding) == 384 * 4
    assert configured.vector_index().count(user_id=str(user.pk), kind="page") == 1


# Which pages are related is MiniLM's to say: a page's vector is its utterances' (which name their
# speakers), and the fake's bag of words counts the names as shared words.
@pytest.mark.real_adapters
def test_meta_chain_links_related_pages(make_user, memory_env):
    user = make_user()
    a = add_page(user, "I'm training for the Berlin marathon.", "How many kilometres a week?")
    b = add_page(user, "I run about sixty kilometres a week for the marathon.", "Great base.")
    c = add_page(user, "What is the capital of Peru?", "Lima.")
    for page in (a, b, c):
        page.refresh_from_db()
    assert b.previous_id == a.id and b.chain_id == a.chain_id == a.id
    assert c.chain_id == c.id and c.previous_id is None
    assert "marathon" in b.meta_chain.lower()
    assert all(p.chain_done for p in (a, b, c))


def test_pending_pages_are_not_moved(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    pending = page_start(user=user, query="still streaming")
    add_page(user, "done one", "")
    add_page(user, "done two", "")
    pending.refresh_from_db()
    assert pending.tier == Tier.STM and pending.status == PageStatus.PENDING
    assert DialoguePage.objects.filter(user=user, tier=Tier.STM, status=PageStatus.COMPLETE).count() == 1
    assert timezone.now() >= pending.timestamp


def test_a_turn_that_stopped_mid_reply_still_enters_memory(make_user, memory_env):
    tune(memory_env, PENDING_TIMEOUT_S=600)
    user = make_user()
    stopped = stopped_mid_turn(user, "My sister Ines is moving to Lisbon in June.", minutes_ago=11)
    live = stopped_mid_turn(user, "What should I pack for the move?", minutes_ago=1)

    report = maintenance_run(user_id=user.pk)

    stopped.refresh_from_db(), live.refresh_from_db()
    assert report.interrupted == 1
    assert (stopped.status, stopped.reply_model) == (PageStatus.COMPLETE, INTERRUPTED_MODEL_NAME)
    assert stopped.response.endswith(RESUMED_NOTE)  # answered from memory when resumed
    assert live.status == PageStatus.PENDING  # may still be replying
    recalled = recall_for_query(user=user, query="Where is Ines moving?", policy="hybrid",
                                turn_tiers=(Tier.STM, Tier.MTM))
    assert any(item.kind == "stm_page" and "Lisbon" in item.text for item in recalled.items)
    # its utterance is indexed: the user's words alone, no empty reply beside them
    assert [item.text for item in recalled.items if item.kind == "turn"] == [
        f"{user.get_username()}: My sister Ines is moving to Lisbon in June."]
    assert maintenance_run(user_id=user.pk).interrupted == 0  # done once


def test_a_resumed_question_is_answered_from_memory_not_left_empty(make_user, memory_env):
    """Issue 49, finding 8: a resumed turn was closed with an empty reply."""
    tune(memory_env, PENDING_TIMEOUT_S=600)
    user = make_user()
    page_complete(page=page_start(user=user, query="My dog is called Rex."), response="Hello, Rex!",
                  reply_model="test")
    maintenance_run(user_id=user.pk)
    stopped = stopped_mid_turn(user, "What is my dog called?", minutes_ago=11)
    assert maintenance_run(user_id=user.pk).interrupted == 1
    stopped.refresh_from_db()
    assert stopped.interrupted and "Rex" in stopped.response and stopped.response.endswith(RESUMED_NOTE)
    assert "remember" not in stopped.response.removesuffix(RESUMED_NOTE).lower()


def test_promotion_reads_only_pages_new_since_the_last_or_else_the_latest(make_user, memory_env, monkeypatch):
    from memory.services import long_term as long_term_services

    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    for line in ["I love hiking in the mountains with my dog.", "I went hiking on the Pico trail with my dog.",
                 "My favorite hiking trail is the Pico trail.", "I bought new hiking boots for the trails.",
                 "I'm planning a hiking trip to the Alps in June.", "I hiked up the mountain with my dog."]:
        add_page(user, line, "You should try the ridge trail next time.")
    add_page(user, "Unrelated closing line about taxes.", "")
    segment = Segment.objects.get(user=user, promoted_count__gt=0)
    read: list[list[int]] = []
    extract = long_term_services.extract_from_pages
    monkeypatch.setattr(long_term_services, "extract_from_pages",
                        lambda pages: read.append([p.seq for p in pages]) or extract(pages))
    monkeypatch.setattr(long_term_services, "PROMOTE_FALLBACK_PAGES", 2)
    in_segment = list(DialoguePage.objects.filter(segment=segment).order_by("seq").values_list("seq", flat=True))

    # One page moved in after the last promotion: only it is read.
    newest = in_segment[-1]
    DialoguePage.objects.filter(user=user, seq=newest).update(moved_at=timezone.now())
    Segment.objects.filter(id=segment.id).update(l_interaction=1)
    assert long_term_services.promote_segment(user_id=user.pk, segment_id=str(segment.id), heat=9.0)
    # Nothing new since: the segment's latest PROMOTE_FALLBACK_PAGES pages, oldest first.
    Segment.objects.filter(id=segment.id).update(l_interaction=1)
    assert long_term_services.promote_segment(user_id=user.pk, segment_id=str(segment.id), heat=9.0)

    assert len(in_segment) > 2 and read == [[newest], in_segment[-2:]]


def test_each_occasional_step_s_work_is_found_for_its_user_only(make_user, memory_env):
    from memory.selectors.maintenance import rederive_segments_of, stopped_turn_pages_of, unembedded_pages_of
    from memory.services.supersession import unchecked_facts_of
    from memory.services.utterances import unindexed_pages_of

    tune(memory_env, MAINTENANCE_MODE="off", PENDING_TIMEOUT_S=600)
    user, other = make_user(), make_user()
    steps = (stopped_turn_pages_of, unembedded_pages_of, unindexed_pages_of, rederive_segments_of,
             unchecked_facts_of)

    def found(person):
        return [step(person.pk).exists() for step in steps]

    page = add_page(user, "I keep bees on the roof.", "How many hives?")
    maintenance_run(user_id=user.pk)
    assert found(user) == [False] * 5
    stopped_mid_turn(user, "My sister is moving to Lisbon.", minutes_ago=11)
    DialoguePage.objects.filter(id=page.id).update(embedding=b"", turns_indexed=False)
    segment = Segment.objects.create(user=user, summary="bees", last_access=timezone.now(), rederive=True)
    KnowledgeFact.objects.create(user=user, text="User keeps bees", normalised="user keeps bees")
    assert found(user) == [True] * 5
    assert found(other) == [False] * 5
    # What recall never shows is not indexed: a page of a repressed segment.
    Segment.objects.filter(id=segment.id).update(repressed=True)
    DialoguePage.objects.filter(id=page.id).update(segment=segment)
    assert not unindexed_pages_of(user.pk).exists()


def test_a_run_with_no_occasional_work_skips_those_steps(make_user, memory_env, monkeypatch):
    tune(memory_env, STM_CAPACITY=1, MAINTENANCE_MODE="off")
    user = make_user()
    add_page(user, "I keep bees on the roof.", "How many hives?")
    add_page(user, "The bees made honey this summer.", "Lovely.")

    def not_called(*args, **kwargs):
        raise AssertionError("a step with nothing to do ran")

    for name in ("pages_interrupted_complete", "_embed_missing", "_rederive_segments",
                 "supersession_detect_pending"):
        monkeypatch.setattr(f"memory.services.maintenance.{name}", not_called)
    report = maintenance_run(user_id=user.pk)
    assert report.moved == 1 and report.chained == 2


def test_work_an_earlier_step_makes_is_done_in_the_same_run(make_user, memory_env, monkeypatch):
    tune(memory_env, PENDING_TIMEOUT_S=600, MAINTENANCE_MODE="off")
    user = make_user()
    stopped = stopped_mid_turn(user, "My sister Ines is moving to Lisbon in June.", minutes_ago=11)
    # The stopped turn's page is completed without its embedding: the same run embeds and indexes it.
    monkeypatch.setattr("memory.services.pages.embed_or_none", lambda texts: None)
    report = maintenance_run(user_id=user.pk)
    stopped.refresh_from_db()
    assert report.interrupted == 1 and report.embedded == 1 and report.turns_indexed == 1
    assert len(stopped.embedding) == 384 * 4 and stopped.turns_indexed


def test_turns_are_indexed_batch_by_batch_until_one_comes_short(make_user, memory_env, monkeypatch):
    from memory.services import utterances

    tune(memory_env, MAINTENANCE_MODE="off")
    user = make_user()
    pages = [add_page(user, f"I planted {n} tulips by the fence today.", "Lovely.") for n in range(5)]
    DialoguePage.objects.filter(user=user).update(turns_indexed=False)
    reads = []
    real = utterances.unindexed_pages_of
    monkeypatch.setattr(utterances, "unindexed_pages_of", lambda user_id: reads.append(user_id) or real(user_id))
    monkeypatch.setattr(utterances, "INDEX_BATCH", 2)

    assert utterances.index_turns(user_id=user.pk) == 5
    assert len(reads) == 3  # 2, 2, then 1: the short batch ends it, with no read that finds none
    assert not DialoguePage.objects.filter(user=user, turns_indexed=False).exists()
    # A live write's run: its one page, read once.
    reads.clear()
    DialoguePage.objects.filter(id=pages[0].id).update(turns_indexed=False)
    assert utterances.index_turns(user_id=user.pk) == 1 and len(reads) == 1
