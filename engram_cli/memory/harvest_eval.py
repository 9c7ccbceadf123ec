"""eval --harvest: what ingest kept from labelled sessions, against what a careful colleague would keep.

A harvest benchmark is a directory with ``home/`` (a HOME holding each tool's logs where the tool writes
them) and ``labels/*.jsonl``: one object per session, naming the session (``"<source>:<path under home>"``),
its language and project, what should be kept from it (``expect``), the end state of its task
(``outcome``), questions a colleague could answer afterwards, and ``noise`` (words of hypotheticals and
quoted text that must not become a memory). The layout and the label format are in
``bench/harvest/README.md``.

A term list matches a text when every ``must`` term occurs in it and, when ``any`` is given, at least one
``any`` term does too. Matching ignores case and Unicode width forms (NFKC); a term with CJK characters
matches anywhere (Chinese has no spaces between words), any other term only where a word starts (after
anything but a Latin letter, a digit or "_"), so that "npm" is not found in "pnpm" nor "5433" in "15433",
while "deploy" is found in "deploys" and "pnpm" in "我用pnpm".

This module scores; :mod:`engram_cli.api.harvest` stages the directory, ingests it into a fresh database
and hands the stored memories here.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from engram_cli import jsonl
from engram_cli.errors import InvalidInput
from engram_cli.memory.model import normalize_namespace
from engram_cli.project import GLOBAL_NAMESPACE, project_name

LANGS = ("en", "zh", "mixed")
KINDS = ("preference", "decision", "fact", "fix")
SCOPES = ("person", "project")
CONFIRMATIONS = ("words", "rerun", "commit")
# Answerability counts a question answered when a hit among the first this many holds its terms.
TOP_K = 5
EPISODIC = "episodic"
# How much of a memory's text the detailed report shows.
SHOWN_CHARS = 160

_LABEL_HINT = "see bench/harvest/README.md for the label format: one JSON object per session, on one line"
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def fold(text: str) -> str:
    """Text as terms are matched against it: NFKC (full-width letters become plain ones), case folded."""
    return unicodedata.normalize("NFKC", text).casefold()


@lru_cache(maxsize=4096)
def _pattern(term: str) -> re.Pattern[str]:
    folded = fold(term)
    if _CJK.search(folded) or not (folded[0].isalnum() or folded[0] == "_"):
        return re.compile(re.escape(folded))
    # A word starts after anything but a Latin letter, a digit or "_": after a space, a sign or a CJK character.
    return re.compile(r"(?<![a-z0-9_\u00c0-\u024f])" + re.escape(folded))


def has_term(text: str, term: str) -> bool:
    """Whether ``term`` occurs in ``text`` (already :func:`fold`-ed) as this module matches terms."""
    return _pattern(term).search(text) is not None


@dataclass(frozen=True)
class Terms:
    """Words a text must hold: all of ``must`` and, when ``any`` is given, one of ``any``."""

    must: tuple[str, ...]
    any: tuple[str, ...] = ()

    def found_in(self, folded: str) -> bool:
        return all(has_term(folded, t) for t in self.must) and (
            not self.any or any(has_term(folded, t) for t in self.any)
        )

    def describe(self) -> str:
        words = " + ".join(self.must)
        return f"{words} (and one of {', '.join(self.any)})" if self.any else words


@dataclass(frozen=True)
class Expect:
    kind: str  # preference | decision | fact | fix
    scope: str  # person | project
    terms: Terms
    error: tuple[str, ...] = ()  # a fix: words of the error it fixed
    confirmed_by: str | None = None  # a fix: words | rerun | commit

    def describe(self) -> str:
        return f"{self.kind} ({self.scope}): {self.terms.describe()}"


@dataclass(frozen=True)
class Outcome:
    must: tuple[str, ...]
    not_: tuple[str, ...] = ()

    def holds(self, folded: str) -> bool:
        return all(has_term(folded, t) for t in self.must) and not self.contradicted(folded)

    def contradicted(self, folded: str) -> bool:
        return any(has_term(folded, t) for t in self.not_)


@dataclass(frozen=True)
class Question:
    text: str
    terms: Terms


@dataclass(frozen=True)
class Label:
    """One session's labels: one line of a ``labels/<source>.jsonl`` file."""

    file: str  # the label file's name, for messages
    line: int
    session: str  # "<source>:<path under home>", optionally "@<stamp>" or "#<key>" for one of a file's sessions
    source: str
    lang: str
    project: str
    expect: tuple[Expect, ...] = ()
    outcome: Outcome | None = None
    questions: tuple[Question, ...] = ()
    noise: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        """The file (or directory) under home/ the session is in."""
        return split_session(self.session)[1]

    @property
    def namespace(self) -> str:
        """Where the project's memories should be: the namespace ingest gives the project's directory."""
        return project_name(self.project)


