"""Facts that change, with the real store: detection writes supersessions and reviews with their
events and graph edges; operators accept, reject and edit; another user's queue is out of reach."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memory.models import DialoguePage, LifecycleEvent, MemoryAlias, MemoryEdge, MemoryNode
from memory.services import graph
from memory.services.common import MemoryInputError, MemoryNotFound
from memory.services.pages import page_start
from memory.services.supersession import supersession_accept, supersession_detect, supersession_reject
from memory.services.turns import page_complete
from persona.models import KnowledgeFact, Supersession, UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")
MARCH = datetime(2025, 3, 14, 10, 0, tzinfo=UTC)
JUNE = datetime(2025, 6, 2, 18, 30, tzinfo=UTC)


def stated(user, utterance: str, fact_text: str, at: datetime) -> KnowledgeFact:
    """A page with the utterance at `at`, and the fact promotion drew from it (its node and edge)."""
    page = page_complete(page=page_start(user=user, query=utterance, timestamp=at), response="Noted.",
                         reply_model="test", schedule=False)
    row = KnowledgeFact.objects.create(user=user, text=fact_text, normalised=fact_text.lower(),
                                       source_page_ids=[str(page.id)], timestamp=at, valid_from=at)
    node = graph.row_node_put(user_id=user.pk, kind=MemoryNode.Kind.FACT, row=row)
    graph.edge_put(user_id=user.pk, source=node, target=graph.node_of(user_id=user.pk, obj=page,
                                                                      kind=MemoryNode.Kind.PAGE),
                   relation="stated_in")
    row.refresh_from_db()
    return row


def test_a_stated_move_supersedes_the_old_residence_with_its_time_edge_and_event(make_user):
    user = make_user()
    leeds = stated(user, "I live in Leeds with my cat.", "User lives in Leeds with their cat", MARCH)
    tea = stated(user, "I love green tea.", "User loves green tea", MARCH)
    york = stated(user, "We finally moved from Leeds to York!", "User and others moved from Leeds to York", JUNE)
    old_cid = KnowledgeFact.objects.get(pk=york.pk).cid

    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])

    assert (row.status, row.slot, row.old_fact_id, row.new_fact_id) == ("superseded", "residence", leeds.pk, york.pk)
    leeds.refresh_from_db()
    tea.refresh_from_db()
    assert (leeds.valid_until, leeds.superseded_by) == (JUNE, york.pk)
    assert tea.valid_until is None  # another slot stays current
    york.refresh_from_db()
    edge = MemoryEdge.objects.get(user=user, relation="supersedes")
    assert (edge.source.object_id, edge.target.object_id) == (str(york.pk), str(leeds.pk))
    assert york.cid != old_cid and MemoryAlias.objects.filter(cid=old_cid).exists()  # the CID shows it
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.FACT_SUPERSEDED)
    assert event.subject_id == str(leeds.pk) and event.occurred_at == JUNE
    assert event.payload["by"] == "detector" and "'leeds' became 'york'" in event.payload["reason"]
    # run again: nothing is decided twice
    assert supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)]) == []


def test_an_uncertain_change_opens_a_review_and_changes_nothing_yet(make_user):
    user = make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "I live in York.", "User lives in York", JUNE)
    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    assert row.status == "open" and row.confidence == 0.55
    leeds.refresh_from_db()
    assert leeds.valid_until is None and not MemoryEdge.objects.filter(relation="supersedes").exists()
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.SUPERSESSION_OPENED).count() == 1


def test_a_fact_never_supersedes_one_stated_after_it(make_user):
    user = make_user()
    york = stated(user, "We moved to York now.", "User lives in York", MARCH)
    stated(user, "I live in Leeds.", "User lives in Leeds", JUNE)
    assert supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)]) == []


def test_mentions_and_other_peoples_moves_decide_nothing(make_user):
    user = make_user()
    stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    visit = stated(user, "I visited York last weekend.", "User visited York last weekend", JUNE)
    sister = stated(user, "My sister moved to York.", "User's sister moved to York", JUNE)
    assert supersession_detect(user_id=user.pk, fact_ids=[str(visit.pk), str(sister.pk)]) == []
    assert not Supersession.objects.exists()


def test_accepting_a_review_supersedes_and_audits_the_operator(make_user):
    user, operator = make_user(), make_user("op", is_staff=True)
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "I live in York.", "User lives in York", JUNE)
    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    accepted = supersession_accept(user=user, ident=str(row.pk), actor=operator, reason="they told me")
    assert (accepted.status, accepted.decided_by) == ("accepted", "op")
    leeds.refresh_from_db()
    assert (leeds.valid_until, leeds.superseded_by) == (JUNE, york.pk)
    event = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.FACT_SUPERSEDED).get()
    assert (event.payload["actor"], event.payload["before"], event.payload["reason"]) == ("op", "open", "they told me")
    with pytest.raises(MemoryInputError, match="already decided"):
        supersession_accept(user=user, ident=str(row.pk), actor=operator)


def test_rejecting_a_decided_supersession_makes_both_current_again(make_user):
    user = make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "We moved to York now.", "User lives in York", JUNE)
    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    assert row.status == "superseded"
    cid_with_edge = KnowledgeFact.objects.get(pk=york.pk).cid
    rejected = supersession_reject(user=user, ident=str(row.pk), actor=user, reason="I still keep the flat")
    assert rejected.status == "rejected"
    leeds.refresh_from_db()
    assert (leeds.valid_until, leeds.superseded_by) == (None, None)
    assert not MemoryEdge.objects.filter(relation="supersedes").exists()
    assert KnowledgeFact.objects.get(pk=york.pk).cid != cid_with_edge
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.SUPERSESSION_REJECTED)
    assert (event.payload["before"], event.payload["after"]) == ("superseded", "rejected")


def evidence(user, fact: KnowledgeFact, key: str, weight: float, at: datetime) -> None:
    """Trait evidence from the turn `fact` was stated in, written the promotion's way."""
    from memory.services.long_term import _trait_update

    page = DialoguePage.objects.get(pk=fact.source_page_ids[0])
    node = graph.node_of(user_id=user.pk, obj=page, kind=MemoryNode.Kind.PAGE)
    _trait_update(user.pk, key, weight, ("word",), page, node, at)


