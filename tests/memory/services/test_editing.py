"""Operators steer memory: pin, repress, correct, delete along provenance, forget a user. Every
action is audited; invalid edits are refused and change nothing; repression and deletion hold in
every recall policy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.db import connection

from memory.adapters import configured
from memory.models import DialoguePage, LifecycleEvent, MemoryEdge, MemoryNode, RetrievalTrace, Segment, Tier
from memory.recall.base import policy_names
from memory.services import graph
from memory.services.common import MemoryInputError
from memory.services.deletion import memory_delete, user_forget
from memory.services.editing import memory_correct, memory_pin, memory_repress
from memory.services.long_term import lpm_point
from memory.services.maintenance import maintenance_run
from memory.services.pages import page_start
from memory.services.recall import recall_for_query
from memory.services.turns import page_complete
from persona.models import AgentTrait, KnowledgeFact, UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")


def tune(settings, **params):
    settings.MEMORYOS = {**settings.MEMORYOS, **params}


def say(user, text: str, response: str = "Noted.") -> DialoguePage:
    page = page_start(user=user, query=text)
    return page_complete(page=page, response=response, reply_model="test")


def recalled_texts(user, query: str, policy: str) -> str:
    recall = recall_for_query(user=user, query=query, policy=policy, update_heat=False, record_trace=False)
    return "\n".join(item.text for item in recall.items)


def fact(user, text: str, pages: list[DialoguePage], segment: Segment | None = None) -> KnowledgeFact:
    """A KB fact stated in `pages`, with its node, edges and point, as a promotion writes it. The
    same fact read at its turn already (memory/services/facts.py) becomes this one."""
    row = KnowledgeFact.objects.filter(user=user, normalised=text.lower()).first() or KnowledgeFact(
        user=user, text=text, normalised=text.lower())
    row.segment, row.source_page_ids = segment, [str(p.id) for p in pages]
    row.save()
    node = graph.row_node_put(user_id=user.pk, kind=MemoryNode.Kind.FACT, row=row)
    for page in pages:
        target = graph.node_of(user_id=user.pk, obj=page, kind=MemoryNode.Kind.PAGE)
        graph.edge_put(user_id=user.pk, source=node, target=target, relation="stated_in")
    configured.vector_index().upsert([lpm_point(row, configured.embedder().embed([text])[0])])
    return row


# ------------------------------------------------------------------ pin

def test_a_pinned_segment_is_never_evicted_and_unpinning_undoes_it(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1, MTM_CAPACITY=1, FSCORE_THRESHOLD=5.0)  # every page its own segment
    user, operator = make_user(), make_user("op")
    say(user, "I collect antique maps of Lisbon.")
    say(user, "Sourdough bread needs a long proof.")
    first = Segment.objects.get(user=user, status=Segment.Status.ACTIVE)
    edit = memory_pin(user=user, kind="segment", ident=str(first.id), actor=operator, reason="keep the maps")
    assert edit.row.pinned
    say(user, "The marathon is in October.")
    say(user, "My cat sleeps on the piano.")
    assert Segment.objects.get(id=first.id).status == Segment.Status.ACTIVE  # others were evicted instead
    assert Segment.objects.filter(user=user, status=Segment.Status.EVICTED).count() >= 2
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.PINNED)
    assert event.payload == {"target": "segment", "actor": "op", "before": False, "after": True,
                             "reason": "keep the maps"}
    memory_pin(user=user, kind="segment", ident=str(first.id), actor=operator, pinned=False)
    assert not Segment.objects.get(id=first.id).pinned
    say(user, "Tea is better than coffee.")
    assert Segment.objects.get(id=first.id).status == Segment.Status.EVICTED
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.UNPINNED).exists()


def test_a_pinned_page_keeps_its_segment(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1, MTM_CAPACITY=1, FSCORE_THRESHOLD=5.0)
    user = make_user()
    page = say(user, "My grandmother's recipe uses cardamom.")
    say(user, "The bus was late again.")
    memory_pin(user=user, kind="page", ident=str(page.id))
    say(user, "I started learning the cello.")
    page.refresh_from_db()
    assert page.tier == Tier.MTM and page.segment.status == Segment.Status.ACTIVE


def test_a_pinned_fact_survives_the_fifo(make_user, memory_env):
    from memory.services.long_term import _trim_fifo  # the FIFO step itself

    tune(memory_env, KB_CAPACITY=2)
    user = make_user()
    page = say(user, "hello")
    facts = [fact(user, f"User likes color {c}", [page]) for c in ("red", "green", "blue")]
    memory_pin(user=user, kind="fact", ident=str(facts[0].id))
    from django.utils import timezone

    dropped = _trim_fifo(user.pk, timezone.now())
    assert dropped == [str(facts[1].id)]
    assert set(KnowledgeFact.objects.filter(user=user).values_list("text", flat=True)) == {
        "User likes color red", "User likes color blue"}


# ------------------------------------------------------------------ repress

@pytest.mark.slow
def test_repression_holds_in_every_policy_and_unrepressing_restores(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=2)
    user = make_user()
    secret = say(user, "My bank PIN is kept in the blue teapot on the kitchen shelf.")
    for line in ("I walked the dog.", "The weather was grey.", "We watched a film.", "Dinner was soup."):
        say(user, line)
    trait_fact = fact(user, "User hides things in the blue teapot", [secret])
    assert secret.__class__.objects.get(id=secret.id).tier == Tier.MTM
    memory_repress(user=user, kind="page", ident=str(secret.id), reason="private")
    memory_repress(user=user, kind="fact", ident=str(trait_fact.id))
    assert len(policy_names()) >= 2
    for policy in policy_names():
        assert "teapot" not in recalled_texts(user, "Where is the blue teapot with the bank PIN?", policy), policy
    assert DialoguePage.objects.get(id=secret.id).repressed  # kept
    memory_repress(user=user, kind="page", ident=str(secret.id), repressed=False)
    memory_repress(user=user, kind="fact", ident=str(trait_fact.id), repressed=False)
    for policy in policy_names():
        assert "teapot" in recalled_texts(user, "Where is the blue teapot with the bank PIN?", policy), policy


def test_a_repressed_segment_hides_its_pages_and_a_repressed_trait_is_not_recalled(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    say(user, "The lighthouse keeper taught me knots.")
    say(user, "Nothing else today.")
    segment = Segment.objects.get(user=user)
    UserTrait.objects.create(user=user, key="openness", score=0.8)
    memory_repress(user=user, kind="segment", ident=str(segment.id))
    memory_repress(user=user, kind="trait", ident="openness")
    for policy in policy_names():
        texts = recalled_texts(user, "What did the lighthouse keeper teach me?", policy)
        assert "lighthouse" not in texts and "Openness" not in texts, policy


# ------------------------------------------------------------------ correct

@pytest.mark.slow
def test_a_corrected_page_is_a_new_version_and_its_old_words_are_not_recalled(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user, operator = make_user(), make_user("op")
    page = say(user, "My dog is called Rexford and he loves the beach.")
    say(user, "Unrelated chatter about trains.")
    page.refresh_from_db()
    old_cid = page.cid
    memory_correct(user=user, kind="page", ident=str(page.id), version=1, actor=operator, reason="typo",
                   query="My dog is called Biscuit and he loves the beach.")
    page.refresh_from_db()
    assert page.version == 2 and page.cid != old_cid and "biscuit" in " ".join(page.keywords).lower()
    node = MemoryNode.objects.get(user=user, kind=MemoryNode.Kind.PAGE, object_id=str(page.id))
    assert node.cid == page.cid
    replaced = MemoryEdge.objects.get(user=user, source=node, relation="replaces").target
    assert replaced.cid == old_cid
    for policy in policy_names():
        texts = recalled_texts(user, "What is my dog called?", policy)
        assert "Rexford" not in texts and "Biscuit" in texts, policy
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.CORRECTED)
    assert event.payload["before"]["query"].startswith("My dog is called Rexford")
    assert event.payload["actor"] == "op" and event.payload["reason"] == "typo" and event.payload["version"] == 2
    with pytest.raises(MemoryInputError, match="changed since you read it"):
        memory_correct(user=user, kind="page", ident=str(page.id), version=1, query="Stale edit.")
    assert DialoguePage.objects.get(id=page.id).query.startswith("My dog is called Biscuit")


def test_trait_fact_and_segment_corrections_are_checked(make_user):
    user = make_user()
    page = say(user, "hello there")
    row = fact(user, "User likes tea", [page])
    other = fact(user, "User likes coffee", [page])
    cases = [
        (dict(kind="trait", ident="not_a_dimension", score=0.5), "Unknown trait dimension"),
        (dict(kind="trait", ident="openness", score=1.5, note="x"), "between 0 and 1"),
        (dict(kind="trait", ident="openness", score=0.5), "in a note"),
        (dict(kind="fact", ident=str(row.id), text="   "), "non-empty text"),
        (dict(kind="fact", ident=str(row.id), text="User likes coffee"), "already says"),
        (dict(kind="fact", ident="not-a-uuid", text="x"), "is not a KB fact id"),
        (dict(kind="memo", ident="x", text="x"), "Unknown kind of memory"),
    ]
    for arguments, message in cases:
        with pytest.raises(MemoryInputError, match=message):
            memory_correct(user=user, version=None, **arguments)
    assert KnowledgeFact.objects.get(id=row.id).text == "User likes tea" and other.text == "User likes coffee"
    assert not LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.CORRECTED).exists()
    memory_correct(user=user, kind="trait", ident="openness", version=None, score=0.7, note="said so")
    trait = UserTrait.objects.get(user=user, key="openness")
    assert trait.score == 0.7 and trait.evidence[0]["note"] == "said so" and trait.version == 2
    memory_correct(user=user, kind="fact", ident=str(row.id), version=1, text="User likes green tea")
    assert KnowledgeFact.objects.get(id=row.id).normalised == "user likes green tea"


def test_another_users_memory_is_refused(make_user):
    owner, intruder = make_user(), make_user()
    page = say(owner, "My locker code is 4412.")
    for action in (lambda: memory_pin(user=intruder, kind="page", ident=str(page.id)),
                   lambda: memory_repress(user=intruder, kind="page", ident=str(page.id)),
                   lambda: memory_correct(user=intruder, kind="page", ident=str(page.id), version=1, query="x"),
                   lambda: memory_delete(user=intruder, kind="page", ident=str(page.id))):
        with pytest.raises(MemoryInputError, match="No page"):
            action()
    page.refresh_from_db()
    assert not page.pinned and not page.repressed and page.query == "My locker code is 4412."


# ------------------------------------------------------------------ delete

@pytest.mark.slow
def test_delete_along_provenance_with_its_blast_radius(make_user, memory_env):
    # one segment takes every page; the facts are the test's own, not the turns'
    tune(memory_env, STM_CAPACITY=1, FSCORE_THRESHOLD=0.0, FACTS_AT_TURN=False)
    user = make_user()
    doomed = say(user, "My brother Aurelio lives in Porto and builds violins.")
    kept = say(user, "Aurelio visits every summer from Porto.")
    say(user, "Filler to push the pages on.")
    segment = Segment.objects.get(user=user)
    only_doomed = fact(user, "User's brother builds violins", [doomed], segment)
    both = fact(user, "User's brother lives in Porto", [doomed, kept], segment)
    UserTrait.objects.create(user=user, key="family_concern", score=0.3)
    from django.utils import timezone

    LifecycleEvent.objects.create(user=user, kind="trait_updated", subject_id="family_concern",
                                  occurred_at=timezone.now(),
                                  payload={"before": 0.0, "after": 0.3, "weight": 1.0, "page_id": str(doomed.id)})
    recall_for_query(user=user, query="What does my brother make in Porto?")  # a trace naming the page's turns
    before = (DialoguePage.objects.count(), KnowledgeFact.objects.count())
    radius = memory_delete(user=user, kind="page", ident=str(doomed.id), dry_run=True)
    assert (DialoguePage.objects.count(), KnowledgeFact.objects.count()) == before  # a dry run changes nothing
    assert [p["id"] for p in radius.pages] == [str(doomed.id)]
    assert [f["text"] for f in radius.facts_removed] == ["User's brother builds violins"]
    assert [(f["text"], f["sources"]) for f in radius.facts_kept] == [("User's brother lives in Porto",
                                                                        [str(kept.id)])]
    assert [s["id"] for s in radius.segments_rederived] == [str(segment.id)]
    assert [t["key"] for t in radius.traits_removed] == ["family_concern"] and radius.final
    memory_delete(user=user, kind="page", ident=str(doomed.id), actor=make_user("op"), reason="asked to")
    assert not DialoguePage.objects.filter(id=doomed.id).exists()
    assert not KnowledgeFact.objects.filter(id=only_doomed.id).exists()
    both.refresh_from_db()
    assert both.source_page_ids == [str(kept.id)]
    assert list(MemoryEdge.objects.filter(source__object_id=str(both.id)).values_list("target__object_id", flat=True)) \
        == [str(kept.id)]
    assert not UserTrait.objects.filter(user=user, key="family_concern").exists()
    segment.refresh_from_db()
    assert "violin" not in segment.summary.lower() and not segment.rederive
    for policy in policy_names():
        texts = recalled_texts(user, "Who builds violins?", policy)
        assert "violins" not in texts, policy
    assert not any("violin" in str(t.payload).lower() for t in RetrievalTrace.objects.filter(user=user))
    assert not any("violin" in str(e.payload).lower() for e in LifecycleEvent.objects.filter(user=user))
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.DELETED)
    assert event.payload["deleted"]["facts"] == 1 and event.payload["actor"] == "op"


@pytest.mark.slow
def test_deleting_a_segment_takes_its_pages_and_rescoring_keeps_the_other_evidence(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1, FSCORE_THRESHOLD=0.0)
    user = make_user()
    first = say(user, "I paint watercolours of harbours.")
    filler = say(user, "More filler.")
    from django.utils import timezone

    other = say(user, "A page outside the segment.")  # moves the filler into the segment; it stays in STM
    segment = Segment.objects.get(user=user)
    for page_id, weight in ((first.id, 1.0), (other.id, 0.5)):
        LifecycleEvent.objects.create(user=user, kind="trait_updated", subject_id="creativity",
                                      occurred_at=timezone.now(), payload={"weight": weight, "page_id": str(page_id)})
    UserTrait.objects.create(user=user, key="creativity", score=0.405)
    radius = memory_delete(user=user, kind="segment", ident=str(segment.id), dry_run=True)
    assert [p["id"] for p in radius.pages] == [str(first.id), str(filler.id)]
    # Scored again from the evidence left: 0 + 0.3 · 0.5 · (1 − 0) = 0.15.
    assert radius.traits_rescored == [{"key": "creativity", "name": "Creativity", "before": 0.405, "after": 0.15}]
    memory_delete(user=user, kind="segment", ident=str(segment.id))
    assert not Segment.objects.filter(id=segment.id).exists() and not DialoguePage.objects.filter(id=first.id).exists()
    assert UserTrait.objects.get(user=user, key="creativity").score == pytest.approx(0.15)
    assert configured.vector_index().count(user_id=str(user.pk), kind="segment") == 0


def test_forgetting_a_user_leaves_nothing_of_them_and_nothing_of_others_changes(make_user):
    user, other = make_user(), make_user()
    for text in ("I live on a houseboat.", "My houseboat is green."):
        say(user, text)
    say(other, "I live in a castle.")
    fact(user, "User lives on a houseboat", list(DialoguePage.objects.filter(user=user)))
    facts = KnowledgeFact.objects.filter(user=user).count()
    counts = user_forget(user=user, actor=other, reason="erasure request")
    assert counts["pages"] == 2 and counts["facts"] == facts >= 1
    for model in (DialoguePage, Segment, KnowledgeFact, AgentTrait, UserTrait, MemoryNode, RetrievalTrace):
        assert not model.objects.filter(user=user).exists(), model
    assert list(LifecycleEvent.objects.filter(user=user).values_list("kind", flat=True)) == ["user_forgotten"]
    assert configured.vector_index().count(user_id=str(user.pk)) == 0
    assert DialoguePage.objects.filter(user=other).count() == 1
    assert configured.vector_index().count(user_id=str(other.pk)) > 0
    maintenance_run(user_id=user.pk)  # the account still works


def test_an_erase_leaves_no_text_or_vector_in_the_var_files(make_user, memory_env):
    """Issue 49, finding 7: after an erase a search of the database's files (the log included) and
    the vector shard finds neither the erased person's words nor their vectors' bytes."""
    user, other = make_user("ana"), make_user("bo")
    pages = [say(user, "My tortoise Wobbleton-Quirinus sleeps under the radiator.", "Wobbleton-Quirinus sounds cosy."),
             say(user, "Wobbleton-Quirinus turned ninety this spring.")]
    say(other, "I keep bees on my roof.")
    vectors = configured.vector_index().get_vectors(user_id=str(user.pk), ids=[str(page.id) for page in pages])
    assert vectors
    needles = [np.asarray(vector[100:104], dtype=np.float32).tobytes() for vector in vectors.values()]
    # The database's own files where it keeps them here (SQLite); PostgreSQL's are its server's.
    sqlite = connection.vendor == "sqlite"
    database = Path(connection.settings_dict["NAME"]) if sqlite else None
    kept = [database, Path(f"{database}-wal")] if sqlite else []

    def files() -> list[Path]:
        return [path for path in [*kept, *memory_env.QDRANT_PATH.rglob("*")] if path.is_file()]

    word = b"Wobbleton-Quirinus"
    assert not sqlite or any(word in path.read_bytes() for path in files())  # the probe finds them before
    user_forget(user=user, actor=user, reason="erased by the person")
    assert not [path.name for path in files() if word in path.read_bytes()]
    assert not [path.name for path in files() if any(needle in path.read_bytes() for needle in needles)]
    assert not sqlite or b"keep bees on my roof" in b"".join(path.read_bytes() for path in kept if path.is_file())
