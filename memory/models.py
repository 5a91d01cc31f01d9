"""The source of truth for memory. Qdrant vectors are derived from these rows.

Models stay plain: fields, choices, Meta, __str__ and to_engine(). Logic lives in services.
"""

from __future__ import annotations

import uuid

import numpy as np
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory.engine.types import PageView, SegmentView


def vector_to_bytes(vector) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def bytes_to_vector(blob: bytes | memoryview | None) -> tuple[float, ...]:
    if not blob:
        return ()
    return tuple(np.frombuffer(bytes(blob), dtype=np.float32).tolist())


def bytes_to_array(blob: bytes | memoryview | None) -> np.ndarray:
    """The stored vector as a read-only float32 array, without a Python float per dimension (what
    bytes_to_vector builds: 384 of them per vector)."""
    return np.frombuffer(bytes(blob) if blob else b"", dtype=np.float32)


class Sona(models.Model):
    """A sona: an assistant voice the user talks to; its profile is the agent profile."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sonas")
    name = models.CharField(max_length=80)
    profile = models.TextField(blank=True, default="")
    is_default = models.BooleanField(default=False)
    # The recall policy this sona's turns use by name (memory/recall/); blank: the setting's.
    recall_policy = models.CharField(max_length=32, blank=True, default="")
    # The name's embedding (float32 bytes), computed when the sona is made or renamed: Memoria's
    # sona similarity compares it with the names of the sonas a memory belongs to.
    name_embedding = models.BinaryField(default=b"", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="uniq_sona_name_per_user")]
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.user_id})"


class UserMemoryState(models.Model):
    """One row per user: the lock that serialises a user's writes, and the page counter."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="memory_state")
    next_seq = models.BigIntegerField(default=1)
    maintenance_due = models.BooleanField(default=False)
    maintenance_failures = models.IntegerField(default=0)
    last_maintenance_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    # The Exocortex decay curve's two user settings (memory/policies/exocortex/engine/decay.py DecaySettings),
    # written by memory/policies/exocortex/services.py decay_settings_update, which validates them.
    short_term_minutes = models.FloatField(default=25.0)
    long_term_threshold = models.FloatField(default=0.01)
    # The last page seq whose turn has been recollected (maintenance makes recollections once a turn).
    recollected_seq = models.BigIntegerField(default=0)
    # The person's one import at a time, across processes (memory/services/import_claims.py): the
    # running import's token, and when its claim lapses unless renewed (a run that died frees it).
    import_claim = models.CharField(max_length=32, blank=True, default="")
    import_claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Staff are given these (the "Operators" group has them), not is_superuser alone.
        permissions = [("inspect_any_user", "Can inspect any user's memory"),
                       ("edit_any_user", "Can edit any user's memory")]

    def __str__(self) -> str:
        return f"memory state of {self.user_id}"