def test_evidence_from_a_superseded_fact_stops_counting_and_counts_again_when_rejected(make_user):
    user, other = make_user(), make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    tea = stated(user, "I love green tea.", "User loves green tea", MARCH)
    york = stated(user, "We moved to York now.", "User lives in York", JUNE)
    evidence(user, leeds, "openness", 1.0, MARCH)
    evidence(user, tea, "openness", 0.5, MARCH)
    their = stated(other, "I live in Leeds.", "User lives in Leeds", MARCH)
    evidence(other, their, "openness", 1.0, MARCH)
    trait = UserTrait.objects.get(user=user, key="openness")
    # 1 − (1 − 0.3·1.0)(1 − 0.3·0.5) = 1 − 0.7·0.85
    assert trait.score == pytest.approx(0.405)
    assert [e["at"] for e in trait.evidence] == [MARCH.isoformat(), MARCH.isoformat()]

    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])

    trait.refresh_from_db()
    assert trait.score == pytest.approx(0.15)  # only the tea turn's 0.3·0.5 is left
    by_page = {e["page_id"]: e for e in trait.evidence}
    assert by_page[leeds.source_page_ids[0]]["superseded"] is True
    assert by_page[leeds.source_page_ids[0]]["valid_until"] == JUNE.isoformat()
    assert "superseded" not in by_page[tea.source_page_ids[0]]
    event = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.TRAIT_UPDATED).latest("id")
    assert (event.payload["before"], event.payload["after"], event.payload["weight"]) == (0.405, 0.15, 0.0)
    assert UserTrait.objects.get(user=other, key="openness").score == pytest.approx(0.3)  # theirs is theirs

    supersession_reject(user=user, ident=str(row.pk), actor=user)
    trait.refresh_from_db()
    assert trait.score == pytest.approx(0.405)
    assert not any("superseded" in e for e in trait.evidence)


