"""Episodes: one per task, told from how the task ended (not from the last message), with the tools' own summaries.

Sessions are built by hand in the shape the importers hand over (see test_ingest_extract.Log); the
importer tests at the end write small Codex and Claude Code files of their own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram_cli.ingest import importer
from engram_cli.ingest.extract import Item, task
from engram_cli.ingest.extract.task import after_thanks, aside, confirmation, new_task, next_task, unfinished
from tests.test_ingest_extract import Log, by_key, run


def episodes(items: list[Item]) -> list[Item]:
    return [i for i in items if i.type == "episodic"]


def fixed_and_thanked(log: Log, *, thanks: str, hypothetical: str, answer: str, closing: str) -> None:
    log.user("The cart total test fails on main since the merge; please fix it.")
    log.run(
        "pytest -q tests/test_cart.py",
        "F.\nE   assert 59.970000000000006 == 59.97\n1 failed, 1 passed in 0.1s",
        error=True,
    )
    log.assistant("cartTotal sums floats in euros; I'll sum integer cents instead.")
    log.edit("/home/dev/webshop/cart.py")
    log.run("pytest -q tests/test_cart.py", "..\n2 passed in 0.1s")
    log.assistant("The cart total is now summed in integer cents; both cart tests pass.")
    log.user(thanks)
    log.assistant(closing)
    log.user(hypothetical)
    log.assistant(answer)


# --- the outcome is the end state ------------------------------------------------------------------


def test_the_outcome_is_the_last_test_run_and_the_persons_words_not_the_closing_pleasantry() -> None:
    log = Log()
    fixed_and_thanked(
        log,
        thanks="great, tests pass now. thanks!",
        closing="You're welcome!",
        hypothetical="what if we stored prices as Decimal everywhere?",
        answer="Decimal would work too, but integer cents are simpler for the cart.",
    )
    [episode] = episodes(run(log.session())[0])
    assert episode.content == (
        "The cart total test fails on main since the merge; please fix it. cartTotal sums floats in euros; "
        "I'll sum integer cents instead. The cart total is now summed in integer cents; both cart tests pass. "
        "Tests: 2 passed; confirmed: “great, tests pass now”."
    )
    for noise in ("welcome", "Decimal", "1 failed", "Session in", "2026-03-02"):
        assert noise not in episode.content


def test_a_chinese_session_ends_with_the_persons_confirmation_not_goodbye() -> None:
    log = Log()
    log.user("订单导出的 CSV 在 Excel 里是乱码，帮我修一下。")
    log.run("pytest -q tests/test_export.py", "F\nE   UnicodeDecodeError: 'gbk'\n1 failed in 0.1s", error=True)
    log.assistant("导出时没有写 BOM，Excel 按 GBK 打开。我改成 utf-8-sig。")
    log.edit("/home/dev/webshop/export.py")
    log.run("pytest -q tests/test_export.py", ".\n1 passed in 0.1s")
    log.assistant("导出改为 utf-8-sig 编码，测试通过。")
    log.user("好了，测试过了，Excel 也正常了")
    log.assistant("好的，收工！")
    log.user("要不要顺便换成 xlsx？算了，不用。")
    log.assistant("好的，保持 CSV。")
    [episode] = episodes(run(log.session())[0])
    assert episode.content.startswith("订单导出的 CSV 在 Excel 里是乱码，帮我修一下。")
    assert "导出改为 utf-8-sig 编码，测试通过" in episode.content
    assert episode.content.endswith("测试通过（1 passed），用户确认：“好了，测试过了，Excel 也正常了”。")
    assert "收工" not in episode.content and "xlsx" not in episode.content and "CSV。" not in episode.content


def test_work_left_for_another_day_says_so_and_weighs_less() -> None:
    log = Log()
    log.user("搜索接口太慢了，p95 有 2 秒，帮我看看。")
    log.run("psql -c 'EXPLAIN ANALYZE SELECT …'", "Seq Scan on products  (actual time=0.1..1980 ms)")
    log.assistant("全表扫描：products 上没有 name 的索引。")
    log.user("今天先到这，下次再说。")
    [episode] = episodes(run(log.session())[0])
    assert (
        episode.content
        == "搜索接口太慢了，p95 有 2 秒，帮我看看。全表扫描：products 上没有 name 的索引。未完成，留待以后。"
    )
    assert episode.importance == 0.3


def test_importance_follows_the_strength_of_the_signal() -> None:
    talk = Log()
    talk.user("Which cache eviction policy should the tile server use under memory pressure?")
    talk.assistant("allkeys-lru keeps the hot tiles; volatile policies need TTLs you do not set.")
    committed = Log()
    fixed_and_thanked(committed, thanks="works now, thanks", closing="Glad it works.", hypothetical="ok",
                      answer="")  # fmt: skip
    committed.run("git commit -am 'fix(cart): sum in cents'", "[main 4e1c2ab] fix(cart): sum in cents")
    [low] = episodes(run(talk.session())[0])
    [high] = episodes(run(committed.session())[0])
    assert low.importance == 0.3 and high.importance == 0.55
    assert "committed “fix(cart): sum in cents”" in high.content


# --- one episode per task -------------------------------------------------------------------------


def test_a_new_request_after_a_confirmed_task_is_an_episode_of_its_own() -> None:
    log = Log()
    fixed_and_thanked(log, thanks="works now, thanks", closing="Glad it works.", hypothetical="ok", answer="")
    second = log.user("The invoice PDF shows boxes instead of Chinese characters in the customer's name.")
    log.assistant("Helvetica has no CJK glyphs; I'll embed Noto Sans SC.")
    log.edit("/home/dev/webshop/invoice.py")
    log.run("pytest -q tests/test_invoice.py", "...\n3 passed in 0.2s")
    log.assistant("The invoice embeds Noto Sans SC now; the name renders.")
    items, _ = run(log.session())
    keyed = by_key(episodes(items))
    assert set(keyed) == {"episode", f"episode:{second.id}"}
    assert "integer cents" in keyed["episode"].content and "Noto" not in keyed["episode"].content
    assert keyed[f"episode:{second.id}"].content.startswith("The invoice PDF shows boxes")
    assert "Tests: 3 passed" in keyed[f"episode:{second.id}"].content


def test_words_that_open_a_new_task_split_even_without_a_confirmation() -> None:
    log = Log()
    log.user("先看看 nginx 配置，checkout 接口要限流。")
    log.edit("/home/dev/webshop/deploy/nginx.conf")
    log.assistant("checkout 现在每个 IP 10r/s，burst 20。")
    second = log.user("第二件事：test_cart_merge 在 CI 上时不时失败，本地跑不出来。")
    log.edit("/home/dev/webshop/tests/test_cart.py")
    log.run("pytest -q tests/test_cart.py", "........\n8 passed in 2.1s")
    log.assistant("测试里冻结了时间，8 个测试都通过。")
    keyed = by_key(episodes(run(log.session())[0]))
    assert keyed["episode"].content == "先看看 nginx 配置，checkout 接口要限流。checkout 现在每个 IP 10r/s，burst 20。"
    assert keyed[f"episode:{second.id}"].content.startswith("test_cart_merge 在 CI 上时不时失败，本地跑不出来。")


def test_a_follow_up_or_a_closing_chat_is_the_same_task() -> None:
    log = Log()
    fixed_and_thanked(log, thanks="works now", closing="Good.", hypothetical="add a regression test too", answer="")
    log.edit("/home/dev/webshop/tests/test_cart.py")
    log.user("thanks, that's all for today")
    log.assistant("You're welcome!")
    assert [e.key for e in episodes(run(log.session())[0])] == ["episode"]


def test_each_task_of_a_session_read_in_parts_keeps_its_episode() -> None:
    log = Log()
    fixed_and_thanked(log, thanks="works now, thanks", closing="Glad it works.", hypothetical="ok", answer="")
    log.user("Now a different task: the sitemap misses the blog posts under /posts/2026.")
    log.edit("/home/dev/webshop/sitemap.py")
    log.assistant("The sitemap walks /posts recursively now.")
    whole = by_key(episodes(run(log.session())[0]))
    digest: dict[str, Any] = {}
    parts: dict[str, Item] = {}
    for message in log.messages:
        part = log.session(messages=[message])
        items, digest = run(part, digest)
        parts.update(by_key(episodes(items)))
    assert {k: v.content for k, v in parts.items()} == {k: v.content for k, v in whole.items()}
    assert len(whole) == 2


# --- the signals, one by one ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "words"),
    [
        ("great, tests pass now", "great, tests pass now"),
        ("ok. works now, thanks", "works now, thanks"),
        ("the tile renders now and the suite is green", "the tile renders now and the suite is green"),
        ("好了，测试过了", "好了，测试过了"),
        ("可以了", "可以了"),
        ("does it work now?", None),
        ("still fails with the same error", None),
        ("it doesn't work on staging", None),
        ("还是报错", None),
        ("内存超过了 24G", None),
        ("what if it works with Redis?", None),
    ],
)
def test_a_confirmation_is_the_persons_statement_that_it_works(said: str, words: str | None) -> None:
    assert confirmation(said) == words


@pytest.mark.parametrize(
    ("said", "left"),
    [
        ("let's pick this up tomorrow", True),
        ("not finished yet, I'll look again later", True),
        ("今天先到这，下次再说", True),
        ("明天再看", True),
        ("this is finished", False),
        ("下次再说吗？", False),
    ],
)
def test_leaving_it_for_later(said: str, left: bool) -> None:
    assert unfinished(said) is left


def test_what_opens_a_new_task_and_what_does_not() -> None:
    assert (
        next_task("ok 不折腾了。下一个：给 export 命令加一个 --max-zoom 参数") == "给 export 命令加一个 --max-zoom 参数"
    )
    assert next_task("Next: the sitemap misses the blog posts") == "the sitemap misses the blog posts"
    assert next_task("next we should run the tests") is None
    assert new_task("nice! The invoice PDF shows boxes instead of Chinese characters in names.")
    assert not new_task("nice！commit 吧。如果换成 DuckDB 会不会更快？")
    assert not new_task("add a regression test for that too")
    assert not new_task("what about committing HTML exports of the notebooks instead?")
    assert not new_task("does the checkout page still format the total correctly after this change?")
    assert after_thanks("thanks! Now the sitemap.") == "Now the sitemap."
    assert aside("what if we used Redis? nah.") and aside("谢谢") and not aside("fix the sitemap")


@pytest.mark.parametrize(
    ("output", "counts"),
    [
        ("..F.\n1 failed, 3 passed in 0.05s", "1 failed, 3 passed"),
        ("Test Files  1 passed (1)\n     Tests  4 passed (4)", "4 passed"),
        ("test result: ok. 12 passed; 0 failed; 0 ignored", "12 passed"),
        ("....\n----\nRan 4 tests in 0.01s\n\nOK", "4 ran"),
        ("ok  \tgit.lan/billing/internal/invoice\t0.3s", None),
    ],
)
def test_test_counts_are_the_runners_own(output: str, counts: str | None) -> None:
    assert task.test_counts(output) == counts


def test_a_runs_counts_decide_pass_over_an_error_word_in_its_output() -> None:
    log = Log()
    log.user("Fix the webhook signature check that rejects every Stripe event.")
    log.edit("/home/dev/billing/webhooks.py")
    log.run("pytest -q tests/test_webhooks.py", "Output: ......\n6 passed in 0.3s\nError: (none)\nExit Code: 0")
    [episode] = episodes(run(log.session())[0])
    assert episode.content.endswith("Tests: 6 passed.")


# --- the tools' own summaries ---------------------------------------------------------------------


def test_a_codex_thread_name_is_the_sessions_summary_and_the_last_rename_wins(tmp_path: Path) -> None:
    key = "0199a3c4-25c8-7156-a274-f98df2742b73"
    rollout = tmp_path / ".codex" / "sessions" / "2025" / "10" / "02" / f"rollout-2025-10-02T15-12-45-{key}.jsonl"
    rollout.parent.mkdir(parents=True)
    lines = [
        {"timestamp": "2025-10-02T07:12:45Z", "type": "session_meta", "payload": {"id": key, "cwd": "/src/shop"}},
        {"timestamp": "2025-10-02T07:13:00Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "搜索页白屏"}]}},
    ]  # fmt: skip
    rollout.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    index = tmp_path / ".codex" / "session_index.jsonl"
    names = [(key, "搜索页白屏"), ("other", "something else"), (key, "修复搜索无结果时 ProductList 崩溃")]
    index.write_text(
        "".join(json.dumps({"id": i, "thread_name": n, "updated_at": "2025-10-02T07:20:05Z"}) + "\n" for i, n in names),
        encoding="utf-8",
    )
    [session] = importer("codex").read(rollout, None).sessions
    assert session.summary == "修复搜索无结果时 ProductList 崩溃"
    index.unlink()
    rollout.with_name("elsewhere").touch()
    [session] = importer("codex").read(rollout, None).sessions
    assert session.summary is None


def _claude_line(session: str, uuid: str, parent: str | None, kind: str, content: Any, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": f"msg_{uuid}", "model": "claude-sonnet-4-5"}
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "cwd": "/home/dev/src/webshop",
        "sessionId": session,
        "uuid": uuid,
        "timestamp": "2026-03-02T10:00:00.000Z",
        "message": message,
    }
    record.update(extra)
    return json.dumps(record) + "\n"  # fmt: skip


def test_a_claude_summary_in_another_sessions_file_goes_to_the_session_holding_its_leaf(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-dev-src-webshop"
    folder.mkdir(parents=True)
    first, second = "d7f24510-24e4-4246-8b9c-48333b954cbb", "208e402d-d062-4f5e-834f-6cc475c2cb24"
    leaf = "9989e3d4-c78c-43a9-a477-54e5bce02c10"
    (folder / f"{first}.jsonl").write_text(
        _claude_line(first, "a1111111-0000-4000-8000-000000000001", None, "user", "The cart total test fails")
        + _claude_line(first, leaf, "a1111111-0000-4000-8000-000000000001", "assistant",
                       [{"type": "text", "text": "Fixed: totals are summed in integer cents."}]),
        encoding="utf-8",
    )  # fmt: skip
    (folder / f"{second}.jsonl").write_text(
        json.dumps({"type": "summary", "summary": "Cart total rounding fixed by summing in cents", "leafUuid": leaf})
        + "\n"
        + _claude_line(second, "b2222222-0000-4000-8000-000000000001", None, "user", "Let's discuss deploys"),
        encoding="utf-8",
    )
    sessions = importer("claude-code").read(folder / f"{second}.jsonl", None).sessions
    own, joined = sessions
    assert own.key == second and own.summary is None
    assert (joined.key, joined.path, joined.messages) == (first, str(folder / f"{first}.jsonl"), [])
    assert joined.summary == "Cart total rounding fixed by summing in cents"
    assert joined.project == "/home/dev/src/webshop"
    # The first session's digest takes the summary, and its episode (read before or after) leads with it.
    _, digest = run(joined)
    [ownsession] = importer("claude-code").read(folder / f"{first}.jsonl", None).sessions
    [episode] = episodes(run(ownsession, digest)[0])
    assert episode.content.startswith("Cart total rounding fixed by summing in cents.")


def test_a_compaction_summary_gives_the_task_of_a_session_continued_in_a_new_file(tmp_path: Path) -> None:
    session = "66c6b170-0490-438b-ae3d-3aca4ea50c8c"
    path = tmp_path / "projects" / "-home-dev-src-webshop" / f"{session}.jsonl"
    path.parent.mkdir(parents=True)
    summary = (
        "This session is being continued from a previous conversation that ran out of context.\n"
        "Summary:\n1. Primary Request and Intent: fix Stripe webhook signature verification after the route moved.\n"
        "2. Key Technical Concepts: express.json() consumes the body.\n"
    )
    path.write_text(
        _claude_line(session, "c3333333-0000-4000-8000-000000000001", None, "user", summary, isCompactSummary=True),
        encoding="utf-8",
    )
    [read] = importer("claude-code").read(path, None).sessions
    assert read.messages == [] and read.title == ("fix Stripe webhook signature verification after the route moved.")