class HistoryImport(models.Model):
    """A chat history a person uploaded, as a job (memory/services/history_jobs.py): read and
    checked as it was uploaded, its file kept under var/imports/ until its pages are stored by the
    import worker (memory/runtime/imports.py), one job at a time, giving way to replies."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="history_imports")
    name = models.CharField(max_length=255)
    format = models.CharField(max_length=16)
    conversations = models.IntegerField(default=0)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    done = models.IntegerField(default=0)
    total = models.IntegerField(default=0)
    file = models.CharField(max_length=255, blank=True, default="")  # under var/imports/, until stored
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["status", "created_at"]), models.Index(fields=["user", "created_at"])]

    def __str__(self) -> str:
        return f"import {self.id} of {self.user_id} ({self.status})"


class Tier(models.TextChoices):
    STM = "stm", "short-term"
    MTM = "mtm", "mid-term"
    ARCHIVED = "archived", "archived (segment evicted)"


class PageStatus(models.TextChoices):
    PENDING = "pending", "awaiting reply"
    COMPLETE = "complete", "complete"


# reply_model values that name no language model. The offline engine's reply only restates
# recalled memory, so such pages are indexed by the user's words alone; an interrupted page's turn
# stopped before its reply was stored, and its reply is the offline engine's, written when it was
# resumed (services.maintenance.pages_interrupted_complete).
OFFLINE_MODEL_NAME = "offline-engine"
INTERRUPTED_MODEL_NAME = "interrupted"
# The "edited" event a notice's Undo records (services.facts.fact_change_undo): the turns whose
# words it took back, which /me/ no longer lists as things said (selectors.about_me).
NOTICE_UNDONE = "notice_undone"
MEMORY_ONLY_REPLIES = frozenset({OFFLINE_MODEL_NAME, INTERRUPTED_MODEL_NAME})  # indexed by the user's words


class Segment(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "active"
        EVICTED = "evicted", "evicted"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="segments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    summary = models.TextField(blank=True, default="")
    # "offline" (extractive) until the LLM, when one is configured, has rewritten it.
    summary_source = models.CharField(max_length=10, default="offline")
    summary_stale = models.BooleanField(default=False)
    keywords = models.JSONField(default=list)
    embedding = models.BinaryField(default=b"")
    n_visit = models.IntegerField(default=0)
    l_interaction = models.IntegerField(default=0)
    page_count = models.IntegerField(default=0)
    promoted_count = models.IntegerField(default=0)
    last_access = models.DateTimeField()
    last_promoted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    cid = models.CharField(max_length=64, blank=True, default="")
    # Operators' steering (memory/services/editing.py): a pinned segment is never evicted; a
    # repressed one is kept but never recalled; `version` counts corrections (a stale edit is refused).
    pinned = models.BooleanField(default=False)
    repressed = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=1)
    # A page of it was deleted or corrected: maintenance derives keywords, summary and vector again.
    rederive = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["user", "status"])]

    def __str__(self) -> str:
        return f"segment {self.id} ({self.page_count} pages)"

    @property
    def label(self) -> str:
        """Its first keywords and the head of its id, to name it in a list or a figure."""
        return f"{', '.join(sorted(self.keywords)[:3]) or '(no keywords)'} · {str(self.id)[:6]}"

    def to_engine(self, *, with_embedding: bool = True) -> SegmentView:
        """The engine's view; `with_embedding=False` for heat and Fscore, which never read it (the
        row may then have been loaded without its 1.5 kB vector)."""
        return SegmentView(
            id=str(self.id), summary=self.summary, keywords=frozenset(self.keywords),
            embedding=bytes_to_vector(self.embedding) if with_embedding else (), n_visit=self.n_visit,
            l_interaction=self.l_interaction, last_access=self.last_access, page_count=self.page_count,
            pinned=self.pinned,
        )


class ServerProcess(models.Model):
    """A server process that runs turns, and when it was last seen alive (memory/services/turn_holders.py):
    a page awaiting its reply belongs to its process while that process beats."""

    id = models.UUIDField(primary_key=True)
    host = models.CharField(max_length=255, blank=True, default="")
    pid = models.IntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    seen_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"process {self.pid} on {self.host}"


class DialoguePage(models.Model):
    """One turn: the user's query, the assistant's response, when it happened."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pages")
    sona = models.ForeignKey(Sona, on_delete=models.SET_NULL, null=True, blank=True, related_name="pages")
    seq = models.BigIntegerField()
    query = models.TextField()
    response = models.TextField(blank=True, default="")
    status = models.CharField(max_length=10, choices=PageStatus.choices, default=PageStatus.PENDING)
    timestamp = models.DateTimeField()
    tier = models.CharField(max_length=10, choices=Tier.choices, default=Tier.STM)
    segment = models.ForeignKey(Segment, on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="pages")
    previous = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="next_pages")
    chain_id = models.UUIDField(null=True, blank=True)
    chain_done = models.BooleanField(default=False)
    meta_chain = models.TextField(blank=True, default="")
    keywords = models.JSONField(default=list)
    embedding = models.BinaryField(default=b"")
    source_ids = models.JSONField(default=list, blank=True)
    # Who said what, in order: [{"id": source turn id or "", "speaker": name, "text": ...}].
    utterances = models.JSONField(default=list, blank=True)
    turns_indexed = models.BooleanField(default=False)
    reply_model = models.CharField(max_length=120, blank=True, default="")
    cid = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    moved_at = models.DateTimeField(null=True, blank=True)
    # A pinned page keeps its segment from eviction; a repressed one is kept but never recalled.
    pinned = models.BooleanField(default=False)
    repressed = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=1)
    # The text of the files attached to the turn ("[name] text", cut to ATTACHMENT_INDEX_CHARS):
    # indexed and recalled with the page (memory/services/files.py).
    attachment_text = models.TextField(blank=True, default="")
    # The ServerProcess whose turn stored it while awaiting its reply (none: a command's, or an older
    # page's; those wait for PENDING_TIMEOUT_S): a page whose process stopped beating is resumed.
    held_by = models.UUIDField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "seq"], name="uniq_page_seq_per_user")]
        indexes = [
            models.Index(fields=["user", "tier", "seq"]),
            # Maintenance's work queues: partial indexes hold only the pages still to do, so
            # finding them costs the same at 100 pages or 100,000.
            models.Index(fields=["user", "seq"], condition=Q(chain_done=False), name="page_chain_todo"),
            models.Index(fields=["user", "seq"], condition=Q(turns_indexed=False), name="page_turns_todo"),
            models.Index(fields=["user", "seq"], condition=Q(embedding=b""), name="page_embed_todo"),
            # Pages awaiting their reply: the live turns, and those of turns that stopped.
            models.Index(fields=["user", "created_at"], condition=Q(status="pending"), name="page_pending"),
            # Pinned pages: eviction reads which segments hold one (otherwise all of the user's pages).
            models.Index(fields=["user", "seq"], condition=Q(pinned=True), name="page_pinned"),
            models.Index(fields=["chain_id", "seq"], name="page_chain"),
            models.Index(fields=["segment", "seq"], name="page_segment_seq"),
        ]
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"page {self.seq} of {self.user_id} [{self.tier}]"

    @property
    def text(self) -> str:
        return f"User: {self.query}\nAssistant: {self.response}".strip()

    @property
    def recall_text(self) -> str:
        """The page as every recall policy shows it to the model."""
        text = f"User: {self.query} | Assistant: {self.response}"
        return f"{text} | Attached: {self.attachment_text}" if self.attachment_text else text

    @property
    def interrupted(self) -> bool:
        """Completed by maintenance: the turn's process stopped mid-turn; its reply, if any, is the
        offline engine's, written when the turn was resumed."""
        return self.reply_model == INTERRUPTED_MODEL_NAME

    def to_engine(self) -> PageView:
        return PageView(
            id=str(self.id), query=self.query, response=self.response,
            timestamp=self.timestamp, keywords=frozenset(self.keywords),
            embedding=bytes_to_vector(self.embedding), seq=self.seq,
        )


