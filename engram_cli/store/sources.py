"""Sources: every piece of text that reached a memory, with where it came from (provenance).

A source whose content is NULL stands for the memory's own wording at the time; one with
content is a supplement: words the memory carries besides its own (a near duplicate folded
into it, an episode compact consolidated). A wording that an edit or a key's new value
replaced is kept for provenance, marked ``REPLACED`` in its metadata, and is no supplement:
the memory no longer says it. Nothing here commits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engram_cli.memory.model import Source
from engram_cli.store.codec import dumps
from engram_cli.store.sql import chunks, marks

if TYPE_CHECKING:
    from engram_cli.store.database import Database

_COLUMNS = "kind, ref, message_id, session_id, content, metadata, created_at"
# The metadata flag of a source whose wording was corrected away (edit, a key's new value).
REPLACED = "replaced"
_SEARCHABLE = f"coalesce(json_extract(metadata, '$.{REPLACED}'), 0) = 0"


def _source(r: Sequence[Any]) -> Source:
    return Source(
        kind=r[0], ref=r[1], message_id=r[2], session=r[3], content=r[4], metadata=json.loads(r[5]), created_at=r[6]
    )


class Sources:
    def __init__(self, store: Database) -> None:
        self.store = store

    def add(self, pk: int, source: Source, at: str) -> None:
        self.store.execute(
            "INSERT INTO sources (memory_pk, kind, ref, message_id, session_id, content, metadata, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                pk,
                source.kind,
                source.ref,
                source.message_id,
                source.session,
                source.content,
                dumps(source.metadata),
                at,
            ),
        )

    def of(self, pk: int) -> list[Source]:
        """A memory's sources, oldest first."""
        rows = self.store.rows(f"SELECT {_COLUMNS} FROM sources WHERE memory_pk = ? ORDER BY pk", (pk,))
        return [_source(r) for r in rows]

    def of_many(self, pks: Sequence[int]) -> dict[int, list[Source]]:
        """The sources of several memories, oldest first, by memory (memories without any are left out)."""
        out: dict[int, list[Source]] = {}
        for chunk in chunks(pks):
            for memory_pk, *rest in self.store.rows(
                f"SELECT memory_pk, {_COLUMNS} FROM sources WHERE memory_pk IN ({marks(chunk)}) ORDER BY pk", chunk
            ):
                out.setdefault(int(memory_pk), []).append(_source(rest))
        return out

    def supplements(self, pk: int, *, kind: str | None = None) -> list[str]:
        """The texts a memory carries besides its own (of one kind of source, if given), oldest first."""
        if kind is None:
            rows = self.store.rows(
                f"SELECT content FROM sources WHERE memory_pk = ? AND content IS NOT NULL AND {_SEARCHABLE} "
                "ORDER BY pk",
                (pk,),
            )
        else:
            rows = self.store.rows(
                f"SELECT content FROM sources WHERE memory_pk = ? AND kind = ? AND content IS NOT NULL "
                f"AND {_SEARCHABLE} ORDER BY pk",
                (pk, kind),
            )
        return [str(r[0]) for r in rows]

    def has(self, pk: int, source: Source) -> bool:
        """Whether the memory already has a source of this kind, reference, message and content."""
        row = self.store.one(
            "SELECT 1 FROM sources WHERE memory_pk = ? AND kind = ? AND ref IS ? AND message_id IS ? AND content IS ?",
            (pk, source.kind, source.ref, source.message_id, source.content),
        )
        return row is not None

    def replace(self, pk: int, sources: Sequence[Source]) -> None:
        """A memory's sources become exactly ``sources`` (each keeps its own time)."""
        self.store.execute("DELETE FROM sources WHERE memory_pk = ?", (pk,))
        for source in sources:
            self.add(pk, source, source.created_at or "")

    def pin_wording(self, pk: int, wording: str, *, replaced: bool = False) -> None:
        """Sources that stood for the memory's own wording hold ``wording`` from now on (it is about to change).

        ``replaced``: the new wording corrects the old one (an edit), so the old words stop being found.
        """
        if replaced:
            self.store.execute(
                f"UPDATE sources SET content = ?, metadata = json_set(metadata, '$.{REPLACED}', json('true')) "
                "WHERE memory_pk = ? AND content IS NULL",
                (wording, pk),
            )
        else:
            self.store.execute("UPDATE sources SET content = ? WHERE memory_pk = ? AND content IS NULL", (wording, pk))

    def move(self, from_pk: int, to_pk: int) -> None:
        """Every source of one memory becomes another's."""
        self.store.execute("UPDATE sources SET memory_pk = ? WHERE memory_pk = ?", (to_pk, from_pk))

    def holders(self, ref: str, content: str) -> dict[int, str]:
        """The memories (pk -> id) with a source that names ``ref`` or holds exactly ``content``."""
        rows = self.store.rows(
            "SELECT DISTINCT m.pk, m.id FROM sources s JOIN memories m ON m.pk = s.memory_pk "
            "WHERE s.ref = ? OR s.content = ?",
            (ref, content),
        )
        return {int(pk): str(memory_id) for pk, memory_id in rows}

    def delete_copies(self, ref: str, content: str) -> None:
        """Remove the sources that name ``ref`` or hold exactly ``content``, whichever memory they belong to."""
        self.store.execute("DELETE FROM sources WHERE ref = ? OR content = ?", (ref, content))
