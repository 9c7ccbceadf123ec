"""The reader's state between the parts of a session: the digest (a small JSON dict) unpacked, and packed again."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engram_cli.errors import InvalidInput
from engram_cli.timeutil import parse_time

# Per session: beyond this many preferences, the later ones are mostly the same request restated.
MAX_SEMANTIC = 12
# Per session: fixes past this many are the same struggle at length, not new knowledge.
MAX_FIXES = 5
# Failures waiting for their fix; older ones are dropped (a fix an hour later is rarely related).
MAX_OPEN = 3
# Tool calls waiting for their result (parallel calls); the oldest is dropped past this.
MAX_PENDING = 6
# A digest written by another version of these rules is not read: the session starts over.
DIGEST_VERSION = 1


def _str(value: Any, limit: int = 400) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strs(value: Any, limit: int) -> list[str]:
    return [v[:300] for v in value if isinstance(v, str)][:limit] if isinstance(value, list) else []


def _counts(value: Any) -> dict[str, int]:
    return {str(k)[:120]: _int(v) for k, v in value.items()} if isinstance(value, dict) else {}


@dataclass
class _Call:
    """A command call waiting for its result."""

    id: str
    at: str | None
    cmd: str
    tool: str | None

    def dump(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "cmd": self.cmd, "tool": self.tool}

    @classmethod
    def load(cls, data: Any) -> _Call | None:
        if not isinstance(data, dict) or not _str(data.get("id")) or not _str(data.get("cmd")):
            return None
        return cls(str(data["id"]), _str(data.get("at")), str(data["cmd"])[:2000], _str(data.get("tool")))


@dataclass
class _Failure:
    """A failed command (or a problem the person reported) waiting for its fix, and what happened since.

    ``said`` marks a problem the person reported: ``cmd`` is then their sentence and ``key`` is
    ``said:<id>``, which no command signature can equal. ``lines`` are the lines the changes since put
    in, ``diag`` the assistant's first statement about it.
    """

    id: str
    at: str | None
    cmd: str
    key: str
    err: str | None
    files: list[str] = field(default_factory=list)
    acts: list[str] = field(default_factory=list)
    how: str | None = None
    why: str | None = None
    lines: list[str] = field(default_factory=list)
    diag: str | None = None
    said: bool = False

    def dump(self) -> dict[str, Any]:
        out = {
            "id": self.id, "at": self.at, "cmd": self.cmd, "key": self.key, "err": self.err,
            "files": self.files, "acts": self.acts, "how": self.how, "why": self.why,
            "lines": self.lines, "diag": self.diag, "said": self.said,
        }  # fmt: skip
        return {k: v for k, v in out.items() if v not in ([], None, False)}

    @property
    def changed(self) -> bool:
        """Something was done about it: files edited, lines written or commands run."""
        return bool(self.files or self.lines or self.acts)

    @classmethod
    def load(cls, data: Any) -> _Failure | None:
        if not isinstance(data, dict) or not all(_str(data.get(k)) for k in ("id", "cmd", "key")):
            return None
        return cls(
            id=str(data["id"]),
            at=_str(data.get("at")),
            cmd=str(data["cmd"])[:300],
            key=str(data["key"])[:120],
            err=_str(data.get("err"), 200),
            files=_strs(data.get("files"), 5),
            acts=_strs(data.get("acts"), 3),
            how=_str(data.get("how"), 220),
            why=_str(data.get("why"), 220),
            lines=_strs(data.get("lines"), 3),
            diag=_str(data.get("diag"), 220),
            said=data.get("said") is True,
        )


@dataclass
class _State:
    """Everything a later part of a session needs from the earlier ones (the digest, unpacked)."""

    lang: str | None = None  # "zh" or "en", from the person's request
    task: str | None = None
    title: str | None = None
    summary: str | None = None
    project: str | None = None
    first: str | None = None  # earliest time seen
    last: str | None = None  # latest time seen
    outcome: str | None = None
    tests: str | None = None  # "pass" | "fail": the last test run
    commit: str | None = None  # last commit message
    commits: int = 0
    fixes: int = 0
    semantic: int = 0
    remember: int = 0
    messages: int = 0
    agent: bool = False  # anything but shell commands seen
    pending: list[_Call] = field(default_factory=list)
    open: list[_Failure] = field(default_factory=list)
    last_fail: str | None = None  # id of a failure nothing has happened after yet
    fixed: list[str] = field(default_factory=list)  # short names of fixes, for a shell episode
    said: list[str] = field(default_factory=list)  # short hashes of semantic contents already returned
    shell: int = 0  # shell commands seen
    cwd: str | None = None  # project the shell is in, from cd
    dirs: dict[str, int] = field(default_factory=dict)  # shell commands per project
    programs: dict[str, int] = field(default_factory=dict)  # shell commands per signature
    # The task under way (a session may hold several; the earlier ones' episodes are out already).
    ekey: str | None = None  # its episode's key: "episode" for the first task, "episode:<message id>" after
    episodes: int = 0  # episodes of earlier tasks in this session
    worked: bool = False  # something was changed, run or committed for it
    turn_work: bool = False  # ... since the person last spoke
    reply: str | None = None  # the assistant's last report in a turn without work (a chat answer)
    before_work: str | None = None  # the assistant's report earlier in this turn, before its work began
    last_said: str | None = None  # the assistant's latest report in this task
    diagnosis: str | None = None  # what the assistant said just before its first change
    trouble: str | None = None  # the first failing command of the task and its error line
    test_line: str | None = None  # the counts of the last test run ("1 failed, 3 passed")
    tests_failed: bool = False  # a test run failed during the task
    confirmed: str | None = None  # the person's words that it works
    closed: bool = False  # confirmed, thanked or committed: a new request after this is a new task
    unfinished: bool = False  # the person left it for later
    aside: bool = False  # the person's last message asked for nothing (a preference, a what-if, thanks)

    @classmethod
    def load(cls, digest: dict[str, Any]) -> _State:
        d = digest if isinstance(digest, dict) and digest.get("v", DIGEST_VERSION) == DIGEST_VERSION else {}
        tests = d.get("tests")
        return cls(
            lang=d.get("lang") if d.get("lang") in ("zh", "en") else None,
            task=_str(d.get("task"), 300),
            title=_str(d.get("title"), 200),
            summary=_str(d.get("summary"), 400),
            project=_str(d.get("project"), 120),
            first=_str(d.get("first"), 40),
            last=_str(d.get("last"), 40),
            outcome=_str(d.get("outcome"), 300),
            tests=tests if tests in ("pass", "fail") else None,
            commit=_str(d.get("commit"), 120),
            commits=_int(d.get("commits")),
            fixes=_int(d.get("fixes")),
            semantic=_int(d.get("semantic")),
            remember=_int(d.get("remember")),
            messages=_int(d.get("messages")),
            agent=d.get("agent") is True,
            pending=[c for c in map(_Call.load, _list(d.get("pending"))) if c][-MAX_PENDING:],
            open=[f for f in map(_Failure.load, _list(d.get("open"))) if f][-MAX_OPEN:],
            last_fail=_str(d.get("last_fail"), 200),
            fixed=_strs(d.get("fixed"), MAX_FIXES),
            said=_strs(d.get("said"), MAX_SEMANTIC),
            shell=_int(d.get("shell")),
            cwd=_str(d.get("cwd"), 120),
            dirs=_counts(d.get("dirs")),
            programs=_counts(d.get("programs")),
            ekey=_str(d.get("ekey"), 300),
            episodes=_int(d.get("episodes")),
            worked=d.get("worked") is True,
            turn_work=d.get("turn_work") is True,
            reply=_str(d.get("reply"), 300),
            before_work=_str(d.get("before_work"), 300),
            last_said=_str(d.get("last_said"), 300),
            diagnosis=_str(d.get("diagnosis"), 300),
            trouble=_str(d.get("trouble"), 300),
            test_line=_str(d.get("test_line"), 120),
            tests_failed=d.get("tests_failed") is True,
            confirmed=_str(d.get("confirmed"), 200),
            closed=d.get("closed") is True,
            unfinished=d.get("unfinished") is True,
            aside=d.get("aside") is True,
        )

    def dump(self) -> dict[str, Any]:
        def top(counts: dict[str, int], n: int) -> dict[str, int]:
            return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n])

        out: dict[str, Any] = {
            "v": DIGEST_VERSION, "lang": self.lang, "task": self.task, "title": self.title, "summary": self.summary,
            "project": self.project, "first": self.first, "last": self.last, "outcome": self.outcome,
            "tests": self.tests, "commit": self.commit, "commits": self.commits, "fixes": self.fixes,
            "semantic": self.semantic, "remember": self.remember, "messages": self.messages, "agent": self.agent,
            "pending": [c.dump() for c in self.pending], "open": [f.dump() for f in self.open],
            "last_fail": self.last_fail, "fixed": self.fixed, "said": self.said, "shell": self.shell, "cwd": self.cwd,
            "dirs": top(self.dirs, 6), "programs": top(self.programs, 10),
            "ekey": self.ekey, "episodes": self.episodes, "worked": self.worked, "turn_work": self.turn_work,
            "reply": self.reply, "before_work": self.before_work, "last_said": self.last_said,
            "diagnosis": self.diagnosis, "trouble": self.trouble,
            "test_line": self.test_line, "tests_failed": self.tests_failed, "confirmed": self.confirmed,
            "closed": self.closed, "unfinished": self.unfinished, "aside": self.aside,
        }  # fmt: skip
        # Empty fields are left out: the digest is stored per session and read back every run.
        return {k: v for k, v in out.items() if v not in (None, [], {}, 0, False) or k == "v"}

    def next_task(self, key: str) -> None:
        """Forget what the task just finished left, and begin the next one, whose episode is ``key``."""
        self.episodes += 1
        self.ekey = key
        self.task = self.outcome = self.tests = self.commit = None
        self.commits = self.fixes = self.remember = 0
        self.worked = self.turn_work = self.tests_failed = self.closed = self.unfinished = self.aside = False
        self.reply = self.before_work = self.last_said = self.diagnosis = self.trouble = None
        self.test_line = self.confirmed = None
        self.fixed = []
        self.first = self.last

    def seen_time(self, at: str | None) -> None:
        if not at or _moment(at) is None:
            return
        if self.first is None or _before(at, self.first):
            self.first = at
        if self.last is None or _before(self.last, at):
            self.last = at


def _moment(iso: str) -> datetime | None:
    try:
        return parse_time(iso)
    except (InvalidInput, ValueError, OverflowError):
        return None


def _before(a: str, b: str) -> bool:
    ma, mb = _moment(a), _moment(b)
    return ma < mb if ma is not None and mb is not None else a < b
