"""The lexical merge guard: numbers read in order, Chinese negation read by words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.memory.similarity import merge_blockers, merge_decision, negates, profile

# Texts that say no: each must read as a negation.
CHINESE_NEGATIONS = [
    "不要用 npm",  # don't use npm
    "不再使用 Travis",  # no longer use
    "没有测试",  # there are no tests
    "别提交 .env",  # don't commit
    "禁止推送到 main",  # pushing to main is forbidden
    "避免全局安装",  # avoid installing globally
    "迁移未通过",  # the migration did not pass
    "切勿删除备份",  # never delete the backup
    "无需重启",  # no need to restart
    "我不同意这个方案",  # disagree (不同 + 意)
    "两个库的数据不同步",  # not in sync (不同 + 步)
    "日志里没错误",  # no errors (没错 + 误)
    "没收到告警邮件",  # did not receive (没收 + 到)
    "不断开连接",  # do not disconnect (不断 + 开)
    "这个方法不管用",  # does not work (不管 + 用)
    "token 不过期",  # does not expire (不过 + 期)
    "测试通不过",  # the tests do not pass (a verb before 不过)
    "这部分别提交",  # don't commit this part (部分 + 别)
    "这个别改",  # don't change this one (这个 + 别)
    "未必需要缓存",  # not necessarily needed: a hedge still weakens the fact
    "不一定需要缓存",
]
# Words that hold a negation character but negate nothing.
CHINESE_NOT_NEGATIONS = [
    "服务不稳定",  # unstable
    "部署到别的服务器",  # other
    "未来的版本",  # future
    "效果不错",  # good
    "不仅快而且稳",  # not only
    "不过要先登录",  # but
    "差不多完成了",  # almost
    "不久就会发布",  # soon
    "不断重试",  # keeps retrying
    "不同的环境",  # different
    "和以前不一样",  # different
    "不少用户在用",  # quite a few
    "没错，就是这个端口",  # right
    "别人的代码",  # others'
    "特别重要",  # especially
    "区别在于缓存",  # the difference
    "给字段加一个别名",  # alias (一个 + 别名)
    "日志级别",  # log level
    "识别错误码",  # recognise
    "分别部署",  # separately
    "个别测试失败",  # a few tests failed
    "这类别名",  # this kind of alias
    "是不是要重启",  # a question
    "有没有测试",  # a question
    "不可避免会有延迟",  # unavoidable
    "不得不重启",  # have to
    "说不定明天就好了",  # maybe
    "未知错误",  # unknown
]


@pytest.mark.parametrize("text", CHINESE_NEGATIONS)
def test_chinese_negations_are_read(text: str) -> None:
    assert negates(text)


@pytest.mark.parametrize("text", CHINESE_NOT_NEGATIONS)
def test_words_holding_a_negation_character_do_not_negate(text: str) -> None:
    assert not negates(text)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("部署前要跑集成测试，特别是支付模块", "部署前要跑集成测试，支付模块"),
        ("别的服务也用 Redis 做缓存", "服务也用 Redis 做缓存"),
        ("未来的版本用 pnpm 安装依赖", "版本用 pnpm 安装依赖"),
        ("差不多每天部署一次", "每天部署一次"),
        ("这个服务不稳定，要加重试", "这个服务要加重试"),
        ("效果不错，部署到生产", "效果很好，部署到生产"),
    ],
)
def test_a_difference_of_such_words_is_not_opposite_polarity(a: str, b: str) -> None:
    assert "opposite polarity" not in merge_blockers(a, b)


def test_a_real_negation_is_opposite_polarity() -> None:
    assert "opposite polarity" in merge_blockers("用 pnpm 安装依赖", "不要用 pnpm 安装依赖")
    assert "opposite polarity" in merge_blockers("部署前要跑集成测试", "部署前不要跑集成测试")


def test_swapped_numbers_are_different_numbers() -> None:
    assert merge_blockers("worker 0, round 5", "worker 5, round 0") == ["different numbers"]
    assert merge_blockers("port 5432 then 8080", "port 8080 then 5432") == ["different numbers"]
    assert merge_blockers("retry 3 times, 3 s apart", "retry 3 times, s apart") == ["different numbers"]


def test_the_same_numbers_in_the_same_order_may_merge() -> None:
    assert merge_blockers("Worker 0 failed in round 5", "worker 0 failed in round 5!") == []
    assert merge_blockers("v1.2.3 listens on :8080", "v1.2.3 listens on port 8080") == []


def test_a_profiled_text_decides_as_its_text_does() -> None:
    pairs = [("worker 0, round 5", "worker 5, round 0", 0.99), ("use pnpm", "Use pnpm!", 0.5)]
    for a, b, cosine in pairs:
        assert merge_decision(a, profile(b), cosine, 0.95) == merge_decision(a, b, cosine, 0.95)


def test_add_keeps_swapped_numbers_apart(engram: Engram) -> None:
    first = engram.add("worker 0, round 5")
    second = engram.add("worker 5, round 0")
    assert second.action == "created" and second.similar_id == first.id
    assert second.kept_apart_because == ["different numbers"]
    assert engram.add("Worker 0, round 5.").action == "merged"


def test_add_merges_texts_that_differ_by_a_word_that_only_looks_negative(engram: Engram) -> None:
    first = engram.add("部署前要跑集成测试，特别是支付模块")
    again = engram.add("部署前要跑集成测试，支付模块")
    assert again.action == "merged" and again.id == first.id


def _conflicts(cli: Any) -> int:
    data = json.loads(cli("audit", "--json").stdout)
    return next(int(c["count"]) for c in data["checks"] if c["name"] == "conflicts")


def test_audit_reports_no_conflict_for_a_word_that_only_looks_negative(cli: Any) -> None:
    cli("add", "部署前要跑集成测试，特别是支付模块", "--no-merge")
    cli("add", "部署前要跑集成测试，支付模块", "--no-merge")
    assert _conflicts(cli) == 0


def test_audit_reports_a_real_negation_as_a_conflict(cli: Any) -> None:
    cli("add", "部署前要跑集成测试", "--no-merge")
    cli("add", "部署前不要跑集成测试", "--no-merge")
    assert _conflicts(cli) == 1
