"""The built-in extractor: from a session of messages to an episode, preferences, decisions and fixes.

Sessions are built by hand, mirroring what the importers produce from real logs (Claude Code,
Codex, Cline/Roo, Aider, shell history): the texts and tool outputs below follow those samples.
"""

from __future__ import annotations

import json
from itertools import count
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_cli.ingest.base import Message, Session
from engram_cli.ingest.extract import (
    LONG_MESSAGE,
    MAX_FIXES,
    SHELL_BUSY,
    Item,
    edited_files,
    error_line,
    extract,
    failed,
    semantic_cues,
    signature,
)


class Log:
    """Builds a session's messages with ids and times in order, the way an importer hands them over."""

    def __init__(self, day: str = "2026-03-02") -> None:
        self.day = day
        self.ids = count(1)
        self.messages: list[Message] = []

    def add(self, role: str, text: str, **fields: Any) -> Message:
        n = next(self.ids)
        message = Message(role=role, text=text, id=f"m{n}", at=f"{self.day}T10:{n // 60:02d}:{n % 60:02d}.000000Z")
        for name, value in fields.items():
            setattr(message, name, value)
        self.messages.append(message)
        return message

    def user(self, text: str) -> Message:
        return self.add("user", text)

    def assistant(self, text: str) -> Message:
        return self.add("assistant", text)

    def run(self, command: str, output: str, *, error: bool = False, tool: str = "Bash") -> Message:
        """A shell tool call and its result; returns the result (the failing message when it failed)."""
        self.add("tool", json.dumps({"command": command}), tool=tool, command=command)
        return self.add("tool", output, tool=tool, is_error=error)

    def edit(self, path: str) -> None:
        self.add("tool", json.dumps({"file_path": path, "old_string": "a", "new_string": "b"}), tool="Edit")
        self.add("tool", f"The file {path} has been updated.", tool="Edit")

    def shell(self, command: str, *, error: bool = False) -> Message:
        return self.add("shell", command, command=command, is_error=error)

    def session(self, **fields: Any) -> Session:
        defaults: dict[str, Any] = {"source": "claude-code", "key": "s1", "path": "/logs/s1.jsonl"}
        defaults["project"] = "/home/dev/webshop"
        defaults["messages"] = list(self.messages)
        defaults.update(fields)
        return Session(**defaults)


def run(session: Session, digest: dict[str, Any] | None = None) -> tuple[list[Item], dict[str, Any]]:
    items, new = extract(session, digest or {})
    # The loader stores the digest as JSON: whatever comes back must survive that.
    return items, json.loads(json.dumps(new))


def by_key(items: list[Item]) -> dict[str, Item]:
    return {item.key: item for item in items}


def one(user_text: str, source: str = "claude-code") -> list[Item]:
    log = Log()
    log.user(user_text)
    items, _ = run(log.session(source=source))
    return [i for i in items if i.type == "semantic"]


# --- semantic: preferences, decisions, remember requests -------------------------------------------

CUES = [
    # (what the person typed, kind, importance)
    ("I prefer tabs over spaces in Makefiles.", "pref", 0.7),
    ("Please always run ruff before committing.", "pref", 0.85),
    ("Don't ever push to main directly.", "pref", 0.85),
    ("Never mock the database in integration tests.", "pref", 0.85),
    ("We use pnpm, not npm.", "pref", 0.7),
    ("I like short commit messages in the imperative.", "pref", 0.7),
    ("Don't add docstrings to test functions.", "pref", 0.55),
    ("Avoid global state in the handlers.", "pref", 0.55),
    ("We're using Django 4.2 and Postgres 16.", "pref", 0.55),
    ("I'd rather not add a dependency for date parsing.", "pref", 0.7),
    ("We decided to keep SQLite for the cache.", "decision", 0.7),
    ("Let's go with httpx for the API client.", "decision", 0.7),
    ("Use httpx instead of requests.", "decision", 0.7),
    ("From now on, tag releases with a v prefix.", "decision", 0.85),
    ("Remember that staging deploys need the VPN.", "remember", 0.85),
    ("Note that the orders API returns 404 for missing items.", "remember", 0.85),
    ("Don't forget to bump the version in pyproject.toml.", "remember", 0.85),
    ("我喜欢用 ruff 格式化代码。", "pref", 0.7),
    ("我习惯先写测试再写实现。", "pref", 0.7),
    ("请一直用中文回复。", "pref", 0.85),
    ("不要修改公共 API。", "pref", 0.55),
    ("统一用 UTF-8 编码。", "pref", 0.7),
    ("不要再用 var 声明变量。", "pref", 0.85),
    ("我们决定用 Postgres 做主库。", "decision", 0.7),
    ("以后提交前先跑 ruff。", "decision", 0.85),
    ("改用 httpx 发请求。", "decision", 0.7),
    ("依赖管理换成 pnpm。", "decision", 0.7),
    ("记住：测试数据库是只读的。", "remember", 0.85),
    ("记一下，发布前要更新 CHANGELOG。", "remember", 0.85),
    ("别忘了更新版本号。", "remember", 0.85),
    ("以後都用 pnpm 安裝依賴。", "decision", 0.85),  # traditional characters
    ("記住部署前要先連 VPN。", "remember", 0.85),
    ("以后 commit message 用英文写。", "decision", 0.85),  # mixed
]


