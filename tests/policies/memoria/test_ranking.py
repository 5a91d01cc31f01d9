"""The "memoria" recall policy over the real store: hand-computed scores through the policy, budgeted
expansion along the memory graph in the trace, repression and other users' nodes never read through,
importance by EWMA after a reply, bubbling up, importance reordering what the relevance core ranks apart."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.test import Client
from django.utils import timezone

from memory.adapters import configured
from memory.models import (
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    RetrievalTrace,
    SonaMembership,
    Tier,
    vector_to_bytes,
)
from memory.recall.relevance import turn_relevance
from memory.services import graph
from memory.services.common import MemoryInputError
from memory.services.editing import memory_repress
from memory.services.pages import page_start
from memory.services.recall import recall_for_query
from memory.services.turns import page_complete, turn_run
from memory.services.users import sona_get_or_create, sona_rename
from memory.services.utterances import index_turns

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]
BOTH = (Tier.STM, Tier.MTM)


def tune(settings, **params):
    settings.MEMORYOS = {**settings.MEMORYOS, **params}


def say(user, text: str, *, sona=None, at=None, response: str = "Noted.") -> DialoguePage:
    page = page_start(user=user, query=text, sona=sona, timestamp=at)
    return page_complete(page=page, response=response, reply_model="test")


def node(page: DialoguePage) -> MemoryNode:
    return MemoryNode.objects.get(user_id=page.user_id, kind=MemoryNode.Kind.PAGE, object_id=str(page.id))


def unit(*values: float) -> bytes:
    vector = np.zeros(384, dtype=np.float32)
    vector[:len(values)] = values
    return vector_to_bytes(vector)


def cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_scores_by_hand_through_the_policy(make_user, memory_env):
    tune(memory_env, MAINTENANCE_MODE="off", MEMORIA_W_RECENCY=2.0, MEMORIA_W_VECTOR=1.0, MEMORIA_W_FTS=0.5,
         MEMORIA_W_IMPORTANCE=1.5, MEMORIA_W_SONA=3.0, MEMORIA_HALF_LIFE_S=3600.0)
    user = make_user()
    cook, baker = sona_get_or_create(user=user, name="cook"), sona_get_or_create(user=user, name="baker")
    # Sona names on hand-made vectors: cos(cook, baker) = 0.6.
    cook.name_embedding, baker.name_embedding = unit(1.0), unit(0.6, 0.8)
    cook.save(update_fields=["name_embedding"])
    baker.save(update_fields=["name_embedding"])
    t0 = timezone.now().replace(microsecond=0) - timedelta(days=1)
    starter = say(user, "My sourdough starter is called Bubbles.", sona=baker, at=t0)
    shoes = say(user, "I bought new trail shoes for the hills.", sona=cook, at=t0 - timedelta(hours=1))
    MemoryNode.objects.filter(pk=node(starter).pk).update(importance=8.2)  # (8.2 - 1) / 9 = 0.8
    index_turns(user_id=user.pk)  # what maintenance (off here) does: the relevance core reads the utterances
    query = "What is my sourdough starter called?"
    query_vector = configured.embedder().embed([query])[0]
    now = t0 + timedelta(hours=1)
    recall = recall_for_query(user=user, query=query, sona=cook, policy="memoria", now=now,
                              query_vector=query_vector, turn_tiers=BOTH, update_heat=False)
    by_ref = {item.ref: item.breakdown for item in recall.items if item.kind == "memoria_page"}
    # The vector term: each page's best utterance score by the relevance core, min-max over the candidate pages.
    page_score = turn_relevance(user=user, query=query, query_vector=query_vector, now=now,
                                tiers=BOTH).page_scores()
    best, worst = max(page_score.values()), min(page_score.values())
    vector = {page.id: (page_score[page.seq] - worst) / (best - worst) for page in (starter, shoes)}
    expected = {
        # recency 0.5 (one half-life old), the best page (vector 1), full-text 1 (the only page with
        # the query's words), importance 0.8, sona 0.6 (baker's name against cook's)
        str(starter.id): {"recency": 0.5, "vector": vector[starter.id], "fulltext": 1.0, "importance": 0.8,
                          "sona": 0.6},
        # two half-lives old, the weaker page (vector 0), no query word, never rated (the prior 5.5:
        # 0.5), in cook itself: 1
        str(shoes.id): {"recency": 0.25, "vector": vector[shoes.id], "fulltext": 0.0, "importance": 0.5,
                        "sona": 1.0},
    }
    assert (vector[starter.id], vector[shoes.id]) == (1.0, 0.0)  # the real model: the starter page answers
    weights = {"recency": 2.0, "vector": 1.0, "fulltext": 0.5, "importance": 1.5, "sona": 3.0}
    for ref, terms in expected.items():
        for name, value in terms.items():
            assert by_ref[ref][name] == pytest.approx(value, abs=2e-4), (ref, name)
            assert by_ref[ref][f"w_{name}"] == pytest.approx(weights[name] * value, abs=3e-4), (ref, name)
        assert by_ref[ref]["score"] == pytest.approx(sum(weights[n] * v for n, v in terms.items()), abs=5e-4)
    seeds = recall.trace.payload["memoria"]["seeds"]
    assert [seed["cid"] for seed in seeds][:2] == sorted(
        [str(node(starter).pk), str(node(shoes).pk)],
        key=lambda cid: -next(s["score"] for s in seeds if s["cid"] == cid))
    assert recall.trace.policy == "memoria" and "keyword search" in recall.timings_ms


def test_expansion_follows_edges_in_topological_order_and_never_through_hidden_nodes(make_user, memory_env):
    tune(memory_env, MAINTENANCE_MODE="off", MEMORIA_TOP_K=1, MEMORIA_MIN_BUDGET=0.001)
    user, other = make_user("me"), make_user("other")
    t0 = timezone.now() - timedelta(days=2)
    rope = say(user, "I bought a coil of blue climbing rope.", at=t0)
    harbour = say(user, "We sailed out of the harbour at Portree.", at=t0 + timedelta(hours=1))
    secret = say(user, "My diary code is 4471.", at=t0 + timedelta(hours=2))
    knot = say(user, "The lighthouse keeper on Skye taught me to tie a bowline knot.", at=t0 + timedelta(hours=3))
    theirs = say(other, "Other's private note about the bowline.", at=t0)
    a, b, c, d = node(knot), node(harbour), node(rope), node(secret)
    graph.edge_put(user_id=user.pk, source=a, target=b, relation="follows", weight=1.0)
    graph.edge_put(user_id=user.pk, source=b, target=c, relation="mentions", weight=0.8)
    graph.edge_put(user_id=user.pk, source=a, target=d, relation="mentions", weight=1.0)
    graph.edge_put(user_id=user.pk, source=a, target=node(theirs), relation="mentions", weight=1.0)
    memory_repress(user=user, kind="page", ident=str(secret.id))
    recall = recall_for_query(user=user, query="Who taught me the bowline knot at the lighthouse?",
                              policy="memoria", turn_tiers=BOTH, update_heat=False)
    refs = [item.ref for item in recall.items if item.kind == "memoria_page"]
    # dependencies first: the rope before the harbour before the knot
    assert refs == [str(rope.id), str(harbour.id), str(knot.id)]
    expansion = recall.trace.payload["memoria"]["expansion"]
    assert expansion["seeds"] == [str(a.pk)]
    assert expansion["pulled_by"][str(b.pk)]["source"] == str(a.pk)
    assert expansion["pulled_by"][str(c.pk)]["source"] == str(b.pk)
    seed_budget = expansion["budgets"][str(a.pk)]
    assert expansion["budgets"][str(b.pk)] == pytest.approx(seed_budget * 0.5 * 1.0)
    assert expansion["budgets"][str(c.pk)] == pytest.approx(seed_budget * 0.5 * 0.5 * 0.8)
    assert {str(d.pk), str(node(theirs).pk)} <= set(expansion["skipped"])  # repressed; another user's
    texts = "\n".join(item.text for item in recall.items)
    assert "4471" not in texts and "Other's" not in texts
    stored = RetrievalTrace.objects.get(id=recall.trace.id).payload["memoria"]
    assert stored["nodes"][str(b.pk)]["ref"] == str(harbour.id)
    # the inspector's trace page shows who pulled in whom, in the prompt's order
    client = Client()
    client.force_login(user)
    page = client.get(f"/inspector/me/recalls/{recall.trace.id}/").content.decode()
    table = page[page.index('id="memoria-expansion"'):]
    assert table.index("coil of blue climbing rope") < table.index("harbour at Portree") < table.index("bowline")
    assert "a top hit (score" in table
    assert "pulled in by “User: We sailed out of the harbour at Portree. | Assistant: Noted.” (mentions, weight 0.80)" \
        in table
    assert "4471" not in page
    client.force_login(other)
    assert client.get(f"/inspector/me/recalls/{recall.trace.id}/").status_code == 404


@pytest.mark.real_adapters  # the page that answers by meaning is MiniLM's
def test_the_pages_with_the_most_words_join_those_the_core_ranks_best(make_user, memory_env):
    tune(memory_env, MAINTENANCE_MODE="off", MEMORIA_CANDIDATES=1)
    user = make_user()
    kitten = say(user, "My kitten Miso dozes on the windowsill all afternoon.")
    invoice = say(user, "Invoice 4471 lists windowsill paint, windowsill putty and a windowsill brush.")
    index_turns(user_id=user.pk)
    query = "Where does my cat like to nap by the windowsill?"
    query_vector = configured.embedder().embed([query])[0]
    found = turn_relevance(user=user, query=query, query_vector=query_vector, now=timezone.now(), tiers=BOTH)
    by_score, by_words = found.page_scores(), found.page_keyword_scores()
    # the real model and BM25 disagree: the kitten answers, the invoice repeats the query's word
    assert max(by_score, key=by_score.get) == kitten.seq and max(by_words, key=by_words.get) == invoice.seq
    recall = recall_for_query(user=user, query=query, policy="memoria", query_vector=query_vector,
                              turn_tiers=BOTH, update_heat=False)
    assert recall.trace.payload["memoria"]["candidates"] == 2  # one of each, though the limit is 1
    by_ref = {item.ref: item.breakdown for item in recall.items if item.kind == "memoria_page"}
    assert by_ref[str(kitten.id)]["vector"] == 1.0 and by_ref[str(invoice.id)]["vector"] == 0.0
    # words count for the `limit` pages with the most, as a search's top hits would: the kitten's one is not
    assert by_ref[str(invoice.id)]["fulltext"] == 1.0 and by_ref[str(kitten.id)]["fulltext"] == 0.0


def test_sona_names_are_embedded_on_create_and_rename(make_user):
    user = make_user()
    sona = sona_get_or_create(user=user, name="gardener")
    expected = configured.embedder().embed(["gardener"])[0]
    assert cosine(np.frombuffer(bytes(sona.name_embedding), dtype=np.float32), expected) == pytest.approx(1.0)
    sona_get_or_create(user=user, name="chef")
    with pytest.raises(MemoryInputError):
        sona_rename(user=user, sona=sona, name="chef")
    sona_rename(user=user, sona=sona, name="botanist")
    sona.refresh_from_db()
    renamed = configured.embedder().embed(["botanist"])[0]
    assert sona.name == "botanist"
    assert cosine(np.frombuffer(bytes(sona.name_embedding), dtype=np.float32), renamed) == pytest.approx(1.0)


def test_importance_moves_by_ewma_after_each_reply_and_a_used_memory_bubbles_up(make_user, memory_env):
    tune(memory_env, STM_CAPACITY=1)
    user = make_user()
    baker, cook = sona_get_or_create(user=user, name="baker"), sona_get_or_create(user=user, name="cook")
    starter = say(user, "My sourdough starter is called Bubbles.", sona=baker)
    weather = say(user, "The weather was grey all week.", sona=baker)
    say(user, "Nothing else to report.", sona=baker)
    assert DialoguePage.objects.get(id=starter.id).tier == Tier.MTM
    assert SonaMembership.objects.filter(sona=baker, node=node(starter), via="origin").exists()

    result = turn_run(user=user, message="What is my sourdough starter called?", sona=cook, policy="memoria")
    assert "Bubbles" in result.reply
    rated = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.IMPORTANCE_RATED)
    ratings = rated.payload["ratings"]
    first = ratings[str(node(starter).pk)]
    assert first >= 6 and rated.payload["source"] == "overlap"
    starter_node = node(starter)
    assert starter_node.importance == pytest.approx(0.7 * 5.5 + 0.3 * first)
    assert starter_node.importance_ratings == 1
    # used in cook (in the prompt, rated high): it bubbles up into cook, and says from where
    joined = SonaMembership.objects.get(sona=cook, node=starter_node)
    assert joined.via == SonaMembership.Via.BUBBLED_UP
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.SONA_JOINED)
    assert event.subject_id == str(starter.id) and event.payload["from_sonas"] == ["baker"]
    assert event.payload["sona"] == "cook"
    # a memory recalled but of no help stays where it was
    weather_node = node(weather)
    if str(weather_node.pk) in ratings:
        assert ratings[str(weather_node.pk)] < 6
    assert not SonaMembership.objects.filter(sona=cook, node=weather_node).exists()
    # importance is never shown to the model
    assert "importance" not in result.prompt.messages[0].content.lower()
    # the reply's recall panel shows Memoria's terms for each memory it used
    from memory.selectors.recall_panel import turn_recall

    panel = dict(turn_recall(user=user, page_id=result.page.id).sections)
    shown = next(row for row in panel["Earlier conversations (Memoria, causal order)"] if row.ref == str(starter.id))
    scores = dict(shown.scores)
    assert {"Memoria score", "meaning", "words", "importance", "sona similarity", "budget"} <= set(scores)

    turn_run(user=user, message="Remind me what my sourdough starter is called.", sona=cook, policy="memoria")
    second = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.IMPORTANCE_RATED).order_by("id")
    rating = second.last().payload["ratings"][str(starter_node.pk)]
    again = node(starter)
    assert again.importance == pytest.approx(0.7 * (0.7 * 5.5 + 0.3 * first) + 0.3 * rating)
    assert again.importance_ratings == 2
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.SONA_JOINED).count() == 1


def _recall_trace(user, query: str):
    index_turns(user_id=user.pk)  # what maintenance (off in these tests) does before a recall
    recall = recall_for_query(user=user, query=query, policy="memoria", turn_tiers=BOTH, update_heat=False)
    return recall.trace, recall.trace.payload["memoria"]["expansion"]["order"]


def _with_llm(settings, server):
    settings.LLM_ENABLED = True
    settings.OPENAI_API_KEY = server.api_key
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_TIMEOUT = 3.0
    settings.OPENAI_MAX_RETRIES = 0
    configured.chat_model.cache_clear()


def test_the_llm_rates_every_recalled_memory_in_one_call(make_user, memory_env, openai_server):
    import json

    from memory.policies.memoria.services import memoria_after_reply

    tune(memory_env, MAINTENANCE_MODE="off")
    user = make_user()
    say(user, "My sourdough starter is called Bubbles.")
    say(user, "The weather was grey all week.")
    trace, order = _recall_trace(user, "What is my sourdough starter called?")
    assert len(order) == 2
    _with_llm(memory_env, openai_server)
    openai_server.reply(json.dumps({"ratings": {"1": 9, "2": 2}}))
    rated = memoria_after_reply(user_id=user.pk, trace_id=trace.id, reply="It is called Bubbles.")
    assert rated == {order[0]: 9, order[1]: 2}
    assert len(openai_server.chat_requests()) == 1  # one call for all of them, off the reply path
    asked = openai_server.chat_requests()[0].body["messages"][-1]["content"]
    assert "1. " in asked and "2. " in asked and "Bubbles" in asked
    nodes = MemoryNode.objects.in_bulk([int(i) for i in order])
    assert nodes[int(order[0])].importance == pytest.approx(0.7 * 5.5 + 0.3 * 9)
    assert nodes[int(order[1])].importance == pytest.approx(0.7 * 5.5 + 0.3 * 2)
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.IMPORTANCE_RATED)
    assert event.payload["source"] == "llm"


def test_a_bad_rating_answer_falls_back_to_overlap_and_says_so(make_user, memory_env, openai_server):
    from memory.policies.memoria.engine.rating import overlap_rating
    from memory.policies.memoria.services import memoria_after_reply

    tune(memory_env, MAINTENANCE_MODE="off")
    user = make_user()
    page = say(user, "My sourdough starter is called Bubbles.")
    trace, order = _recall_trace(user, "What is my sourdough starter called?")
    _with_llm(memory_env, openai_server)
    openai_server.reply('{"ratings": {"1": 99}}', "not json at all")
    reply = "Your sourdough starter is called Bubbles."
    rated = memoria_after_reply(user_id=user.pk, trace_id=trace.id, reply=reply)
    # the page's words: sourdough, starter, call, bubbl, note; the reply repeats four of the five
    assert rated == {order[0]: overlap_rating(f"User: {page.query} | Assistant: Noted.", reply)}
    assert rated[order[0]] == 1 + round(9 * 4 / 5)
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.MODEL_OUTPUT_REJECTED,
                                         payload__task="importance_rating").exists()
    assert LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.IMPORTANCE_RATED).payload["source"] == \
        "overlap"


def test_a_sona_lists_its_memories_and_no_one_elses(make_user, memory_env):
    from memory.selectors.sonas import sona_memories

    tune(memory_env, MAINTENANCE_MODE="off")
    user, other = make_user("me"), make_user("other")
    gardener = sona_get_or_create(user=user, name="gardener")
    page = say(user, "The tomatoes need staking.", sona=gardener)
    say(user, "Unfiled thought.")
    listed = sona_memories(user=user, sona=gardener)
    assert [(m.node.object_id, m.via) for m in listed] == [(str(page.id), "origin")]
    assert sona_memories(user=other, sona=gardener) == []


def test_importance_reorders_candidates_the_relevance_core_ranks_apart(make_user, memory_env):
    # Only the vector and importance terms weigh, so the order is Memoria's own.
    tune(memory_env, MAINTENANCE_MODE="off", MEMORIA_W_RECENCY=0.0, MEMORIA_W_VECTOR=1.0, MEMORIA_W_FTS=0.0,
         MEMORIA_W_IMPORTANCE=0.0, MEMORIA_W_SONA=0.0)
    user = make_user()
    starter = say(user, "My sourdough starter is called Bubbles.")
    bread = say(user, "I bake sourdough bread every Sunday.")
    shoes = say(user, "I bought new trail shoes for the hills.")
    MemoryNode.objects.filter(pk=node(bread).pk).update(importance=10.0)  # (10 - 1) / 9 = 1.0
    index_turns(user_id=user.pk)
    query = "What is my sourdough starter called?"
    query_vector = configured.embedder().embed([query])[0]
    now = timezone.now()
    page_score = turn_relevance(user=user, query=query, query_vector=query_vector, now=now,
                                tiers=BOTH).page_scores()
    low, high = min(page_score.values()), max(page_score.values())
    vector = {str(node(page).pk): (page_score[page.seq] - low) / (high - low) for page in (starter, bread, shoes)}
    importance = {str(node(starter).pk): 0.5, str(node(bread).pk): 1.0, str(node(shoes).pk): 0.5}

    def seeds(weight: float) -> list[tuple[str, float]]:
        tune(memory_env, MEMORIA_W_IMPORTANCE=weight)
        recall = recall_for_query(user=user, query=query, query_vector=query_vector, now=now, policy="memoria",
                                  turn_tiers=BOTH, update_heat=False)
        return [(seed["cid"], seed["score"]) for seed in recall.trace.payload["memoria"]["seeds"]]

    # by relevance alone the starter (1.0) leads the bread (between) and the shoes (0.0)
    assert vector[str(node(starter).pk)] == 1.0 > vector[str(node(bread).pk)] > vector[str(node(shoes).pk)] == 0.0
    plain = seeds(0.0)
    assert [cid for cid, _ in plain] == [str(node(page).pk) for page in (starter, bread, shoes)]
    assert dict(plain) == pytest.approx(vector, abs=1e-4)
    # importance 3.0: the bread's 1.0 (rated 10) outweighs the starter's lead in relevance
    weighed = seeds(3.0)
    assert dict(weighed) == pytest.approx({cid: vector[cid] + 3.0 * importance[cid] for cid in vector}, abs=1e-4)
    assert [cid for cid, _ in weighed] == [str(node(page).pk) for page in (bread, starter, shoes)]


def test_a_sona_name_with_no_stored_embedding_is_embedded_once_per_process(make_user, memory_env, monkeypatch):
    """A sona whose name embedding is missing (made before names were embedded, or the embedder
    failed) gets its name embedded by recall: once, not on every recall, with the same terms."""
    from memory.models import Sona

    user = make_user()
    sona = sona_get_or_create(user=user, name="lighthouse keeper")
    Sona.objects.filter(pk=sona.pk).update(name_embedding=b"")
    sona.refresh_from_db()
    say(user, "My sourdough starter is called Bubbles.", sona=sona)
    embedder = configured.embedder()
    asked: list[list[str]] = []
    original = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts: asked.append(list(texts)) or original(texts))
    recalls = [recall_for_query(user=user, query="What is my starter called?", sona=sona, policy="memoria",
                                turn_tiers=BOTH) for _ in range(3)]
    assert sum(texts == ["lighthouse keeper"] for texts in asked) <= 1
    terms = [[(entry["cid"], entry["sona"]) for entry in recall.trace.payload["memoria"]["seeds"]]
             for recall in recalls]
    assert terms[0] and all(sona == pytest.approx(1.0) for _, sona in terms[0])
    assert terms[0] == terms[1] == terms[2]
