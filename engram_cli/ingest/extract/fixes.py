"""Fixes: a problem reported by the person, the lines a change put in, and the words that confirm it worked.

An error→fix memory is worth keeping only when it holds the fix itself. Three things make one:

- **the problem**: a failed command (see :mod:`.outcome`), or the person pasting an error line or
  reporting something broken ("the export crashes with database is locked", 搜索页白屏);
- **the change**: the lines an edit put in (an edit tool's ``new_string``, a patch's ``+`` lines, an
  Aider ``SEARCH/REPLACE`` block), the files it touched, the commands run;
- **the confirmation**: a passing re-run, a commit (Aider's ``Commit <sha> …``, ``git commit``), or the
  person saying so ("works now", "great, tests pass", 好了, 可以了, 跑通了).

This module holds the rules that read each of them from text; :mod:`.reader` follows a session through
them and writes the memory with :func:`fix_text`.
"""

from __future__ import annotations

import json
import re

from engram_cli.ingest.extract.outcome import _FILLER_REPLY, _INTENTION, _META, _assistant_sentences, error_line
from engram_cli.ingest.extract.state import _Failure
from engram_cli.ingest.extract.wording import _CJK_CHAR, _clip, _is_chinese, _prose, _sentences, _weight

# Changed lines kept per problem, and how long each may be in a memory.
MAX_LINES = 3
LINE_CHARS = 160

# --- the change ----------------------------------------------------------------------------------