def test_a_pinned_traits_score_stays_when_its_evidence_is_superseded(make_user):
    user = make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "We moved to York now.", "User lives in York", JUNE)
    evidence(user, leeds, "openness", 1.0, MARCH)
    UserTrait.objects.filter(user=user, key="openness").update(pinned=True, score=0.9)
    supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    trait = UserTrait.objects.get(user=user, key="openness")
    assert trait.score == 0.9 and trait.evidence[0]["superseded"] is True


def test_the_fifo_keeps_a_dropped_superseded_facts_history_in_its_event(make_user, settings):
    from memory.services.long_term import _trim_fifo

    settings.MEMORYOS = {**settings.MEMORYOS, "KB_CAPACITY": 1}
    user = make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "We moved to York now.", "User lives in York", JUNE)
    supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])

    assert _trim_fifo(user.pk, JUNE) == [str(leeds.pk)]
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.FACT_DROPPED)
    assert event.payload == {"text": "User lives in Leeds", "valid_from": MARCH.isoformat(),
                             "valid_until": JUNE.isoformat(), "superseded_by": str(york.pk)}


def test_editing_corrects_the_newer_fact_then_supersedes(make_user):
    user = make_user()
    stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "I live in York.", "User lives in Yrok", JUNE)
    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    supersession_accept(user=user, ident=str(row.pk), actor=user, text="User lives in York")
    york.refresh_from_db()
    assert (york.text, york.version) == ("User lives in York", 2)
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.CORRECTED).count() == 1
    with pytest.raises(MemoryInputError, match="empty"):
        supersession_accept(user=user, ident=str(row.pk), actor=user, text="  ")


def test_another_users_supersession_is_not_found_and_unchanged(make_user):
    owner, stranger = make_user(), make_user()
    stated(owner, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(owner, "I live in York.", "User lives in York", JUNE)
    [row] = supersession_detect(user_id=owner.pk, fact_ids=[str(york.pk)])
    for action in (supersession_accept, supersession_reject):
        with pytest.raises(MemoryNotFound):
            action(user=stranger, ident=str(row.pk), actor=stranger)
    with pytest.raises(MemoryNotFound):
        supersession_reject(user=owner, ident="not-a-uuid", actor=owner)
    row.refresh_from_db()
    assert row.status == "open"


# ------------------------------------------------------------------ with a model

@pytest.fixture
def llm(chat_model):
    """The fake chat model (tests/fakes.py): what is asked and answered, not the HTTP client."""
    return chat_model


def test_the_model_confirms_an_uncertain_candidate(make_user, llm):
    llm.reply(json.dumps({"verdict": "Supersede", "reason": "they now live in York"}))
    user = make_user()
    stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "I live in York.", "User lives in York", JUNE)
    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    assert (row.status, row.decided_by) == ("superseded", "model")
    assert "they now live in York" in row.reason
    prompt = llm.calls[0].prompt
    assert "Earlier fact: User lives in Leeds" in prompt and "Newer statement: I live in York." in prompt


def test_the_model_rejects_a_candidate_and_the_event_says_why(make_user, llm):
    llm.reply('Sure! {"verdict": "both_true", "reason": "two homes"}')  # prose around the JSON is tolerated
    user = make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "I live in York now.", "User lives in York", JUNE)
    assert supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)]) == []
    leeds.refresh_from_db()
    assert leeds.valid_until is None
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.SUPERSESSION_REJECTED)
    assert event.payload["by"] == "model" and "two homes" in event.payload["reason"]


def test_garbage_from_the_model_keeps_the_detectors_decision(make_user, llm):
    llm.reply("no idea", "still no idea")
    user = make_user()
    stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "We moved from Leeds to York.", "User and others moved from Leeds to York", JUNE)
    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    assert (row.status, row.decided_by) == ("superseded", "detector")
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.MODEL_OUTPUT_REJECTED).count() == 1


# ------------------------------------------------------------------ on maintenance's write path

def say_at(user, text: str, at: datetime):
    return page_complete(page=page_start(user=user, query=text, timestamp=at), response="Noted.",
                         reply_model="test")


