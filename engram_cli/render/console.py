"""The terminal: stdout for results, stderr for notes, warnings and errors.

Rich disables colour itself when NO_COLOR is set or stdout is not a terminal; it is imported only
when something is printed through it, so that `engram --help` stays fast.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from engram_cli.errors import EngramError
    from engram_cli.memory.model import Memory


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class PipeAwareConsole(Console):
        """Rich exits 1 itself on a closed pipe; engram's entry point gives every command the same 141."""

        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(errno.EPIPE, "standard output was closed")

    return PipeAwareConsole


def console(stderr: bool = False) -> Console:
    # Wide enough that tables do not fold ids when output is piped.
    return _console_class()(stderr=stderr, soft_wrap=False, width=None if sys.stdout.isatty() else 200, highlight=False)


def out(text: str = "") -> None:
    """Plain text to stdout, byte for byte (no markup, no wrapping)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def note(text: str) -> None:
    """A remark for the person at the terminal; on stderr so stdout stays parseable."""
    if plain_note(text):
        return
    console(stderr=True).print(text, markup=False)


def plain_note(text: str) -> bool:
    """Write a note into a piped stderr as rich would, without importing rich (see :func:`plain_lines`)."""
    if sys.stderr.isatty() or _rich_styles_a_pipe():
        return False
    if not all(_fits(line) for line in text.split("\n")):
        return False
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
    return True


def warning(text: str) -> None:
    console(stderr=True).print(f"[yellow]Warning:[/] {escape(text)}")


def error(exc: EngramError) -> None:
    """``Error: …`` and ``Hint: …`` on stderr."""
    err = console(stderr=True)
    err.print(f"[bold red]Error:[/] {escape(exc.message)}")
    if exc.hint:
        err.print(f"[dim]Hint:[/] {escape(exc.hint)}")


def internal_error(exc: BaseException, *, with_traceback: bool) -> None:
    """A bug, not a user's mistake: one line, and the traceback only when asked for with -vv."""
    import traceback

    err = console(stderr=True)
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if with_traceback:
        sys.stderr.write("".join(traceback.format_exception(exc)))
        err.print(f"[bold red]Error:[/] internal error ({escape(what)})")
    else:
        err.print(f"[bold red]Error:[/] internal error ({escape(what)}); run with -vv for the traceback")


def interrupted() -> None:
    note("Interrupted; nothing half-written was kept.")


def config_warnings(warnings: Sequence[str]) -> None:
    """What config.toml got wrong; the settings concerned keep their defaults."""
    for text in warnings:
        warning(text)


