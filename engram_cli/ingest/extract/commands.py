"""Command signatures: what makes two command lines "the same command" (the program and its subcommand)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from engram_cli.ingest.extract.wording import _words


@dataclass(frozen=True)
class Signature:
    """What makes two command lines "the same command": program and subcommand."""

    key: str  # "pytest", "git commit", "npm test" (npm run test → npm test)
    show: str  # how to name it in a memory: "pytest", "npm run build"
    readonly: bool  # looks at things without changing them (ls, cat, git status …)
    test: bool  # runs tests


_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;", "|&", "\n"})
_WRAPPERS = frozenset({"sudo", "time", "env", "nohup", "exec", "command", "nice", "xvfb-run", "caffeinate", "doas"})
_SKIPPED = frozenset({"cd", "pushd", "popd", "export", "source", ".", "set", "unset", "alias", "true", "false", ":"})
_SKIPPED |= frozenset({"echo", "printf", "clear", "sleep", "wait"})
_SHELLS = frozenset({"bash", "sh", "zsh", "fish", "dash", "ksh"})
_PREFIX_RUNNERS = frozenset({"npx", "bunx", "pnpx"})
_RUN_RUNNERS = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "rye"})
_NPM_LIKE = frozenset({"npm", "pnpm", "yarn", "bun"})
# Programs whose first argument is a path or a script, not a subcommand.
_PATH_RUNNERS = _words(
    """pytest jest vitest mocha ava rspec phpunit node deno python ruby perl php tsc mypy pyright eslint prettier
    black flake8 pylint tox unittest ctest behave nose2 playwright cypress bash sh"""
)
# Programs that run a script: the script names the command.
_INTERPRETERS = _words("python node deno ruby perl php bash sh")
_TEST_PROGRAMS = _words("pytest jest vitest mocha ava rspec phpunit tox unittest ctest behave nose2 playwright")
_READONLY = _words(
    """ls cat head tail less more grep rg ag ack find fd tree pwd which whereis type wc stat file du df env printenv
    history man date whoami id uname hostname diff cmp jq bat nl od xxd"""
)
_READONLY_GIT = _words("status log diff show blame remote rev-parse ls-files grep describe reflog shortlog")
# A subcommand or script name as a memory may show it. No ":" (``admin:PASS`` is how credentials are
# passed), no "=", "/" or "@": what a signature names must never be an argument's value.
_SUBCOMMAND = re.compile(r"^[A-Za-z][\w-]*$")
_SCRIPT = re.compile(r"^\w[\w:.+-]*$")  # script names: manage.py, npm's test:unit


def _tokens(command: str) -> list[str]:
    command = command[:2000]
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)[:200]
    except ValueError:  # unbalanced quotes: a plain split still finds the program
        return command.split()[:200]


def signature(command: str, depth: int = 0) -> Signature | None:
    """The signature of the first real command in a command line (after cd, env, wrappers); None if none."""
    segment: list[str] = []
    segments: list[list[str]] = []
    piped = False
    for token in _tokens(command):
        if token in _SEPARATORS:
            if segment and not piped:
                segments.append(segment)
            # In a pipeline only the first program says what ran: `pytest | tail` is pytest.
            piped = token in ("|", "|&")
            segment = []
        else:
            segment.append(token)
    if segment and not piped:
        segments.append(segment)
    for words in segments:
        found = _segment_signature(words, depth)
        if found:
            return found
    return None


def _program(word: str) -> str:
    name = re.split(r"[/\\]", word)[-1].lower()
    name = re.sub(r"\.exe$", "", name)
    if re.fullmatch(r"python[\d.]*|py", name):
        return "python"
    if re.fullmatch(r"pip[\d.]*", name):
        return "pip"
    return "pytest" if name == "py.test" else name


def _subcommand(args: list[str]) -> str:
    """The subcommand in a program's arguments: the first word that is neither an option nor may be one's value.

    The word after an option without ``=`` can be that option's value (``curl -u admin:PASS``,
    ``mysql -u root``, ``kubectl -n prod get``), and a value can be a credential: it is never
    taken, at the price of missing the subcommand after a flag that takes none (``git --no-pager log``).
    """
    after_option = False
    for arg in args:
        if arg.startswith("-"):
            after_option = "=" not in arg
            continue
        if after_option:
            after_option = False
            continue
        return arg if _SUBCOMMAND.match(arg) else ""
    return ""


def _segment_signature(words: list[str], depth: int) -> Signature | None:
    i = 0
    while i < len(words) and (re.match(r"^[A-Za-z_]\w*=", words[i]) or _program(words[i]) in _WRAPPERS):
        i += 1
        while i < len(words) and (words[i].startswith("-") or re.fullmatch(r"\d+[smh]?", words[i])):
            i += 1  # wrapper options (sudo -E, timeout 30)
    if i >= len(words):
        return None
    prog, args = _program(words[i]), words[i + 1 :]
    if prog == "timeout" and args:
        return _segment_signature(args[1:] if re.fullmatch(r"[\d.]+[smhd]?", args[0]) else args, depth)
    if prog in _SKIPPED:
        return None
    if prog in _SHELLS and depth < 3:
        for j, arg in enumerate(args[:-1]):
            if re.fullmatch(r"-\w*c\w*", arg):  # bash -c / -lc / -ic "inner command"
                return signature(args[j + 1], depth + 1)
    nonopt = [a for a in args if not a.startswith("-")]
    if prog == "python" and len(args) > 1 and args[0] == "-m":
        return _segment_signature(args[1:], depth)
    if prog in _PREFIX_RUNNERS and nonopt:
        return _segment_signature(args[args.index(nonopt[0]) :], depth)
    if (prog in _RUN_RUNNERS and nonopt[:1] == ["run"]) or (prog == "bundle" and nonopt[:1] == ["exec"]):
        rest = [a for a in args[args.index(nonopt[0]) + 1 :] if not a.startswith("-")]
        if rest:
            return _segment_signature(args[args.index(rest[0]) :], depth)
    if prog in _NPM_LIKE:
        if nonopt[:1] in (["exec"], ["dlx"]) and len(nonopt) > 1:
            return _segment_signature(args[args.index(nonopt[1]) :], depth)
        sub = {"t": "test", "tst": "test", "run-script": "run"}.get(nonopt[0], nonopt[0]) if nonopt else ""
        if sub == "run" and len(nonopt) > 1 and _SCRIPT.match(nonopt[1]):
            script = nonopt[1]
            return Signature(f"{prog} {script}", f"{prog} run {script}", False, "test" in script)
        sub = sub if _SUBCOMMAND.match(sub) else ""
        key = f"{prog} {sub}".strip()
        return Signature(key, key, False, sub == "test")
    if prog in _INTERPRETERS and args[:1] in (["-c"], ["-e"]):
        return Signature(f"{prog} {args[0]}", f"{prog} {args[0]}", False, False)  # inline code: no script name
    if prog in _INTERPRETERS and nonopt:
        # `python manage.py migrate` and `python app.py` are different commands: the script (and its
        # subcommand) is part of what ran.
        script = re.split(r"[/\\]", nonopt[0])[-1]
        if not _SCRIPT.match(script):
            return Signature(prog, prog, False, False)
        sub = _subcommand(args[args.index(nonopt[0]) + 1 :])
        key = f"{prog} {script} {sub}".strip()
        return Signature(key, key, False, "test" in (sub, script.split(".")[0]))
    if prog in _PATH_RUNNERS:
        return Signature(prog, prog, False, prog in _TEST_PROGRAMS)
    rest = args
    while prog == "git" and len(rest) >= 2 and rest[0] in ("-C", "-c"):
        rest = rest[2:]  # git's own options with a value: `git -C repo commit` is a commit
    sub = _subcommand(rest)
    key = f"{prog} {sub}".strip()
    readonly = (
        prog in _READONLY
        or (prog == "git" and sub in _READONLY_GIT)
        or (prog == "git" and sub == "branch" and len(args) <= 1)
        or (prog in ("sed", "awk") and not any(a.startswith("-i") for a in args))
    )
    test = sub in ("test", "tests") or (prog == "make" and sub == "check")
    return Signature(key, key, readonly, test)