@pytest.mark.parametrize(("text", "kind", "importance"), CUES)
def test_a_cue_in_what_the_person_typed_becomes_one_semantic_memory(text: str, kind: str, importance: float) -> None:
    items = one(text)
    assert len(items) == 1
    item = items[0]
    assert item.key == f"{kind}:m1"
    assert item.importance == importance
    assert item.content == text
    assert item.message_id == "m1" and item.at == "2026-03-02T10:00:01.000000Z"
    assert item.tags == [{"pref": "preference"}.get(kind, kind), "claude-code"]


NOT_MEMORIES = [
    "Should we always use pnpm?",
    "should we always use pnpm",  # a question without its question mark
    "Do you remember the port staging uses?",
    "我们要不要统一用 UTF-8？",
    "以后是否都用 pnpm",
    "If we used pnpm it would always be faster.",  # counterfactual
    "Suppose we decided to drop Python 3.10.",
    "Maybe we should always pin the versions.",  # tentative
    "也许以后可以改用 httpx。",
    'The linter says "never use eval" on line 3.',  # someone else's words
    "> Always use tabs\nthis is what the old docs said",
    "Here is the config:\n```\n# always use tabs\nindent = tab\n```",
    "I like it!",  # feedback on the last answer, not a standing preference
    "Let's go with option 2.",  # means nothing once the conversation is gone
    "就用这个吧。",
    "我喜欢这个方案。",
    "Never mind.",
    "Don't worry about the docs.",
    "登录以后页面就空白了。",  # 以后 here means "after"
    "The upload test always fails on CI.",  # a description, not an instruction
    "Fix the flaky upload test.",
    "Migrate the settings page to the new form library.",  # a task; "let's migrate …" would be a decision
    "Switch the CI job to Python 3.12.",
    "Let's use a dataclass here.",  # a choice for this spot, or for now
    "Let's use pnpm for now.",
    "Don't run the migrations yet, I'll do it.",
    "这里先用 dict 吧，以后再改。",  # 以后再改: "change it later"
    "暂时不要动数据库。",
    "Always.",
]


@pytest.mark.parametrize("text", NOT_MEMORIES)
def test_questions_hypotheticals_quotes_code_and_feedback_are_not_memories(text: str) -> None:
    assert one(text) == []


def test_assistants_do_not_state_the_persons_preferences() -> None:
    log = Log()
    log.user("Set up the linter for this repo.")
    log.assistant("I always use ruff, and from now on I will never use flake8. Remember that ruff is faster.")
    items, _ = run(log.session())
    assert [i.type for i in items] == ["episodic"]


def test_a_cue_in_a_long_paste_is_incidental() -> None:
    spec = "The exporter reads orders from the queue and writes them to the warehouse in batches. " * 10
    text = spec + "Always keep the batch under 500 rows."
    assert len(text) > LONG_MESSAGE
    assert one(text) == []
    assert one("Always keep the batch under 500 rows.") != []


def test_a_message_yields_one_memory_named_after_its_strongest_cue() -> None:
    items = one(
        "ok so the tests are green. We decided to keep SQLite for the cache. "
        "Please always run the migrations before the tests. Thanks!"
    )
    assert len(items) == 1
    assert items[0].key == "pref:m1" and items[0].importance == 0.85
    # Only the sentences that carry cues, as the person said them, minus the "ok so".
    assert items[0].content == (
        "We decided to keep SQLite for the cache. Please always run the migrations before the tests."
    )


def test_remember_outranks_other_cues_of_the_same_strength() -> None:
    [item] = one("Remember that we always deploy on Tuesdays.")
    assert item.key == "remember:m1" and item.tags[0] == "remember"