def split_session(session: str) -> tuple[str, str, str]:
    """``"aider:src/p/.aider.chat.history.md@2025-03-04 10:12:40"`` -> (source, path, "@2025-…"); "" without a part."""
    source, _, rest = session.partition(":")
    head, slash, last = rest.rpartition("/")
    cut = min((i for i in (last.find("@"), last.find("#")) if i >= 0), default=-1)
    if cut < 0:
        return source, rest, ""
    return source, head + slash + last[:cut], last[cut:]


# -- reading labels -------------------------------------------------------------------------------


def read_labels(directory: Path, home: Path | None = None) -> list[Label]:
    """Every ``labels/*.jsonl`` of a benchmark directory, checked; ``home`` (default ``directory/home``)
    must hold each session's file. A bad line raises InvalidInput naming its file and line."""
    folder = directory / "labels"
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        raise InvalidInput(
            f"{directory} has no labels/*.jsonl",
            hint="a harvest benchmark is a directory with home/ (the logs) and labels/<source>.jsonl",
        )
    home = home or directory / "home"
    labels: list[Label] = []
    seen: dict[str, str] = {}
    for path in files:
        name = f"labels/{path.name}"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{name} is not UTF-8 text ({exc.reason})", hint=_LABEL_HINT) from exc
        for label in parse_labels(lines, name=name, home=home):
            if label.session in seen:
                raise InvalidInput(
                    f"{name} line {label.line}: session {label.session!r} is labelled twice "
                    f"(also in {seen[label.session]})",
                    hint="label each session once",
                )
            seen[label.session] = f"{name} line {label.line}"
            labels.append(label)
    if not labels:
        raise InvalidInput(f"{folder} holds no labelled session", hint=_LABEL_HINT)
    return labels


def parse_labels(lines: Iterable[str], *, name: str, home: Path | None = None) -> list[Label]:
    """The labels on ``lines`` (the file ``name``); with ``home``, each session's file must exist under it."""
    out: list[Label] = []
    for number, raw in jsonl.read(lines):
        where = f"{name} line {number}"
        if isinstance(raw, jsonl.Problem):
            detail = f" ({raw.detail})" if raw.detail else ""
            raise InvalidInput(f"{where}: {raw.reason}{detail}", hint=_LABEL_HINT)
        out.append(_label(raw, name, number, where, home))
    return out


def _label(raw: dict[str, Any], name: str, number: int, where: str, home: Path | None) -> Label:
    def fail(message: str, hint: str = _LABEL_HINT) -> InvalidInput:
        return InvalidInput(f"{where}: {message}", hint=hint)

    unknown = set(raw) - {"session", "source", "lang", "project", "expect", "outcome", "questions", "noise"}
    if unknown:
        raise fail(f"unknown key(s) {', '.join(sorted(unknown))}")
    source = _text(raw, "source", fail)
    session = _text(raw, "session", fail)
    prefix, path, _part = split_session(session)
    if prefix != source or not path:
        raise fail(
            f"'session' must be \"{source}:<path under home/>\", not {session!r}",
            hint='e.g. "claude-code:.claude/projects/-home-dev-src-webshop/<id>.jsonl"',
        )
    if home is not None and (Path(path).is_absolute() or ".." in Path(path).parts or not (home / path).exists()):
        raise fail(f"session {session!r} names {path}, which is not under home/", hint="check the path")
    lang = raw.get("lang")
    if lang not in LANGS:
        raise fail(f"'lang' must be one of {', '.join(LANGS)}, not {lang!r}")
    project = _text(raw, "project", fail)
    try:
        project = normalize_namespace(project)
    except InvalidInput as exc:
        raise fail(f"'project': {exc.message}") from exc
    expect = tuple(_expect(item, i, fail) for i, item in enumerate(_list(raw, "expect", fail), start=1))
    outcome = None
    if raw.get("outcome") is not None:
        value = raw["outcome"]
        if not isinstance(value, dict) or set(value) - {"must", "not"}:
            raise fail("'outcome' must be an object with 'must' (and optionally 'not')")
        outcome = Outcome(_words(value, "must", fail, "outcome"), _words(value, "not", fail, "outcome", need=False))
    questions = []
    for i, item in enumerate(_list(raw, "questions", fail), start=1):
        if not isinstance(item, dict) or set(item) - {"q", "must", "any"}:
            raise fail(f"questions[{i}] must be an object with 'q' and 'must'")
        text = _text(item, "q", fail, f"questions[{i}]")
        questions.append(Question(text, _terms(item, fail, f"questions[{i}]")))
    noise = tuple(_strings(raw.get("noise", []), "noise", fail))
    return Label(
        name, number, session, source, lang, project, expect, outcome, tuple(questions), noise
    )  # fmt: skip


