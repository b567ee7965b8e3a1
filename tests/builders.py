"""Builders that several test modules share: records and phases as the store returns them, a
plan with its phases, telemetry rows, a kernel run through its prepare/run/cleanup contract.
Test modules import these from here, never from one another."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from manybench.model import Phase, Plan, TaskSpec
from manybench.record import Record
from manybench.results.contract import StoredPhase, TelemetryRow

if TYPE_CHECKING:      # the kernels need the native build: imported when a kernel is run
    from manybench.kernels import Result, SlotContext

T = 1_700_000_000_000_000_000    # a T0 in ns since the epoch (November 2023)
T0 = T
S = 1_000_000_000                # ns per second

# ---- analysis: records and phases built by hand --------------------------------------------


def rec(phase: int, slot: int, t0: int, start: int, end: int, *, task="t", kernel="null",
        workers=4, params=None, status="ok", **kw) -> Record:
    return Record(run="r", phase=phase, task=task, kernel=kernel, variant=kw.pop("variant", ""),
                  rep=0, workers=workers, node="n", slot=slot, cpu=slot, t0_ns=t0,
                  start_ns=start, end_ns=end, status=status, params=params or {}, **kw)


def pinfo(index: int, point: str, *, task="t", kernel="null", workers=4, params=None, t0=None):
    """A phase as Store.phases() returns it."""
    return StoredPhase(run="r", index=index, task=task, kernel=kernel, variant="", rep=0,
                       workers=workers, point=point, params=params or {}, t0_ns=t0)


def io_data() -> tuple[list[Record], list[StoredPhase]]:
    """Two io.write phases of 2 slots: the first's window is 2 s, the second's 1 s."""
    p = {"block": 1 << 20, "size": 4 << 20}
    mk = lambda i, s, t0, a, b, el: rec(i, s, t0, t0 + a, t0 + b, kernel="io.write", workers=2,
                                         params=p, ops=4, bytes=4 << 20, elapsed_s=el)
    t1 = T + 10 * S
    records = [mk(0, 0, T, 0, S, 1.0), mk(0, 1, T, 1000, 2 * S, 2.0),   # window 2 s
               mk(1, 0, t1, 0, S, 1.0), mk(1, 1, t1, 0, S, 1.0)]        # window 1 s
    phases = [pinfo(0, "w", kernel="io.write", workers=2, params=p, t0=T),
              pinfo(1, "w", kernel="io.write", workers=2, params=p, t0=t1)]
    return records, phases


# ---- the store: a plan, its phases, their records ------------------------------------------


def plan() -> Plan:
    spec = TaskSpec("w", "io.write", {"size": "1MiB"})
    return Plan(name="store-test", tasks=[spec], source='name = "store-test"\n',
                raw={"name": "store-test", "task": [{"name": "w"}]})


def phase(i: int, workers: int = 2) -> Phase:
    return Phase(index=i, task=plan().tasks[0], kernel="io.write", variant="", rep=i,
                 workers=workers, order="spread", pin="core", params={"size": 1048576},
                 point="w|1MiB|2", label=f"w size=1MiB workers={workers}")


def recs(run: str, i: int, nodes=("n1",), slots=(1, 0)) -> list[Record]:
    out = []
    for node in nodes:
        for s in slots:
            out.append(Record(run=run, phase=i, task="w", kernel="io.write", variant="", rep=i,
                              workers=len(nodes) * len(slots), node=node, slot=s, cpu=s,
                              t0_ns=T0, start_ns=T0 + 10 + s, end_ns=T0 + 1000 + s,
                              elapsed_s=1e-6, ops=4, bytes=1048576,
                              params={"size": 1048576}, metrics={"lat_p50_us": 2.5},
                              hist={3: 7, 70: 1}, extra={"armed_ns": T0 - 5}))
    return out


# ---- telemetry -------------------------------------------------------------------------------


def telemetry(run: str, t_ns: int, phase_id: int | None) -> TelemetryRow:
    """A row with a value in every column (a round trip shows each one)."""
    return TelemetryRow(run=run, node="n1", t_ns=t_ns, interval_s=1.0, phase_id=phase_id,
                        cpu_user_pct=12.5, cpu_system_pct=3.0, cpu_iowait_pct=0.5,
                        mem_used_bytes=2 << 30, mem_cached_bytes=1 << 30, disk_read_bps=0.0,
                        disk_write_bps=1e8, disk_busy_pct=40.0, net_rx_bps=10.0, net_tx_bps=20.0)


def busy_row(node: str, phase: int | None, busy: float) -> TelemetryRow:
    """A row whose only load is `busy` percent of user CPU."""
    return TelemetryRow(run="r", node=node, t_ns=T, interval_s=1.0, phase_id=phase,
                        cpu_user_pct=busy, cpu_system_pct=0.0, cpu_iowait_pct=0.0,
                        mem_used_bytes=0, mem_cached_bytes=0, disk_read_bps=0, disk_write_bps=0,
                        disk_busy_pct=0, net_rx_bps=0, net_tx_bps=0)


# ---- kernels, in process (these need the native build) -------------------------------------

LAT_KEYS = ("lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us")


def ctx_for(tmp_path, rank: int = 0, workers: int = 1, slot: int | None = None) -> SlotContext:
    from manybench.kernels import SlotContext
    slot = rank if slot is None else slot
    return SlotContext(run="r1", node="n1", slot=slot, rank=rank, workers=workers, cpu=-1,
                       scratch=os.path.join(str(tmp_path), "r1", str(slot)),
                       shared=os.path.join(str(tmp_path), "r1", "shared"))


def run_kernel(name: str, ctx: SlotContext, params: dict, lead_ms: float = 2) -> Result:
    """One phase of one slot: prepare, run at a T0 `lead_ms` ahead, clean up."""
    from manybench import _native
    from manybench.kernels import KERNELS
    k = KERNELS[name]
    state = k.prepare(ctx, params)
    try:
        t0 = _native.now_ns() + int(lead_ms * 1e6)
        r = k.run(state, t0, 0)
        assert r.start_ns >= t0
        assert r.end_ns >= r.start_ns and r.elapsed_ns >= 0
        return r
    finally:
        if k.cleanup:
            k.cleanup(state)


def check_latency(r: Result) -> None:
    assert sum(r.hist.values()) == r.ops
    m = r.metrics
    assert set(LAT_KEYS) <= set(m)
    assert 0 < m["lat_p50_us"] <= m["lat_p90_us"] <= m["lat_p99_us"] <= m["lat_max_us"]
    assert m["lat_mean_us"] <= m["lat_max_us"]