def test_a_cue_inside_a_task_is_kept_and_the_task_is_not() -> None:
    [item] = one("Fix the flaky upload test. From now on always run ruff before committing.")
    assert item.content == "From now on always run ruff before committing."
    assert item.key == "decision:m1"


def test_a_resent_message_is_one_memory() -> None:
    log = Log()
    log.user("but don't assume english as a fallback, just omit the language info.")
    log.user("but don't assume english as a fallback, just omit the language info.")
    items, _ = run(log.session(source="aider"))
    assert [i.key for i in items if i.type == "semantic"] == ["pref:m1"]


def test_text_tools_inject_in_the_users_turn_is_not_the_persons() -> None:
    log = Log()
    log.user("[TASK RESUMPTION] This task was interrupted 7 days ago. Always retry the last step.")
    log.user("[read_file for 'src/app.ts'] Result:\nAlways use strict mode.")
    log.user("This session is being continued from a previous conversation. The user prefers pnpm over npm.")
    items, _ = run(log.session())
    assert items == []


def test_semantic_cues_reports_each_cue_sentence() -> None:
    assert semantic_cues("We use pnpm not npm. Also, never commit .env files.") == [
        ("We use pnpm not npm.", 0.7, "preference"),
        ("never commit .env files.", 0.85, "preference"),
    ]


# --- the episode -------------------------------------------------------------------------------------


def test_the_episode_is_the_tools_own_summary_when_there_is_one() -> None:
    log = Log()
    log.user("Create a hello world function")
    log.assistant("Done! The hello function is ready.")
    items, _ = run(log.session(summary="Added hello() and committed it", project="/project"))
    [episode] = items
    assert episode.key == "episode" and episode.type == "episodic" and episode.message_id is None
    assert episode.content == "Added hello() and committed it."
    assert episode.tags == ["session", "claude-code"]
    assert episode.at == log.messages[-1].at


def test_the_episode_tells_the_task_and_its_outcome() -> None:
    log = Log()
    log.user("Can you fix the flaky upload test? It fails about once in ten runs.")
    log.assistant("I'll look at the test first.")
    log.run("pytest tests/test_upload.py", "============ 3 passed in 0.52s ============")
    log.run("git commit -am 'Pin the S3 mock clock'", "[main 1a2b3c4] Pin the S3 mock clock\n 1 file changed")
    log.assistant(
        "Pinned the S3 mock clock in conftest.py; the upload tests pass now.\n\nLet me know if you need more."
    )
    [episode] = run(log.session())[0]
    # A plain statement of what happened: the project is the namespace and the date the memory's time.
    assert episode.content == (
        "Can you fix the flaky upload test? Pinned the S3 mock clock in conftest.py; the upload tests pass now. "
        "Tests: 3 passed; committed “Pin the S3 mock clock”."
    )
    assert 0.4 <= episode.importance <= 0.5


def test_the_episode_date_range_spans_the_session() -> None:
    log = Log(day="2026-03-02")
    log.user("Migrate the settings page to the new form library.")
    later = Log(day="2026-03-04")
    later.assistant("The settings page now uses the new form library.")
    session = log.session()
    session.messages += later.messages
    [episode] = run(session)[0]
    assert episode.content == (
        "Migrate the settings page to the new form library. The settings page now uses the new form library."
    )
    assert episode.at == later.messages[-1].at


def test_a_chinese_session_gets_a_chinese_episode() -> None:
    log = Log(day="2026-03-05")
    log.user("帮我修复订单导出的编码问题。以后都用 pnpm，不要再用 npm 了。")
    log.user("记住：测试数据库是只读的。")
    log.assistant("已修复导出编码问题，现在统一输出 UTF-8。测试全部通过。")
    items, _ = run(log.session(source="codex", project="/srv/orders"))
    keyed = by_key(items)
    assert (
        keyed["episode"].content == "帮我修复订单导出的编码问题。已修复导出编码问题，现在统一输出 UTF-8。测试全部通过。"
    )
    # An explicit remember request makes the session itself worth more.
    assert keyed["episode"].importance == 0.5
    assert keyed["decision:m1"].content == "以后都用 pnpm，不要再用 npm 了。"
    assert keyed["remember:m2"].content == "记住：测试数据库是只读的。"