def _text(raw: dict[str, Any], key: str, fail: Callable[..., InvalidInput], at: str = "") -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise fail(f"'{at + '.' if at else ''}{key}' must be non-empty text")
    return value.strip()


def _list(raw: dict[str, Any], key: str, fail: Callable[..., InvalidInput]) -> list[Any]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise fail(f"'{key}' must be a list")
    return value


def _strings(value: Any, what: str, fail: Callable[..., InvalidInput]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise fail(f"'{what}' must be a list of non-empty strings")
    return [v.strip() for v in value]


def _words(
    raw: dict[str, Any], key: str, fail: Callable[..., InvalidInput], at: str, *, need: bool = True
) -> tuple[str, ...]:
    if key not in raw and not need:
        return ()
    words = _strings(raw.get(key), f"{at}.{key}", fail)
    if need and not words:
        raise fail(f"'{at}.{key}' must name at least one term")
    return tuple(words)


def _terms(raw: dict[str, Any], fail: Callable[..., InvalidInput], at: str) -> Terms:
    return Terms(_words(raw, "must", fail, at), _words(raw, "any", fail, at, need=False))


def _expect(item: Any, index: int, fail: Callable[..., InvalidInput]) -> Expect:
    at = f"expect[{index}]"
    if not isinstance(item, dict):
        raise fail(f"'{at}' must be an object")
    unknown = set(item) - {"kind", "scope", "must", "any", "error", "confirmed_by"}
    if unknown:
        raise fail(f"'{at}' has unknown key(s) {', '.join(sorted(unknown))}")
    if item.get("kind") not in KINDS:
        raise fail(f"'{at}.kind' must be one of {', '.join(KINDS)}, not {item.get('kind')!r}")
    if item.get("scope") not in SCOPES:
        raise fail(f"'{at}.scope' must be person or project, not {item.get('scope')!r}")
    confirmed = item.get("confirmed_by")
    if confirmed is not None and confirmed not in CONFIRMATIONS:
        raise fail(f"'{at}.confirmed_by' must be one of {', '.join(CONFIRMATIONS)}, not {confirmed!r}")
    if item["kind"] != "fix" and ("error" in item or confirmed is not None):
        raise fail(f"'{at}': only a fix has 'error' and 'confirmed_by'")
    return Expect(
        item["kind"], item["scope"], _terms(item, fail, at), _words(item, "error", fail, at, need=False), confirmed
    )


# -- what was stored ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    """A memory as the harvest scores it: its text (with the words folded into it) and its sessions."""

    id: str
    type: str
    namespace: str
    text: str
    sessions: frozenset[str]  # the names a label may give each session it came from (see session_names)

    @property
    def folded(self) -> str:
        return fold(self.text)


def session_names(source: str, ref: str | None, key: str | None, home: Path) -> set[str]:
    """The names a label may give the session a memory came from (``ref``: its file, ``key``: its id).

    ``"<source>:<file under home>"`` names every session of the file; ``"<source>:<key>"`` with the
    key of a session whose key is a path (Aider: ``<file>@<start time>``) names that one; so does
    ``"<source>:<file>#<key>"`` for a file that holds several sessions under other keys (a database).
    """
    names: set[str] = set()
    rel = _under(ref, home)
    keyed = _under(key, home)
    if keyed is not None:
        names.add(f"{source}:{keyed}")
    elif key:
        names.add(f"{source}:{key}")
    if rel is not None:
        names.add(f"{source}:{rel}")
        # Each directory above the file too: a Cline task is a directory of files.
        parts = rel.split("/")
        names.update(f"{source}:{'/'.join(parts[:i])}" for i in range(1, len(parts)))
        if key and keyed is None:
            names.add(f"{source}:{rel}#{key}")
    return names


def _under(path: str | None, home: Path) -> str | None:
    if not path:
        return None
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(home))
    except ValueError:  # another drive
        return None
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")


