"""Reading a run's telemetry holds a batch of its rows, never all of them: `report`, `export
--table telemetry`, `report --plots` (its telemetry figure draws a bounded number of rows:
report/plots/telemetry_rows.py) and the checks at a run's end (run/quality.py), on a run of
300,000 telemetry rows, peak within a few MiB of the same command on the same run with 800
rows (a run of 64 nodes sampled every second for 10 hours has 2.3 M rows; each held as a
TelemetryRow costs about a KiB). Peak RSS is the child's own (wait4), not moved by load."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from builders import S, T0, phase, plan, recs
from manybench.results.store import Store, db_path

pytestmark = pytest.mark.e2e

NODES, PHASES = 8, 4
BIG, SMALL = 300_000, 800       # telemetry rows of the run
GROWTH_MIB = 40                 # today's code grows by hundreds of MiB at BIG


def _make(d: str, rows: int) -> None:
    """A run of PHASES io.write phases on NODES nodes whose telemetry holds `rows` rows, a
    quarter of them between phases, the rest spread over the phases; every third node's
    system cpu above its user cpu (the report's system-cpu hint reads them all)."""
    with Store(d) as st:
        st.begin_run("r", plan(), [], {"hostname": "n1"})
        for i in range(PHASES):
            st.write_phase("r", phase(i), T0 + i * 3600 * S, recs("r", i))
        st.end_run("r", "finished")
    per_phase = 3600 * S * PHASES // rows
    con = sqlite3.connect(db_path(d))
    # made by SQLite (a few tenths of a second), not a list of 300,000 rows
    con.execute(
        "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
        "INSERT INTO telemetry SELECT 'r', 'n' || (i % ?), ? + i * ?, 1.0, "
        "CASE WHEN i % 4 = 0 THEN NULL ELSE (i * ?) / ? END, "
        "10.0 + (i % 7), CASE WHEN i % 3 = 0 THEN 60.0 ELSE 5.0 + (i % 5) END, 0.5, "
        "(1 << 30) + i, 1 << 29, i * 10.0, i * 20.0, 40.0, 1e6 + i, 2e6 + i FROM c",
        (rows - 1, NODES, T0, per_phase, PHASES, rows))
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[str, str]:
    small, big = (str(tmp_path_factory.mktemp(n)) for n in ("small", "big"))
    _make(small, SMALL)
    _make(big, BIG)
    return small, big


def _peak_mib(args: list[str]) -> float:
    """The child's peak RSS (MiB); it must end with 0 or 1 (findings)."""
    p = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode()
    p.stderr.close()
    assert os.waitstatus_to_exitcode(status) in (0, 1), err[-2000:]
    return ru.ru_maxrss / 1024


CHECKS = ("from manybench.run.quality import run_checks; "
          "from manybench.results.store import Store; import sys; "
          "print(run_checks(Store(sys.argv[1], readonly=True), 'r', "
          "{f'n{i}': 4 for i in range(8)}))")
COMMANDS = {"report": lambda d, out: ["-m", "manybench", "report", d],
            "export": lambda d, out: ["-m", "manybench", "export", d, "--table", "telemetry",
                                      "-o", os.path.join(out, "t.csv")],
            "checks": lambda d, out: ["-c", CHECKS, d],
            "plots": lambda d, out: ["-m", "manybench", "report", d, "--plots",
                                     os.path.join(out, "plots")]}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_reading_telemetry_does_not_hold_the_runs_rows(runs, command, tmp_path):
    small, big = runs
    args = COMMANDS[command]
    base = _peak_mib(args(small, str(tmp_path)))
    peak = _peak_mib(args(big, str(tmp_path)))
    assert peak - base < GROWTH_MIB, (
        f"{command}: peak RSS {peak:.0f} MiB at {BIG:,} telemetry rows against {base:.0f} "
        f"MiB at {SMALL:,}: it grows with the rows")