def test_the_task_is_the_first_real_request() -> None:
    log = Log()
    log.user("<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>")
    log.user("hi")
    log.user("<task>\ntest\n</task>")
    log.user(
        "# Context from my IDE setup:\n\n## Open tabs:\n- go.mod\n\n## My request for Codex:\nUpdate go.mod to 1.24\n"
    )
    log.assistant("Updated go.mod to declare go 1.24.")
    [episode] = run(log.session())[0]
    assert episode.content == "Update go.mod to 1.24. Updated go.mod to declare go 1.24."


def test_a_slash_commands_arguments_are_the_request() -> None:
    log = Log()
    log.user("/ask is there a portable way to know the user's preferred language?")
    log.assistant("Based on the code provided, there isn't a built-in method for that.")
    [episode] = run(log.session(source="aider", project="/Users/dev/aider"))[0]
    assert episode.content.startswith("is there a portable way to know the user's preferred language? Based on")


def test_announcements_and_fillers_are_not_the_outcome() -> None:
    log = Log()
    log.user("Write the review replies for PR 8438.")
    log.assistant("Je vais d'abord vérifier l'historique des commits. <execute_command><command>git log</command>")
    log.assistant(
        "<attempt_completion>\n<result>\nHere are the replies to post:\n\n### 1. Ellipsis bot\n\n"
        "```markdown\nFixed in e2b4d91.\n```\n\nAll four replies reference commit e2b4d91.\n</result>\n"
        "</attempt_completion>"
    )
    log.assistant("Sure! Let me know if anything else is needed.")
    [episode] = run(log.session(source="roo-code"))[0]
    assert episode.content == "Write the review replies for PR 8438. All four replies reference commit e2b4d91."


def test_a_session_with_nothing_asked_and_nothing_done_yields_nothing() -> None:
    assert run(Log().session())[0] == []
    log = Log()
    log.user("hi")
    log.user("/clear")
    log.assistant("Hello! How can I help you today?")
    log.add("tool", '{"pattern": "**/*.md"}', tool="Glob")
    log.add("tool", "No files found", tool="Glob")
    items, _ = run(log.session())
    assert items == []


def test_what_tools_recorded_is_an_episode_even_without_a_request() -> None:
    log = Log()
    log.user("/test pytest tests/basic/test_main.py")
    log.add("tool", "tests/basic/test_main.py ....................FF.....  [100%]\n== 2 failed, 25 passed ==")
    log.add("tool", "Applied edit to tests/basic/test_main.py\nCommit e206570 fix: Properly mock RepoMap")
    [episode] = run(log.session(source="aider", project="/Users/dev/aider"))[0]
    # Nothing was asked: the failure the work began with says what it was about.
    assert episode.content == (
        "`pytest tests/basic/test_main.py` (== 2 failed, 25 passed ==). "
        "Tests still fail (2 failed, 25 passed); committed “fix: Properly mock RepoMap”."
    )


# --- procedural: error → fix ---------------------------------------------------------------------

PYTEST_FAILURE = """============================= test session starts ==============================
collected 3 items

tests/test_upload.py ..F                                                 [100%]

=================================== FAILURES ===================================
______________________________ test_upload_expiry ______________________________

    def test_upload_expiry():
>       assert url.expired()
E       AssertionError: clock drift
"""


def failing_then_fixed(log: Log) -> Message:
    log.user("Fix the flaky upload test.")
    failure = log.run("pytest tests/test_upload.py", PYTEST_FAILURE, error=True)
    log.assistant("The test fails because the S3 mock uses the wall clock. I'll pin the S3 mock clock in conftest.py.")
    log.edit("/home/dev/webshop/tests/conftest.py")
    log.run(
        "pytest tests/test_upload.py",
        "============================== 3 passed in 0.52s ===============================",
    )
    return failure


def test_a_failure_then_a_passing_run_is_a_fix() -> None:
    log = Log()
    failure = failing_then_fixed(log)
    items, _ = run(log.session())
    fix = by_key(items)[f"fix:{failure.id}"]
    assert fix.type == "procedural" and fix.importance == 0.6
    assert fix.message_id == failure.id and fix.at == failure.at
    assert fix.tags == ["fix", "claude-code"]
    assert fix.content == (
        "When `pytest tests/test_upload.py` fails with `AssertionError: clock drift`, fix: pin the S3 mock clock "
        "in conftest.py (edited tests/conftest.py); verified by re-running pytest."
    )