_SEARCH_REPLACE = re.compile(
    r"^[ \t]*<{5,9}[ \t]*SEARCH[^\n]*\n(.*?)^[ \t]*={5,9}[ \t]*\n(.*?)^[ \t]*>{5,9}[ \t]*REPLACE",
    re.DOTALL | re.MULTILINE,
)
_FOLDED_BLOCK = re.compile(r"-{3,9} SEARCH (.*?) ={5,9} (.*?)(?: \+{3,9} REPLACE|(?: …)?$)")
_DIFF_FENCE = re.compile(r"```(?:diff|patch)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PATCH = re.compile(r"\*\*\* Begin Patch|^@@|^diff --git |^\+\+\+ ", re.MULTILINE)
# What edit tools call the text they put in and the text it replaced, across the tools.
_NEW_KEYS = ("new_string", "newString", "new_str", "new_text", "newText", "replace", "replacement", "content")
_OLD_KEYS = ("old_string", "oldString", "old_str", "old_text", "oldText", "search")
_PATH_KEYS = ("file_path", "filePath", "path", "file", "filename", "target_file", "expected_replacements")
# Rendered tool input: ``key=value, key=value`` or ``key=value key=value`` (the importers fold each value
# onto one line); only the keys edit tools use are looked for, so a ``k=v`` inside a value stays in it.
_RENDERED = re.compile(r"(?:^|[\s,])(" + "|".join(_NEW_KEYS + _OLD_KEYS + _PATH_KEYS) + r")=")
_IMPORT = re.compile(r"^(?:import\s|from\s+\S+\s+import\s|#include\b|use\s+[\w:]+;|require\(|const \w+ = require\()")
_COMMENT = re.compile(r"^(?:#|//|--|/\*|\*|;|<!--)")
_TRIVIAL = re.compile(r"^[\s{}()\[\];,.:]*$|^(?:else|try|finally|end|fi|done|pass|return|break|continue)\s*[:;{]?$")


def _rendered_values(text: str) -> dict[str, str]:
    """The ``key=value`` pairs of a rendered tool input (or a JSON object), by key."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return {str(k): v for k, v in data.items() if isinstance(v, str)}
    keys = list(_RENDERED.finditer(text))
    out: dict[str, str] = {}
    for i, match in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(text)
        out[match.group(1)] = text[match.end() : end].removesuffix(" …")
    return out


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip()


def _added(old: str, new: str) -> list[str]:
    """The lines of ``new`` that ``old`` does not have, worth quoting: no blanks, braces, imports."""
    before = {_norm(line) for line in old.splitlines()}
    out: list[str] = []
    for line in new.splitlines():
        line = _norm(line)
        if not line or line in before or line in out or _TRIVIAL.match(line) or _IMPORT.match(line):
            continue
        if len(re.findall(r"\w", line)) < 2:
            continue
        out.append(line)
    # Code before comments: the line that changed says more than the note beside it, and both may fit.
    return sorted(out, key=lambda line: bool(_COMMENT.match(line)))


def _patch_lines(text: str) -> list[str]:
    old = "\n".join(ln[1:] for ln in text.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    new = "\n".join(ln[1:] for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    return _added(old, new)


def changed_lines(text: str, *, edit_input: bool = False) -> list[str]:
    """The lines a change put in, best first: from SEARCH/REPLACE blocks, patches, or an edit tool's input.

    ``edit_input`` says the text is an edit tool's input (``file_path=…, old_string=…, new_string=…`` or
    its JSON); otherwise only blocks and patches in prose or a command count.
    """
    text = text[:8000]
    out: list[str] = []
    for search, replace in _SEARCH_REPLACE.findall(text):
        out += _added(search, replace)
    for body in _DIFF_FENCE.findall(text):
        out += _patch_lines(body)
    if not out and _PATCH.search(text):
        out += _patch_lines(text.replace("\\n", "\n"))
    if not out and edit_input:
        for search, replace in _FOLDED_BLOCK.findall(text):  # Cline's diff=, folded onto one line
            out += _added(search, replace)
    if not out and edit_input:
        values = _rendered_values(text)
        new = next((values[k] for k in _NEW_KEYS if k in values), "")
        old = next((values[k] for k in _OLD_KEYS if k in values), "")
        out += _added(old, new)
    seen: list[str] = []
    for line in out:
        if line not in seen:
            seen.append(line)
    return [_clip(line.replace("`", "'"), LINE_CHARS) for line in seen[:MAX_LINES]]


# --- the problem the person reports --------------------------------------------------------------

_PROBLEM_EN = re.compile(
    r"\b(?:fix(?:es)?|bug|broken|breaks|wrong|fail(?:s|ed|ing)?|crash(?:es|ed|ing)?|errors?|exception|"
    r"doesn't work|does not work|isn't working|not working|stopped working|returns? (?:a )?[45]\d\d|"
    r"(?:get|gets|got|getting) (?:a )?[45]\d\d|slow|hangs?|flaky|regression|negative|overflow\w*|dies|died|"
    r"refused|timed? ?out|garbled|missing|blew up|blows up|broke|down)\b",
    re.IGNORECASE,
)
_PROBLEM_ZH = re.compile(
    "报错|報錯|挂了|掛了|挂掉|掛掉|失败|失敗|不对|不對|错了|錯了|出错|出錯|有问题|有問題|不行|起不来|起不來|搜不到|找不到|"
    "打不开|打不開|白屏|不可复现|不可復現|崩溃|崩潰|卡住|超时|超時|修一下|修复|修復|乱码|亂碼|方块|方塊|太慢|很慢|变慢|變慢|"
    "不生效|没生效|沒生效|不一致|重复|重複|偶尔|偶爾|异常|異常"
)
# The frame some tools draw around an error (Terraform's box).
_FRAME = "\u2502\u2503|\u2577\u2575 "
_LOG_LINE = re.compile(
    r"[A-Za-z_][\w.]*?(?:Error|Exception)\b|\b(?:ERROR|FATAL|FAILED|FAIL|Traceback|panic|fatal|Error:)|^E\s"
)
_FIX_WORD = re.compile(r"\bfix(?:es)?\b", re.IGNORECASE)
_NOT_A_REPORT = re.compile(r"^(?:what if|suppose|imagine|hypothetically|假设|假設|假如|如果)", re.IGNORECASE)
# A question about a problem ("why does X fail?") is a report too, unless it asks about a hypothetical.
_QUESTION = re.compile(r"^(?:what if|would|could)\b|要不要|会不会|會不會", re.IGNORECASE)


def pasted_error(text: str) -> str | None:
    """The error line the person pasted (from where the log's words start), or None."""
    line = error_line(text)
    found = _LOG_LINE.search(line) if line else None
    if line is None or found is None:
        return None
    # "控制台报错：TypeError: …": the log line starts at its first log word; a box frame is not part of it.
    start = found.start() if _CJK_CHAR.search(line[: found.start()]) else 0
    return line[start:].strip(_FRAME + "：: ") or None


def reported_problem(text: str) -> str | None:
    """What the person reports as broken: a pasted error line, else the sentence naming the problem."""
    line = pasted_error(text)
    if line and line == (error_line(text) or "").strip(_FRAME):
        return line  # a log pasted on its own, not a sentence of the person's that quotes one
    sentences = [s for s in _sentences(_prose(text) or text) if len(s) <= 400]
    sentences = [s for s in sentences if not (_NOT_A_REPORT.match(s) or _QUESTION.search(s))]
    symptom = next((s for s in sentences if _PROBLEM_EN.search(_FIX_WORD.sub("", s)) or _PROBLEM_ZH.search(s)), None)
    if symptom is None and any(_FIX_WORD.search(s) for s in sentences):
        symptom = sentences[0]  # "… fix it": the problem is what the message said first
    return _clip(symptom.replace("`", "'"), 160) if symptom else None


# --- the confirmation in words -------------------------------------------------------------------

_CONFIRM_EN = re.compile(
    r"\b(?:works?(?: now| again| fine| great)?|working(?: now| again)?|worked|fixed|solved|resolved|that did it|"
    r"did the trick|(?:tests?|ci|build|checks?|it) (?:pass(?:es|ed)?|(?:is |are |went |turned )?green)|"
    r"passes now|passing now|all green|green now|looks (?:right|good|correct) now|(?:good|fine|ok|okay|clean) now|"
    r"back up|went through|(?:fine|clean) this time|did it|lgtm)\b",
    re.IGNORECASE,
)
# Thanks and praise confirm less: they close a problem only when nothing says it is still open.
_CONFIRM_WEAK = re.compile(r"^(?:great|perfect|nice|excellent|awesome|good|cool|thanks|thank you|thx)\b", re.IGNORECASE)
_CONFIRM_ZH = re.compile(
    "好了|可以了|行了|成了|通了|跑通|通过了|通過了|过了|過了|解决了|解決了|没问题了|沒問題了|正常了|绿了|綠了|成功|搞定|"
    "修好了|连上了|連上了|没事了|沒事了|生效了|对上了|對上了|一致了|没再|沒再|都没挂|都沒掛"
)
_CONFIRM_ZH_WEAK = re.compile("^(?:谢谢|謝謝|多谢|多謝|太好了|不错|不錯|完美|漂亮)|👍|👌|🎉")
_STILL = re.compile(
    r"\b(?:still|again|not|no longer|doesn't|does not|didn't|isn't|won't|nope|same error)\b|"
    "还是|還是|仍然|依然|又(?:挂|掛|报|報|失败|失敗)|没(?:有)?(?:好|用|变|變)|沒(?:有)?(?:好|用|变|變)|不行|失败|失敗|报错|報錯",
    re.IGNORECASE,
)

# "didn't fail once", 没再出现: a negation that confirms.
_NO_LONGER = re.compile(r"\b(?:didn't|no longer|never) (?:fail|crash|break|time)\w*|没再\S*|沒再\S*|都没挂|都沒掛")


def confirmation(text: str) -> tuple[str, bool] | None:
    """The words of a person's message that say a fix worked: (quote, strong), or None.

    Only the first sentences count (a confirmation comes first, the next request after it), and
    a sentence that says it is still broken, or asks, confirms nothing.
    """
    prose = _prose(text)
    if not prose or _weight(prose) > 600:
        return None
    for sentence in _sentences(prose)[:2]:
        sentence = sentence.strip()
        if sentence.endswith(("?", "？")):
            continue
        strong = bool(_CONFIRM_EN.search(sentence) or _CONFIRM_ZH.search(sentence))
        weak = bool(_CONFIRM_WEAK.match(sentence) or _CONFIRM_ZH_WEAK.search(sentence))
        if not (strong or weak):
            continue
        # "works" in "still not working" / 还是不行: the problem is open.
        if _STILL.search(_NO_LONGER.sub("", sentence)):
            return None
        return _clip(sentence.rstrip(" .!。！~"), 80), strong
    return None


# --- the diagnosis -------------------------------------------------------------------------------

# "The fix: convert to radians …", "改法：打开连接时切到 WAL": the assistant naming its fix without "I'll".
_FIX_SAYS = re.compile(
    r"^(?:so\s+)?(?:the\s+)?(?:fix|solution|remedy|workaround)(?:\s+(?:is|was|here is))?\s*[:：]\s*(?P<rest>.+)|"
    r"^(?:改法|修法|修复方法|修復方法|解决办法|解決辦法|解决方法|解決方法|解决方案|解決方案)(?:是)?[:：]?\s*(?P<zh>.+)",
    re.IGNORECASE,
)


def stated_fix(text: str) -> str | None:
    """What an assistant message names as the fix ("The fix: …", 改法：…), or None."""
    for sentence in _assistant_sentences(text):
        match = _FIX_SAYS.match(sentence)
        if match:
            rest = (match.group("rest") or match.group("zh") or "").rstrip(" .:;。：；")
            if len(re.findall(r"\w", rest)) >= 4:
                return _clip(rest[:1].lower() + rest[1:] if rest[1:2].islower() else rest, 200)
    return None


def diagnosis(text: str) -> str | None:
    """The assistant's first statement after a problem: what it found, before any "let me" or question."""
    for sentence in _assistant_sentences(text):
        if _FILLER_REPLY.match(sentence) or _META.search(sentence) or sentence.endswith(("?", "？")):
            continue
        if _INTENTION.match(sentence):
            return None
        if len(re.findall(r"\w", sentence)) >= 8:
            return _clip(sentence.rstrip(" .:;。：；"), 200)
    return None


# --- the memory ----------------------------------------------------------------------------------


def fix_text(failure: _Failure, how: str, detail: str, lang: str | None) -> str:
    """The procedural memory: the problem, the fix (what changed), and how it was confirmed.

    ``how`` is "rerun" (``detail`` names the command), "commit" (its message) or "words" (the person's).
    """
    zh = lang == "zh" or (lang is None and _is_chinese(failure.how or failure.why or failure.diag or ""))
    if failure.said:  # the person's own report says which language they work in
        zh = len(_CJK_CHAR.findall(failure.cmd)) >= 4
    verified = verified_text(how, detail, "zh" if zh else "en")
    files = ", ".join(failure.files)
    acts = ", ".join(f"`{a}`" for a in failure.acts)
    lines = ", ".join(f"`{line}`" for line in failure.lines)
    cause = failure.why or (failure.diag if not failure.how else None)
    if zh:
        edited = (f"修改了 {files}" if files else "") + (("，加入 " if files else "加入 ") + lines if lines else "")
        details = "；".join(p for p in (edited, f"运行了 {acts}" if acts else "") if p)
        if failure.how:
            parts = [f"修复：{failure.how}" + (f"（{details}）" if details else "")]
        else:
            parts = ([f"原因：{cause}"] if cause else []) + ([f"修复：{details}"] if details else [])
        if failure.said:
            head = f"问题：{failure.cmd}" + (
                f"（`{failure.err}`）" if failure.err and failure.err != failure.cmd else ""
            )
            if failure.err == failure.cmd:
                head = f"出现 `{failure.err}` 时"
            return _clip(head + "；" + "；".join(parts) + f"；{verified}。", 600)
        err = f"（`{failure.err}`）" if failure.err else ""
        return _clip(f"`{failure.cmd}` 失败{err}时，" + "；".join(parts) + f"；{verified}。", 600)
    edited = (f"edited {files}" if files else "") + ((", adding " if files else "added ") + lines if lines else "")
    details = "; ".join(p for p in (edited, f"ran {acts}" if acts else "") if p)
    if failure.how:
        parts = [f"fix: {failure.how}" + (f" ({details})" if details else "")]
    else:
        parts = ([f"cause: {cause}"] if cause else []) + ([f"fix: {details}"] if details else [])
    if failure.said:
        head = f"Problem: {failure.cmd}"
        if failure.err:
            head = f"When `{failure.err}` shows up" + (f" ({failure.cmd})" if failure.err != failure.cmd else "")
        return _clip(head + "; " + "; ".join(parts) + f"; {verified}.", 600)
    err = f" with `{failure.err}`" if failure.err else ""
    return _clip(f"When `{failure.cmd}` fails{err}, " + "; ".join(parts) + f"; {verified}.", 600)


def verified_text(how: str, detail: str, lang: str | None) -> str:
    """The closing clause of a fix memory: by re-running ``detail``, by a commit, or in the person's words."""
    zh = lang == "zh"
    if how == "rerun":
        return f"重新运行 {detail} 后通过" if zh else f"verified by re-running {detail}"
    if how == "commit":
        return f'已提交 "{detail}"' if zh else f'committed as "{detail}"'
    return f"用户确认：“{detail}”" if zh else f'the person confirmed: "{detail}"'
