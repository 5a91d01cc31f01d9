"""The chat's pages: sign-up, the first-visit profile card, persona switching, the transcript and
the "what I remembered" panels (htmx partials)."""

from __future__ import annotations

import pytest
from django.test import Client

from memory.models import DialoguePage, Sona, Tier
from memory.services.long_term import profile_update
from memory.services.turns import turn_run
from memory.services.users import sona_get_or_create
from persona.models import UserProfile

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def ana_client(make_user):
    user = make_user("ana")
    client = Client()
    client.force_login(user)
    return user, client


@pytest.mark.django_db
def test_pages_need_a_signed_in_user(client):
    for url in ("/", "/profile/", "/chat/stats/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
def test_sign_up_signs_in_and_asks_for_the_profile(client):
    page = client.get("/accounts/signup/")
    assert page.status_code == 200 and b"Create an account" in page.content
    response = client.post("/accounts/signup/", {"username": "zoe", "password1": "a-long-secret-1",
                                                 "password2": "a-long-secret-1"})
    assert response.status_code == 302 and response["Location"] == "/"
    home = client.get("/")
    assert home.status_code == 200
    assert b'id="profile-card"' in home.content and b"Skip for now" in home.content
    assert b"Say hello" in home.content


@pytest.mark.django_db
def test_sign_up_refuses_a_short_password(client):
    response = client.post("/accounts/signup/", {"username": "zoe", "password1": "short",
                                                 "password2": "short"})
    assert response.status_code == 200 and b"at least 8 characters" in response.content
    form = response.context["form"]
    # The reason is filed under the password, not under its confirmation, and both stay filled in.
    assert "at least 8 characters" in " ".join(form.errors["password1"]) and "password2" not in form.errors
    html = response.content.decode()
    assert html.count('value="short"') == 2


@pytest.mark.django_db
def test_sign_up_keeps_the_mismatch_under_the_confirmation(client):
    response = client.post("/accounts/signup/", {"username": "zoe", "password1": "a-long-secret-1",
                                                 "password2": "a-long-secret-2"})
    assert list(response.context["form"].errors) == ["password2"]


@pytest.mark.django_db
def test_the_chat_page_has_one_element_per_id(ana_client):
    """The new-sona form's "Name" label once named the profile card's field (both were id_name)."""
    import re

    _, client = ana_client
    html = client.get("/").content.decode()
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.django_db
def test_profile_card_saves_through_profile_update(ana_client):
    user, client = ana_client
    response = client.post("/profile/", {"card": "1", "name": "Ana", "gender": "female",
                                                 "birth_year": "1990"}, **HTMX)
    assert response.status_code == 200 and b"Thanks, Ana" in response.content
    profile = UserProfile.objects.get(user=user)
    assert (profile.name, profile.gender, profile.birth_year) == ("Ana", "female", 1990)
    assert b'id="profile-card"' not in client.get("/").content


@pytest.mark.django_db
def test_the_profile_form_can_take_a_birth_year_back(ana_client):
    user, client = ana_client
    client.post("/profile/", {"name": "Ana", "gender": "female", "birth_year": "1990"})
    assert "born: 1990" in UserProfile.objects.get(user=user).as_text()

    response = client.post("/profile/", {"name": "Ana", "gender": "female", "birth_year": ""})

    assert response.status_code == 302
    profile = UserProfile.objects.get(user=user)
    assert (profile.name, profile.gender, profile.birth_year) == ("Ana", "female", None)
    assert "born" not in profile.as_text()


@pytest.mark.django_db
def test_profile_update_leaves_the_birth_year_unless_it_is_named(make_user):
    user = make_user()
    profile_update(user=user, name="Ana", birth_year=1990)
    profile_update(user=user, gender="female")
    assert UserProfile.objects.get(user=user).birth_year == 1990
    profile_update(user=user, birth_year=None)
    assert UserProfile.objects.get(user=user).birth_year is None
    with pytest.raises(ValueError, match="out of range"):
        profile_update(user=user, birth_year=1800)


@pytest.mark.django_db
def test_profile_card_shows_errors_in_place(ana_client):
    user, client = ana_client
    response = client.post("/profile/", {"card": "1", "name": "", "birth_year": "1800"}, **HTMX)
    assert response.status_code == 200
    assert b'id="profile-card"' in response.content and b"Enter a year between 1900" in response.content
    assert not UserProfile.objects.filter(user=user).exists()


@pytest.mark.django_db
def test_skipping_the_profile_is_remembered_and_it_can_be_filled_in_later(ana_client):
    user, client = ana_client
    response = client.post("/profile/skip/", **HTMX)
    assert response.status_code == 200 and b"any time" in response.content
    assert b'id="profile-card"' not in client.get("/").content
    page = client.get("/profile/")
    assert page.status_code == 200 and b"Your profile" in page.content
    response = client.post("/profile/", {"name": "Ana", "gender": "", "birth_year": ""})
    assert response.status_code == 302
    assert UserProfile.objects.get(user=user).name == "Ana"
    assert b'value="Ana"' in client.get("/profile/").content


@pytest.mark.django_db
def test_personas_are_created_and_selected_per_user(ana_client, make_user):
    user, client = ana_client
    client.get("/")  # the default persona
    response = client.post("/chat/sonas/", {"name": "coach", "profile": "A running coach."}, **HTMX)
    assert response.status_code == 200 and b'id="sona-bar"' in response.content
    coach = Sona.objects.get(user=user, name="coach")
    assert b"A running coach." in response.content
    assert f'value="{coach.id}" selected'.encode() in response.content
    duplicate = client.post("/chat/sonas/", {"name": "Coach"}, **HTMX)
    assert b"already have a sona" in duplicate.content
    default = Sona.objects.get(user=user, name="assistant")
    response = client.post("/chat/sonas/select/", {"sona": str(default.id)}, **HTMX)
    assert f'value="{default.id}" selected'.encode() in response.content
    # Another user's persona cannot be selected.
    other = sona_get_or_create(user=make_user("ben"), name="chef")
    response = client.post("/chat/sonas/select/", {"sona": str(other.id)}, **HTMX)
    assert b"chef" not in response.content and f'value="{default.id}" selected'.encode() in response.content


@pytest.mark.django_db
def test_the_persona_in_use_is_renamed_in_place_and_a_taken_name_is_refused(ana_client, make_user):
    user, client = ana_client
    client.get("/")  # the default persona, "assistant"
    client.post("/chat/sonas/", {"name": "coach"}, **HTMX)  # now in use
    renamed = client.post("/chat/sonas/rename/", {"name": "running buddy"}, **HTMX)
    assert renamed.status_code == 200 and b"Rename running buddy" in renamed.content
    assert sorted(Sona.objects.filter(user=user).values_list("name", flat=True)) == ["assistant", "running buddy"]
    taken = client.post("/chat/sonas/rename/", {"name": "assistant"}, **HTMX)
    assert taken.status_code == 200 and b"You already have a sona named &#x27;assistant&#x27;." in taken.content
    empty = client.post("/chat/sonas/rename/", {"name": "  "})  # no htmx: back to the chat
    assert empty.status_code == 302
    assert sorted(Sona.objects.filter(user=user).values_list("name", flat=True)) == ["assistant", "running buddy"]
    ben = make_user("ben")
    sona_get_or_create(user=ben, name="chef")
    client.post("/chat/sonas/rename/", {"name": "chef"}, **HTMX)  # Ben's names are not Ana's business
    assert Sona.objects.filter(user=ben, name="chef").exists() and Sona.objects.filter(user=user, name="chef").exists()


@pytest.mark.django_db
def test_a_new_persona_can_choose_its_recall_policy(ana_client):
    user, client = ana_client
    form = client.get("/").content
    assert b'name="recall_policy"' in form and b'value="memoryos"' in form and b"default (hybrid)" in form
    client.post("/chat/sonas/", {"name": "historian", "recall_policy": "memoryos"}, **HTMX)
    assert Sona.objects.get(user=user, name="historian").recall_policy == "memoryos"
    client.post("/chat/sonas/", {"name": "plain"}, **HTMX)
    assert Sona.objects.get(user=user, name="plain").recall_policy == ""
    refused = client.post("/chat/sonas/", {"name": "odd", "recall_policy": "nope"}, **HTMX)
    assert b"Select a valid choice" in refused.content and not Sona.objects.filter(name="odd").exists()


@pytest.mark.slow
@pytest.mark.usefixtures("memory_env")
def test_transcript_shows_every_tier_in_order_with_recall_panels(ana_client, memory_env):
    user, client = ana_client
    for i in range(9):
        turn_run(user=user, message=f"Turn {i}: my garden has tomatoes and basil number {i}.")
    assert DialoguePage.objects.filter(user=user, tier=Tier.MTM).count() == 2
    html = client.get("/").content.decode()
    positions = [html.index(f"Turn {i}: my garden") for i in range(9)]
    assert positions == sorted(positions)
    assert html.count('class="recall"') == 9
    partial = client.get("/?part=transcript", **HTMX)
    assert partial.status_code == 200 and partial.content.decode().count('class="turn"') == 9
    assert b"<html" not in partial.content


@pytest.mark.slow
@pytest.mark.usefixtures("memory_env")
def test_recall_panel_shows_items_with_their_score_breakdown(ana_client, memory_env):
    user, client = ana_client
    for i in range(9):
        turn_run(user=user, message=f"I planted tomatoes and basil in my garden, note {i}.")
    result = turn_run(user=user, message="What did I plant in my garden?")
    response = client.get(f"/chat/turns/{result.page.id}/recall/", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Recent turns (short-term)" in html
    kinds = {item.kind for item in result.prompt.included}
    assert "stm_page" in kinds
    assert "recency" in html
    if "mtm_page" in kinds:
        for label in ("similarity", "segment Fscore", "keyword Jaccard", "heat before"):
            assert label in html
    assert html.count('<li class="recalled') == len(result.prompt.included)  # the unrelated ones folded
    assert "One of your last 7 turns" in html and "What the scores mean" in html


@pytest.mark.usefixtures("memory_env")
def test_recall_panel_is_private(ana_client, make_user):
    user, _ = ana_client
    result = turn_run(user=user, message="My secret is that I love opera.")
    stranger = Client()
    stranger.force_login(make_user("ben"))
    assert stranger.get(f"/chat/turns/{result.page.id}/recall/").status_code == 404
    assert b"opera" not in stranger.get(f"/chat/turns/{result.page.id}/recall/", **HTMX).content


@pytest.mark.django_db
def test_recall_panel_shows_hybrid_utterances_and_unknown_kinds(ana_client):
    from django.utils import timezone

    from memory.models import PageStatus, RetrievalTrace

    user, client = ana_client
    page = DialoguePage.objects.create(user=user, seq=1, query="Do I like opera?", response="You do.",
                                       status=PageStatus.COMPLETE, timestamp=timezone.now())
    RetrievalTrace.objects.create(user=user, page=page, query=page.query, payload={
        "prompt": {"included": ["turn:u1", "future_kind:x"], "dropped": []},
        "turns": [{"id": "u1", "text": "Ana: I love opera", "dense": 0.61, "sparse": 0.4, "final": 0.72}],
        "timings_ms": {"query embedding": 7.94, "utterances": 12.31},
    })
    html = client.get(f"/chat/turns/{page.id}/recall/", **HTMX).content.decode()
    assert "Things said earlier (mid-term)" in html and "Ana: I love opera" in html
    assert "dense" in html and "0.610" in html and "final" in html and "0.720" in html
    assert "future kind" in html
    assert "query embedding 7.9 ms" in html and "utterances 12.3 ms" in html  # where the time went


def test_the_profile_cards_thanks_is_a_note_that_goes_away(ana_client):
    """The card is answered with a note the page removes after a while (or on ×), not a card that
    stays pinned above the conversation."""
    _, client = ana_client
    saved = client.post("/profile/", {"card": "1", "name": "Ana"}, **HTMX).content.decode()
    skipped = client.post("/profile/skip/", **HTMX).content.decode()
    for note in (saved, skipped):
        assert 'data-dismiss-after="5000"' in note and "data-dismiss " in note


@pytest.mark.django_db
def test_the_favicon_is_served_by_the_app(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    icon = b"".join(response.streaming_content)
    assert icon[:4] == b"\x00\x00\x01\x00" and b"PNG" in icon[:40]  # an ICO holding one PNG image
    assert b'<link rel="icon" href="/favicon.ico"' in client.get("/accounts/login/").content


@pytest.mark.django_db
def test_recall_panel_leads_with_why_in_words_and_explains_every_score(ana_client):
    from django.utils import timezone

    from memory.models import PageStatus, RetrievalTrace

    user, client = ana_client
    page = DialoguePage.objects.create(user=user, seq=2, query="What is my dog's name?", response="…",
                                       status=PageStatus.COMPLETE, timestamp=timezone.now())
    RetrievalTrace.objects.create(user=user, page=page, query=page.query, payload={
        "query_keywords": ["biscuit", "dog"],
        "prompt": {"included": ["turn:u1", "turn:u2"], "dropped": []},
        "segments": [{"id": "s1", "jaccard": 0.0, "chosen": True, "summary": "Biscuit the golden retriever"}],
        "heat_changes": [{"segment_id": "s1", "heat_before": 2.5, "heat_after": 3.5}],
        "turns": [
            {"id": "u1", "text": "Sam: I have a golden retriever called Biscuit <b>!</b>", "dense": 1.2,
             "sparse": -0.461, "feedback": -0.241, "speaker": 0.0, "score": 0.5, "final": 0.9, "cosine": 0.55,
             "bm25": 0.0, "segment_id": "s1", "said_at": "2026-05-03T09:30:00+00:00"},
            {"id": "u2", "text": "Sam: The weather was nice", "dense": -0.8, "sparse": -0.5, "feedback": -0.3,
             "speaker": 0.0, "score": -1.6, "final": -1.6, "cosine": 0.12, "bm25": 0.0, "segment_id": ""},
        ],
    })
    html = client.get(f"/chat/turns/{page.id}/recall/", **HTMX).content.decode()
    first, second = html.split('<li class="recalled')[1:3]
    assert "called <mark>Biscuit</mark> &lt;b&gt;!&lt;/b&gt;" in first  # matched word marked, text escaped
    assert "Shares words with your message: “Biscuit”." in first
    assert "Close in meaning to your message" in first
    assert "Next to another turn that matched" in first
    assert "Said on 3 May 2026 at 09:30." in first
    assert "Part of the topic “Biscuit the golden retriever”." in first
    assert "heat before" in first and "2.500" in first and "heat after" in first
    assert "Close in meaning" not in second and "<mark>" not in second
    # The weather shares nothing with the question: shown apart, folded, not among what was remembered.
    assert second.startswith(' unrelated">') and "1 more item was in the prompt without a word" in html
    legend = html.split("What the scores mean")[1]
    for label in ("dense", "sparse", "feedback", "speaker", "score", "final", "cosine", "bm25", "heat before"):
        assert f"<dt>{label}</dt>" in legend, label
    assert "N_visit + L_interaction + exp(−Δt/μ)" in legend and "τ = 5" in legend
    assert 'title="Words: the BM25 keyword score' in html  # each number has its explanation on hover


@pytest.mark.django_db
def test_a_trace_shows_a_zero_score_as_zero_not_as_missing(ana_client):
    """The trace page printed "—" for every score that was 0.0 (a template default on a falsy value)."""
    import uuid

    from django.utils import timezone

    from memory.models import PageStatus, RetrievalTrace

    user, client = ana_client
    page = DialoguePage.objects.create(user=user, seq=1, query="Hello?", response="Hi.",
                                       status=PageStatus.COMPLETE, timestamp=timezone.now())
    trace = RetrievalTrace.objects.create(user=user, page=page, query=page.query, payload={
        "segments": [{"id": str(uuid.uuid4()), "summary": "a topic", "relevance": 0.0, "jaccard": 0.0,
                      "fscore": 0.0, "heat_before": 0.0, "chosen": False}]})
    html = client.get(f"/inspector/{user.username}/recalls/{trace.id}/").content.decode()
    row = html.split("a topic</a>")[1].split("</tr>")[0]
    assert "—" not in row and row.count(">0.0<") == 4
