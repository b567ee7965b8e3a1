"""The `sizes` figure: OSU/IMB tables (results' series) against message size, in the HTML
report, one line per series and variant, median over repetitions."""
from __future__ import annotations


from suite_paths import FIXTURES

from manybench.model import Phase, Plan, TaskSpec
from manybench.parsers import parse_output
from manybench.record import Record
from manybench.report.plots import figures
from manybench.report.html import html_page
from manybench.results.store import Store


def _read(kind: str, name: str) -> str:
    with open(FIXTURES / kind / name) as f:
        return f.read()

T = 1_700_000_000_000_000_000


def _store(path) -> None:
    spec = TaskSpec("osu", "command", {})
    st = Store(path)
    st.begin_run("r1", Plan(name="osu", tasks=[spec], raw={}), [], {"hostname": "n1"})
    runs = [("openmpi", "osu_latency_5.3_openmpi_np2.txt"),
            ("mpich", "osu_latency_7.4_mpich_np2.txt"),
            ("openmpi", "osu_bw_5.3_openmpi_np2.txt")]
    for i, (variant, name) in enumerate(runs):
        metrics, tables = parse_output("osu", _read("osu", name), "")
        t0 = T + i * 10**9
        recs = [Record(run="r1", phase=i, task="osu", kernel="command", variant=variant, rep=0,
                       workers=2, node="n1", slot=s, cpu=s, t0_ns=t0, start_ns=t0 + 10,
                       end_ns=t0 + 10**8, elapsed_s=0.1, ops=1,
                       metrics=dict(metrics) if s == 0 else {},
                       extra={"rank": s, **({"series": [t.to_json() for t in tables]}
                                            if s == 0 else {})}) for s in (0, 1)]
        st.write_phase("r1", Phase(i, spec, "command", variant, 0, 2, "spread", "core", {},
                                   f"osu {variant}"), t0, recs)
    st.end_run("r1", "finished")
    st.close()


def test_sizes_figure_one_line_per_variant_and_series_one_panel_per_unit(tmp_path):
    _store(tmp_path)
    with Store(tmp_path, readonly=True) as st:
        [fig] = [p.figure for p in figures(st)["osu"] if p.name == "sizes"]
    by_unit = {ax.get_ylabel(): ax for ax in fig.axes}
    assert sorted(by_unit) == ["MB/s", "us"]
    lat, bw = by_unit["us"], by_unit["MB/s"]
    assert sorted(line.get_label() for line in lat.get_lines()) == [
        "mpich osu_latency", "openmpi osu_latency"]
    [openmpi] = [line for line in lat.get_lines() if line.get_label() == "openmpi osu_latency"]
    xs, ys = openmpi.get_data()
    assert 0 not in list(xs) and len(xs) == 23          # 5.3 prints 0..4 MiB: 0 left out
    assert dict(zip(xs, ys))[8192] == 2.52
    [bwl] = bw.get_lines()
    assert dict(zip(*bwl.get_data()))[2097152] == 13273.27


def test_no_sizes_figure_without_tables(tmp_path):
    _store(tmp_path)
    with Store(tmp_path) as st:
        st.write_phase("r1", Phase(0, TaskSpec("osu", "command", {}), "command", "openmpi", 0, 2,
                                   "spread", "core", {}, "osu"), T,
                       [Record(run="r1", phase=0, task="osu", kernel="command",
                               variant="openmpi", rep=0, workers=2, node="n1", slot=0, cpu=0,
                               t0_ns=T, start_ns=T + 1, end_ns=T + 2)])
        for i in (1, 2):
            st.write_phase("r1", Phase(i, TaskSpec("osu", "command", {}), "command", "openmpi", 0,
                                       2, "spread", "core", {}, "osu"), T,
                           [Record(run="r1", phase=i, task="osu", kernel="command",
                                   variant="openmpi", rep=0, workers=2, node="n1", slot=0,
                                   cpu=0, t0_ns=T, start_ns=T + 1, end_ns=T + 2)])
    with Store(tmp_path, readonly=True) as st:
        assert "sizes" not in [p.name for p in figures(st)["osu"]]


def test_html_report_holds_the_sizes_figure(tmp_path):
    _store(tmp_path)
    with Store(tmp_path, readonly=True) as st:
        page = html_page(st)
    assert "against message size" in page
