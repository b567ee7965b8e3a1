"""One figure, one meaning (issue 29, items 1, 2, 4 and 8): a name shown in two views is one
figure with one value, scope and unit; a job's figure is never divided over its ranks; a
value a program prints once is not a distribution; units and counts read right. Known
answers on constructed runs."""
from __future__ import annotations

import re

import pytest

from suite_paths import FIXTURES

from manybench.model import Phase, Plan, TaskSpec
from manybench.record import Record
from manybench.report import render_text
from manybench.report.build import build
from manybench.results.store import Store

T = 1_700_000_000_000_000_000
S = 1_000_000_000
GiB = 2**30


def _store(path, task: TaskSpec, kernel: str, phases: list[list[Record]],
           params: dict | None = None) -> str:
    st = Store(path)
    st.begin_run("r", Plan(name="m", tasks=[task], raw={}), [], {"hostname": "n1"})
    for i, recs in enumerate(phases):
        w = recs[0].workers
        st.write_phase("r", Phase(i, task, kernel, "", i, w, "spread", "core", params or {},
                                  f"{task.name}-{w}"), T + i * 10 * S, recs)
    st.end_run("r", "finished")
    st.close()
    return str(path)


def _rec(i: int, slot: int, workers: int, task: str, kernel: str, start: float, end: float,
         **kw) -> Record:
    t0 = T + i * 10 * S
    return Record(run="r", phase=i, task=task, kernel=kernel, variant="", rep=i,
                  workers=workers, node="n1", slot=slot, cpu=slot, t0_ns=t0,
                  start_ns=t0 + round(start * S), end_ns=t0 + round(end * S),
                  elapsed_s=end - start, **kw)


def _columns(table) -> dict[tuple[str, str], tuple[int, str]]:
    """(label, scope) -> (column index, unit) of a view's table, from its headers
    ("bandwidth\\nper slot, GiB/s"; a label may be broken over lines)."""
    out = {}
    for j, head in enumerate(table.columns):
        lines = head.split("\n")
        for k, line in enumerate(lines):
            m = re.fullmatch(r"(aggregate|per slot|per job)(?:, (.+))?", line)
            if m:
                out[(" ".join(lines[:k]), m.group(1))] = (j, m.group(2) or "")
    return out


def _median(cell: str) -> float:
    return float(cell.split(" ")[0])


def _full(path):
    (view,) = build(path, all_columns=True)
    return view


# -- item 1: "bandwidth per slot" is one figure -------------------------------------------------

def _skewed_write(tmp_path) -> str:
    """io.write, 2 workers: each slot writes 1 GiB in 1 s of its own, half a second apart, so
    the phase's window is 1.5 s: aggregate 2 GiB / 1.5 s, its share per slot 0.667 GiB/s,
    while each slot's own bytes over its own time is 1 GiB/s."""
    spec = TaskSpec("write", "io.write", {})
    recs = [[_rec(i, s, 2, "write", "io.write", 0.5 * s, 1.0 + 0.5 * s, bytes=GiB, ops=1024)
             for s in range(2)] for i in range(3)]
    return _store(tmp_path, spec, "io.write", recs)


