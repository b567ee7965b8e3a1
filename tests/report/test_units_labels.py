"""One unit per column, aggregate and per slot labelled (issue 17, item 4): known answers on
constructed runs. A per-slot metric summed over slots (cpu.himeno's mflops) shows its
aggregate beside its per-slot value, the efficiency beside them uses that same sum; the
"share of N x single-node" is written in its column's unit (it printed "53% of 2 x 1288" in
a GiB/s column, 1288 being MiB/s)."""
from __future__ import annotations

from manybench.inventory import peaks as P
from manybench.model import Phase, Plan, TaskSpec
from manybench.record import Record
from manybench.report import render_text
from manybench.results.store import Store

T = 1_700_000_000_000_000_000
S = 1_000_000_000
MiB = 2**20


def _rec(phase: int, task: str, kernel: str, workers: int, slot: int, node: str, **kw) -> Record:
    return Record(run="r", phase=phase, task=task, kernel=kernel, variant="", rep=0,
                  workers=workers, node=node, slot=slot, cpu=slot, t0_ns=T + phase * S,
                  start_ns=T + phase * S, end_ns=T + phase * S + S, elapsed_s=1.0, **kw)


def _table(text: str, title: str) -> str:
    return text.split(title)[1].split("\n\n\n")[0]


def test_share_of_n_single_node_is_written_in_its_columns_unit(tmp_path):
    spec = TaskSpec("w", "io.write", {})
    st = Store(tmp_path)
    st.begin_run("r", Plan(name="u", tasks=[spec], raw={}), [], {"hostname": "n1"})
    # one node: 1288 MiB/s; two nodes, one slot each: 2 x 1288 x 0.53 MiB/s in all
    one = [_rec(0, "w", "io.write", 1, 0, "n1", bytes=1288 * MiB, ops=1288)]
    two = [_rec(1, "w", "io.write", 2, 0, node, bytes=round(1288 * 0.53 * MiB), ops=1)
           for node in ("n1", "n2")]
    for i, recs in enumerate((one, two)):
        st.write_phase("r", Phase(i, spec, "io.write", "", 0, len(recs), "spread", "core", {},
                                  f"w-{len(recs)}"), T + i * S, recs)
    st.end_run("r", "finished")
    st.close()
    table = _table(render_text(tmp_path, width=200), "w (io.write)")
    assert "aggregate, GiB/s" in table and "per slot, GiB/s" in table
    # 1288 MiB/s = 1.26 GiB/s: the share in the bandwidth column's unit
    assert "53% of 2 x 1.26 GiB/s" in table, table
    assert "1288" not in table


def test_a_summed_per_slot_metric_shows_its_aggregate_and_per_slot_and_the_efficiency_its_sum(
        tmp_path):
    spec = TaskSpec("h", "cpu.himeno", {})
    env = {"hostname": "n1", "physical_cores": 4,
           "peaks": P.derive({"cores": 4, "base_ghz": 2.5, "dp_flops_per_cycle": 40,
                              "sp_flops_per_cycle": 80}).as_dict()}
    st = Store(tmp_path)
    st.begin_run("r", Plan(name="h", tasks=[spec], raw={}), [], env)
    for i, per_slot in enumerate(([1288.0], [1000.0, 1200.0])):
        recs = [_rec(i, "h", "cpu.himeno", len(per_slot), s, "n1", ops=10,
                     metrics={"mflops": v}) for s, v in enumerate(per_slot)]
        st.write_phase("r", Phase(i, spec, "cpu.himeno", "", 0, len(recs), "spread", "core",
                                  {}, f"h-{len(recs)}"), T + i * S, recs)
    st.end_run("r", "finished")
    st.close()
    table = _table(render_text(tmp_path, width=200), "h (cpu.himeno)")
    assert "aggregate, MFLOPS" in table and "per slot, MFLOPS" in table
    rows = [line for line in table.splitlines() if line.strip().startswith(("1 ", "2 "))]
    # 2 workers: the phase's sum 2200 MFLOPS, per slot 1100 (not the median of 1000, 1200)
    assert "2200" in rows[1] and "1100" in rows[1]
    # the efficiency of that same sum: 2200 MFLOPS of a peak of 2 slots x 200 SP GFLOPS
    assert "1% of 400000 MFLOPS" in rows[1], table


README_MIXED = ["copied 2.80 GB/s\n", "copied 420 MB/s\n", "copied 3.10 GB/s\n"]


