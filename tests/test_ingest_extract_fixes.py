"""Error → fix from a problem (a failed command, or the person's report), the change, and a confirmation."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from engram_cli.ingest.base import Message, Session
from engram_cli.ingest.extract import Item, extract, failed
from engram_cli.ingest.extract.fixes import changed_lines, confirmation, reported_problem


class Log:
    """A session's messages with ids and times in order, as an importer hands them over."""

    def __init__(self) -> None:
        self.ids = count(1)
        self.messages: list[Message] = []

    def add(self, role: str, text: str, **fields: Any) -> Message:
        n = next(self.ids)
        message = Message(role=role, text=text, id=f"m{n}", at=f"2026-03-02T10:00:{n:02d}.000000Z", **fields)
        self.messages.append(message)
        return message

    def session(self, source: str = "claude-code") -> Session:
        return Session(source=source, key="s1", path="/logs/s1", messages=list(self.messages), project="/home/dev/shop")


def fixes(log: Log, source: str = "claude-code") -> list[Item]:
    items, digest = extract(log.session(source), {})
    json.dumps(digest)  # the digest must survive being stored as JSON
    return [item for item in items if item.type == "procedural"]


def reported_then_edited(log: Log) -> Message:
    report = log.add(
        "user",
        "The staging API won't start:\n\n```\nERROR db: connect ECONNREFUSED 10.0.0.4:5432\n```\n\nplease have a look",
    )
    log.add("assistant", "Postgres on staging listens on 5433 now, but .env.staging still says 5432.")
    edit = {"file_path": "/home/dev/shop/.env.staging", "old_string": "DB_PORT=5432", "new_string": "DB_PORT=5433"}
    log.add("tool", json.dumps(edit), tool="Edit")
    log.add("tool", "The file /home/dev/shop/.env.staging has been updated.", tool="Edit")
    return report


def test_a_reported_error_fixed_by_an_edit_and_confirmed_in_words_is_a_fix() -> None:
    log = Log()
    report = reported_then_edited(log)
    log.add("user", "great, it works now. thanks!")
    [fix] = fixes(log)
    assert fix.key == f"fix:{report.id}" and fix.message_id == report.id
    assert "`ERROR db: connect ECONNREFUSED 10.0.0.4:5432`" in fix.content  # the error it fixed
    assert "edited .env.staging, adding `DB_PORT=5433`" in fix.content  # the fix itself
    assert "cause: Postgres on staging listens on 5433 now" in fix.content
    assert fix.content.endswith('the person confirmed: "great, it works now".')
    assert fix.importance < 0.6  # words are a weaker confirmation than a passing re-run


def test_a_chinese_report_confirmed_with_hao_le_is_a_chinese_fix() -> None:
    log = Log()
    log.add("user", "搜索页白屏了，控制台报错：TypeError: Cannot read properties of undefined (reading 'map')")
    log.add("assistant", "接口没有结果时返回 null，组件直接对它调用了 map。")
    log.add(
        "tool",
        "file_path=/home/dev/shop/src/Search.tsx, old_string=items.map(render), new_string=(items ?? []).map(render)",
        tool="Edit",
    )
    log.add("user", "好了，页面正常了")
    [fix] = fixes(log)
    assert fix.content.startswith("问题：")
    assert "TypeError: Cannot read properties of undefined" in fix.content
    assert "加入 `(items ?? []).map(render)`" in fix.content
    assert fix.content.endswith("用户确认：“好了，页面正常了”。")


def test_words_that_say_it_still_fails_confirm_nothing() -> None:
    log = Log()
    reported_then_edited(log)
    log.add("user", "still not working, same error")
    assert fixes(log) == []
    log.add("user", "还是不行")
    assert fixes(log) == []


def test_a_confirmation_without_a_change_is_no_fix() -> None:
    log = Log()
    log.add("user", "the export crashes with `sqlite3.OperationalError: database is locked`")
    log.add("assistant", "Another process holds the write lock; it cleared on its own.")
    log.add("user", "works now")
    assert fixes(log) == []