def test_a_figure_drawn_under_a_name_the_table_shows_has_the_tables_value(tmp_path):
    """Item 1: the per-slot figure drew each slot's own bytes / elapsed under the name of the
    table's column "bandwidth per slot" (aggregate / workers): 0.667 in the table, 1.0 in
    the figure."""
    from manybench.report.plots import figures
    out = _skewed_write(tmp_path)
    (table,) = [t for t in build(out, all_columns=True)[0].tables if t.task == "write"]
    cols = _columns(table)
    with Store(out, readonly=True) as st:
        plots = {p.name: p for p in figures(st)["write"]}
    for plot in plots.values():
        (ax, *_) = plot.figure.axes
        label = ax.get_ylabel()
        m = re.fullmatch(r"(.+?) ?(aggregate|per slot|per job) \((.+)\)", label)
        if m is None:
            continue
        name, scope, unit = m.groups()
        if (name, scope) not in cols:
            continue
        j, table_unit = cols[(name, scope)]
        assert unit == table_unit, (plot.name, label, table.columns[j])
        shown = [round(_median(row[j]), 2) for row in table.rows]
        drawn = [[round(float(y), 2) for y in ln.get_ydata()] for ln in ax.get_lines()]
        assert shown in drawn, (plot.name, label, drawn, shown)
    # the table's share of the aggregate, and the slots' own rate, each under its own name
    j, unit = cols[("bandwidth", "per slot")]
    assert unit == "GiB/s" and table.rows[0][j] == "0.667"
    assert any(_median(row[j2]) == 1.0 for row in table.rows
               for (name, scope), (j2, _) in cols.items() if scope == "per slot"
               and name != "bandwidth")


# -- item 2: a job's figure is never halved over its ranks -------------------------------------

def _osu_bw(tmp_path, workers: int) -> str:
    """OSU bandwidth as MPI jobs of 2 ranks: each job's rank 0 carries the program's figures
    (osu_bw printed 3,296 MB/s), its other rank none."""
    spec = TaskSpec("bw", "mpi", {"ranks": 2}, command=["osu_bw"])
    phases = []
    for i in range(3):
        recs = []
        for s in range(workers):
            job, rank = divmod(s, 2)
            m = {"job": job, "job_rank": rank}
            if rank == 0:
                m |= {"bandwidth_mb_s": 3296.0, "latency_us": 5.5}
            recs.append(_rec(i, s, workers, "bw", "mpi", 0.0, 1.0, metrics=m,
                             params={"ranks": 2}))
        phases.append(recs)
    return _store(tmp_path, spec, "mpi", phases, {"ranks": 2})


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_jobs_figure_is_per_job_never_per_slot(tmp_path, jobs):
    out = _osu_bw(tmp_path, 2 * jobs)
    (table,) = [t for t in _full(out).tables if t.task == "bw"]
    cols = _columns(table)
    assert ("bandwidth_mb_s", "per slot") not in cols, table.columns
    assert ("latency_us", "per slot") not in cols, table.columns
    j, unit = cols[("bandwidth_mb_s", "aggregate")]
    # the unit its name says, the sum over the phase's jobs
    assert unit == "MB/s" and _median(table.rows[0][j]) == 3296 * jobs
    if jobs > 1:
        j, unit = cols[("bandwidth_mb_s", "per job")]
        assert unit == "MB/s" and _median(table.rows[0][j]) == 3296
    j, unit = cols[("latency_us", "per job")]
    assert unit == "us" and _median(table.rows[0][j]) == 5.5
    from manybench.results import summary
    (point,) = summary(out)["runs"][0]["tasks"][0]["points"]
    scopes = {(f["figure"], f["scope"]) for f in point["figures"]}
    assert ("bandwidth_mb_s", "per slot") not in scopes
    assert ("latency_us", "per job") in scopes


# -- item 4: a value printed once per run is a value --------------------------------------------

def test_a_metric_a_program_prints_once_is_a_value_not_percentiles(tmp_path):
    """`metrics.latency = 'latency_us: (?P<value>...)'`: the program's mean, once per run,
    read "latency p50 / p99 5.50 / -" (the name of the computed latency distribution) and
    came twice under --all."""
    spec = TaskSpec("lat", "command", {}, command=["lat"], metrics={"latency": "x"})
    recs = [[_rec(i, 0, 1, "lat", "command", 0.0, 1.0, metrics={"latency": 5.5 + i})]
            for i in range(3)]
    out = _store(tmp_path, spec, "command", recs)
    text = render_text(out, width=200)
    table = text.split("lat (command)")[1]
    assert "p50" not in table and "p99" not in table, table
    assert "6.50 (5.50-7.50)" in table, table
    (full,) = [t for t in _full(out).tables if t.task == "lat"]
    heads = [c for c in full.columns if c.split("\n")[0] == "latency"]
    assert len(heads) == 1, full.columns