class MemoryNode(models.Model):
    """A node of the memory graph: anything remembered, addressed by a content id: the CIDv1 of its
    DAG-CBOR `block` {timestamp?, kind, data, dependencies} (memory/engine/content_ids.py)."""

    class Kind(models.TextChoices):
        PAGE = "page", "dialogue page"
        SEGMENT = "segment", "segment"
        FACT = "fact", "knowledge-base fact"
        USER_TRAIT = "user_trait", "user trait update"
        AGENT_TRAIT = "agent_trait", "agent trait"
        RECOLLECTION = "recollection", "recollection"
        FILE = "file", "attached file"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_nodes")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    object_id = models.CharField(max_length=64)
    # A base32 CIDv1 of sha2-256 is 59 characters; room for longer hashes.
    cid = models.CharField(max_length=100)
    block = models.BinaryField(default=b"")
    # Memoria's mutable annotation, beside the node and never part of its content: the EWMA of the
    # 1-10 helpfulness ratings it got after the replies it was recalled for (null: never rated).
    # It is never shown to the model.
    importance = models.FloatField(null=True, blank=True)
    importance_ratings = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "kind", "object_id"], name="uniq_node_object")]
        indexes = [models.Index(fields=["user", "cid"])]

    def __str__(self) -> str:
        return f"{self.kind}:…{self.cid[-10:]}"  # every CIDv1 here begins "bafyrei"


