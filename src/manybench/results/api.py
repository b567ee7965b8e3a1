"""The Python API: `manybench.results.open(DIR)` -> Results, whose methods return pandas
DataFrames (columns: results/frames.py, docs/results-api.md).

    import manybench.results
    res = manybench.results.open("results/")
    rec = res.records()                  # every run; res.records(run="io-2026...") for one
    for part in res.record_batches():    # the same rows, a few thousand at a time
        ...
    rec.groupby(["task", "workers"])["metric.lat_p99_us"].median()

The directory is opened read-only (never changed, even while a run writes it); an older
results.db is read through a migrated copy in memory.
"""
from __future__ import annotations

import os
from typing import Any, Iterator

from .frames import frame, runs_frame
from .store import Store


class Results:
    """A results directory's runs as DataFrames. `run`: one run's id; None: every run."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = os.fspath(directory)
        self.store = Store(self.directory, readonly=True)

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    def runs(self) -> Any:
        return runs_frame(self.store)

    def phases(self, run: str | None = None, nested: bool = False) -> Any:
        return frame(self.store, "phases", run, nested)

    def records(self, run: str | None = None, nested: bool = False) -> Any:
        return frame(self.store, "records", run, nested)

    def record_batches(self, run: str | None = None, nested: bool = False) -> Iterator[Any]:
        """records() as DataFrames of a few thousand rows each, in the same order with the
        same columns, read a phase at a time: a run of millions of records in memory that
        does not grow with them (what `manybench export` writes from). A column's dtype is
        each batch's own (a batch whose cells of a column are all empty holds None there)."""
        import pandas as pd   # noqa: PLC0415 (as frames.py: only when asked for)

        from .record_stream import RecordTable   # noqa: PLC0415
        # a connection of its own: this Results stays usable while the batches are read
        with Store(self.directory, readonly=True) as st, st.snapshot() as con:
            t = RecordTable(con, st.path, run, nested, objects=True)
            for batch in t.rows():
                yield pd.DataFrame(batch, columns=t.columns)

    def samples(self, run: str | None = None) -> Any:
        return frame(self.store, "samples", run)

    def series(self, run: str | None = None) -> Any:
        """Size-indexed tables (OSU, IMB): one row per point, x the message size."""
        return frame(self.store, "series", run)

    def telemetry(self, run: str | None = None) -> Any:
        return frame(self.store, "telemetry", run)

    def nodes(self, run: str | None = None, nested: bool = False) -> Any:
        return frame(self.store, "nodes", run, nested)


def open_results(directory: str | os.PathLike) -> Results:
    """A results directory (FileNotFoundError without a results.db, SchemaError for a file of
    a newer manybench)."""
    return Results(directory)