def test_a_hypothetical_or_a_question_opens_no_problem() -> None:
    assert reported_problem("what if the cache fails under load?") is None
    assert reported_problem("要不要顺便支持 WMTS？") is None
    assert reported_problem("add a --max-zoom option to export, default 18") is None
    assert reported_problem("lonlat_to_tile gives y = -3 at lat 78. fix it") == "lonlat_to_tile gives y = -3 at lat 78."


def test_an_aider_edit_committed_after_a_report_is_a_fix_holding_the_replace_side() -> None:
    log = Log()
    report = log.add("user", "The invoice total is 0.01 off for INV-7, the rounding is wrong. fix it")
    log.add(
        "assistant",
        "Python's round() rounds half to even; invoices round half up.\n\nbilling/totals.py\n```python\n"
        "<<<<<<< SEARCH\n    return round(net, 2)\n=======\n"
        "    return net.quantize(CENT, rounding=ROUND_HALF_UP)\n>>>>>>> REPLACE\n```",
    )
    log.add("tool", "Applied edit to billing/totals.py\nCommit 9e1b6c0 fix: Round invoice totals half up", tool="aider")
    [fix] = fixes(log, "aider")
    assert fix.key == f"fix:{report.id}"
    assert fix.content.startswith("Problem: The invoice total is 0.01 off for INV-7, the rounding is wrong.")
    assert "`return net.quantize(CENT, rounding=ROUND_HALF_UP)`" in fix.content
    assert fix.content.endswith('committed as "fix: Round invoice totals half up".')


def test_a_git_commit_confirms_a_reported_problem() -> None:
    log = Log()
    reported_then_edited(log)
    log.add(
        "tool", "git commit -am 'fix: staging db port'", tool="Bash", command="git commit -am 'fix: staging db port'"
    )
    log.add("tool", "[main 1a2b3c4] fix: staging db port\n 1 file changed", tool="Bash")
    [fix] = fixes(log)
    assert fix.content.endswith('committed as "fix: staging db port".')


def test_an_aider_run_that_fails_then_passes_after_an_edit_is_a_fix() -> None:
    log = Log()
    failure = log.add(
        "tool",
        "Traceback (most recent call last):\nTypeError: '<' not supported between instances of 'str' and 'date'",
        tool="run",
        command="python scripts/build_index.py",
        is_error=True,
    )
    log.add(
        "assistant",
        "Quoted dates stay strings in YAML.\n\nscripts/build_index.py\n```python\n<<<<<<< SEARCH\n"
        "    meta = yaml.safe_load(front)\n=======\n    meta = yaml.safe_load(front)\n"
        '    meta["date"] = date.fromisoformat(str(meta["date"]))\n>>>>>>> REPLACE\n```',
    )
    log.add("tool", "Applied edit to scripts/build_index.py", tool="aider")
    log.add("user", "!python scripts/build_index.py")
    # aider shows a command and its output in one message
    log.add("tool", "indexed 87 posts -> public/index.json", tool="run", command="python scripts/build_index.py")
    [fix] = fixes(log, "aider")
    assert fix.key == f"fix:{failure.id}"
    assert '`meta["date"] = date.fromisoformat(str(meta["date"]))`' in fix.content
    assert fix.content.endswith("verified by re-running python build_index.py.")


def test_a_passing_test_run_confirms_a_reported_problem() -> None:
    log = Log()
    report = reported_then_edited(log)
    log.add("tool", "pytest -q", tool="Bash", command="pytest -q")
    log.add("tool", "============ 12 passed in 0.40s ============", tool="Bash")
    [fix] = fixes(log)
    assert fix.key == f"fix:{report.id}" and fix.content.endswith("verified by re-running pytest.")


def test_running_the_tests_is_not_the_change() -> None:
    log = Log()
    log.add("user", "the upload test is flaky, it fails about once in ten runs")
    log.add("tool", "pytest tests/test_upload.py", tool="Bash", command="pytest tests/test_upload.py")
    log.add("tool", "============ 3 passed in 0.52s ============", tool="Bash")
    log.add("user", "ok thanks, looks good now")
    assert fixes(log) == []


