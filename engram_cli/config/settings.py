"""Every setting engram reads: its type, its default and one line on what it does.

This tree is the only place a default is written down. config.toml and ENGRAM_* variables
override it (``engram_cli.config.load``), the engine is handed values read from it by the
``Engram`` facade, ``engram config show`` prints it, and ``scripts/config_table.py`` writes
the README's configuration table from it (a test fails when the two differ).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TypeVar

T = TypeVar("T")


class _Section:
    """Equality, hash and repr by fields, as @dataclass(frozen=True) makes them, written once for the
    whole tree: made for each of its fifteen classes, they cost 3.5 ms of every start of engram."""

    __slots__ = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))  # type: ignore[arg-type]
        return f"{self.__class__.__qualname__}({shown})"


def setting(default: T, doc: str) -> T:
    """A setting's default, with the one line that explains it (config show, the README table)."""
    result: T = field(default=default, metadata={"doc": doc})
    return result


@dataclass(frozen=True, eq=False, repr=False)
class Merge(_Section):
    enabled: bool = setting(True, "merge near-duplicates on write")
    threshold: float | None = setting(None, "cosine needed to merge; none = the active model's calibrated value")


@dataclass(frozen=True, eq=False, repr=False)
class Supersede(_Section):
    enabled: bool = setting(True, "let corrections with a change marker supersede what they correct")
    # A correction rewords more than a duplicate does, hence a lower bar than merging.
    min_similarity: float | None = setting(
        None, "cosine a correction needs to supersede a memory; none = the merge threshold − 0.125"
    )


@dataclass(frozen=True, eq=False, repr=False)
class Recall(_Section):
    k: int = setting(5, "memories returned")
    candidates: int = setting(50, "candidates taken from each retriever before fusion")
    rrf_k: int = setting(5, 'reciprocal-rank-fusion constant (smaller = steeper); tuned, see "Recall quality"')
    vector_weight: float = setting(1.5, "weight of the vector retriever; 0 leaves it out")
    keyword_weight: float = setting(1.0, "weight of the keyword retriever (full-text search); 0 leaves it out")
    cross_weight: float = setting(
        1.5, "weight of the cross-language list (the query moved into the other script's region); 0 leaves it out"
    )
    time_weight: float = setting(
        1.0, 'weight of the lists restricted to the time the query names ("last week", 上个月); 0 ignores time words'
    )
    min_relevance: float = setting(
        0.01,
        "hits whose relevance (the calibrated chance that they are relevant, 0–1) is lower are dropped; "
        '0 keeps every hit; chosen by scripts/calibrate_relevance.py, see "Saying nothing relevant"',
    )
    bump: bool = setting(True, "count a recall as an access")
    diversify: bool = setting(
        True, "move near-copies of a better hit (cosine ≥ the merge threshold) behind the distinct hits"
    )


@dataclass(frozen=True, eq=False, repr=False)
class HalfLives(_Section):
    """Days for a memory's decay score to halve without being accessed, one field per memory type."""

    working: float = setting(2.0, "days for an unused working memory's decay score to halve")
    episodic: float = setting(30.0, "days for an unused episode's decay score to halve")
    procedural: float = setting(90.0, "days for an unused procedure's decay score to halve")
    semantic: float = setting(180.0, "days for an unused fact's (semantic memory's) decay score to halve")

    def by_type(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True, eq=False, repr=False)
class Decay(_Section):
    half_life_days: HalfLives = field(default_factory=HalfLives)


@dataclass(frozen=True, eq=False, repr=False)
class Compact(_Section):
    """compact: episodes about one thing become one semantic memory (see `engram compact --help`)."""

    cluster_threshold: float | None = setting(
        None,
        "cosine to a cluster's first episode needed to join it; none = the model's calibrated values per script pair",
    )
    min_cluster: int = setting(2, "episodes needed to make a fact")
    max_cluster: int = setting(50, "most episodes in one fact")
    window_days: float = setting(0.0, "only episodes this close in time cluster; 0 = no window")
    min_age_days: float = setting(1.0, "episodes younger than this are not consolidated (the work may be ongoing)")
    max_active: int = setting(
        100000,
        "most active memories per namespace; beyond it the lowest importance × decay is archived; 0 = no cap",
    )


@dataclass(frozen=True, eq=False, repr=False)
class Summarizer(_Section):
    command: str = setting(
        "",
        "local program that writes consolidated text (the cluster as JSON on stdin, the text on stdout); "
        "empty = the built-in extractive summary",
    )
    timeout_s: float = setting(120.0, "how long the summarizer.command program may take per cluster")


@dataclass(frozen=True, eq=False, repr=False)
class Extract(_Section):
    command: str = setting(
        "",
        "local program that extracts memories from an ingested session (the session as JSON on stdin, "
        "memory records as JSONL on stdout); empty = the built-in rules",
    )
    timeout_s: float = setting(120.0, "how long the extract.command program may take per session")


