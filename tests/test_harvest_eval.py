"""engram eval --harvest: labelled sessions in, what ingest kept scored against what a colleague would keep."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engram_cli import config as configmod
from engram_cli.api import harvest
from engram_cli.errors import InvalidInput
from engram_cli.memory import harvest_eval
from engram_cli.memory.harvest_eval import HarvestReport, Label, Stored

FIXTURE = Path(__file__).parent / "fixtures" / "harvest"
CLAUDE = "claude-code:.claude/projects/-home-dev-src-webshop/3b7e2c10-5d4a-4f8e-9a61-2c0d8e4f7a93.jsonl"
AIDER_ZH = "aider:src/geo-tiles/.aider.chat.history.md@2025-03-04 10:12:40"
AIDER_EN = "aider:src/geo-tiles/.aider.chat.history.md@2025-03-06 16:02:11"


def _labels() -> dict[str, Label]:
    return {label.session: label for label in harvest_eval.read_labels(FIXTURE)}


def _stored(mid: str, text: str, *sessions: str, type: str = "semantic", namespace: str = "webshop") -> Stored:
    return Stored(mid, type, namespace, text, frozenset(sessions))


def _answers(table: dict[str, Sequence[str]]) -> harvest_eval.Search:
    asked: list[tuple[str, tuple[str, ...]]] = []

    def search(question: str, namespaces: Sequence[str]) -> Sequence[str]:
        asked.append((question, tuple(namespaces)))
        return table.get(question, [])

    search.asked = asked  # type: ignore[attr-defined]
    return search


# The Claude Code session's memories as a good extractor would keep them, plus one hypothetical.
GOOD_CLAUDE = [
    _stored("p1", "I always use pnpm, never npm or yarn.", CLAUDE, namespace="global"),
    _stored("d1", "We keep every amount in integer cents in the database.", CLAUDE),
    _stored("f1", "Checkout total test failed: formatTotal now calls toMajorUnits once.", CLAUDE, type="procedural"),
    _stored("e1", "Fixed the checkout total formatting in webshop; the checkout tests pass.", CLAUDE, type="episodic"),
    _stored("n1", "What if we used Redis to cache the cart totals?", CLAUDE),
]
CLAUDE_ANSWERS = {
    "how did we fix the checkout total test?": ["formatTotal now calls toMajorUnits once."],
    "which package manager do I use?": ["Something else", "I always use pnpm, never npm or yarn."],
}


# -- matching ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("I use pnpm everywhere", "pnpm", True),
        ("I use pnpm everywhere", "npm", False),  # not inside another word
        ("npm install", "NPM", True),
        ("the staging db is on 15433", "5433", False),
        ("the staging db is on :5433", "5433", True),
        ("blue-green deploys", "deploy", True),  # a word may go on: plurals, tenses
        ("we use 2 ** z now", "2 ** z", True),
        ("我一直用pnpm", "pnpm", True),  # after a Chinese character a word starts
        ("以后这个项目的端口统一用 8081", "端口", True),  # Chinese: anywhere
        ("ＰＮＰＭ", "pnpm", True),  # full-width letters are letters
        ("tile_count overflow", "count", False),
    ],
)
def test_terms_match_where_words_start_and_chinese_anywhere(text: str, term: str, found: bool) -> None:
    assert harvest_eval.has_term(harvest_eval.fold(text), term) is found


def test_any_terms_need_one_of_them() -> None:
    terms = harvest_eval.Terms(("pnpm",), ("npm", "yarn"))
    assert terms.found_in(harvest_eval.fold("pnpm, not yarn"))
    assert not terms.found_in(harvest_eval.fold("pnpm only"))


def test_a_session_is_named_by_its_file_its_key_or_its_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    history = home / "src" / "geo-tiles" / ".aider.chat.history.md"
    names = harvest_eval.session_names("aider", str(history), f"{history}@2025-03-04 10:12:40", home)
    assert "aider:src/geo-tiles/.aider.chat.history.md" in names
    assert "aider:src/geo-tiles/.aider.chat.history.md@2025-03-04 10:12:40" in names
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    names = harvest_eval.session_names("opencode", str(db), "ses_7f3a", home)
    assert {"opencode:ses_7f3a", "opencode:.local/share/opencode/opencode.db#ses_7f3a"} <= names
    task = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" / "1748"
    names = harvest_eval.session_names("cline", str(task / "api_conversation_history.json"), "1748", home)
    assert "cline:.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1748" in names
    # A file outside the home is no session of the benchmark's.
    assert harvest_eval.session_names("aider", "/elsewhere/x.md", None, home) == set()
    assert harvest_eval.split_session(AIDER_ZH) == (
        "aider", "src/geo-tiles/.aider.chat.history.md", "@2025-03-04 10:12:40",
    )  # fmt: skip


# -- scoring -------------------------------------------------------------------------------------


def test_metrics_of_a_session_with_one_hypothetical_stored() -> None:
    label = _labels()[CLAUDE]
    search = _answers(CLAUDE_ANSWERS)
    report = harvest_eval.score([label], GOOD_CLAUDE, search)
    t = report.overall
    assert (t.sessions, t.memories, t.precise) == (1, 5, 4)
    assert t.precision == pytest.approx(0.8)
    assert t.recall == 1.0 and t.fix_recall == 1.0 and t.outcome_correctness == 1.0
    assert t.answerability == 1.0 and t.scope_correctness == 1.0
    (session,) = report.sessions
    assert [j.id for j in session.noise] == ["n1"] and "Redis" in session.noise[0].why
    # Questions are asked in the session's project and the global scope, as a person there would.
    assert search.asked[0][1] == ("webshop", "global")  # type: ignore[attr-defined]


def test_a_noise_term_makes_precision_drop() -> None:
    label = _labels()[CLAUDE]
    before = harvest_eval.score([label], GOOD_CLAUDE, _answers(CLAUDE_ANSWERS)).overall
    noisy = replace(label, noise=(*label.noise, "yarn"))
    after = harvest_eval.score([noisy], GOOD_CLAUDE, _answers(CLAUDE_ANSWERS))
    assert before.precision == pytest.approx(0.8) and after.overall.precision == pytest.approx(0.6)
    assert {j.id for j in after.sessions[0].noise} == {"n1", "p1"}


def test_a_missing_fix_makes_error_fix_recall_drop() -> None:
    label = _labels()[CLAUDE]
    without_fix = [m for m in GOOD_CLAUDE if m.id != "f1"]
    report = harvest_eval.score([label], without_fix, _answers(CLAUDE_ANSWERS))
    assert report.overall.fix_recall == 0.0 and report.overall.recall == pytest.approx(2 / 3)
    assert report.sessions[0].missing == ["fix (project): toMajorUnits + once"]
    # The question whose answer was the fix is not answered from what is left.
    unanswered = harvest_eval.score([label], without_fix, _answers({})).sessions[0].unanswered
    assert len(unanswered) == 2 and unanswered[0].startswith("how did we fix the checkout total test?")


def test_scope_is_wrong_when_a_preference_stays_in_the_project() -> None:
    label = _labels()[CLAUDE]
    local = [_stored("p1", "I always use pnpm, never npm or yarn.", CLAUDE, namespace="webshop"), *GOOD_CLAUDE[1:]]
    report = harvest_eval.score([label], local, _answers(CLAUDE_ANSWERS))
    assert report.overall.scope_correctness == pytest.approx(2 / 3)
    assert "not global" in report.sessions[0].wrong_scope[0].why


@pytest.mark.parametrize(
    ("episode", "why"),
    [
        ("Worked on the checkout total; tests still fail.", "says 'still fail'"),
        ("Worked on the checkout total formatting.", "no episode holds 'tests pass'"),
        (None, "no episode was stored"),
    ],
)
def test_outcome_comes_from_the_episode(episode: str | None, why: str) -> None:
    label = _labels()[CLAUDE]
    memories = [m for m in GOOD_CLAUDE if m.type != "episodic"]
    if episode is not None:
        memories.append(_stored("e2", episode, CLAUDE, type="episodic"))
    session = harvest_eval.score([label], memories, _answers(CLAUDE_ANSWERS)).sessions[0]
    assert session.tally.outcomes == 1 and session.tally.outcomes_right == 0
    assert session.outcome is not None and why in session.outcome


def test_groups_merged_memories_and_unlabelled_ones() -> None:
    labels = _labels()
    memories = [
        *GOOD_CLAUDE,
        _stored("z1", "瓦片数量：改成 2 ** z 并 clamp zoom 到 0..22", AIDER_ZH, namespace="geo-tiles"),
        # One memory from two sessions (a merge) counts in each.
        _stored("z2", "geo-tiles 开发端口 8081; staging: tiles-staging.geo.internal", AIDER_ZH, AIDER_EN,
                namespace="geo-tiles"),
        _stored("u1", "a memory from a session nobody labelled", "aider:src/blog/.aider.chat.history.md"),
    ]  # fmt: skip
    report = harvest_eval.score(list(labels.values()), memories, _answers(CLAUDE_ANSWERS))
    assert report.memories == 8 and report.unlabelled == 1
    assert report.overall.memories == 5 + 2 + 1
    zh, en = report.groups["lang=mixed"], report.groups["lang=en"]
    assert (zh.sessions, zh.memories, zh.precise, zh.fixed, zh.fixes) == (1, 2, 2, 1, 1)
    assert zh.outcome_correctness == 0.0  # no episode
    assert (en.sessions, en.memories) == (2, 6)
    assert report.groups["source=aider"].recall == 1.0
    assert report.groups["source=aider"].answerability == 0.0  # the stub search knows no Aider question
    data = report.json_form(verbose=True)
    assert data["memories_unlabelled"] == 1 and data["groups"]["lang=mixed"]["precision"] == 1.0
    assert [s["session"] for s in data["per_session"]] == [s.session for s in report.sessions]
    assert "per_session" not in report.json_form()


# -- labels --------------------------------------------------------------------------------------

GOOD_LINE = json.loads((FIXTURE / "labels" / "claude-code.jsonl").read_text(encoding="utf-8").splitlines()[0])


def _with(**changes: Any) -> str:
    line = {**GOOD_LINE, **changes}
    return json.dumps({k: v for k, v in line.items() if v is not None}, ensure_ascii=False)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"session": "claude-code:x.jsonl", "source": ', "line 2: invalid JSON"),
        ("[1, 2]", "line 2: not an object"),
        (_with(lang="fr"), "line 2: 'lang' must be one of en, zh, mixed, not 'fr'"),
        (_with(session="codex:" + CLAUDE.split(":", 1)[1]), "line 2: 'session' must be \"claude-code:"),
        (_with(session="claude-code:.claude/projects/none.jsonl"), "line 2: session 'claude-code:.claude/projects"),
        (_with(session="claude-code:../outside.jsonl"), "which is not under home/"),
        (_with(expect=[{"kind": "opinion", "scope": "person", "must": ["x"]}]), "'expect[1].kind' must be one of"),
        (_with(expect=[{"kind": "fact", "scope": "team", "must": ["x"]}]), "'expect[1].scope' must be person or"),
        (_with(expect=[{"kind": "fact", "scope": "project", "must": []}]), "'expect[1].must' must name at least"),
        (_with(expect=[{"kind": "fact", "scope": "project", "must": ["x"], "confirmed_by": "words"}]),
         "only a fix has 'error' and 'confirmed_by'"),
        (_with(questions=[{"q": "", "must": ["x"]}]), "'questions[1].q' must be non-empty text"),
        (_with(outcome={"must": ["ok"], "never": ["x"]}), "'outcome' must be an object with 'must'"),
        (_with(noise="Redis"), "'noise' must be a list of non-empty strings"),
        (_with(extra=1), "unknown key(s) extra"),
    ],
)  # fmt: skip
def test_a_bad_label_line_names_its_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(FIXTURE / "home", bench / "home")
    (bench / "labels").mkdir()
    (bench / "labels" / "claude-code.jsonl").write_text(_with() + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        harvest_eval.read_labels(bench)
    assert caught.value.message.startswith("labels/claude-code.jsonl line 2: ")
    assert message in caught.value.message
    assert caught.value.hint


def test_a_session_labelled_twice_or_no_labels_at_all(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(FIXTURE, bench)
    with pytest.raises(InvalidInput, match=r"line 1: session .* is labelled twice \(also in labels/claude-code"):
        (bench / "labels" / "more.jsonl").write_text(_with() + "\n", encoding="utf-8")
        harvest_eval.read_labels(bench)
    shutil.rmtree(bench / "labels")
    with pytest.raises(InvalidInput, match="has no labels/"):
        harvest_eval.read_labels(bench)


# -- staging -------------------------------------------------------------------------------------


def test_staging_maps_the_benchmark_home_in_text_files_only(tmp_path: Path) -> None:
    source = tmp_path / "home"
    (source / "logs").mkdir(parents=True)
    (source / "logs" / "s.jsonl").write_text(
        '{"cwd":"/home/dev/src/webshop"}\n{"cwd":"/home/developer/x"}\n{"cwd":"/home/dev"}\n', encoding="utf-8"
    )
    binary = b"SQLite format 3\0/home/dev/src/blog\0"
    (source / "logs" / "app.db").write_bytes(binary)
    staged = tmp_path / "staged" / "home"
    harvest.stage(source, staged)
    lines = (staged / "logs" / "s.jsonl").read_text(encoding="utf-8").splitlines()
    here = staged.as_posix()
    assert lines == [f'{{"cwd":"{here}/src/webshop"}}', '{"cwd":"/home/developer/x"}', f'{{"cwd":"{here}"}}']
    assert (staged / "logs" / "app.db").read_bytes() == binary
    assert (source / "logs" / "s.jsonl").read_text(encoding="utf-8").startswith('{"cwd":"/home/dev/src')


# -- the whole run, on the fixture ---------------------------------------------------------------


def _run(bench: Path, tmp: Path) -> HarvestReport:
    paths = configmod.Paths(data_dir=tmp / "data", config_dir=tmp / "config", cache_dir=tmp / "cache")
    return harvest.evaluate(bench, paths=paths, config=configmod.Config())


def _variant(tmp: Path, name: str, session: str, **changes: Any) -> Path:
    """The fixture with one session's label changed."""
    bench = tmp / name
    shutil.copytree(FIXTURE, bench)
    for path in (bench / "labels").glob("*.jsonl"):
        lines = []
        for raw in path.read_text(encoding="utf-8").splitlines():
            line = json.loads(raw)
            if line["session"] == session:
                line.update({key: value(line[key]) for key, value in changes.items()})
            lines.append(json.dumps(line, ensure_ascii=False))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bench


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, HarvestReport]:
    """The fixture scored as it is, with 'pnpm' called noise, and with a fix nothing in the logs holds."""
    tmp = tmp_path_factory.mktemp("harvest-runs")
    return {
        "plain": _run(FIXTURE, tmp),
        "noisy": _run(_variant(tmp, "noisy", CLAUDE, noise=lambda words: [*words, "pnpm"]), tmp),
        "unfixed": _run(
            _variant(
                tmp, "unfixed", AIDER_EN,
                expect=lambda items: [*items, {"kind": "fix", "scope": "project", "must": ["flock", "retry"]}],
            ),
            tmp,
        ),
    }  # fmt: skip