def test_the_fix_may_come_in_a_later_read_of_the_session() -> None:
    log = Log()
    failure = failing_then_fixed(log)
    split = 5  # the user's request, the failing call and result, the explanation, and the edit call
    first = log.session(messages=log.messages[:split])
    items, digest = run(first)
    assert [i.key for i in items] == ["episode"]
    assert len(json.dumps(digest)) < 4096
    second = log.session()
    second.messages = log.messages[split:]
    items, digest = run(second, digest)
    assert [i.key for i in items] == [f"fix:{failure.id}", "episode"]
    assert "(edited tests/conftest.py)" in items[0].content
    assert items[1].content == (
        "Fix the flaky upload test. The test fails because the S3 mock uses the wall clock. "
        "Pin the S3 mock clock in conftest.py. Tests: 3 passed."
    )
    assert "open" not in digest


def test_a_fix_across_parts_matches_the_fix_in_one_read() -> None:
    log = Log()
    failing_then_fixed(log)
    whole, _ = run(log.session())
    digest: dict[str, Any] = {}
    parts: list[Item] = []
    for i in range(len(log.messages)):  # one message per read: the worst case for an append-only log
        part = log.session()
        part.messages = [log.messages[i]]
        items, digest = run(part, digest)
        parts += [item for item in items if item.key != "episode"]
    assert parts == [item for item in whole if item.key != "episode"]
    assert items[-1] == by_key(whole)["episode"]


def test_an_equivalent_command_counts_as_the_same() -> None:
    log = Log()
    failure = log.run("cd web && npm run test -- --watch=false", "npm ERR! Test failed.  See above.", error=True)
    log.assistant("Fixed the import of the date helper in src/date.ts.")
    log.edit("src/date.ts")
    log.run("npm test", "Tests:       12 passed, 12 total")
    items, _ = run(log.session())
    fix = by_key(items)[f"fix:{failure.id}"]
    assert fix.content == (
        "When `cd web && npm run test -- --watch=false` fails with `npm ERR! Test failed. See above.`, fix: fixed "
        "the import of the date helper in src/date.ts (edited src/date.ts); verified by re-running npm test."
    )


def test_a_different_command_passing_is_not_the_fix() -> None:
    log = Log()
    log.run("pytest", PYTEST_FAILURE, error=True)
    log.edit("tests/conftest.py")
    log.run("ruff check .", "All checks passed!")
    items, digest = run(log.session())
    assert not [i for i in items if i.type == "procedural"]
    assert [f["key"] for f in digest["open"]] == ["pytest"]


def test_a_rerun_with_nothing_changed_teaches_nothing() -> None:
    log = Log()
    log.run("pytest tests/test_upload.py", PYTEST_FAILURE, error=True)
    log.run("pytest tests/test_upload.py", "3 passed in 0.50s")  # flaky: passed on a re-run
    items, _ = run(log.session())
    assert not [i for i in items if i.type == "procedural"]


def test_a_command_run_in_between_is_what_changed() -> None:
    log = Log()
    failure = log.run(
        "python app.py",
        "Traceback (most recent call last):\n  File \"app.py\"\nModuleNotFoundError: No module named 'requests'",
        error=True,
    )
    log.run("ls", "app.py")
    log.run("pip install requests", "Successfully installed requests-2.32.3")
    log.run("python app.py", "serving on :8000")
    fix = by_key(run(log.session())[0])[f"fix:{failure.id}"]
    assert fix.content == (
        "When `python app.py` fails with `ModuleNotFoundError: No module named 'requests'`, fix: ran "
        "`pip install requests`; verified by re-running python app.py."
    )


def test_tool_usage_errors_are_not_failures_to_fix() -> None:
    log = Log()
    log.add("tool", '{"file_path": "/p/CLAUDE.md", "content": "# x"}', tool="Write")
    log.add(
        "tool", "Claude requested permissions to write to /p/CLAUDE.md, but you haven't granted it yet.", is_error=True
    )
    log.add("tool", "<tool_use_error>File has not been read yet.</tool_use_error>", tool="Edit", is_error=True)
    log.edit("/p/CLAUDE.md")
    items, digest = run(log.session())
    assert items == [] and "open" not in digest


def test_a_failure_in_one_message_with_its_exit_code() -> None:
    log = Log()
    failure = log.add(
        "tool", 'error[E0425]: cannot find value `conn` in this scope\nExit code: 101', tool="shell",
        command="cargo test", is_error=True,
    )  # fmt: skip
    log.assistant("The pool was renamed; I'll use `pool.get()` where `conn` was used.")
    log.edit("src/db.rs")
    log.add("tool", "cargo test --all", tool="shell", command="cargo test --all")
    log.add("tool", '{"output":"test result: ok. 14 passed","metadata":{"exit_code":0}}', tool="shell")
    fix = by_key(run(log.session(source="codex"))[0])[f"fix:{failure.id}"]
    assert fix.content.startswith("When `cargo test` fails with `error[E0425]: cannot find value 'conn' in this scope`")
    assert (
        "fix: use pool.get() where conn was used (edited src/db.rs); verified by re-running cargo test." in fix.content
    )