@contextlib.contextmanager
def progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on a terminal (stderr); nothing when output is piped or in cron."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.progress import Progress

    with Progress(console=console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


# Environment variables with which rich writes styles or sizes its output even into a pipe.
_RICH_ENVIRONMENT = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES")
PIPE_WIDTH = 200  # what console() gives rich when stdout is not a terminal


def _rich_styles_a_pipe() -> bool:
    """Whether rich might write more than the text into stdout: a terminal, a forced style, Windows' console."""
    return sys.stdout.isatty() or sys.platform == "win32" or any(os.environ.get(name) for name in _RICH_ENVIRONMENT)


def _fits(text: str) -> bool:
    """Text rich prints into a pipe as it is: of known width (:func:`_cell_width`) within the pipe's, no emoji code."""
    size = _cell_width(text)
    return size is not None and size <= PIPE_WIDTH and not _emoji_code(text)


# The only markup plain_lines() reads: styles a pipe does not show.
_UNSEEN_TAGS = ("[bold]", "[dim]", "[/]")


def plain_lines(lines: Sequence[str], *, wrap: bool = True) -> bool:
    """Print lines of rich markup into a pipe as ``console().print(line, soft_wrap=not wrap)`` prints each,
    without importing rich.

    Only when that is certain: as for :func:`plain_table`, and the markup is nothing but ``[bold]``, ``[dim]``
    and ``[/]``, with no escaped bracket, in lines of at most the pipe width when ``wrap`` (rich would wrap
    longer ones; without ``wrap`` it prints them whole). Returns False, having printed nothing, otherwise: the
    caller then prints them with rich.
    """
    if _rich_styles_a_pipe():
        return False
    texts = []
    for line in lines:
        text = line
        for tag in _UNSEEN_TAGS:
            text = text.replace(tag, "")
        if "[" in text or "\\" in text:
            return False
        for part in text.split("\n"):
            if not (_fits(part) if wrap else _cell_width(part) is not None and not _emoji_code(part)):
                return False
        texts.append(text)
    if texts:
        out("\n".join(texts))
    return True


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> bool:
    """Print a table into a pipe byte for byte as rich's borderless table would (``Table(box=None,
    pad_edge=False)``, columns left-aligned, two spaces apart, each as wide as its widest cell), without
    importing rich: scripts and hooks read tables through pipes, and rich costs more to load than the
    rest of `engram list`. Cells are rich markup, as the rich path takes them.

    Only when that is certain: stdout is not a terminal, rich is not told to style pipes, every cell is
    printable text whose width on screen is known without rich (ASCII, the ellipsis and dash the
    renderers use, and CJK characters, two columns each) with no markup (``[``) or emoji code
    (``:name:``), and the table fits the width. Returns False, having printed nothing, otherwise: the
    caller then prints it with rich.
    """
    if _rich_styles_a_pipe():
        return False
    table = [list(headers), *(list(row) for row in rows)]
    sizes: list[list[int]] = []
    for row in table:
        line = []
        for cell in row:
            size = _cell_width(cell)
            if size is None or "[" in cell or _emoji_code(cell):
                return False
            line.append(size)
        sizes.append(line)
    widths = [max(line[i] for line in sizes) for i in range(len(headers))]
    if 0 in widths or sum(widths) + 2 * (len(widths) - 1) > PIPE_WIDTH:
        return False
    lines = [
        "  ".join(cell + " " * (width - size) for cell, size, width in zip(row, line, widths, strict=True))
        for row, line in zip(table, sizes, strict=True)
    ]
    out("\n".join(lines))
    return True


# Characters besides printable ASCII whose width every terminal and rich agree on: one column for the
# ellipsis and dash the renderers write, two for the CJK ideographs, kana, Hangul syllables and full-width
# forms (CJK punctuation included) that Chinese, Japanese and Korean memories are written in.
_NARROW = frozenset("…—")
_WIDE_RANGES = (
    (0x3001, 0x303E),  # CJK symbols and punctuation (not the ideographic space)
    (0x3041, 0x30FF),  # hiragana, katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7A3),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF01, 0xFF60),  # full-width forms
)


def _wide(char: str) -> bool:
    """An assigned, spacing, two-column character (not a combining mark or an unassigned code point)."""
    import unicodedata

    return unicodedata.east_asian_width(char) in ("W", "F") and unicodedata.category(char)[0] not in "MC"


def _cell_width(text: str) -> int | None:
    """Columns ``text`` takes on screen, when that is certain without rich; None otherwise."""
    if text.isascii():
        return len(text) if text.isprintable() else None
    size = 0
    for char in text:
        if " " <= char <= "~" or char in _NARROW:
            size += 1
        elif any(lo <= ord(char) <= hi for lo, hi in _WIDE_RANGES) and _wide(char):
            size += 2
        else:
            return None
    return size


# How rich finds emoji codes (rich/_emoji_replace.py). A code whose name is a number is left as it is
# unless it is one of the two numbered emoji: times (12:30:00) do not stop a plain print.
_EMOJI_CODE = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
_NUMBERED_EMOJI = ("100", "1234")


def _emoji_code(text: str) -> bool:
    """Whether rich could replace part of ``text`` with an emoji."""
    return any(
        not name.isdigit() or name in _NUMBERED_EMOJI
        for name in (match.group(2) for match in _EMOJI_CODE.finditer(text))
    )


def escape(text: str) -> str:
    if "[" not in text and "\\" not in text:
        return text  # what rich's escape returns for it, without importing rich
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def short(memory_id: str) -> str:
    return memory_id[:8]


def clip(text: str, width: int = 80) -> str:
    """``text`` on one line, cut to ``width`` columns on screen (a CJK character takes two) with an ellipsis."""
    flat = " ".join(text.split())
    if flat.isascii():
        return flat if len(flat) <= width else flat[: width - 1] + "…"
    import unicodedata

    columns = 0
    cut = None
    for i, char in enumerate(flat):
        columns += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
        if cut is None and columns > width - 1:
            cut = i  # the longest start that leaves a column for the ellipsis
        if columns > width:
            return flat[:cut] + "…"
    return flat


def shown_text(memory: Memory) -> str:
    """A memory's text in a table: a keyed fact's value after its key (``user:tz = Europe/Berlin``)."""
    return f"{memory.key} = {memory.content}" if memory.key else memory.content
