#!/usr/bin/env python3
"""Benchmark `engram ingest` on generated Claude Code logs, and count memories per session on the samples.

The generator writes Claude Code transcripts (``projects/<slug>/<session>.jsonl``) shaped like real
ones: prompts in English and Chinese (some stating preferences or asking to remember something),
assistant replies split over several lines sharing a ``message.id``, thinking blocks, system
reminders, Bash tool calls whose results carry long test or build output, failures followed by an
edit and a passing run, and a sprinkling of credentials in tool output. It is seeded, so the same
arguments give the same bytes.

Reported (wall time of whole `engram` processes, default model):
  * the first ingest of all logs: MB/s of log read, sessions/s, memories/s, memories per session;
  * a second ingest right after (nothing new): seconds;
  * memories per session on each real sample in tests/fixtures/agent-logs (dry run).

Usage (from the repository root):
  python scripts/bench_ingest.py [--mb 100] [--json out.json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "agent-logs"
SEED = 11

PROJECTS = ["webshop", "billing-api", "infra", "data-pipeline", "mobile-app", "docs-site", "auth-service", "search"]
MODULES = ["upload", "checkout", "invoices", "sessions", "search_index", "payments", "exports", "notifications"]
TASKS_EN = [
    "fix the flaky {m} test in tests/test_{m}.py",
    "add pagination to the {m} endpoint",
    "refactor the {m} module so the retry logic lives in one place",
    "find out why the {m} job times out on CI",
    "write a migration that adds an index on {m}.created_at",
]
TASKS_ZH = [
    "帮我修复 {m} 模块里偶发失败的测试",
    "给 {m} 接口加上分页",
    "排查一下 {m} 任务在 CI 上超时的原因",
    "把 {m} 的重试逻辑重构到一个地方",
]
PREFS_EN = [
    "From now on always run ruff before committing.",
    "Remember that the staging database is read-only for this team.",
    "I prefer pytest fixtures over setUp methods.",
    "Never push directly to main; open a pull request.",
    "We decided to use pnpm instead of npm in the frontend.",
]
PREFS_ZH = [
    "以后提交前都先跑一遍 ruff。",
    "记住：测试数据库是只读的。",
    "我们决定前端统一用 pnpm，不要再用 npm 了。",
]
SECRETS = [
    "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DATABASE_URL=postgres://app:Tr0ub4dor@db.internal:5432/app",
    "Authorization: Bearer abc123.def456-ghi789",
]


class Writer:
    """Lines of one Claude Code transcript."""

    def __init__(self, rng: random.Random, session: str, cwd: str, start: datetime) -> None:
        self.rng = rng
        self.session = session
        self.cwd = cwd
        self.at = start
        self.lines: list[str] = []
        self.n = 0
        self.parent: str | None = None

    def _emit(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        self.n += 1
        self.at += timedelta(seconds=self.rng.randint(2, 40))
        uuid = f"{self.session[:8]}-{self.n:05d}"
        record = {
            "parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
            "sessionId": self.session, "version": "2.0.14", "gitBranch": "main", "type": kind,
            "message": message, "uuid": uuid, "timestamp": self.at.isoformat().replace("+00:00", "Z"), **extra,
        }  # fmt: skip
        self.parent = uuid
        self.lines.append(json.dumps(record, ensure_ascii=False))

    def user(self, text: str) -> None:
        reminder = "<system-reminder>Remember the project conventions in CLAUDE.md.</system-reminder>\n"
        self._emit("user", {"role": "user", "content": reminder + text if self.rng.random() < 0.3 else text})

    def assistant(self, blocks: list[dict[str, Any]]) -> None:
        message_id = f"msg_{self.session[:6]}{self.n:05d}"
        for block in blocks:  # one line per block, as Claude Code writes a streamed response
            self._emit("assistant", {"id": message_id, "role": "assistant", "model": "claude-sonnet-4-5",
                                     "content": [block], "stop_reason": None})  # fmt: skip

    def bash(self, command: str, output: str, failed: bool) -> None:
        tool_id = f"toolu_{self.session[:6]}{self.n:05d}"
        self.assistant([{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}])
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": failed}
        self._emit("user", {"role": "user", "content": [result]}, toolUseResult={"stdout": output})


def _test_output(rng: random.Random, module: str, failed: bool, lines: int) -> str:
    body = [f"tests/test_{module}.py::test_case_{i} PASSED" for i in range(lines)]
    if failed:
        body.append(f"tests/test_{module}.py::test_retry FAILED")
        body.append("E       AssertionError: expected 3 retries, got 2")
        body.append(f"FAILED tests/test_{module}.py::test_retry - AssertionError: expected 3 retries, got 2")
        body.append(f"=========== 1 failed, {lines} passed in {rng.uniform(1, 9):.2f}s ===========")
    else:
        body.append(f"=========== {lines + 1} passed in {rng.uniform(1, 9):.2f}s ===========")
    return "\n".join(body)


def session_lines(rng: random.Random, index: int, start: datetime, root: Path) -> tuple[str, list[str]]:
    project = rng.choice(PROJECTS)
    module = rng.choice(MODULES)
    session = f"{index:08d}-0000-4000-8000-{rng.getrandbits(48):012x}"
    w = Writer(rng, session, str(root / project), start)
    chinese = rng.random() < 0.3
    task = rng.choice(TASKS_ZH if chinese else TASKS_EN).format(m=module)
    w.user(task)
    w.assistant([
        {"type": "thinking", "thinking": "Let me look at the module first. " * 20, "signature": "sig"},
        {"type": "text", "text": "I'll start by running the tests to see the current state."},
    ])  # fmt: skip
    for _ in range(rng.randint(2, 6)):
        failed = rng.random() < 0.5
        w.bash(f"pytest tests/test_{module}.py -q", _test_output(rng, module, failed, rng.randint(60, 400)), failed)
        if failed:
            edit_id = f"toolu_e{w.n:05d}"
            why = f"The retry counter in {module}/retry.py stops one attempt early; I'll fix it."
            change = {"file_path": f"{module}/retry.py", "old_string": "attempts < 2", "new_string": "attempts < 3"}
            w.assistant([
                {"type": "text", "text": why},
                {"type": "tool_use", "id": edit_id, "name": "Edit", "input": change},
            ])  # fmt: skip
            w._emit("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": edit_id,
                                                         "content": "The file has been updated."}]})  # fmt: skip
            w.bash(f"pytest tests/test_{module}.py -q", _test_output(rng, module, False, rng.randint(60, 400)), False)
        if rng.random() < 0.2:
            w.bash("env | grep -i secret", rng.choice(SECRETS), False)
    if rng.random() < 0.4:
        w.user(rng.choice(PREFS_ZH if chinese else PREFS_EN))
        w.assistant([{"type": "text", "text": "Understood, I will keep that in mind."}])
    w.assistant([{"type": "text", "text": f"Done: the {module} tests pass now and the change is committed."}])
    return f"-{project}", w.lines


def generate(root: Path, megabytes: float) -> dict[str, Any]:
    rng = random.Random(SEED)
    target = int(megabytes * 1024 * 1024)
    written = sessions = 0
    start = datetime(2026, 9, 1, tzinfo=UTC)
    while written < target:
        slug, lines = session_lines(rng, sessions, start + timedelta(hours=3 * sessions), root)
        directory = root / ".claude" / "projects" / slug
        directory.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n").encode("utf-8")
        (directory / f"{json.loads(lines[0])['sessionId']}.jsonl").write_bytes(data)
        written += len(data)
        sessions += 1
    return {"bytes": written, "sessions": sessions}


def run(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    return elapsed, done


def per_session_on_fixtures(env: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    samples = {
        "claude-code": sorted((FIXTURES / "claude-code").glob("*.jsonl"))
        + sorted((FIXTURES / "claude-code").rglob("dag_*.jsonl")),
        "codex": sorted((FIXTURES / "codex").rglob("*.jsonl")),
        "gemini-cli": sorted((FIXTURES / "gemini-cli").glob("*.json*")),
        "aider": sorted((FIXTURES / "aider").glob("*.md")),
        "cursor": sorted((FIXTURES / "cursor").glob("*.vscdb")),
        "copilot-cli": sorted((FIXTURES / "copilot-cli").glob("*.json*")),
        "roo-code": [FIXTURES / "roo-code"],
        "zsh": [FIXTURES / "shell-history" / "atuin_test_zsh_history"],
        "bash": [FIXTURES / "shell-history" / "atuin_test_bash_history_timestamps"],
        "fish": [FIXTURES / "shell-history" / "atuin_test_fish_history"],
    }
    for source, paths in samples.items():
        sessions = memories = 0
        by_type: dict[str, int] = {}
        for path in paths:
            _, done = run(
                [sys.executable, "-m", "engram_cli", "ingest", source, "--path", str(path), "--dry-run", "--json"], env
            )
            report = json.loads(done.stdout)["sources"][0]
            sessions += report["sessions"]
            memories += report["created"]
            for m in report["memories"]:
                by_type[m["type"]] = by_type.get(m["type"], 0) + 1
        out[source] = {
            "files": len(paths),
            "sessions": sessions,
            "memories": memories,
            "per_session": round(memories / sessions, 2) if sessions else None,
            "by_type": by_type,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=100.0, help="megabytes of logs to generate")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", type=Path, help="generate into this directory and keep it")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="engram-bench-ingest-"))
    try:
        root = args.keep or work / "home"
        root.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        made = generate(root, args.mb)
        print(f"generated {made['bytes'] / 1e6:.1f} MB, {made['sessions']} sessions "
              f"in {time.perf_counter() - began:.1f} s", file=sys.stderr)  # fmt: skip
        env = {
            **os.environ, "ORT_DISABLE_TELEMETRY": "1", "HOME": str(root),
            "CLAUDE_CONFIG_DIR": str(root / ".claude"), "ENGRAM_HOME": str(work / "engram"),
        }  # fmt: skip
        first_s, first = run([sys.executable, "-m", "engram_cli", "ingest", "claude-code", "--json"], env)
        report = json.loads(first.stdout)["sources"][0]
        second_s, second = run([sys.executable, "-m", "engram_cli", "ingest", "claude-code", "--json"], env)
        again = json.loads(second.stdout)["sources"][0]
        env_dry = {**env, "ENGRAM_HOME": str(work / "fixtures")}
        results = {
            "logs": {"megabytes": made["bytes"] / 1e6, "sessions": made["sessions"]},
            "first_ingest": {
                "seconds": first_s,
                "mb_per_s": made["bytes"] / 1e6 / first_s,
                "sessions_per_s": report["sessions"] / first_s,
                "memories": report["created"] + report["merged"],
                "new_rows": report["created"],
                "merged_into_existing": report["merged"],
                "memories_per_s": (report["created"] + report["merged"]) / first_s,
                "memories_per_session": (report["created"] + report["merged"]) / max(1, report["sessions"]),
                "redacted": report["redacted"],
                "skipped": report["skipped"],
            },
            "second_ingest": {
                "seconds": second_s,
                "created": again["created"],
                "changed_files": again["changed_files"],
            },
            "fixtures": per_session_on_fixtures(env_dry) if FIXTURES.exists() else "fixtures not found",
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
