"""Write the README's configuration table from the settings tree (engram_cli/config/settings.py).

    python scripts/config_table.py           # rewrite the table between the markers in README.md
    python scripts/config_table.py --check   # exit 1 when README.md's table differs (a test runs this)

The table sits between ``<!-- config-table:start -->`` and ``<!-- config-table:end -->``; everything
else in the README is left as it is. Each row is one setting: its key, its default and its
description, exactly as the dataclass field declares them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from engram_cli.config import ENV_OVERRIDES, KEYS  # noqa: E402

README = REPO_ROOT / "README.md"
START = "<!-- config-table:start -->"
END = "<!-- config-table:end -->"


def shown(value: Any) -> str:
    """A default as the table shows it."""
    if value is None:
        return "none"
    if value == "":
        return "empty"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def table() -> str:
    """The Markdown table of every setting, in the order of the settings tree."""
    env_of = {key: env for env, key in ENV_OVERRIDES.items()}
    lines = ["| key | default | meaning |", "|---|---|---|"]
    for key in KEYS.values():
        meaning = key.doc + (f" (env `{env_of[key.name]}`)" if key.name in env_of else "")
        cell = meaning.replace("|", "\\|")  # a bar would end the cell
        lines.append(f"| `{key.name}` | {shown(key.default)} | {cell} |")
    return "\n".join(lines)


def rewritten(text: str) -> str:
    """``text`` (a README) with the table between the markers made anew."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"error: no {START} … {END} block in the README; add the two markers where the table goes")
    return f"{text[: start + len(START)]}\n{table()}\n{text[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the README's table is out of date")
    parser.add_argument("--readme", type=Path, default=README, help="the README to rewrite or check")
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    wanted = rewritten(text)
    if args.check:
        if wanted != text:
            print(f"{args.readme}: the configuration table differs from the settings; run python {__file__}")
            return 1
        return 0
    if wanted != text:
        args.readme.write_text(wanted, encoding="utf-8")
        print(f"rewrote the configuration table in {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
