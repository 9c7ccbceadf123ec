"""Other tools' settings files as engram edits them: JSON (hooks, MCP servers) and TOML (Codex's config.toml).

One discipline for both. A file that does not parse is refused and left as it is. The first time engram
changes an existing file it keeps the file as it was beside it (``*.engram-backup``), once; every write
goes through a temporary file and a rename. When engram takes its entries out again and the content is
then what the backup holds, the backup's bytes go back, so an install followed by an uninstall leaves
the file exactly as it found it.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram_cli.errors import IntegrationError
from engram_cli.integrations import write_atomic

if TYPE_CHECKING:
    import tomlkit

BACKUP_SUFFIX = ".engram-backup"

FIX_BY_HAND = "fix the file by hand (or move it away), then run this again"


def _read(path: Path) -> str | None:
    """The file's text, or None when there is no file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IntegrationError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IntegrationError(f"{path} is not UTF-8 text; engram left it as it is") from exc


def _backup_once(path: Path) -> Path | None:
    """Copy ``path`` to its backup unless an earlier run already did; returns the backup made now, if any."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if backup.exists():
        return None
    shutil.copy2(path, backup)
    return backup


def _indent(text: str | None) -> int | str:
    """The file's own indentation, so a rewrite changes as few lines as possible."""
    match = re.search(r"\n([ \t]+)\S", text or "")
    if match is None:
        return 2
    unit = match.group(1)
    return "\t" if unit.startswith("\t") else len(unit)


class JsonSettings:
    """A JSON settings file whose top level is an object; ``data`` is edited in place, then saved."""

    def __init__(self, path: Path, data: dict[str, Any], text: str | None) -> None:
        self.path = path
        self.data = data
        self.text = text  # as read; None when the file did not exist

    @classmethod
    def load(cls, path: Path) -> JsonSettings:
        """The file parsed (empty when missing or blank); refuses anything it could not safely rewrite."""
        text = _read(path)
        try:
            data = json.loads(text) if text and text.strip() else {}
        except json.JSONDecodeError as exc:
            raise IntegrationError(
                f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); engram left it as it is",
                hint=FIX_BY_HAND,
            ) from exc
        if not isinstance(data, dict):
            raise IntegrationError(f"{path} holds a JSON {type(data).__name__}, not an object; engram left it as it is")
        return cls(path, data, text)

    def object_at(self, *keys: str, create: bool = False) -> dict[str, Any] | None:
        """The object under ``keys`` (``"projects", "/src/app", "mcpServers"``), made when ``create``; None if
        absent. Something else under one of the keys is refused: engram does not guess at a shape it does not know."""
        node = self.data
        for depth, key in enumerate(keys):
            child = node.get(key)
            if child is None:
                if not create:
                    return None
                child = node[key] = {}
            if not isinstance(child, dict):
                where = ".".join(json.dumps(k, ensure_ascii=False) for k in keys[: depth + 1])
                raise IntegrationError(
                    f"{where} in {self.path} is not an object; engram left the file as it is", hint=FIX_BY_HAND
                )
            node = child
        return node

    def save(self) -> Path | None:
        """Write ``data`` atomically (keeping the file's mode and indentation); returns the backup made now, if any."""
        backup: Path | None = None
        mode: int | None = None
        if self.text is not None:
            mode = self.path.stat().st_mode & 0o7777
            backup = _backup_once(self.path)
        body = json.dumps(self.data, indent=_indent(self.text), ensure_ascii=False) + "\n"
        write_atomic(self.path, body.encode("utf-8"), mode=mode)
        return backup

    def save_removal(self) -> Path | None:
        """Save after taking engram's entries out: the backup's own bytes when the content is back to what it
        holds, keys in the same order (so the person's own formatting returns too)."""
        backup = self.path.with_name(self.path.name + BACKUP_SUFFIX)
        try:
            before = json.loads(backup.read_bytes().decode("utf-8") or "{}") if backup.is_file() else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            before = None
        same = before is not None and json.dumps(before) == json.dumps(self.data)
        if same:
            write_atomic(self.path, backup.read_bytes(), mode=self.path.stat().st_mode & 0o7777)
            return None
        return self.save()


class TomlSettings:
    """A TOML settings file as a tomlkit document, so that comments and layout outside engram's table survive."""

    def __init__(self, path: Path, document: tomlkit.TOMLDocument, text: str | None) -> None:
        self.path = path
        self.document = document
        self.text = text

    @classmethod
    def load(cls, path: Path) -> TomlSettings:
        import tomlkit  # only installing into Codex's config.toml needs it
        from tomlkit.exceptions import TOMLKitError

        text = _read(path)
        try:
            document = tomlkit.parse(text or "")
        except (TOMLKitError, ValueError) as exc:
            raise IntegrationError(
                f"{path} is not valid TOML ({exc}); engram left it as it is", hint=FIX_BY_HAND
            ) from exc
        return cls(path, document, text)

    def rendered(self) -> str:
        import tomlkit

        body = tomlkit.dumps(self.document)
        # A table engram appended at the end brings a blank line to part it from whatever may follow;
        # at the end of the file that line would be left over.
        if body.endswith("\n\n") and not (self.text or "").endswith("\n\n"):
            body = body.rstrip("\n") + "\n"
        return body

    def save(self) -> Path | None:
        body = self.rendered()
        # What tomlkit writes must mean what the document holds: a file Codex cannot read would cost the
        # person every setting in it, not only engram's.
        try:
            parsed = tomllib.loads(body)
        except tomllib.TOMLDecodeError as exc:
            raise IntegrationError(
                f"engram could not write valid TOML to {self.path}; it left the file as it is"
            ) from exc
        if parsed != self.document.unwrap():
            raise IntegrationError(f"engram could not write {self.path} faithfully; it left the file as it is")
        backup: Path | None = None
        mode: int | None = None
        if self.text is not None:
            mode = self.path.stat().st_mode & 0o7777
            backup = _backup_once(self.path)
        write_atomic(self.path, body.encode("utf-8"), mode=mode)
        return backup

    def save_removal(self) -> Path | None:
        """Save after taking engram's entries out. No comparison with the backup here: tomlkit keeps the file's
        own text, so what is left is the file as it was, with any comment edited since, which a backup put
        back on equal values would undo."""
        return self.save()