class MemoryAlias(models.Model):
    """An id a node had before: its sha256 id from before CIDv1 (0011_memoria_cids), or a CID it had
    before its dependencies grew. Links already shown keep resolving."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_aliases")
    node = models.ForeignKey(MemoryNode, on_delete=models.CASCADE, related_name="aliases")
    cid = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "cid"], name="uniq_node_alias")]
        indexes = [models.Index(fields=["user", "cid"])]

    def __str__(self) -> str:
        return f"{self.cid[:12]} -> {self.node_id}"


class MemoryChunk(models.Model):
    """A chunk of a segment's page tree (engine/page_list.py): a block the segment's block links to
    through its "pages" dependency, kept beside the graph's nodes (it is no memory of its own).
    A leaf says which of the segment's "contains" edges it holds (by id, first and last), so a page
    joining re-addresses the last leaf and the right spine only."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_chunks",
                             db_index=False)
    node = models.ForeignKey(MemoryNode, on_delete=models.CASCADE, related_name="chunks")
    height = models.PositiveSmallIntegerField()
    index = models.PositiveIntegerField()
    cid = models.CharField(max_length=100)
    block = models.BinaryField()
    first_edge = models.BigIntegerField(default=0)  # leaves only: the ids of their first and last edges
    last_edge = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "height", "index"], name="uniq_chunk")]
        indexes = [models.Index(fields=["user", "cid"], name="chunk_user_cid")]

    def __str__(self) -> str:
        return f"{self.node_id}/{self.height}/{self.index}"


class MemoryEdge(models.Model):
    """A weighted dependency: `source` was derived from (or follows) `target`."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_edges",
                             db_index=False)
    source = models.ForeignKey(MemoryNode, on_delete=models.CASCADE, related_name="dependencies")
    target = models.ForeignKey(MemoryNode, on_delete=models.CASCADE, related_name="dependents")
    relation = models.CharField(max_length=24)
    weight = models.FloatField(default=1.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "target", "relation"], name="uniq_edge")]
        # A user's edges out of (into) some nodes: with an index of the user alone, SQLite walked all
        # of the user's edges (13.9 ms for 50 nodes at 100,000 pages; 0.12 through these). They lead
        # with the user, so the user's own index (db_index=False above) is not kept as well.
        # A node's edges of one relation, by id: a segment's edges other than `contains` are read as
        # two ranges around it (graph._closure_read), so a segment of 50,000 pages reads its few
        # dependencies, not its 50,000 entries; a page tree reads its edges after a leaf's last.
        indexes = [models.Index(fields=["user", "source"], name="edge_user_source"),
                   models.Index(fields=["user", "target"], name="edge_user_target"),
                   models.Index(fields=["source", "relation", "id"], name="edge_source_relation")]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.relation}-> {self.target_id}"


class SonaMembership(models.Model):
    """A memory (graph node) belongs to a sona: where it happened, or where it bubbled up to."""

    class Via(models.TextChoices):
        ORIGIN = "origin", "happened in the sona"
        BUBBLED_UP = "bubbled_up", "recalled from another sona and used"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sona_memberships")
    sona = models.ForeignKey(Sona, on_delete=models.CASCADE, related_name="memberships")
    node = models.ForeignKey(MemoryNode, on_delete=models.CASCADE, related_name="sona_memberships")
    via = models.CharField(max_length=12, choices=Via.choices, default=Via.ORIGIN)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sona", "node"], name="uniq_sona_member")]
        indexes = [models.Index(fields=["node", "sona"])]

    def __str__(self) -> str:
        return f"{self.node_id} in {self.sona_id} ({self.via})"


class LifecycleEvent(models.Model):
    class Kind(models.TextChoices):
        PAGE_ADDED = "page_added", "page added"
        REPLY_FALLBACK = "reply_fallback", "reply fell back to the offline engine"
        RECALL_DEGRADED = "recall_degraded", "recall fell back to STM only"
        CHAIN_LINKED = "chain_linked", "meta chain updated"
        MOVED_TO_MTM = "moved_to_mtm", "page moved to MTM"
        SEGMENT_MERGED = "segment_merged", "page merged into segment"
        SEGMENT_CREATED = "segment_created", "new segment"
        SEGMENT_EVICTED = "segment_evicted", "segment evicted"
        SEGMENT_PROMOTED = "segment_promoted", "segment promoted to LPM"
        FACT_ADDED = "fact_added", "knowledge-base fact added"
        FACT_DROPPED = "fact_dropped", "knowledge-base fact dropped (FIFO)"
        TRAIT_UPDATED = "trait_updated", "user trait updated"
        AGENT_TRAIT_ADDED = "agent_trait_added", "agent trait added"
        AGENT_TRAIT_DROPPED = "agent_trait_dropped", "agent trait dropped (FIFO)"
        EDITED = "edited", "memory edited"
        MAINTENANCE_FAILED = "maintenance_failed", "maintenance failed; will retry"
        MODEL_OUTPUT_REJECTED = "model_output_rejected", "model output rejected"
        SEGMENTS_VISITED = "segments_visited", "segments visited by a recall"
        PINNED = "pinned", "pinned by an operator"
        UNPINNED = "unpinned", "unpinned"
        REPRESSED = "repressed", "repressed (kept, never recalled)"
        UNREPRESSED = "unrepressed", "no longer repressed"
        CORRECTED = "corrected", "corrected (a new version)"
        DELETED = "deleted", "deleted"
        USER_FORGOTTEN = "user_forgotten", "everything of the user forgotten"
        OPERATOR_ACCESS = "operator_access", "an operator's API call for this user"
        IMPORTANCE_RATED = "importance_rated", "recalled memories rated for a reply (Memoria)"
        SONA_JOINED = "sona_joined", "a memory bubbled up into a sona (Memoria)"
        RECOLLECTED = "recollected", "recollection stored (Exocortex)"
        FILE_ATTACHED = "file_attached", "a file attached to a turn"
        MEMORY_IMPORTED = "memory_imported", "memory imported from an archive"
        HISTORY_IMPORTED = "history_imported", "chat history imported (ChatGPT, Claude, a transcript)"
        FACT_SUPERSEDED = "fact_superseded", "KB fact superseded by a newer one"
        SUPERSESSION_OPENED = "supersession_opened", "possible change of a fact waiting for review"
        SUPERSESSION_REJECTED = "supersession_rejected", "an operator kept both facts current"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_events")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    subject_id = models.CharField(max_length=64, blank=True, default="")
    payload = models.JSONField(default=dict, blank=True)
    # The memory's own time (the conversation's clock: an imported session's timestamp, else now)
    # beside the wall-clock time the row was written.
    occurred_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"]), models.Index(fields=["user", "kind"])]
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.subject_id}"


class Recollection(models.Model):
    """An Exocortex recollection: a cluster of recalled pages summarised in the context of a prompt,
    stored back as a memory (its edges to `members` are in the graph, kind "recollection")."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="recollections")
    text = models.TextField()
    prompt = models.TextField(blank=True, default="")
    embedding = models.BinaryField(default=b"")
    members = models.JSONField(default=list)  # page ids, heaviest first
    edge_weights = models.JSONField(default=list)  # each member's share of the cluster's weight
    prompt_similarity = models.FloatField(default=0.0)
    # The memory's time (the conversation's clock when maintenance made it), as a page's timestamp.
    created_at = models.DateTimeField(default=timezone.now)
    cid = models.CharField(max_length=64, blank=True, default="")
    repressed = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"])]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"recollection {self.id} of {self.user_id}"


