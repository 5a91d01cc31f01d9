"""Users and the assistant sonas they talk to."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from memory.adapters import configured
from memory.models import Sona, vector_to_bytes
from memory.recall.base import UnknownPolicyError, get_policy
from memory.recall.sona_names import name_vector
from memory.services.common import MemoryInputError, text_check

log = logging.getLogger(__name__)

User = get_user_model()


def username_validate(username: str) -> str:
    """The sign-up form's rules for a new username: the model field's length and characters, and
    no other account whose name differs only in case. Returns the normalised name."""
    username = User.normalize_username((username or "").strip())
    field = User._meta.get_field(User.USERNAME_FIELD)
    try:
        field.clean(username, None)
    except ValidationError as exc:
        raise MemoryInputError(f"Invalid user name {username!r}: {' '.join(exc.messages)}") from None
    taken = User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username}).first()
    if taken is not None:
        raise MemoryInputError(f"A user named {taken.get_username()!r} already exists.")
    return username


def user_get(*, username: str, create: bool = False):
    """The user by username; with create=True a new one is made (without a usable password),
    under the same rules as sign-up."""
    username = (username or "").strip()
    if not username:
        raise MemoryInputError("A user name is required.")
    try:
        return User.objects.get(username=username)
    except User.DoesNotExist:
        if not create:
            raise MemoryInputError(f"Unknown user {username!r}.") from None
    user = User(username=username_validate(username))
    user.set_unusable_password()
    user.save()
    return user


# The chat's sona form and the REST API accept the same names and profiles.
SONA_NAME_MAX_CHARS = 40
SONA_PROFILE_MAX_CHARS = 600


def sona_name_validate(name: str) -> str:
    """A sona's name as the chat's form takes it: stripped, not empty, at most 40 characters."""
    name = text_check(name or "", field="name").strip()
    if not name:
        raise MemoryInputError("A sona needs a name.")
    if len(name) > SONA_NAME_MAX_CHARS:
        raise MemoryInputError(f"A sona's name is at most {SONA_NAME_MAX_CHARS} characters; "
                               f"this one has {len(name)}.")
    return name


# The name of a user's first sona, made when they first chat.
DEFAULT_SONA_NAME = "assistant"


def sona_get_or_create(*, user, name: str | None = None, profile: str = "", recall_policy: str = "") -> Sona:
    """The named sona, or the user's default one (DEFAULT_SONA_NAME). A new sona gets the profile and
    the recall policy given (blank: the server's default policy). A name the chat's form would
    refuse is refused."""
    if not name:
        default = Sona.objects.filter(user=user, is_default=True).first()
        if default:
            return default
        name = DEFAULT_SONA_NAME
    if len(profile) > SONA_PROFILE_MAX_CHARS:
        raise MemoryInputError(f"A sona's profile is at most {SONA_PROFILE_MAX_CHARS} characters.")
    text_check(profile, field="profile")
    name = sona_name_validate(name)
    found = Sona.objects.filter(user=user, name=name).first()
    if found is not None:
        return found
    # A new sona is inserted with its name's embedding (Memoria's sona similarity compares them),
    # embedded before the write transaction, which would hold the database's write lock meanwhile.
    name_embedding = sona_name_vector(name)
    try:
        with transaction.atomic():
            sona = Sona.objects.create(
                user=user, name=name, profile=profile or "A helpful, warm personal assistant.",
                recall_policy=recall_policy, is_default=not Sona.objects.filter(user=user).exists(),
                name_embedding=name_embedding)
    except IntegrityError:  # made meanwhile by another request of the user's
        return Sona.objects.get(user=user, name=name)
    return sona


def sona_create(*, user, name: str, profile: str = "", recall_policy: str = "") -> Sona:
    """A new sona of the user's; a name they already have (case aside) or an unknown recall policy is
    refused (MemoryInputError), where sona_get_or_create would hand back the existing one."""
    name = sona_name_validate(name)
    if Sona.objects.filter(user=user, name__iexact=name).exists():
        raise MemoryInputError(f"You already have a sona named {name!r}.")
    if recall_policy:
        try:
            get_policy(recall_policy)
        except UnknownPolicyError as error:
            raise MemoryInputError(str(error)) from None
    return sona_get_or_create(user=user, name=name, profile=profile, recall_policy=recall_policy)


def sona_rename(*, user, sona: Sona, name: str) -> Sona:
    """Rename one of the user's sonas and embed its new name; a name another of theirs has is refused."""
    name = sona_name_validate(name)
    if sona.user_id != user.pk:
        raise MemoryInputError("That sona is not yours.")
    if Sona.objects.filter(user=user, name=name).exclude(pk=sona.pk).exists():
        raise MemoryInputError(f"You already have a sona named {name!r}.")
    with transaction.atomic():
        sona.name = name
        sona.save(update_fields=["name"])
        return sona_name_embed(sona=sona)


def user_ensure(*, username: str, password: str):
    """The user by username, made with this password when missing. Returns (user, created)."""
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_password(password)
        user.save(update_fields=["password"])
    return user, created


def sona_name_vector(name: str) -> bytes:
    """The embedding of a sona's name (float32 bytes) for its row, from the names this process has
    embedded already (recall.sona_names.name_vector: every user's first sona has the same name); b""
    when the embedder fails: recall then embeds the name itself."""
    try:
        return vector_to_bytes(name_vector(configured.embedder(), name))
    except Exception as exc:  # as embed_or_none: the sona is made all the same
        log.warning("event=embed_failed error=%r", exc)
        return b""


def sona_name_embed(*, sona: Sona) -> Sona:
    """Store the embedding of the sona's name (left empty when the embedder fails: recall then
    embeds the name itself)."""
    sona.name_embedding = sona_name_vector(sona.name)
    sona.save(update_fields=["name_embedding"])
    return sona
