"""What a command produced, when the engine's own answer does not say it alone.

`render.result()` picks how to show a value by its type. A bare list of memories could be a page of
`list` or what `touch` changed, and an empty list could be either, so the facade names them. Each
JSON form is the same as the engine object's (a list of memories, of hits, of events ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram_cli.serialize import to_json

if TYPE_CHECKING:
    from engram_cli.errors import EngramError
    from engram_cli.memory.cards import Carded
    from engram_cli.memory.evaluation import EvalReport
    from engram_cli.memory.evidence import EvidenceHit
    from engram_cli.memory.manage import ForgetResult
    from engram_cli.memory.model import Event, Memory, Turn
    from engram_cli.memory.namespaces import NamespaceCount
    from engram_cli.memory.recall import Hit
    from engram_cli.project import Scope


@dataclass
class Recalled:
    """`recall`: the hits, best first, then the evidence hits (turns of conversations), best first."""

    hits: list[Hit]
    # Set when access counts could not be updated because the database is read-only.
    read_only: Path | None = None
    # How many candidates the relevance floor dropped, and the floor: with no hits left, "nothing relevant".
    held_back: int = 0
    floor: float = 0.0
    evidence: list[EvidenceHit] = field(default_factory=list)

    def json_form(self, **options: Any) -> Any:
        # One list: the memories, then the evidence hits, each of which says `"evidence": true`.
        return to_json([*self.hits, *self.evidence], **options)


@dataclass
class Page:
    """`list`: one page of memories; ``total`` (when known) says how many match in all."""

    memories: list[Memory]
    total: int | None = None
    offset: int = 0

    @property
    def more(self) -> bool:
        return self.total is not None and self.total > self.offset + len(self.memories)

    def json_form(self, **options: Any) -> Any:
        return to_json(self.memories, **options)


@dataclass
class NamespaceListing:
    """`namespaces`: every namespace with its memories by status, and the scope the command ran in."""

    namespaces: list[NamespaceCount]
    scope: Scope

    def json_form(self, **options: Any) -> Any:
        return to_json(self.namespaces, **options)


@dataclass
class Inspection:
    """`inspect`: one memory, its history and the parts of its score that do not depend on a query."""

    memory: Memory
    events: list[Event]
    score_factors: dict[str, float | str]
    # The turns of ingested conversations the memory was made from (evidence), in the order they were said.
    evidence: list[Turn] = field(default_factory=list)

    def json_form(self, **options: Any) -> dict[str, Any]:
        data: dict[str, Any] = to_json(self.memory, **options)
        data["history"] = to_json(self.events, **options)
        data["score_factors"] = self.score_factors
        data["evidence"] = to_json(self.evidence, **options)
        return data


@dataclass
class Touched:
    """`touch`: the memories as they are now."""

    memories: list[Memory]

    def json_form(self, **options: Any) -> Any:
        return to_json(self.memories, **options)


@dataclass
class Forgotten:
    """`forget`: what happened to each memory named."""

    results: list[ForgetResult]

    def json_form(self, **options: Any) -> Any:
        return to_json(self.results, **options)


@dataclass
class History:
    """`history`: events, one memory's in order or the latest of the whole database."""

    events: list[Event]

    def json_form(self, **options: Any) -> Any:
        return to_json(self.events, **options)


@dataclass
class SourceListing:
    """`ingest --list`: every source, its files in the default places and the cursors' state."""

    sources: list[dict[str, Any]]

    def json_form(self, **options: Any) -> Any:
        return to_json(self.sources, **options)


@dataclass
class EvalRun:
    """`eval`: one report per retrieval mode."""

    reports: list[EvalReport]

    def json_form(self, **options: Any) -> Any:
        # One mode prints its report, several a list of them.
        data = [to_json(r, **options) for r in self.reports]
        return data[0] if len(data) == 1 else data


@dataclass
class SessionContext:
    """`hooks context` and `hooks prompt`: the memories a session starts with, or a prompt gets, as the
    assistant wants them."""

    hits: Sequence[Carded]
    budget: int
    as_hook_json: bool  # the assistant wants {"hookSpecificOutput": …} rather than plain text
    # Why there are no memories when reading them failed: a session must start all the same.
    problem: EngramError | None = None
    event: str = "SessionStart"  # the assistant's event, named in its JSON output


@dataclass
class ConfigListing:
    """`config show`: every setting, its value, where the value came from and what the setting does."""

    values: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)

    def origin(self, key: str) -> str:
        return self.origins.get(key, "default")

    def json_form(self, **options: Any) -> dict[str, Any]:
        return {key: {"value": value, "from": self.origin(key)} for key, value in self.values.items()}


@dataclass
class ConfigChange:
    """`config set` and `config unset`: the key, and the value it now has (None: its default)."""

    key: str
    value: Any = None
    changed: bool = True  # False: unset found nothing to remove