def test_every_labelled_session_is_ingested_and_attributed(runs: dict[str, HarvestReport]) -> None:
    report = runs["plain"]
    assert report.ingest_errors == []
    assert [s.session for s in report.sessions] == [AIDER_ZH, AIDER_EN, CLAUDE]  # labels/ in name order
    assert report.overall.sessions == 3 and report.unlabelled == 0
    assert all(s.tally.memories >= 1 for s in report.sessions)
    assert report.memories == report.overall.memories  # nothing was merged across sessions here
    assert set(report.groups) == {"source=aider", "source=claude-code", "lang=en", "lang=mixed"}
    for tally in (report.overall, *report.groups.values()):
        for value in (tally.precision, tally.recall, tally.answerability, tally.scope_correctness):
            assert value is None or 0.0 <= value <= 1.0
    # The person's preference goes to the global scope and is found there from the project.
    claude = next(s for s in report.sessions if s.session == CLAUDE)
    assert not any("pnpm" in m for m in claude.missing) and claude.wrong_scope == []
    assert claude.tally.answered == claude.tally.questions == 2


def test_a_noise_term_in_the_labels_lowers_precision(runs: dict[str, HarvestReport]) -> None:
    plain = next(s for s in runs["plain"].sessions if s.session == CLAUDE)
    noisy = next(s for s in runs["noisy"].sessions if s.session == CLAUDE)
    assert noisy.tally.memories == plain.tally.memories
    assert noisy.tally.precise < plain.tally.precise
    assert any("holds the noise term 'pnpm'" in j.why for j in noisy.noise)
    assert runs["noisy"].overall.precision < runs["plain"].overall.precision  # type: ignore[operator]


