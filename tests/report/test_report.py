"""Reports name the figures of docs/definitions.md and show the runs' numbers, in the terminal and in HTML."""
from __future__ import annotations

import pytest

from manybench.model import Phase, Plan, TaskSpec
from manybench.record import Record
from manybench.results.contract import RunNotes, StoredNode, Warning
from manybench.report import render_text, write_html
from manybench.report.terminal import render
from manybench.results.store import Store

T = 1_700_000_000_000_000_000
S = 1_000_000_000
ENV = {"hostname": "node7", "cpu_model": "Test CPU 9000", "logical_cpus": 2, "physical_cores": 2,
       "sockets": 1, "numa_nodes": 1, "memory_total": 8 << 30, "kernel": "6.1.0",
       "governor": "performance", "tuned_profile": None}
NULLS = 120     # enough phases that median, p99 and max all differ (nearest rank)
NOTES = RunNotes(slots=12, phases=NULLS + 3, cpus=2, oversubscribed=True)
NOTE = "12 slots on 2 cpus: oversubscribed, no spinning"  # and "; 1 node: n1"


def _phase(i, spec, kernel, workers, params, point):
    return Phase(i, spec, kernel, "", 0, workers, "spread", "core", params, point,
                 label=f"{spec.name} workers={workers}")


def _rec(i, spec, kernel, workers, slot, t0, start, end, params, **kw):
    return Record(run="r1", phase=i, task=spec.name, kernel=kernel, variant="", rep=0,
                  workers=workers, node="n1", slot=slot, cpu=slot, t0_ns=t0, start_ns=start,
                  end_ns=end, params=params, **kw)


def make_store(path, end=True) -> None:
    null = TaskSpec("sync", "null", {})
    wr = TaskSpec("write", "io.write", {"block": ["64KiB", "1MiB"]})
    cmd = TaskSpec("dd", "command", {}, command=["dd"], metrics={"rate": "x"})
    plan = Plan(name="report-test", tasks=[null, wr, cmd], source="", raw={})
    st = Store(path)
    st.begin_run("r1", plan, ["manybench", "run", "plan.toml"], ENV, NOTES)
    st.write_nodes("r1", [StoredNode("r1", "n1", "127.0.0.1", 12, 2, offset_ns=0, error_ns=0,
                                     inventory=ENV)])
    st.add_warning("r1", Warning("missing-metric", "task dd: metric 'rate' matched nothing",
                                 task="dd", phase=NULLS + 2))
    i = 0
    for k in range(NULLS):   # null, 2 slots: phase k has skew (k+1) x 100 ns and sync
        n = (k * 7) % NULLS + 1   # overhead (k+1) x 10 us, stored out of order
        t0 = T + i * S
        st.write_phase("r1", _phase(i, null, "null", 2, {}, "sync"), t0,
                       [_rec(i, null, "null", 2, 0, t0, t0 + 1000, t0 + 1000 + n * 10_000, {}),
                        _rec(i, null, "null", 2, 1, t0, t0 + 1000 + n * 100,
                             t0 + 1000 + n * 100 + 10, {})])
        i += 1
    for block in (65536, 1 << 20):   # io: 2 slots x 8 MiB in 1 s -> 16 MiB/s
        p = {"block": block, "size": 8 << 20}
        t0 = T + i * S
        st.write_phase("r1", _phase(i, wr, "io.write", 2, p, f"write-{block}"), t0,
                       [_rec(i, wr, "io.write", 2, s, t0, t0, t0 + S, p, ops=8, bytes=8 << 20,
                             elapsed_s=1.0, metrics={"lat_p50_us": 40.0, "lat_p99_us": 90.0})
                        for s in range(2)])
        i += 1
    t0 = T + i * S
    st.write_phase("r1", _phase(i, cmd, "command", 2, {}, "dd"), t0, [
        _rec(i, cmd, "command", 2, 0, t0, t0, t0 + S, {}, elapsed_s=1.0,
             metrics={"exit_status": 0, "rate": 512.0}),
        _rec(i, cmd, "command", 2, 1, t0, t0, t0 + S, {}, elapsed_s=1.0, status="error",
             error="exit status 1: <no space> & more", metrics={"exit_status": 1})])
    if end:
        st.end_run("r1", "failed")
    st.close()