def test_maintenance_supersedes_what_promotion_learned_and_recall_marks_the_period(make_user, memory_env):
    # one segment; what promotion learned (facts read at the turn: test_facts.py)
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1, "FSCORE_THRESHOLD": 0.0, "FACTS_AT_TURN": False}
    user = make_user()
    say_at(user, "I live in Leeds with my two cats.", MARCH)
    for day, line in enumerate(["The cats love the garden.", "I painted the kitchen blue.",
                                "My neighbours are lovely."], start=1):
        say_at(user, line, MARCH.replace(day=MARCH.day + day))
    say_at(user, "We moved from Leeds to York last week!", JUNE)
    say_at(user, "The new garden is tiny.", JUNE.replace(day=5))
    say_at(user, "Closing line.", JUNE.replace(day=6))

    old = KnowledgeFact.objects.get(user=user, text__icontains="Leeds")
    new = KnowledgeFact.objects.get(user=user, text__icontains="York")
    row = Supersession.objects.get(user=user)
    assert (row.old_fact_id, row.new_fact_id, row.status) == (old.pk, new.pk, "superseded")
    old.refresh_from_db()
    assert old.valid_until == JUNE and old.superseded_by == new.pk
    assert KnowledgeFact.objects.filter(user=user, valid_from__isnull=True).count() == 0  # every fact looked at

    from memory.services.recall import recall_for_query
    recall = recall_for_query(user=user, query="Where did I live before York?", update_heat=False,
                              record_trace=False)
    facts = [item for item in recall.items if item.kind == "kb_fact"]
    texts = [item.text for item in facts]
    marked = f"{old.text} (until June 2025; since then: {new.text})"
    assert marked in texts  # the past is found, with its period
    assert texts.index(marked) > texts.index(new.text)  # after the current fact
    superseded = facts[texts.index(marked)]
    assert superseded.breakdown["superseded"] == 0.5
    assert superseded.score == pytest.approx(superseded.breakdown["similarity"] * 0.5, abs=1e-4)

    # the offline reply answers with the current value; a question about the past finds the old one
    from memory.services.turns import turn_run
    now = turn_run(user=user, message="Where do I live?").page.response
    assert "York" in now and "I live in Leeds" not in now
    before = turn_run(user=user, message="Where did I live before York?").page.response
    assert "Leeds" in before


def test_deleting_the_newer_fact_makes_the_older_current_and_scrubs_its_words(make_user):
    from memory.services.deletion import memory_delete

    user = make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "We moved to York now.", "User lives in York", JUNE)
    supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    memory_delete(user=user, kind="fact", ident=str(york.pk), actor=user, reason="forget York")
    leeds.refresh_from_db()
    assert (leeds.valid_until, leeds.superseded_by) == (None, None)
    assert not Supersession.objects.filter(user=user).exists()
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.FACT_SUPERSEDED)
    assert "York" not in str(event.payload) and event.payload["new_text"] == "[deleted]"


def test_deletion_rescores_traits_without_superseded_evidence(make_user):
    from memory.services.deletion import memory_delete

    user = make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    tea = stated(user, "I love green tea.", "User loves green tea", MARCH)
    walks = stated(user, "I walk by the river.", "User walks by the river", MARCH)
    york = stated(user, "We moved to York now.", "User lives in York", JUNE)
    for fact, weight in ((leeds, 1.0), (tea, 0.5), (walks, 0.5)):
        evidence(user, fact, "openness", weight, MARCH)
    supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    trait = UserTrait.objects.get(user=user, key="openness")
    assert trait.score == pytest.approx(1 - 0.85 * 0.85)  # the two 0.5 turns

    # deleting the tea turn: the replay keeps the Leeds turn out, as the supersession did
    memory_delete(user=user, kind="page", ident=tea.source_page_ids[0], actor=user, reason="no tea")
    trait.refresh_from_db()
    assert trait.score == pytest.approx(0.15)

    # deleting the newer fact: Leeds is current again and its turn counts again
    memory_delete(user=user, kind="fact", ident=str(york.pk), actor=user, reason="forget York")
    trait.refresh_from_db()
    assert trait.score == pytest.approx(1 - 0.7 * 0.85)
    assert not any("superseded" in e for e in trait.evidence)