# -- item 8: units and names agree -----------------------------------------------------------------

def test_a_column_takes_its_unit_from_its_range_not_its_median(tmp_path):
    """Lateness of a few ns with one slot 954 us late printed "954107" in an ns column."""
    spec = TaskSpec("sync", "null", {})
    recs = [[_rec(i, s, 4, "sync", "null", (954107e-9 if (i, s) == (0, 3) else 3e-9),
                  0.001) for s in range(4)] for i in range(3)]
    out = _store(tmp_path, spec, "null", recs)
    text = render_text(out, width=200, all_columns=True)
    (row,) = [line for line in text.splitlines() if "12/12" in line]
    numbers = [float(x) for x in re.findall(r"(?<![\w./-])\d+(?:\.\d+)?(?![\w./-])", row)]
    assert max(numbers) < 1000, row


def test_a_metric_whose_name_says_its_unit_is_shown_in_it(tmp_path):
    spec = TaskSpec("c", "command", {}, command=["c"], metrics={})
    recs = [[_rec(i, 0, 1, "c", "command", 0.0, 1.0,
                  metrics={"xfer_mb_s": 1500.0 + i, "flush_us": 25000.0 + i})] for i in range(3)]
    out = _store(tmp_path, spec, "command", recs)
    (table,) = [t for t in _full(out).tables if t.task == "c"]
    cols = _columns(table)
    assert cols[("xfer_mb_s", "aggregate")][1] == "MB/s"
    assert cols[("flush_us", "per slot")][1] == "us"
    assert _median(table.rows[0][cols[("flush_us", "per slot")][0]]) == 25001


def test_the_figure_beside_a_table_is_in_the_tables_unit(tmp_path):
    """A table in kops/s beside a figure in ops/s."""
    from manybench.report.plots import figures
    spec = TaskSpec("mkdir", "meta.mkdir", {})
    recs = [[_rec(i, s, w, "mkdir", "meta.mkdir", 0.0, 1.0, ops=12500 * (1 + i % 2))
             for s in range(w)] for i, w in enumerate((1, 1, 2, 2))]
    out = _store(tmp_path, spec, "meta.mkdir", recs)
    (table,) = [t for t in build(out)[0].tables if t.task == "mkdir"]
    units = {u for _, u in _columns(table).values()}
    assert "kops/s" in units
    with Store(out, readonly=True) as st:
        (scaling,) = [p for p in figures(st)["mkdir"] if p.name == "scaling"]
    assert "(kops/s)" in scaling.figure.axes[0].get_ylabel()


def test_every_column_of_one_quantity_reads_in_one_unit_system(tmp_path):
    """io.randread's --all table showed MiB/s beside MB/s, and "iops" beside "ops rate"."""
    spec = TaskSpec("rr", "io.randread", {})
    recs = [[_rec(i, s, 2, "rr", "io.randread", 0.0, 1.0, bytes=400 * 2**20, ops=102400,
                  metrics={"iops": 102400.0, "mb_s": 419.4}) for s in range(2)]
            for i in range(3)]
    out = _store(tmp_path, spec, "io.randread", recs)
    (table,) = [t for t in _full(out).tables if t.task == "rr"]
    heads = " ".join(table.columns)
    assert "MB/s" not in heads.replace("MiB/s", ""), table.columns
    assert not re.search(r"(^|\s)iops(\s|$)", heads), table.columns