class AttachedFile(models.Model):
    """A file a user uploaded, attached to one turn (`page`) or waiting for one (no page yet).

    The bytes are stored once per content, under their CID (`content_cid`: CIDv1, raw codec,
    sha2-256) in the "memory_files" storage; `cid` is the file's graph node {name, media_type,
    size, content: link}, on which the turn's page node depends ("attachment")."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="attached_files")
    page = models.ForeignKey(DialoguePage, on_delete=models.CASCADE, null=True, blank=True,
                             related_name="attachments")
    content_cid = models.CharField(max_length=100)
    cid = models.CharField(max_length=100, blank=True, default="")
    name = models.CharField(max_length=255)
    media_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField()
    text = models.TextField(blank=True, default="")  # extracted where the format allows
    extraction = models.CharField(max_length=120, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user", "content_cid"]), models.Index(fields=["page"])]
        ordering = ["created_at", "name"]

    def __str__(self) -> str:
        return f"file {self.name} of {self.user_id}"


class RetrievalTrace(models.Model):
    """What one retrieval considered and why, and what entered the prompt."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="traces")
    page = models.ForeignKey(DialoguePage, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="traces")
    query = models.TextField()
    policy = models.CharField(max_length=32, default="memoryos")
    payload = models.JSONField(default=dict)
    prompt_tokens = models.IntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"])]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"trace {self.id} for {self.user_id}"



class ApiToken(models.Model):
    """A personal API token: `Authorization: Bearer mos_<prefix>_<secret>`. Only its SHA-256 is
    stored; the token itself is shown once, when it is made. Revoked tokens stay for the audit."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=12, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} (mos_{self.prefix}…) of {self.user_id}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