def test_a_fix_nothing_holds_lowers_error_fix_recall(runs: dict[str, HarvestReport]) -> None:
    plain, unfixed = runs["plain"].overall, runs["unfixed"].overall
    assert unfixed.fixes == plain.fixes + 1 and unfixed.fixed == plain.fixed
    assert unfixed.fix_recall < plain.fix_recall  # type: ignore[operator]
    session = next(s for s in runs["unfixed"].sessions if s.session == AIDER_EN)
    assert "fix (project): flock + retry" in session.missing


# -- the command ---------------------------------------------------------------------------------


def test_the_command_reports_json_and_leaves_the_callers_home_alone(cli: Any, engram_home: Path) -> None:
    home_before = os.environ["HOME"]
    result = cli("eval", "--harvest", str(FIXTURE), "--json")
    data = json.loads(result.stdout)
    assert data["sessions"] == 3 and data["memories_unlabelled"] == 0
    assert {"precision", "recall", "answerability", "fix_recall", "outcome_correctness", "scope_correctness"} <= set(
        data
    )
    assert "source=claude-code" in data["groups"] and "per_session" not in data
    assert os.environ["HOME"] == home_before
    assert not (engram_home / "engram.db").exists()  # the run had a database of its own


def test_the_command_shows_a_table_and_with_v_each_sessions_noise(cli: Any, tmp_path: Path) -> None:
    bench = _variant(tmp_path, "noisy", CLAUDE, noise=lambda words: [*words, "pnpm"])
    plain = cli("eval", "--harvest", str(bench)).stdout
    assert plain.splitlines()[0].split()[:4] == ["group", "sessions", "memories", "mem/session"]
    assert "lang=mixed" in plain and "memories stored" in plain and "noise term" not in plain
    text = cli("-v", "eval", "--harvest", str(bench)).stdout
    assert f"{CLAUDE} (en, webshop)" in text
    assert "holds the noise term 'pnpm'" in text


def test_the_command_refuses_a_bad_benchmark(cli: Any, tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(FIXTURE, bench)
    with (bench / "labels" / "aider.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    result = cli("eval", "--harvest", str(bench), ok=False)
    assert result.exit_code == 1 and "labels/aider.jsonl line 3: invalid JSON" in result.stderr
    assert "Traceback" not in result.stderr
    result = cli("eval", "--harvest", str(tmp_path / "nowhere"), ok=False)
    assert result.exit_code == 1 and "is not a directory" in result.stderr
    result = cli("eval", "queries.jsonl", "--harvest", str(bench), ok=False)
    assert result.exit_code == 2 and "--harvest" in result.stderr
