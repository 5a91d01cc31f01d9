"""What recall reads through the adapters, built in this one place.

`IndexCandidates` fills the relevance core's CandidateSource port (memory/engine/candidates.py)
for one user's turns in some tiers: dense and keyword searches on the vector index (ids and
scores only), the turns' fixed payload from the in-process cache (memory/recall/turn_facts.py),
vectors and flags from their points, and what turns said from their pages' rows. The rest of a
recall's adapter reads are here too: the query's embedding and the nearest KB facts and agent
traits. Nothing else in memory/recall reaches the adapters (tests/test_architecture.py), so a
policy's ranking can be run on plain data (memory.engine.candidates.Candidates).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.adapters import configured
from memory.engine.candidates import TURN_FLAGS, TurnFact
from memory.engine.ports import VectorHit
from memory.models import DialoguePage
from memory.recall import rows
from memory.recall.turn_facts import turn_facts


class IndexCandidates:
    """The CandidateSource port over the vector index, the turn facts and the pages' rows."""

    def __init__(self, user, tiers: Sequence[str], index=None) -> None:
        self.user = user
        self.user_id = str(user.pk)
        self.index = index if index is not None else configured.vector_index()
        self._scope: dict[str, Any] = {"match_any": {"tier": list(tiers)}, "kind": "turn", "fields": ()}

    def dense(self, vector: Sequence[float], limit: int) -> dict[str, float]:
        return {hit.id: hit.score for hit in
                self.index.search(user_id=self.user_id, vector=vector, limit=limit, **self._scope)}

    def keyword(self, text: str, limit: int) -> dict[str, float]:
        return {hit.id: hit.score for hit in
                self.index.search_text(user_id=self.user_id, text=text, limit=limit, **self._scope)}

    def vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        return self.index.get_vectors(user_id=self.user_id, ids=ids)

    def facts(self, ids: Sequence[str]) -> dict[str, TurnFact]:
        return turn_facts().get(self.index, user_id=self.user_id, ids=ids)

    def texts(self, facts: Sequence[TurnFact]) -> list[str]:
        """What each turn said, read from its page's stored utterances."""
        pages = self._utterances(sorted({fact.seq for fact in facts}))
        return [said[fact.pos].get("text", "") for fact in facts
                if (said := pages.get(fact.seq)) is not None and fact.pos < len(said)]

    def flags(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.index.get_payloads(user_id=self.user_id, ids=ids, fields=TURN_FLAGS)

    def page_turns(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        return {seq: [turn.get("text", "") for turn in said] for seq, said in self._utterances(seqs).items()}

    def page_seqs(self, page_ids: Sequence[str]) -> dict[str, int]:
        pages = rows.by_pk(DialoguePage, list(page_ids), ("user", "seq"))
        return {key: page.seq for key, page in pages.items() if page.user_id == self.user.pk}

    def _utterances(self, seqs: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        """Page seq -> its stored utterances, for the user's pages that are not repressed."""
        return {page.seq: page.utterances or [] for page in rows.rows(
            DialoguePage, ("seq", "utterances"), equal={"user": self.user.pk, "repressed": False},
            among={"seq": list(seqs)})}


def turn_candidates(user, tiers: Sequence[str]) -> IndexCandidates:
    """The relevance core's candidates for one recall: the user's turns in `tiers`."""
    return IndexCandidates(user, tiers)


def embed_query(text: str) -> list[float]:
    """The query's vector by the configured embedder."""
    return configured.embedder().embed([text])[0]


def nearest(user, vector: Sequence[float], *, kind: str, limit: int) -> list[VectorHit]:
    """The user's points of `kind` nearest `vector`: ids and scores only (the rows come from the
    database: Edge's payload read cost more than the search, about 50 µs a point)."""
    return configured.vector_index().search(user_id=str(user.pk), vector=vector, limit=limit, kind=kind, fields=())
