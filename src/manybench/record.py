"""One record: what one slot measured in one phase. Its fields are the record table's
(record_table.py), which makes this class, the node's Result and arrays, the phase's columns
and the store's table: a field is declared there, once.

The export contract is COLUMNS, in field order; `hist` and `extra` are stored beside each
record, outside the contract (`export` writes `extra` after every other column:
results/frames.py).
"""
from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from .record_table import RECORD, layer_dataclass, positional
from .status import Status

STATUSES = tuple(Status)    # status.py


@layer_dataclass(RECORD)
class Record:
    """A record's fields, keyword-only (record_table.TABLE, the `record` layer)."""

    def row(self) -> dict[str, Any]:
        """The record as the export contract's columns (a new dict)."""
        d = asdict(self)
        return {c: d[c] for c in COLUMNS}


FIELDS = fields(Record)
FIELD_NAMES = tuple(f.name for f in FIELDS)
# The export columns, in order. Other tools rely on exactly these.
COLUMNS = tuple(f.name for f in FIELDS if f.metadata["export"])

# Record(**values) with every field's value given in FIELDS' order (a stored row, a
# phase's columns), made as fast as a positional call
from_values = positional(Record, FIELD_NAMES)
