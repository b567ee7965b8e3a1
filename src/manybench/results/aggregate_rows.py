"""The aggregates table's rows (schema 9): a phase's parts' aggregates (analysis/aggregates.py)
as the JSON text stored with the phase, read back per run; and the migration's pass that
aggregates every phase a file of schema 8 or older stored, a phase at a time."""
from __future__ import annotations

import json
from typing import Iterable, Sequence

from ..record import Record
from .contract import StoredPhase
from .schema import DamagedError

INSERT = "INSERT OR REPLACE INTO aggregates (run, phase, data) VALUES (?,?,?)"


def phase_text(phase: StoredPhase, records: Sequence[Record]) -> str:
    """A phase's aggregates as stored: a JSON list, the phase's own part first."""
    from ..analysis.aggregates import phase_aggregates, to_json   # noqa: PLC0415
    passing = getattr(records, "passing", None)     # record_columns.RecordColumns
    recs = passing() if passing is not None else records
    return json.dumps([to_json(a) for a in phase_aggregates(phase, recs)],
                      separators=(",", ":"))


def decode(phase: StoredPhase, text: str, path: str = "", shared: dict | None = None) -> list:
    """The stored text of a phase back into its parts' aggregates; DamagedError naming the
    file, the column and the phase when it does not read as one (a reader must not print
    figures from a row it cannot read)."""
    from ..analysis.aggregates import from_json   # noqa: PLC0415
    try:
        return [from_json(phase, d, shared) for d in json.loads(text)]
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise DamagedError(f"{path} is damaged: bad JSON in aggregates.data of phase "
                           f"{phase.index} ({type(e).__name__}: {e})") from None


def rows(db_rows: Iterable[tuple[int, str]], phases: Iterable[StoredPhase], path: str = ""
         ) -> dict[int, list]:
    """Per phase index, its parts' aggregates (phases the table lacks are left out)."""
    infos, shared = {p.index: p for p in phases}, {}
    return {idx: decode(infos[idx], text, path, shared) for idx, text in db_rows
            if idx in infos}
