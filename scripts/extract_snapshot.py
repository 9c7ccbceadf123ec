"""Dump what ingestion extracts from every sample, to show that a refactor changed none of it.

Three views, written as one JSON document (``--out``, default stdout):

- ``direct``: every importer over every sample directory under tests/fixtures; each session's
  ready-made records, and the items and digest the built-in extractor makes of it, read whole
  and read as two parts (the digest of the first carried into the second).
- ``dry_run``: ``Engram.ingest(..., dry_run=True)`` over the same directories in a throwaway home,
  with the built-in rules and with a few ``extract.command`` programs (good output, a failure,
  output that is not JSON, a line that is not an object): the memories the loader would store,
  after redaction, and the errors it reports.
- ``tests``: every call the built-in extractor gets while tests/test_ingest_extract.py runs
  (Hypothesis with a fixed seed and no example database), with its input and output.

Run it before a change and after, and compare the two files::

    PYTHONPATH=$PWD python scripts/extract_snapshot.py --out /tmp/before.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

COMMANDS = {
    "records": (
        "import json, sys\n"
        "session = json.load(sys.stdin)\n"
        "for n, m in enumerate(session['messages']):\n"
        "    if m['text'].strip():\n"
        "        print(json.dumps({'content': m['role'] + ': ' + m['text'][:200], 'type': 'episodic',\n"
        "                          'importance': 0.25, 'tags': [m['role'], 'x'], 'key': f'k{n}'}))\n"
        "    if n % 3 == 0:\n"
        "        print()\n"
        "print(json.dumps({'content': 'digest keys: ' + ','.join(sorted(session['digest']))}))\n"
    ),
    "fails": "import sys\nprint('some output')\nsys.exit('model not loaded')\n",
    "not-json": "print('{\"content\": \"ok\"}')\nprint('this is not json')\n",
    "not-object": "print('[1, 2]')\n",
}


def _roots() -> list[Path]:
    return sorted(p for group in ("agent-logs", "ingest") for p in (FIXTURES / group).iterdir() if p.is_dir())


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _guard(action: Callable[[], Any]) -> Any:
    try:
        return action()
    except Exception as exc:  # the failure itself is part of what is compared
        return {"raised": f"{type(exc).__name__}: {exc}"}


def direct() -> list[dict[str, Any]]:
    from engram_cli.ingest import SOURCES, importer
    from engram_cli.ingest.extract import extract

    out: list[dict[str, Any]] = []
    for name in SOURCES:
        imp = importer(name)
        for root in _roots():
            found = _guard(lambda: sorted(set(imp.files(root))))  # noqa: B023
            if not isinstance(found, list):
                out.append({"source": name, "root": str(root.relative_to(ROOT)), "files": found})
                continue
            for path in found:
                batch = _guard(lambda: imp.read(path, None))  # noqa: B023
                entry: dict[str, Any] = {"source": name, "file": str(path.relative_to(ROOT))}
                if isinstance(batch, dict):
                    out.append({**entry, "read": batch})
                    continue
                entry["skipped"] = dict(sorted(batch.skipped.items()))
                sessions = []
                for session in batch.sessions:
                    whole = _guard(lambda: extract(session, {}))  # noqa: B023
                    half = len(session.messages) // 2
                    first = dataclasses.replace(session, messages=session.messages[:half])
                    second = dataclasses.replace(session, messages=session.messages[half:], restart=False)

                    def in_parts(first: Any = first, second: Any = second) -> Any:
                        items, digest = extract(first, {})
                        more, digest = extract(second, json.loads(json.dumps(digest)))
                        return items + more, digest

                    sessions.append(
                        {
                            "key": session.key,
                            "messages": len(session.messages),
                            "records": _plain(session.records),
                            "whole": _plain(whole),
                            "parts": _plain(_guard(in_parts)),
                        }
                    )
                out.append({**entry, "sessions": sessions})
    return out


def dry_run(home: Path) -> dict[str, Any]:
    from engram_cli import Engram
    from engram_cli.ingest import SOURCES

    os.environ["ENGRAM_HOME"] = str(home)
    runs: dict[str, Any] = {}
    scripts = home / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    setups: dict[str, str] = {"built-in": ""}
    for label, body in COMMANDS.items():
        script = scripts / f"{label}.py"
        script.write_text(body, encoding="utf-8")
        setups[label] = f"{sys.executable} {script}"
    for label, command in setups.items():
        with Engram.open(home / f"{label}.db") as mem:
            mem.config.values["extract"]["command"] = command
            results = []
            for name in SOURCES:
                for root in _roots():
                    report = _guard(lambda: mem.ingest(name, path=root, dry_run=True).to_dict())  # noqa: B023
                    results.append({"source": name, "root": str(root.relative_to(ROOT)), "report": report})
            runs[label] = results
    return runs


class _Recorder:
    """A pytest plugin that records every call of the built-in extractor."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def pytest_configure(self, config: Any) -> None:
        from hypothesis import settings
        from hypothesis.internal.conjecture import providers

        settings.register_profile("snapshot", database=None)
        settings.load_profile("snapshot")
        # Hypothesis also draws constants found in the project's modules; moving code between files
        # would change what it generates, so it gets none and the seed alone decides.
        providers._get_local_constants = lambda: providers._local_constants
        import engram_cli.ingest.extract as module

        real = module.extract

        def recording(session: Any, digest: dict[str, Any]) -> Any:
            given = _plain(session), json.loads(json.dumps(digest, default=str))
            try:
                result = real(session, digest)
            except Exception as exc:
                self.calls.append({"session": given[0], "digest": given[1], "raised": repr(exc)})
                raise
            self.calls.append({"session": given[0], "digest": given[1], "result": _plain(result)})
            return result

        module.extract = recording


def tests() -> dict[str, Any]:
    import pytest

    recorder = _Recorder()
    code = pytest.main(
        ["-q", "-p", "no:cacheprovider", "-x", "--hypothesis-seed=0", str(ROOT / "tests" / "test_ingest_extract.py")],
        plugins=[recorder],
    )
    return {"exit": int(code), "calls": recorder.calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = {"direct": direct(), "dry_run": dry_run(Path(tmp) / "home"), "tests": tests()}
    text = json.dumps(snapshot, ensure_ascii=False, indent=1, sort_keys=True).replace(tmp, "<tmp>")
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
