"""The report's figures: the data they draw (known answers), every figure present in the
self-contained HTML page and in `report --plots DIR`, and the page loaded offline in headless
Chromium with no console error."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from builders import StoreWithSamples, make_store, write_samples
from conftest import run_cli
from manybench.analysis import summarize
from manybench.report.html import html_page
from manybench.report.plots import MODULES, task_plots
from manybench.report.plots.data import split
from manybench.analysis.throughput import aggregate
from manybench.report.plots.timeline import busy_steps
from manybench.results.contract import Sample
from manybench.results.store import Store

T = 1_700_000_000_000_000_000
S = 1_000_000_000
MiB = 1 << 20
# every figure a task with samples and telemetry has (`sizes` needs OSU/IMB tables:
# tests/report/test_plots_sizes.py)
ALL = [m.__name__.rsplit(".", 1)[1] for m in MODULES if not m.__name__.endswith(".sizes")]


def test_busy_steps_and_aggregate_throughput_known_answers():
    ts, ns = busy_steps([(0.0, 10.0), (2.0, 5.0), (3.0, 12.0)])
    assert list(zip(ts, ns)) == [(0.0, 1), (2.0, 2), (3.0, 3), (5.0, 2), (10.0, 1), (12.0, 0)]
    t, rate = aggregate(write_samples(0, 3))
    assert len(t) == 10 and all(abs(r - 300 * MiB) < 1 for r in rate)   # 3 slots x 100 MiB/s
    # slots sampled at different instants still sum on one grid
    offset = [Sample("r", 0, 1, "n2", k / 10 + 0.05, k * 10 * MiB, "bytes") for k in range(11)]
    t, rate = aggregate(write_samples(0, 1) + offset)
    assert abs(rate[len(rate) // 2] - 200 * MiB) < 1


def test_every_figure_of_a_task_with_samples_and_telemetry(tmp_path):
    samples, telemetry = make_store(tmp_path)
    with Store(tmp_path, readonly=True) as st:
        records, phases = st.records("r1"), st.phases("r1")
    data = {d.task: d for d in split(summarize(records, phases), records, phases, {}, samples,
                                     telemetry)}
    assert [p.name for p in task_plots(data["write"])] == ALL
    # a null task: no samples, telemetry or latency to draw
    assert [p.name for p in task_plots(data["sync"])] == ["scaling", "per_slot", "timeline",
                                                          "gantt", "elapsed"]
    # the per-phase figures show the phase with the most workers
    assert data["write"].shown_phase() == 8


def test_html_is_self_contained_with_every_figure(tmp_path):
    samples, telemetry = make_store(tmp_path)
    StoreWithSamples.samples_by_run, StoreWithSamples.telemetry_by_run = samples, telemetry
    with StoreWithSamples(tmp_path, readonly=True) as st:
        page = html_page(st)
    figs = re.findall(r'<figure class="plot" data-plot="(\w+)"', page)
    assert figs == ["scaling", "per_slot", "timeline", "gantt", "elapsed"] + ALL
    assert page.count("<svg") == len(figs)
    # nothing fetched: no script, stylesheet link, or external reference
    assert "<script" not in page and "<link" not in page and "<img" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "write (io.write)" in page and "every figure of write" in page and "lateness" in page
    # a store without samples or telemetry (before those tables exist): those figures left out
    plain = html_page(str(tmp_path))
    assert 'data-plot="throughput"' not in plain and 'data-plot="telemetry"' not in plain
    assert 'data-plot="gantt"' in plain


@pytest.mark.e2e
def test_plots_dir_png_and_svg(tmp_path):
    make_store(tmp_path / "res")
    out = tmp_path / "figs"
    res = run_cli("report", str(tmp_path / "res"), "--plots", str(out))
    assert res.returncode == 0, res.stderr
    names = sorted(os.listdir(out))
    assert "write-scaling.png" in names and "write-gantt.svg" in names
    assert "sync-timeline.png" in names and len(names) == 2 * (5 + 6)   # write: no samples
    for n in names:
        head = (out / n).read_bytes()[:8]
        assert head == b"\x89PNG\r\n\x1a\n" if n.endswith(".png") else b"<svg" in \
            (out / n).read_bytes()[:400]


def _chromium(url: str, tmp_path, what: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    profile = tmp_path / f"profile-{what}"
    # networking off: no background fetches, and any request would go to a dead proxy
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=5000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line or "Uncaught" in line or "ERR_" in line]


@pytest.mark.e2e
@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")),
                    reason="needs chromium (Debian package chromium) to render the HTML report")
def test_html_renders_offline_in_headless_chromium(tmp_path):
    samples, telemetry = make_store(tmp_path)
    StoreWithSamples.samples_by_run, StoreWithSamples.telemetry_by_run = samples, telemetry
    with StoreWithSamples(tmp_path, readonly=True) as st:
        page = html_page(st)
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    res = _chromium(path.as_uri(), tmp_path, "report")
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    figs = re.findall(r'<figure class="plot" data-plot="\w+"[^>]*>\s*<svg[^>]*>.*?</svg>', dom,
                      re.S)
    assert len(figs) == 5 + len(ALL)
    assert all("<path" in f or "<use" in f for f in figs)     # drawn, not empty
    assert _console_errors(res.stderr) == []
    # the check sees what it looks for: a page with a console error and a fetch is caught
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><img src="http://example.org/x.png">'
                   '<script>console.error("boom")</script></body></html>')
    caught = _console_errors(_chromium(bad.as_uri(), tmp_path, "bad").stderr)
    assert any("boom" in line for line in caught)


def _plots(tmp_path) -> dict:
    samples, telemetry = make_store(tmp_path)
    with Store(tmp_path, readonly=True) as st:
        records, phases = st.records("r1"), st.phases("r1")
    return {d.task: d for d in split(summarize(records, phases), records, phases, {}, samples,
                                     telemetry)}


# axes that count or name things: no unit to state
UNITLESS = {"workers", "slots busy", "node/slot", ""}


def test_every_axis_of_every_figure_states_its_unit(tmp_path):
    """Issue 17, Done means: every figure has its unit on its axis (a quantity's label ends
    with its unit in parentheses, or is the unit itself, as telemetry's MiB/s and cpu %)."""
    for d in _plots(tmp_path).values():
        for p in task_plots(d):
            for ax in p.figure.axes:
                for label in (ax.get_xlabel(), ax.get_ylabel()):
                    assert label in UNITLESS or re.search(r"\([^)]+\)|^\S*(/s|%)$|%$", label), \
                        (p.task, p.name, label)


def test_the_throughput_figure_draws_the_phases_aggregate_bandwidth(tmp_path):
    """The series beside the figure the tables show: sum(bytes) / window of the phase drawn
    (4 slots x 100 MiB over 1 s + 30 us: 400 MiB/s), a dashed line a reader compares the
    points with (a ramp at the start and end puts the middle above it)."""
    d = _plots(tmp_path)["write"]
    (fig,) = [p.figure for p in task_plots(d) if p.name == "throughput"]
    (ax,) = fig.axes
    lines = [ln for ln in ax.get_lines() if "sum(bytes)" in str(ln.get_label())]
    assert len(lines) == 1, [ln.get_label() for ln in ax.get_lines()]
    ys = set(lines[0].get_ydata())
    assert len(ys) == 1 and abs(ys.pop() - 400 / (1 + 30e-6)) < 1e-3
    assert lines[0].get_linestyle() == "--"


def test_each_figure_is_in_the_unit_of_its_tables_column(tmp_path):
    """Issue 17, item 4 and issue 29, item 1: one unit for a figure across a task's tables
    and figures. Slots that each write at 1.17 GiB/s in their own time, 9.5 s apart, make an
    aggregate of 120 MiB/s: the table and the scaling figure say MiB/s for the aggregate;
    the per-slot figure draws each slot's own bandwidth, another figure, in its own column's
    unit (GiB/s), not under the name of the aggregate's share per slot."""
    from manybench.model import Phase, Plan, TaskSpec
    from manybench.record import Record
    spec = TaskSpec("w", "io.write", {})
    st = Store(tmp_path)
    st.begin_run("r1", Plan(name="u", tasks=[spec], raw={}), [], {"hostname": "n1"})
    recs = [Record(run="r1", phase=0, task="w", kernel="io.write", variant="", rep=0,
                   workers=2, node="n1", slot=s, cpu=s, t0_ns=T, start_ns=T + a,
                   end_ns=T + a + S // 2, elapsed_s=0.5, ops=600, bytes=600 * MiB)
            for s, a in enumerate((0, 19 * S // 2))]
    st.write_phase("r1", Phase(0, spec, "io.write", "", 0, 2, "spread", "core", {}, "w-2"),
                   T, recs)
    st.end_run("r1", "finished")
    st.close()
    with Store(tmp_path, readonly=True) as st:
        records, phases = st.records("r1"), st.phases("r1")
    (d,) = split(summarize(records, phases), records, phases, {}, [], [])
    labels = {p.name: p.figure.axes[0].get_ylabel() for p in task_plots(d)}
    assert labels["scaling"] == "bandwidth aggregate (MiB/s)", labels
    assert labels["per_slot"] == "own bandwidth per slot (GiB/s)", labels
    from manybench.report.build import build
    (view,) = build(str(tmp_path), all_columns=True)
    heads = view.tables[0].columns
    assert "bandwidth\naggregate, MiB/s" in heads and "bandwidth\nper slot, MiB/s" in heads
    assert "own bandwidth\nper slot, GiB/s" in heads, heads


def test_a_phase_of_many_slots_draws_a_few_of_them_and_every_outlier():
    """report/plots/few.py: a Gantt of 64,000 slots took a minute and 2 GB to draw; beyond
    MAX_BARS the figure draws evenly spaced slots and the ones that stand out, and says so."""
    from manybench.report.plots.few import MAX_BARS, OUTLIERS, few
    xs = list(range(10_000))
    drawn, said = few(xs, lambda x: -abs(x - 5_001.5))     # 5,001 and 5,002 stand out
    assert len(drawn) <= MAX_BARS and drawn == sorted(drawn)
    assert {5_001, 5_002} <= set(drawn) and said.startswith(f"{len(drawn)} of 10,000 slots")
    assert len(set(drawn) & set(range(5_001 - OUTLIERS, 5_003 + OUTLIERS))) >= OUTLIERS
    assert few(xs[:MAX_BARS], float) == (xs[:MAX_BARS], "")
