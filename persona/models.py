"""Long-term memory: user profile, knowledge base, traits, agent traits."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class UserProfile(models.Model):
    """Static attributes (the paper's user profile)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="long_term_profile")
    name = models.CharField(max_length=120, blank=True, default="")
    gender = models.CharField(max_length=40, blank=True, default="")
    birth_year = models.PositiveIntegerField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Validity: when each current value became true ({field: ISO time}; an extra field is
    # "extra.<key>"), and the values it replaced, each with its period ([{"field", "value",
    # "valid_from", "valid_until"}], oldest first). A changed value is kept, never overwritten.
    since = models.JSONField(default=dict, blank=True)
    history = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"profile of {self.user_id}"

    def as_text(self) -> str:
        parts = [f"name: {self.name}" if self.name else "", f"gender: {self.gender}" if self.gender else "",
                 f"born: {self.birth_year}" if self.birth_year else ""]
        parts += [f"{key}: {value}" for key, value in sorted(self.extra.items())]
        return "; ".join(p for p in parts if p)


class LongTermEntry(models.Model):
    """What KB facts and agent traits share: a text, where it came from, a content id."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    text = models.TextField()
    normalised = models.CharField(max_length=500)
    source_page_ids = models.JSONField(default=list, blank=True)
    source_ids = models.JSONField(default=list, blank=True)
    timestamp = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    cid = models.CharField(max_length=64, blank=True, default="")
    # A pinned entry survives the FIFO trim; a repressed one is kept but never recalled.
    pinned = models.BooleanField(default=False)
    repressed = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=1)
    # Validity: when it became true (its statement's time) and, once a newer memory superseded it,
    # when it stopped and which memory took its place. A superseded entry is kept: history is memory.
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)
    superseded_by = models.UUIDField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.text


class KnowledgeFact(LongTermEntry):
    """A fact about the user (User KB, FIFO of 100)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="kb_facts")
    segment = models.ForeignKey("memory.Segment", on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="facts")

    class Meta(LongTermEntry.Meta):
        constraints = [models.UniqueConstraint(fields=["user", "normalised"], name="uniq_fact_per_user")]
        indexes = [models.Index(fields=["user", "created_at"])]


class UserTrait(models.Model):
    """One of the 90 trait dimensions for a user: a score in [0, 1] and its evidence."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="traits")
    key = models.CharField(max_length=64)
    score = models.FloatField(default=0.0)
    evidence = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # A pinned trait keeps the score an operator set whatever new evidence says; a repressed one is
    # never recalled.
    pinned = models.BooleanField(default=False)
    repressed = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="uniq_trait_per_user")]
        ordering = ["-score", "key"]

    def __str__(self) -> str:
        return f"{self.key}={self.score:.2f}"


class AgentTrait(LongTermEntry):
    """Something the agent developed in conversation: a suggestion, a commitment (FIFO of 100)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_traits")
    sona = models.ForeignKey("memory.Sona", on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="traits")
    segment = models.ForeignKey("memory.Segment", on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="agent_traits")

    class Meta(LongTermEntry.Meta):
        constraints = [models.UniqueConstraint(fields=["user", "normalised"], name="uniq_agent_trait_per_user")]


class Supersession(models.Model):
    """A newer KB fact that ends an older one: decided at once by the detector, or waiting for an
    operator's review. Both facts are kept whatever the decision."""

    class Status(models.TextChoices):
        OPEN = "open", "waiting for review"
        SUPERSEDED = "superseded", "superseded (decided by the detector)"
        ACCEPTED = "accepted", "accepted by an operator"
        REJECTED = "rejected", "rejected by an operator (both stay current)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="supersessions")
    old_fact = models.ForeignKey(KnowledgeFact, on_delete=models.CASCADE, related_name="superseded_in")
    new_fact = models.ForeignKey(KnowledgeFact, on_delete=models.CASCADE, related_name="supersedes_in")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    slot = models.CharField(max_length=32, blank=True, default="")
    confidence = models.FloatField(default=0.0)
    reason = models.TextField(blank=True, default="")
    decided_by = models.CharField(max_length=150, blank=True, default="")  # "detector", "model" or a username
    # The memory's time (the new statement's) beside when the row was written and decided.
    occurred_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["old_fact", "new_fact"], name="uniq_supersession_pair")]
        indexes = [models.Index(fields=["user", "status"])]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.new_fact_id} supersedes {self.old_fact_id} ({self.status})"