def test_a_chinese_session_gets_a_chinese_fix() -> None:
    log = Log()
    log.user("帮我修一下上传测试。")
    failure = log.run("pytest tests/test_upload.py", PYTEST_FAILURE, error=True)
    log.assistant("原因是 S3 模拟用了系统时钟。我把 conftest.py 里的时钟固定住了。")
    log.edit("tests/conftest.py")
    log.run("pytest tests/test_upload.py", "3 passed in 0.52s")
    fix = by_key(run(log.session())[0])[f"fix:{failure.id}"]
    assert fix.content == (
        "`pytest tests/test_upload.py` 失败（`AssertionError: clock drift`）时，修复：把 conftest.py 里的时钟固定住了"
        "（修改了 tests/conftest.py）；重新运行 pytest 后通过。"
    )


def test_aider_test_command_failing_then_passing_is_a_fix() -> None:
    log = Log()
    log.user("/test pytest tests/basic/test_main.py")
    failure = log.add(
        "tool",
        "tests/basic/test_main.py ....................FF.....  [100%]\n"
        "E           AttributeError: module 'aider' has no attribute 'base_coder'",
    )
    log.assistant(
        "The test is failing because `aider.base_coder` does not exist. "
        "Let's fix the patch target to `aider.coders.base_coder.RepoMap`."
    )
    log.add("tool", "Applied edit to tests/basic/test_main.py\nCommit ec7a212 fix: Update import path for RepoMap")
    log.user("/test pytest tests/basic/test_main.py")
    log.add("tool", "============================== 27 passed in 4.01s ==============================")
    items, _ = run(log.session(source="aider", project="/Users/dev/aider"))
    assert by_key(items)[f"fix:{failure.id}"].content == (
        "When `pytest tests/basic/test_main.py` fails with `AttributeError: module 'aider' has no attribute "
        "'base_coder'`, fix: fix the patch target to aider.coders.base_coder.RepoMap "
        "(edited tests/basic/test_main.py); verified by re-running pytest."
    )
    assert by_key(items)["episode"].content == (
        "`pytest tests/basic/test_main.py` (AttributeError: module 'aider' has no attribute 'base_coder'). "
        "The test is failing because aider.base_coder does not exist. Fix the patch target to "
        "aider.coders.base_coder.RepoMap. Tests: 27 passed; committed “fix: Update import path for RepoMap”."
    )


def test_claude_code_bash_mode_runs_are_commands_too() -> None:
    log = Log()
    log.user("<bash-input>npm run lint</bash-input>")
    failure = log.user(
        "<bash-stdout></bash-stdout><bash-stderr>src/a.ts: error TS2304: Cannot find name 'x'.</bash-stderr>"
    )
    log.user("Always declare variables before use in src/a.ts.")
    log.edit("src/a.ts")
    log.user("<bash-input>npm run lint</bash-input>")
    log.user("<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>")
    keyed = by_key(run(log.session())[0])
    assert keyed[f"fix:{failure.id}"].content.startswith("When `npm run lint` fails with `src/a.ts: error TS2304")
    assert "pref:m3" in keyed


def test_fixes_are_bounded_per_session() -> None:
    log = Log()
    for n in range(MAX_FIXES + 3):
        log.run(f"make target{n}", "make: *** [target] Error 2\nerror: build failed", error=True)
        log.edit(f"src/file{n}.c")
        log.run(f"make target{n}", "built")
    items, _ = run(log.session())
    assert len([i for i in items if i.type == "procedural"]) == MAX_FIXES


# --- shell history -------------------------------------------------------------------------------


def test_a_plain_list_of_shell_commands_is_not_a_memory() -> None:
    log = Log()
    for command in ["git status", "ls", "cd ../", "git clean -dxf", "cargo install atuin", "cargo update"]:
        log.shell(command)
    items, digest = run(log.session(source="bash", key="2026-03-02", project=None))
    assert items == []
    assert digest["shell"] == 6


