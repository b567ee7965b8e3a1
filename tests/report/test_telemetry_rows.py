"""The rows a task's telemetry figure draws (report/plots/telemetry_rows.py): a task's rows as
stored while they are few, else each node's consecutive rows merged into rows over their
span, rates weighted by their intervals, memory its largest level, and how many were merged
said with them."""
from __future__ import annotations

from dataclasses import replace

from pytest import approx

from builders import S, T, telemetry
from manybench.report.plots import telemetry_rows as R


def _rows(nodes: int, per_node: int) -> list:
    out = []
    for i in range(per_node):
        for n in range(nodes):
            out.append(replace(telemetry("r", T + (i + 1) * S, 0), node=f"n{n}",
                               interval_s=1.0 if i % 2 else 0.5, cpu_user_pct=float(i % 10),
                               mem_used_bytes=i, disk_write_bps=1e6 * i))
    return out


def test_a_task_of_few_rows_is_drawn_from_its_rows_as_stored():
    rows = _rows(4, R.FIGURE_ROWS // 4)
    drawn, merged = R.by_task(rows, lambda r: "w")
    assert drawn == {"w": rows} and merged == {"w": 1}
    assert R.by_task(rows, lambda r: None) == ({}, {})


def test_a_long_tasks_rows_are_merged_over_their_span_weighted_by_interval():
    nodes, per_node = 4, R.FIGURE_ROWS           # 4 x the rows a figure draws
    rows = _rows(nodes, per_node)
    drawn, merged = R.by_task(rows, lambda r: "w")
    k = merged["w"]
    assert k == per_node // (R.FIGURE_ROWS // nodes) == 4
    assert len(drawn["w"]) == nodes * per_node // k <= R.FIGURE_ROWS
    n0 = [r for r in drawn["w"] if r.node == "n0"]
    stored = [r for r in rows if r.node == "n0"]
    for j, m in enumerate(n0):
        group = stored[j * k:(j + 1) * k]
        w = [r.interval_s for r in group]
        assert m.t_ns == group[-1].t_ns
        # from the first row's start to the last row's end
        assert m.interval_s == approx((group[-1].t_ns - group[0].t_ns) / 1e9
                                      + group[0].interval_s)
        assert m.cpu_user_pct == sum(r.cpu_user_pct * x for r, x in zip(group, w)) / sum(w)
        assert m.disk_write_bps == sum(r.disk_write_bps * x for r, x in zip(group, w)) / sum(w)
        assert m.mem_used_bytes == max(r.mem_used_bytes for r in group)
    # the covered time is the stored rows'
    assert n0[0].t_ns - n0[0].interval_s * 1e9 == approx(stored[0].t_ns
                                                        - stored[0].interval_s * 1e9)
    assert n0[-1].t_ns == stored[-1].t_ns


def test_a_remainder_is_merged_into_a_last_shorter_row():
    rows = _rows(1, R.FIGURE_ROWS * 2 + 3)
    drawn, merged = R.by_task(rows, lambda r: "w")
    k = merged["w"]
    assert k == 3 and len(drawn["w"]) == -(-len(rows) // k)
    last = drawn["w"][-1]
    assert last.t_ns == rows[-1].t_ns and last.mem_used_bytes == rows[-1].mem_used_bytes