def test_terminal_report_names_design_figures(tmp_path):
    make_store(tmp_path)
    text = render_text(tmp_path, all_columns=True)     # report --all: every figure
    for word in ("report-test", "r1", "failed", "node7", "Test CPU 9000", "performance",
                 "sync overhead", "skew", "lateness", "aggregate bandwidth", "per-slot time",
                 "exit statuses", NOTE, f"phases stored  {NULLS + 3} of {NULLS + 3}",
                 "sync (null)", "write (io.write)", "dd (command)", "clock n1: offset 0ns",
                 f"warning: task dd: metric 'rate' matched nothing (phase {NULLS + 2})"):
        assert word in text, word
    # the figures themselves, as median / p99 / max over 120 phases (nearest rank: ranks
    # 60, 119, 120) or 240 records (ranks 120, 238, 240), in one unit per column (us)
    null = text.split("sync (null)")[1].split("write (io.write)")[0]
    # (ms: a column's unit fits the largest value it shows, issue 29 item 8)
    assert "0.600 / 1.19 / 1.20" in null and "ms" in null   # sync overhead
    assert "6.00 / 11.9 / 12.0" in null                   # skew
    assert "1.00 / 12.8 / 13.0" in null                   # lateness
    assert "aggregate, MiB/s" in text and " 16.0 " in text and "64KiB" in text and "1MiB" in text
    assert "per slot, MiB/s" in text and " 8.00 " in text
    assert "40.0 / 90.0" in text
    assert "0x1, 1x1" in text and "rate" in text and "512" in text
    # the error, with its slot, below the table
    assert f"phase {NULLS + 2} n1/slot 1: error: exit status 1: <no space> & more" in text


def test_report_of_a_run_never_ended(tmp_path):
    make_store(tmp_path, end=False)
    text = render_text(tmp_path)
    assert "running" in text and "not ended" in text
    # render also takes an open Store
    from rich.console import Console
    import io
    buf = io.StringIO()
    with Store(tmp_path, readonly=True) as st:
        render(st, Console(file=buf, width=160, color_system=None))
    assert "sync overhead" in buf.getvalue()


def test_empty_run(tmp_path):
    st = Store(tmp_path)
    st.begin_run("e", Plan(name="empty", tasks=[]), [], {})
    st.close()
    assert "no phases recorded yet" in render_text(tmp_path)


def test_html(tmp_path):
    make_store(tmp_path)
    out = tmp_path / "report.html"
    write_html(tmp_path, out)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page and "<table" in page
    for word in ("sync overhead", "skew", "lateness", "aggregate bandwidth", "MiB/s", NOTE):
        assert word in page, word
    assert "&lt;no space&gt; &amp; more" in page and "<no space>" not in page


def test_run_selection(tmp_path):
    make_store(tmp_path)
    st = Store(tmp_path)
    st.begin_run("r2", Plan(name="second", tasks=[]), [], ENV)
    st.close()
    text = render_text(tmp_path)                      # the latest run by default
    assert "second" in text and "report-test" not in text
    assert "this directory holds 2 runs: r1, r2" in text
    assert "report-test" in render_text(tmp_path, run_id="r1")
    both = render_text(tmp_path, all_runs=True)
    assert "report-test" in both and "second" in both
    with pytest.raises(KeyError, match="r1, r2"):
        render_text(tmp_path, run_id="nope")


def test_a_failing_store_read_is_not_taken_for_an_older_results_db(tmp_path):
    """The store migrates older files (their samples and telemetry tables empty): a read that
    fails is a bug to see, never swallowed as "an older results.db"."""
    make_store(tmp_path)

    class Broken(Store):
        def telemetry_rows(self, run_id):
            raise RuntimeError("telemetry read failed")

    with Broken(tmp_path, readonly=True) as st:
        with pytest.raises(RuntimeError, match="telemetry read failed"):
            render_text(st)
    with Broken(tmp_path, readonly=True) as st:
        from manybench.report.html import html_page
        with pytest.raises(RuntimeError, match="telemetry read failed"):
            html_page(st)


@pytest.mark.parametrize("page", [False, True])
def test_each_run_is_summarised_once_for_a_report(tmp_path, monkeypatch, page):
    """The tables, headline, hints and (for a page) the figures come from one reading of each
    run (report/build.py): its points are made from its phases' aggregates once per run,
    whichever module imported it, and no module reads every record (issue 30)."""
    import sys

    from manybench.analysis import agg_points
    make_store(tmp_path)
    st = Store(tmp_path)
    st.begin_run("r2", Plan(name="second", tasks=[]), [], ENV)
    st.close()
    calls = []
    real = agg_points.points_of

    def counted(phases, aggs, *a, **kw):
        calls.append(sum(ps[0].records for ps in aggs.values()))
        return real(phases, aggs, *a, **kw)

    def every_record(*_a, **_k):
        raise AssertionError("the report read every record")
    monkeypatch.setattr(Store, "records", every_record)
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("manybench") and \
                getattr(mod, "points_of", None) is real:
            monkeypatch.setattr(mod, "points_of", counted)
    if page:   # the figures' data is read as a page reads it; drawing them is not needed
        import manybench.report.plots as plots
        monkeypatch.setattr(plots, "task_plots", lambda d: [])
        write_html(tmp_path, tmp_path / "report.html", all_runs=True)
    else:
        render_text(tmp_path, all_runs=True)
    assert sorted(calls) == [0, 2 * NULLS + 2 * 2 + 2]   # r2 holds no record; r1 its own