def test_many_shell_commands_in_one_project_make_an_episode() -> None:
    log = Log()
    log.shell("cd ~/code/webshop")
    for n in range(SHELL_BUSY):
        log.shell(["git status", "pytest -x", "npm run build", "git commit -m wip"][n % 4])
    [episode] = run(log.session(source="zsh", key="2026-03-02", project=None))[0]
    assert episode.content == (
        f"Shell session in webshop (2026-03-02): {SHELL_BUSY + 1} commands, mostly git commit, git status, "
        "npm run build."
    )
    assert episode.importance == 0.3


def test_a_shell_failure_fixed_later_is_a_fix_and_an_episode() -> None:
    log = Log()
    failure = log.shell("make build", error=True)
    log.shell("brew install pkg-config")
    log.shell("make build")
    items, _ = run(log.session(source="zsh", key="2026-03-02", project=None))
    keyed = by_key(items)
    assert keyed[f"fix:{failure.id}"].content == (
        "When `make build` fails, fix: ran `brew install pkg-config`; verified by re-running make build."
    )
    assert keyed["episode"].content == (
        "Shell session (2026-03-02): 3 commands, mostly make build, brew install; fixed failing `make build`."
    )


def test_a_typo_retyped_at_once_is_not_a_fix() -> None:
    log = Log()
    log.shell("gti status", error=True)
    log.shell("git status")
    log.shell("pytest tests/test_x.pyy", error=True)
    log.shell("pytest tests/test_x.py")
    items, digest = run(log.session(source="zsh", key="2026-03-02", project=None))
    assert items == []
    assert "open" not in digest


# --- the digest, restarts and stable keys ----------------------------------------------------------


def test_a_restart_starts_the_digest_over() -> None:
    log = Log()
    log.user("Fix the flaky upload test.")
    log.run("pytest", PYTEST_FAILURE, error=True)
    _, digest = run(log.session())
    assert digest["open"] and digest["task"] == "Fix the flaky upload test."

    rewound = Log()
    rewound.user("Rename the upload module to storage.")
    rewound.edit("src/storage.py")
    rewound.run("pytest", "3 passed in 0.4s")  # would close the old failure, were it still open
    items, fresh = run(rewound.session(restart=True), digest)
    assert [i.key for i in items] == ["episode"]
    assert fresh["task"] == "Rename the upload module to storage." and "open" not in fresh


def test_keys_are_stable_when_the_same_messages_are_read_twice() -> None:
    log = Log()
    log.user("We use pnpm, not npm.")
    failing_then_fixed(log)
    first, _ = run(log.session())
    again, _ = run(log.session(restart=True), {"task": "something else"})
    assert first == again
    assert [i.key for i in first] == ["pref:m1", "fix:m4", "episode"]


def test_messages_without_ids_get_ids_from_their_content() -> None:
    log = Log()
    log.user("Always run the linter before pushing.").id = None
    first, _ = run(log.session())
    second, _ = run(log.session())
    assert first[0].key == second[0].key and first[0].key.startswith("pref:h")


def test_a_damaged_digest_is_read_as_far_as_it_makes_sense() -> None:
    log = Log()
    log.user("Fix the login redirect.")
    damaged = {"task": 7, "open": [{"id": "x"}, "junk"], "pending": 5, "dirs": [], "commits": -3, "first": "soon"}
    items, digest = run(log.session(), damaged)
    assert [i.key for i in items] == ["episode"] and digest["task"] == "Fix the login redirect."


def test_the_digest_stays_small_in_a_long_session() -> None:
    log = Log()
    log.user("Refactor the exporter into smaller modules.")
    for n in range(300):
        log.run(f"pytest tests/test_{n}.py -k case{n}", PYTEST_FAILURE, error=n % 2 == 0)
        log.edit(f"src/exporter/part_{n}_with_a_rather_long_name.py")
        log.assistant(f"Moved the part {n} helpers into their own module because the file had grown too long. " * 3)
    _, digest = run(log.session())
    assert len(json.dumps(digest, ensure_ascii=False)) < 4096


# --- the pieces ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("pytest tests/test_upload.py -x", "pytest"),
        ("python3 -m pytest -q", "pytest"),
        ("uv run pytest tests", "pytest"),
        ("bash -lc 'cd web && npx jest src/date.test.ts'", "jest"),
        ("npm run test -- --watch=false", "npm test"),
        ("npm test", "npm test"),
        ("FOO=1 sudo -E make test", "make test"),
        ("git -C repo commit -m 'x'", "git commit"),
        ("cargo test -p engram | tail -20", "cargo test"),
        ("timeout 60 go test ./...", "go test"),
        ("python manage.py migrate --noinput", "python manage.py migrate"),
        ("node scripts/build.js", "node build.js"),
        ("applypatch << 'PATCH'\n*** Begin Patch\n*** Update File: go.mod\n*** End Patch\nPATCH", "applypatch"),
    ],
)
def test_signature_is_program_and_subcommand(command: str, key: str) -> None:
    found = signature(command)
    assert found is not None and found.key == key


