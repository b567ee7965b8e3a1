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
           "peaks": P.derive({"cores": 4, "base_ghz": 2.5, "dp_flops_per_cycle": 40}).as_dict()}
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
    # the efficiency of that same sum: 2200 MFLOPS of a peak of 2 slots x 100 GFLOPS
    assert "1% of 200000 MFLOPS" in rows[1], table
