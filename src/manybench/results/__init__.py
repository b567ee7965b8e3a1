"""Results: contract (the typed rows of results.db), schema (tables, version, migrations),
store (reading and writing results.db), export (every table as CSV, JSON, JSON lines or
Parquet; the records streamed a phase at a time by record_stream), frames and api
(`manybench.results.open(DIR)`: pandas DataFrames)."""
from __future__ import annotations

import os
from typing import Any


def summary(directory: str | os.PathLike, run_id: str | None = None) -> dict:
    """Every figure of every point of a results directory's latest run (or `run_id`), with
    n, median, interval and unit, and the throughput series: the numbers `manybench report`
    shows, as `manybench report DIR --json` prints them (report/summary.py)."""
    from ..report.summary import summary as build   # noqa: PLC0415 (the report's own code)
    return build(directory, run_id)


def open(directory: str | os.PathLike) -> Any:   # noqa: A001 (the API's documented name)
    """A results directory's runs, phases, records, samples, telemetry and nodes as pandas
    DataFrames (results/api.py)."""
    from .api import open_results   # noqa: PLC0415 (pandas only when asked for)
    return open_results(directory)