def test_a_regex_that_captures_its_unit_converts_every_value_to_one_unit():
    """Issue 17, item 3: the README's metrics.rate over outputs in GB/s and MB/s reported
    `rate 3.70 (2.80-420)`. With a (?P<unit>...) group each value is converted to the unit's
    base (B/s here) and the record says which."""
    from manybench.kernels.command import extract_metrics
    rx = {"rate": r"(?P<value>[\d.]+) (?P<unit>[kMGT]i?B/s)"}
    got = [extract_metrics(rx, [t])[0] for t in README_MIXED]
    assert [g["rate"] for g in got] == [2.8e9, 420e6, 3.1e9]
    assert {g["rate.unit"] for g in got} == {"B/s"}
    ms = extract_metrics({"t": r"took (?P<value>[\d.]+) ?(?P<unit>\w+)"}, ["took 250 ms"])[0]
    assert ms["t"] == 0.25 and ms["t.unit"] == "s"
    # no unit group: the value as printed, and the unit printed after it noted
    plain = extract_metrics({"rate": r"(?P<value>[\d.]+) [MG]B/s"}, [README_MIXED[1]])[0]
    assert plain["rate"] == 420.0 and plain["rate.unit"] == "MB/s"


def _command_run(tmp_path, outputs: list[str], rx: str) -> str:
    from manybench.kernels.command import extract_metrics
    spec = TaskSpec("dd", "command", {}, command=["dd"], metrics={"rate": rx})
    st = Store(tmp_path)
    st.begin_run("r", Plan(name="u", tasks=[spec], raw={}), [], {"hostname": "n1"})
    for i, text in enumerate(outputs):
        recs = [_rec(i, "dd", "command", 1, 0, "n1", metrics=extract_metrics({"rate": rx},
                                                                            [text])[0])]
        st.write_phase("r", Phase(i, spec, "command", "", i, 1, "spread", "core", {}, "dd-1"),
                       T + i * S, recs)
    st.end_run("r", "finished")
    st.close()
    return str(tmp_path)


def test_converted_values_are_shown_in_one_unit_named_in_the_column(tmp_path):
    out = _command_run(tmp_path, README_MIXED, r"(?P<value>[\d.]+) (?P<unit>[MG]B/s)")
    table = _table(render_text(out, width=200), "dd (command)")
    # 420 MB/s = 0.391 GiB/s, 2.8 GB/s = 2.61 GiB/s, 3.1 GB/s = 2.89 GiB/s: one column unit
    assert "GiB/s" in table and "2.61 (0.391-2.89)" in table, table


def test_mixed_or_missing_units_are_a_stored_warning(tmp_path):
    from manybench.run.quality import units
    with Store(_command_run(tmp_path / "a", README_MIXED, r"(?P<value>[\d.]+) [MG]B/s"),
               readonly=True) as st:
        (found,) = units(st.records("r"))
    kind, _, task, text = found
    assert kind == "units" and task == "dd"
    assert "GB/s" in text and "MB/s" in text and "(?P<unit>" in text
    # a unit group that captured nothing in one record: missing
    with Store(_command_run(tmp_path / "b", ["1.5 GB/s", "1.2"],
                            r"(?P<value>[\d.]+) ?(?P<unit>[MG]B/s)?"), readonly=True) as st:
        (found,) = units(st.records("r"))
    assert "no unit" in found[3]
    # one unit throughout: nothing to say
    with Store(_command_run(tmp_path / "c", README_MIXED, r"(?P<value>[\d.]+) (?P<unit>[MG]B/s)"),
               readonly=True) as st:
        assert units(st.records("r")) == []


def test_a_parallel_task_of_several_jobs_shows_one_jobs_share_beside_per_slot():
    """A rate summed over a phase of 2 jobs of 4 ranks: aggregate, per slot (/ 8 ranks) and per
    job (/ 2 jobs); one job of all the workers, or jobs of single ranks, get no per-job value
    (it would repeat the aggregate or the per-slot one)."""
    from manybench.analysis.points import PointSummary
    from manybench.analysis.stats import Stats
    from manybench.analysis.values import PER_JOB, point_values

    def point(workers: int, ranks: int) -> PointSummary:
        return PointSummary(point="p", task="t", kernel="command", variant="", workers=workers,
                            params={"ranks": ranks}, metrics={"rate_mb_s": 80.0},
                            metric_sums={"rate_mb_s": Stats.of([80.0, 80.0, 80.0])})
    vs = point_values(point(8, 4))["rate_mb_s"]
    assert [(v.scope, v.median) for v in vs] == [("aggregate", 80.0), (PER_JOB, 40.0),
                                                 ("per slot", 10.0)]
    for workers, ranks in ((8, 8), (8, 1)):
        assert PER_JOB not in {v.scope for v in point_values(point(workers, ranks))["rate_mb_s"]}
