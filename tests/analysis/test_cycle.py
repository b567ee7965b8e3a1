"""SMTEF's figure beside ours (issue 17, item 6): the phase cycle (last end - when the
coordinator sent the go) and lateness shown with sync overhead in the null task's table;
known answers on constructed records, and a real run that stores when each go was sent."""
from __future__ import annotations

import pytest
import json

from conftest import run_cli
from manybench.analysis import summarize
from manybench.analysis.phase_figures import phase_figures
from manybench.model import Phase, Plan, TaskSpec
from manybench.record import Record
from manybench.report import render_text
from manybench.results.store import Store

T = 1_700_000_000_000_000_000
MS = 1_000_000


def _null(phase: int, t0: int, starts: list[int], ends: list[int]) -> list[Record]:
    return [Record(run="r", phase=phase, task="sync", kernel="null", variant="", rep=phase,
                   workers=len(starts), node="n1", slot=s, cpu=s, t0_ns=t0, start_ns=a,
                   end_ns=b) for s, (a, b) in enumerate(zip(starts, ends))]


def test_cycle_is_last_end_minus_go_sent():
    recs = _null(0, T, [T + 10, T + 30], [T + 50, T + 90])
    f = phase_figures(0, recs, "null", {}, T, go_ns=T - 2 * MS)
    assert f.cycle_ns == 2 * MS + 90          # the lead before T0, lateness, the window
    assert f.sync_overhead_ns == 80 and f.lateness_ns == [10, 30]
    # a phase stored before the go was (schema < 5): no cycle, the rest as before
    assert phase_figures(0, recs, "null", {}, T).cycle_ns is None


def _store(path, gos: list[int | None]) -> None:
    spec = TaskSpec("sync", "null", {})
    st = Store(path)
    st.begin_run("r", Plan(name="c", tasks=[spec], raw={}), [], {"hostname": "n1"})
    for i, go in enumerate(gos):
        t0 = T + i * 1000 * MS
        st.write_phase("r", Phase(i, spec, "null", "", i, 2, "spread", "core", {}, "sync-2"),
                       t0, _null(i, t0, [t0 + 1000, t0 + 3000], [t0 + 5000, t0 + 7000]),
                       go_ns=go)
    st.end_run("r", "finished")
    st.close()


def test_stored_go_gives_each_point_its_cycle_in_the_null_table(tmp_path):
    gos = [T - 3 * MS, T + 1000 * MS - 5 * MS, T + 2000 * MS - 4 * MS]
    _store(tmp_path, gos)
    with Store(tmp_path, readonly=True) as st:
        assert [p.go_ns for p in st.phases("r")] == gos
        [s] = summarize(st.records("r"), st.phases("r"))
    # cycles 3, 5, 4 ms + 7 us: nearest-rank median 4.007 ms, max 5.007 ms
    assert (s.cycle.median, s.cycle.max, s.cycle.n) == (4 * MS + 7000, 5 * MS + 7000, 3)
    text = render_text(tmp_path, width=80)
    table = text.split("sync (null)")[1].split("lateness =")[0]
    for header in ("sync overhead", "lateness", "phase cycle", "skew"):
        assert header in table, header
    assert "4.01 / 5.01" in table           # the cycle's column, in ms
    assert all(len(line) <= 80 for line in text.splitlines())


@pytest.mark.e2e
def test_a_real_run_stores_when_each_go_was_sent(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "cyc"\nrepeat = 3\n[placement]\nworkers = [1, 2]\n'
                    '[[task]]\nname = "sync"\nkernel = "null"\n')
    out = tmp_path / "res"
    res = run_cli("run", str(plan), "-o", str(out))
    assert res.returncode == 0, res.stderr
    with Store(out, readonly=True) as st:
        run = st.runs()[0].run_id
        phases, records = st.phases(run), st.records(run)
    assert len(phases) == 6
    for p in phases:    # the go is sent before T0 (the lead), and the cycle holds the window
        mine = [r for r in records if r.phase == p.index]
        assert p.go_ns is not None and p.go_ns < p.t0_ns
        f = phase_figures(p.index, mine, "null", {}, p.t0_ns, p.go_ns)
        assert f.cycle_ns >= f.sync_overhead_ns + (p.t0_ns - p.go_ns)
    data = json.loads(run_cli("report", str(out), "--json").stdout)
    for point in data["runs"][0]["tasks"][0]["points"]:
        names = {v["figure"] for v in point["figures"]}
        assert {"sync_overhead", "cycle", "lateness", "skew"} <= names


def test_at_80_columns_the_null_table_keeps_lateness_and_cycle_beside_late_starts(tmp_path):
    """A real null run at 80 columns dropped lateness and phase cycle ("not shown at this
    width: cycle, lateness") to keep the late-starts causes: the figures to set beside
    SMTEF's go first only after the causes; the count of late phases stays."""
    spec = TaskSpec("sync", "null", {})
    st = Store(tmp_path)
    st.begin_run("r", Plan(name="c", tasks=[spec], raw={}), [], {"hostname": "n1"})
    i = 0
    for workers in (1, 2):
        for rep in range(5):
            t0 = T + i * 1000 * MS
            # odd repetitions: slot 0 starts 8.24 ms late (a stall), slot 1 2.08 ms late
            late = [8_240_000 * (rep % 2), 2_080_000 * (rep % 2)][:workers]
            starts = [t0 + 31_000 + x for x in late]
            ends = [s + 181_000 + 2_076_000 * (rep == 4) * (workers == 2) for s in starts]
            recs = [Record(run="r", phase=i, task="sync", kernel="null", variant="", rep=rep,
                           workers=workers, node="n1", slot=s, cpu=s, t0_ns=t0, start_ns=a,
                           end_ns=b) for s, (a, b) in enumerate(zip(starts, ends))]
            st.write_phase("r", Phase(i, spec, "null", "", rep, workers, "spread", "core", {},
                                      f"sync-{workers}"), t0, recs, go_ns=t0 - 18_700_000)
            i += 1
    st.end_run("r", "finished")
    st.close()
    text = render_text(tmp_path, width=80)
    table = text.split("sync (null)")[1].split("lateness =")[0]
    for header in ("sync overhead", "lateness", "phase cycle", "skew"):
        assert header in table, (header, table)
    # a narrow terminal moves the late starts below the table, a line per row, and drops
    # neither the cycle nor lateness
    assert "not shown at this width" not in table, table
    assert "late starts (phases): workers 1: 2/5 (a stall 2); workers 2: 2/5 (a stall 4)" \
        in " ".join(table.split()), table
    assert all(len(line.rstrip()) <= 80 for line in text.splitlines()), text
    # a wider terminal shows the late starts and says why they were late
    wide = render_text(tmp_path, width=200).split("sync (null)")[1]
    assert "late starts" in wide and "(a stall" in wide, wide
