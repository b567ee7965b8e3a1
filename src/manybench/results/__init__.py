"""Results: contract (the typed rows of results.db), schema (tables, version, migrations),
store (reading and writing results.db), export (records as CSV or JSON; every table as CSV,
JSON or Parquet), frames and api (`manybench.results.open(DIR)`: pandas DataFrames)."""
from __future__ import annotations

import os
from typing import Any


def open(directory: str | os.PathLike) -> Any:   # noqa: A001 (the API's documented name)
    """A results directory's runs, phases, records, samples, telemetry and nodes as pandas
    DataFrames (results/api.py)."""
    from .api import open_results   # noqa: PLC0415 (pandas only when asked for)
    return open_results(directory)