# -- scores ---------------------------------------------------------------------------------------


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class Tally:
    """The counts behind every metric, summed over sessions (so groups add up)."""

    sessions: int = 0
    memories: int = 0  # memories stored from these sessions (one merged from two sessions counts in each)
    precise: int = 0
    expected: int = 0
    recalled: int = 0
    questions: int = 0
    answered: int = 0
    fixes: int = 0
    fixed: int = 0
    outcomes: int = 0  # sessions labelled with an outcome
    outcomes_right: int = 0
    scoped: int = 0  # expected items matched
    scoped_right: int = 0

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def memories_per_session(self) -> float | None:
        return _share(self.memories, self.sessions)

    @property
    def precision(self) -> float | None:
        return _share(self.precise, self.memories)

    @property
    def recall(self) -> float | None:
        return _share(self.recalled, self.expected)

    @property
    def answerability(self) -> float | None:
        return _share(self.answered, self.questions)

    @property
    def fix_recall(self) -> float | None:
        return _share(self.fixed, self.fixes)

    @property
    def outcome_correctness(self) -> float | None:
        return _share(self.outcomes_right, self.outcomes)

    @property
    def scope_correctness(self) -> float | None:
        return _share(self.scoped_right, self.scoped)

    def json_form(self, **options: Any) -> dict[str, Any]:
        # Each metric (None when nothing was there to measure), then the counts it was made from.
        def r(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        return {
            "sessions": self.sessions,
            "memories": self.memories,
            "memories_per_session": r(self.memories_per_session),
            "precision": r(self.precision),
            "recall": r(self.recall),
            "answerability": r(self.answerability),
            "fix_recall": r(self.fix_recall),
            "outcome_correctness": r(self.outcome_correctness),
            "scope_correctness": r(self.scope_correctness),
            "counts": {
                "precise": self.precise, "expected": self.expected, "recalled": self.recalled,
                "questions": self.questions, "answered": self.answered, "fixes": self.fixes, "fixed": self.fixed,
                "outcomes": self.outcomes, "outcomes_right": self.outcomes_right, "scoped": self.scoped,
                "scoped_right": self.scoped_right,
            },
        }  # fmt: skip


@dataclass
class Judged:
    """A memory the report points at, and why."""

    id: str
    type: str
    namespace: str
    text: str
    why: str


@dataclass
class SessionScore:
    """One labelled session: its tally, and what an engineer needs to see why it scored so."""

    session: str
    source: str
    lang: str
    project: str
    tally: Tally
    noise: list[Judged] = field(default_factory=list)  # stored, but matching nothing or holding a noise term
    missing: list[str] = field(default_factory=list)  # expected items no memory holds
    wrong_scope: list[Judged] = field(default_factory=list)  # matched, but only in the wrong namespace
    unanswered: list[str] = field(default_factory=list)  # questions whose top hits hold no answer
    outcome: str | None = None  # why the outcome was judged wrong; None when right or not labelled


@dataclass
class HarvestReport:
    """`eval --harvest`: the metrics overall, by source and by language, and the counts behind them."""

    directory: str
    overall: Tally
    groups: dict[str, Tally]  # "source=aider", "lang=zh" …
    sessions: list[SessionScore]
    memories: int  # every memory the ingest stored
    unlabelled: int  # memories from no labelled session (a label naming the wrong file shows up here)
    ingest_errors: list[str] = field(default_factory=list)

    def json_form(self, *, verbose: bool = False, **options: Any) -> dict[str, Any]:
        # The overall metrics at the top level; each session's noise and misses only when asked for (-v).
        out: dict[str, Any] = {
            "directory": self.directory,
            **self.overall.json_form(),
            "memories_stored": self.memories,
            "memories_unlabelled": self.unlabelled,
            "groups": {name: tally.json_form() for name, tally in sorted(self.groups.items())},
            "ingest_errors": self.ingest_errors,
        }
        if verbose:
            out["per_session"] = [
                {
                    "session": s.session, "source": s.source, "lang": s.lang, "project": s.project,
                    **s.tally.json_form(),
                    "noise": [vars(j) for j in s.noise], "missing": s.missing,
                    "wrong_scope": [vars(j) for j in s.wrong_scope], "unanswered": s.unanswered,
                    "outcome": s.outcome,
                }
                for s in self.sessions
            ]  # fmt: skip
        return out


# (question, namespaces to search) -> the texts of the top hits, best first.
Search = Callable[[str, Sequence[str]], Sequence[str]]


def _shown(memory: Stored, why: str) -> Judged:
    text = " ".join(memory.text.split())
    if len(text) > SHOWN_CHARS:
        text = text[: SHOWN_CHARS - 1] + "…"
    return Judged(memory.id, memory.type, memory.namespace, text, why)


def score_session(label: Label, memories: Sequence[Stored], search: Search, namespaces: set[str]) -> SessionScore:
    """Score one session on the memories stored from it; ``search`` answers its questions."""
    tally = Tally(sessions=1, memories=len(memories))
    result = SessionScore(label.session, label.source, label.lang, label.project, tally)
    folded = [(m, m.folded) for m in memories]

    for memory, text in folded:
        noise = next((t for t in label.noise if has_term(text, t)), None)
        useful = any(e.terms.found_in(text) for e in label.expect) or (
            label.outcome is not None and label.outcome.holds(text)
        )
        if noise is not None:
            result.noise.append(_shown(memory, f"holds the noise term {noise!r}"))
        elif not useful:
            result.noise.append(_shown(memory, "matches no expected item and not the outcome"))
        else:
            tally.precise += 1

    for item in label.expect:
        tally.expected += 1
        tally.fixes += item.kind == "fix"
        holders = [m for m, text in folded if item.terms.found_in(text)]
        if not holders:
            result.missing.append(item.describe())
            continue
        tally.recalled += 1
        tally.fixed += item.kind == "fix"
        tally.scoped += 1
        wanted = GLOBAL_NAMESPACE if item.scope == "person" else label.namespace
        if any(m.namespace == wanted for m in holders):
            tally.scoped_right += 1
        else:
            result.wrong_scope.append(_shown(holders[0], f"{item.describe()}: in {holders[0].namespace}, not {wanted}"))

    if label.outcome is not None:
        tally.outcomes += 1
        result.outcome = _outcome(label.outcome, [(m, t) for m, t in folded if m.type == EPISODIC])
        tally.outcomes_right += result.outcome is None

    where = [ns for ns in (label.namespace, GLOBAL_NAMESPACE) if ns in namespaces]
    for question in label.questions:
        tally.questions += 1
        hits = list(search(question.text, where))[:TOP_K] if where else []
        if any(question.terms.found_in(fold(text)) for text in hits):
            tally.answered += 1
        else:
            result.unanswered.append(f"{question.text} (wants {question.terms.describe()}; {len(hits)} hit(s))")
    return result


def _outcome(outcome: Outcome, episodes: Sequence[tuple[Stored, str]]) -> str | None:
    """None when an episode states the outcome and none contradicts it; else why not."""
    if not episodes:
        return "no episode was stored"
    for memory, text in episodes:
        bad = next((t for t in outcome.not_ if has_term(text, t)), None)
        if bad is not None:
            return f"episode {memory.id[:8]} says {bad!r}"
    if any(all(has_term(text, t) for t in outcome.must) for _, text in episodes):
        return None
    missing = sorted({t for _, text in episodes for t in outcome.must if not has_term(text, t)})
    return f"no episode holds {', '.join(repr(t) for t in missing)}"


def score(
    labels: Sequence[Label],
    memories: Sequence[Stored],
    search: Search,
    *,
    directory: str = "",
    ingest_errors: Sequence[str] = (),
) -> HarvestReport:
    """Score every labelled session on the memories stored from it (a memory belongs to each session it names)."""
    namespaces = {m.namespace for m in memories}
    sessions: list[SessionScore] = []
    claimed: set[str] = set()
    for label in labels:
        own = [m for m in memories if label.session in m.sessions]
        claimed.update(m.id for m in own)
        sessions.append(score_session(label, own, search, namespaces))
    overall = Tally()
    groups: dict[str, Tally] = {}
    for s in sessions:
        overall.add(s.tally)
        for name in (f"source={s.source}", f"lang={s.lang}"):
            groups.setdefault(name, Tally()).add(s.tally)
    return HarvestReport(
        directory=directory,
        overall=overall,
        groups=groups,
        sessions=sessions,
        memories=len(memories),
        unlabelled=sum(1 for m in memories if m.id not in claimed),
        ingest_errors=list(ingest_errors),
    )