@dataclass(frozen=True, eq=False, repr=False)
class Evidence(_Section):
    """The conversation as evidence: the substantive turns of ingested sessions, kept (redacted) beside memories."""

    keep: bool = setting(True, "keep the substantive turns of ingested sessions as evidence (redacted)")
    fill: bool = setting(True, "recall fills the places that fewer than k relevant memories left with evidence hits")
    fill_below: float = setting(
        0.06,
        "a memory hit less likely than this to be relevant gives its place to a better evidence hit "
        "(0.06: the per-prompt floor, the confidence at which off-domain questions get nothing)",
    )
    max_per_namespace: int = setting(
        20000,
        "most evidence turns kept per namespace; beyond it the oldest go (those no memory came from first); 0 = no cap",
    )
    max_age_days: float = setting(
        365.0, "`decay` and `compact` delete evidence learned longer ago than this; 0 = kept until the cap"
    )


@dataclass(frozen=True, eq=False, repr=False)
class Embed(_Section):
    # About 1.6 KB per entry at 384 dimensions: the default bounds the file near 80 MB.
    cache_entries: int = setting(
        50000,
        "vectors kept in the embedding cache (engram's cache directory), least recently used dropped first; "
        "0 turns it off",
    )


@dataclass(frozen=True, eq=False, repr=False)
class Store(_Section):
    busy_timeout_ms: int = setting(10000, "how long a writer waits for another")
    vector_index: bool = setting(
        True,
        "KNN searches the vector index (a copy of the vectors under the cache directory, rebuilt from the database "
        "when needed); false = sqlite-vec's own, slower KNN",
    )
    vector_approx_rows: int = setting(
        200000,
        "above this many rows to search, KNN picks candidates by the sign bits of the vectors and scores only "
        "those exactly (recall@10 ≥ 0.98); 0 = always exact",
    )
    vector_rerank: int = setting(
        1000, "candidates the approximate KNN scores exactly (at least 20 per neighbour asked for)"
    )


@dataclass(frozen=True, eq=False, repr=False)
class Audit(_Section):
    """What `engram audit` reports."""

    stale_days: float = setting(
        90.0, "`audit` calls an active memory stale when its last access (or creation) is older than this many days …"
    )
    stale_decay: float = setting(0.25, "… and its decay score is below this")
    low_confidence: float = setting(0.3, "`audit` lists active memories with a lower confidence")
    # Listed for review, not counted as a problem.
    never_accessed_days: float = setting(
        30.0, "`audit` lists active memories never recalled this many days after they were added"
    )
    examples: int = setting(5, "examples shown per check")


@dataclass(frozen=True, eq=False, repr=False)
class Redact(_Section):
    # Secrets and personal numbers are always redacted. Notes name colleagues and support lines on
    # purpose, and a shape-based phone match is less certain than a checksum: so these are opt-in.
    contact_details: bool = setting(
        False, "treat e-mail addresses and phone numbers as personal data to redact, like card numbers"
    )


@dataclass(frozen=True, eq=False, repr=False)
class Hooks(_Section):
    # The per-prompt hook adds memories to a prompt nobody asked engram about: a wrong one costs
    # more there than a missing one, so its floor is stricter than recall's.
    prompt_min_relevance: float = setting(
        0.06,
        "the per-prompt hook (`hooks prompt`) injects only hits at least this likely to be relevant; "
        'chosen by scripts/calibrate_relevance.py, see "Saying nothing relevant"',
    )
    prompt_k: int = setting(3, "most memories the per-prompt hook injects")
    prompt_budget: int = setting(400, "tokens the per-prompt hook's card may take")
    prompt_time_limit_s: float = setting(
        5.0, "the per-prompt hook gives up (and injects nothing) after this long, so a prompt never waits on it"
    )
    warm_idle_s: float = setting(
        900.0,
        "the per-prompt hook's warm service (`engram hooks serve`, started by the hook) stops after this many "
        "seconds without a prompt; 0 turns the warm path off (every prompt starts engram afresh)",
    )


@dataclass(frozen=True, eq=False, repr=False)
class Settings(_Section):
    """The effective settings: ``Settings()`` is every default."""

    namespace: str | None = setting(
        None,
        "namespace for commands that do not pass `-n` or `-g`; none = automatic: the git repository's "
        "directory name inside one, else `global`",
    )
    agent: str = setting("user", "agent recorded on new memories")
    model: str = setting("multilingual-e5-small-q4-v1", "embedding model of a new database")
    merge: Merge = field(default_factory=Merge)
    supersede: Supersede = field(default_factory=Supersede)
    recall: Recall = field(default_factory=Recall)
    decay: Decay = field(default_factory=Decay)
    compact: Compact = field(default_factory=Compact)
    summarizer: Summarizer = field(default_factory=Summarizer)
    extract: Extract = field(default_factory=Extract)
    evidence: Evidence = field(default_factory=Evidence)
    embed: Embed = field(default_factory=Embed)
    store: Store = field(default_factory=Store)
    audit: Audit = field(default_factory=Audit)
    redact: Redact = field(default_factory=Redact)
    hooks: Hooks = field(default_factory=Hooks)