def test_changed_lines_from_patches_blocks_and_edit_inputs() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: seed.py\n@@\n-    return counts.sum()\n+    return sum(4 ** z for z in r)\n"
    )
    assert changed_lines(patch) == ["return sum(4 ** z for z in r)"]
    # OpenCode folds its input as key=value pairs separated by spaces; a value may hold "k=v" itself.
    opencode = "filePath=/src/app.py oldString=x = f(a) newString=x = f(a, timeout=30)"
    assert changed_lines(opencode, edit_input=True) == ["x = f(a, timeout=30)"]
    cline = (
        "path=Dockerfile diff=------- SEARCH RUN apt-get install -y libpq-dev ======= "
        "RUN apt-get install -y --no-install-recommends libpq-dev +++++++ REPLACE"
    )
    assert changed_lines(cline, edit_input=True) == ["RUN apt-get install -y --no-install-recommends libpq-dev"]
    # blanks, braces and imports say nothing about the fix; code comes before comments
    block = "<<<<<<< SEARCH\nx = 1\n=======\nimport os\n# keep it small\nx = 2\n}\n>>>>>>> REPLACE"
    assert changed_lines(block) == ["x = 2", "# keep it small"]
    assert changed_lines("no change here", edit_input=True) == []


def test_confirmations_in_english_and_chinese() -> None:
    assert confirmation("applied, went through fine this time.") == ("applied, went through fine this time", True)
    assert confirmation("可以了，迁移生成成功") == ("可以了，迁移生成成功", True)
    assert confirmation("thanks, that was quick") == ("thanks, that was quick", False)
    assert confirmation("CI 也绿了，连跑了 5 次都没挂 👌") is not None
    assert confirmation("does it work now?") is None
    assert confirmation("it still fails") is None
    assert confirmation("还是报错") is None


def test_gemini_output_ending_in_error_none_has_not_failed() -> None:
    output = "Command: make\nOutput: built\nError: (none)\nExit Code: 0\nSignal: (none)"
    assert not failed(output)
    assert failed("Command: make\nOutput: \nError: boom\nExit Code: 2")


# --- precision of preferences and decisions --------------------------------------------------------


def semantic(text: str) -> list[Item]:
    log = Log()
    log.add("user", text)
    items, _ = extract(log.session(), {})
    return [item for item in items if item.type == "semantic"]


def test_a_cue_after_a_colon_starts_a_clause_and_the_person_owns_it() -> None:
    [pref] = semantic("also, general thing about me: I always use uv, never pip. don't ask me again.")
    assert "I always use uv, never pip" in pref.content and pref.scope == "person"


def test_asides_local_instructions_and_problem_reports_are_not_preferences() -> None:
    assert semantic("don't ask me again.") == []  # says nothing once the conversation is gone
    assert semantic("要不要把集群换成 kubeadm？别了，k3s 挺好。") == []  # 别了: "never mind"
    assert semantic("你先说方案，不要直接写代码。") == []  # for this task, not a habit
    assert semantic("Stripe webhooks have been failing on staging since we moved the route.") == []
    assert semantic("导出一直报错，自从我们改用了新的 writer。") == []


def test_yilv_is_a_rule_and_every_project_makes_it_the_persons() -> None:
    [pref] = semantic("提交信息一律英文，用 conventional commits 格式，这是我个人的习惯，所有项目都这样")
    assert "conventional commits" in pref.content and pref.scope == "person"
    [mine] = semantic("我的 commit message 一律用小写英文。")
    assert mine.scope == "person"


def test_anywhere_else_outweighs_this_repo() -> None:
    [pref] = semantic("I never use npm, in this repo or anywhere else.")
    assert pref.scope == "person"
    [local] = semantic("We always use pnpm in this repo.")
    assert local.scope == "project"