def test_a_warning_writes_values_as_the_table_does(tmp_path):
    """Warnings said "phases last 274030.0 us" and "block=65536" where the table said 64KiB."""
    from manybench.analysis import summarize
    from manybench.run.quality import short
    spec = TaskSpec("w", "io.write", {"block": ["64KiB", "1MiB"]})
    phases = []
    for i, block in enumerate((65536, 1 << 20)):
        phases.append([_rec(i, s, 2, "w", "io.write", 0.2 * s, 0.27403 + 0.2 * s, bytes=GiB,
                            ops=1, params={"block": block}) for s in range(2)])
    st = Store(tmp_path)
    st.begin_run("r", Plan(name="m", tasks=[spec], raw={}), [], {"hostname": "n1"})
    for i, recs in enumerate(phases):
        p = recs[0].params
        st.write_phase("r", Phase(i, spec, "io.write", "", 0, 2, "spread", "core", p,
                                  f"w-{p['block']}"), T + i * 10 * S, recs)
    st.end_run("r", "finished")
    with st:
        points = summarize(st.records("r"), st.phases("r"))
    found = short(points, 1.0)
    text = " ".join(f[3] for f in found)
    assert "block=64KiB" in text and "65536" not in text, text
    assert "474.03ms" in text and not re.search(r"\d us\b", text), text


def test_a_tools_version_reads_as_it_printed():
    """IMB 2021.11 was a number, shown as "2021"."""
    from manybench.parsers import parse_output
    fix = FIXTURES / "imb" / "IMB-MPI1_2021.11_openmpi_np2.txt"
    m, _ = parse_output("imb", fix.read_text(), "")
    assert m["version"] == "2021.11"


def test_counts_agree_with_their_nouns(tmp_path):
    """"1 workers", "1 phases": a count of one is singular wherever a report says it."""
    spec = TaskSpec("sync", "null", {})
    out = _store(tmp_path, spec, "null",
                 [[_rec(0, 0, 1, "sync", "null", 0.0, 0.001)]])
    text = render_text(out, width=200, all_columns=True) + render_text(out, width=200)
    from manybench.report.plots import figures
    with Store(out, readonly=True) as st:
        text += " ".join(p.figure.axes[0].get_title() for p in figures(st)["sync"])
    bad = re.findall(r"\b1 (workers|phases|slots|nodes|cpus|runs|records|jobs|ranks)\b", text)
    assert not bad, (bad, text)


# -- every view shows the same figures (issue 29, "Done means") -------------------------------

def _randread(tmp_path) -> str:
    spec = TaskSpec("rr", "io.randread", {})
    recs = [[_rec(i, s, w, "rr", "io.randread", 0.0, 1.0 + 0.1 * s, bytes=400 * 2**20,
                  ops=102400, metrics={"iops": 102400.0, "mb_s": 419.4},
                  hist={100 + s: 500, 140: 20}) for s in range(w)]
            for i, w in enumerate((1, 1, 2, 2))]
    return _store(tmp_path, spec, "io.randread", recs)


def _command(tmp_path) -> str:
    spec = TaskSpec("lat", "command", {}, command=["lat"], metrics={"latency": "x"})
    recs = [[_rec(i, s, w, "lat", "command", 0.0, 1.0,
                  metrics={"latency": 5.5 + i, "xfer_mb_s": 1500.0 + i,
                           "flush_us": 25000.0 + s}) for s in range(w)]
            for i, w in enumerate((1, 1, 2, 2))]
    return _store(tmp_path, spec, "command", recs)


def _null(tmp_path) -> str:
    spec = TaskSpec("sync", "null", {})
    recs = [[_rec(i, s, w, "sync", "null", 1e-6 * s, 2e-6 * s + 1e-5) for s in range(w)]
            for i, w in enumerate((1, 1, 4, 4))]
    return _store(tmp_path, spec, "null", recs)


@pytest.mark.e2e
@pytest.mark.parametrize("make", [_skewed_write, lambda p: _osu_bw(p, 4), _randread, _command,
                                  _null], ids=["write", "osu-jobs", "randread", "command",
                                               "null"])
def test_every_view_shows_every_figure_alike(tmp_path, make):
    from figure_views import assert_views_agree
    checked = assert_views_agree(make(tmp_path / "res"))
    assert checked["json"] == checked["table"] and checked.get("plots"), checked