def test_signature_of_nothing_runnable_is_none() -> None:
    assert signature("cd ~/code && export X=1") is None
    assert signature("") is None
    assert signature("echo 'unbalanced") is None


@pytest.mark.parametrize(
    ("output", "line"),
    [
        (PYTEST_FAILURE, "AssertionError: clock drift"),
        ('npm ERR! code ELIFECYCLE\nnpm ERR! Missing script: "lint"', 'npm ERR! Missing script: "lint"'),
        ("Traceback (most recent call last):\n  File \"x.py\"\nKeyError: 'user'", "KeyError: 'user'"),
        ("zsh: command not found: gti", "zsh: command not found: gti"),
        (
            "src/App.tsx(3,1): error TS2304: Cannot find name 'foo'.",
            "src/App.tsx(3,1): error TS2304: Cannot find name 'foo'.",
        ),
        ("构建报错：找不到模块 lodash", "构建报错：找不到模块 lodash"),
    ],
)
def test_error_line_finds_what_went_wrong(output: str, line: str) -> None:
    assert failed(output)
    assert error_line(output) == line


def test_a_passing_summary_outweighs_noise_on_the_way() -> None:
    assert not failed("test_log.py::test_logs Error: simulated\n============ 5 passed in 0.3s ============")
    assert failed("tests/basic/test_main.py ....................FF.....                     [100%]")
    assert failed('{"output":"boom","metadata":{"exit_code":2}}')
    assert not failed("All checks passed!")


def test_edited_files_from_each_tools_way_of_saying_it() -> None:
    claude = Message("tool", '{"file_path": "/home/dev/webshop/tests/conftest.py", "old_string": "a"}', tool="Edit")
    codex = Message(
        "tool", "apply", tool="shell", command="applypatch << 'PATCH'\n*** Update File: README.zh-CN.md\nPATCH"
    )
    aider = Message("tool", "Applied edit to aider/coders/base_coder.py\nCommit 7d56889 feat: x")
    read = Message("tool", '{"file_path": "/home/dev/webshop/src/app.py"}', tool="Read")
    assert edited_files(claude, "/home/dev/webshop") == ["tests/conftest.py"]
    assert edited_files(codex, None) == ["README.zh-CN.md"]
    assert edited_files(aider, None) == ["aider/coders/base_coder.py"]
    assert edited_files(read, "/home/dev/webshop") == []


# --- never crashes -------------------------------------------------------------------------------

ROLES = st.sampled_from(["user", "assistant", "tool", "shell", "system", ""])
TEXTS = st.one_of(
    st.text(max_size=300),
    st.sampled_from(
        [
            "Always use pnpm.", "记住：端口是 8080。", "pytest", PYTEST_FAILURE, "```\nnever\n```", "", " ",
            "以后", "/test pytest", "<command-name>/x</command-name>", "3 passed in 0.1s", "?", "…",
        ]
    ),
)  # fmt: skip
MESSAGES = st.lists(
    st.builds(
        Message,
        role=ROLES,
        text=TEXTS,
        id=st.one_of(st.none(), st.text(min_size=1, max_size=8)),
        at=st.one_of(st.none(), st.sampled_from(["2026-03-02T10:00:00Z", "not a time", "2026-03-01T09:00:00.5Z"])),
        tool=st.one_of(st.none(), st.sampled_from(["Bash", "Edit", "shell"])),
        command=st.one_of(st.none(), TEXTS),
        is_error=st.booleans(),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(first=MESSAGES, second=MESSAGES, summary=st.one_of(st.none(), st.text(max_size=40)))
def test_arbitrary_messages_never_raise_and_contents_are_never_empty(
    first: list[Message], second: list[Message], summary: str | None
) -> None:
    digest: dict[str, Any] = {}
    for part in (first, second):
        session = Session("claude-code", "s", "/p", messages=part, project="/p/x", summary=summary)
        items, digest = run(session, digest)
        for item in items:
            assert item.content.strip()
            assert item.type in ("episodic", "semantic", "procedural")
            assert 0 <= item.importance <= 1
            assert item.key == "episode" or item.key.split(":", 1)[0] in ("pref", "decision", "remember", "fix")
        assert len([i for i in items if i.key == "episode"]) <= 1
