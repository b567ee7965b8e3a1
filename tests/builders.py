"""Builders that several test modules share: records and phases as the store returns them, a
plan with its phases, telemetry rows, a kernel run through its prepare/run/cleanup contract.
Test modules import these from here, never from one another."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from manybench.analysis.compare import Comparison, Figure, RunData, Side
from manybench.analysis.points import PointSummary
from manybench.analysis.run_read import of_records as read_records
from manybench.analysis.significance import paired, welch
from manybench.model import Phase, Plan, TaskSpec
from manybench.plan.expand import point_key
from manybench.record import Record
from manybench.results.contract import (RunInfo, RunNotes, Sample, StoredNode, StoredPhase,
                                        TelemetryRow)
from manybench.results.store import Store

if TYPE_CHECKING:      # the kernels need the native build: imported when a kernel is run
    from manybench.kernels import Result, SlotContext

T = 1_700_000_000_000_000_000    # a T0 in ns since the epoch (November 2023)
T0 = T
S = 1_000_000_000                # ns per second
MiB = 1 << 20
# a command task's six metrics (cmd_store)
SIX = {"reads_per_s": "a", "bw_mib_s": "b", "fsync_us": "c", "wall_s": "d",
       "mapped_pct": "e", "gflops": "f"}

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


def fs_type(path: str) -> str:
    """The file system type of the mount holding path (longest matching mount point)."""
    path = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/self/mounts") as f:
        for line in f:
            _, point, fstype = line.split()[:3]
            if (path == point or path.startswith(point.rstrip("/") + "/")) and \
                    len(point) > len(best):
                best, kind = point, fstype
    return kind


def in_memory(path: str) -> bool:
    """File systems whose files live in the page cache: dropping it drops nothing."""
    return fs_type(path) in ("tmpfs", "ramfs")


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


# ---- comparisons: sides and runs built by hand ---------------------------------------------
def side(label: str, values: list[float], start: int = 0) -> Side:
    s = PointSummary(point=label, task="t", kernel="command", variant=label, workers=1,
                     params={})
    return Side(label, s, {start + 2 * i: v for i, v in enumerate(values)},
                {start + 2 * i: i for i in range(len(values))})


def comparison(fig: Figure, base: list[float], other: list[float]) -> Comparison:
    return Comparison("t", fig, side("a", base), side("b", other, 1),
                      paired(base, other) if len(base) == len(other) else welch(base, other))


def compare_run(points: list[tuple[str, int, dict, float]], plan_raw: dict,
         pair: bool = True) -> RunData:
    """A fabricated run of one point of task "t": (variant, rep, params, elapsed) per phase,
    in run order; keys with "pair" as runs store them now, or without as older runs did."""
    records, phases = [], []
    for i, (variant, rep, params, secs) in enumerate(points):
        key = point_key("t", variant, 1, "spread", "core", params, pair=0 if pair else None)
        t0 = 10**18 + i * 10**10
        records.append(Record(run="r", phase=i, task="t", kernel="command", variant=variant,
                              rep=rep, workers=1, node="n", slot=0, cpu=0, t0_ns=t0,
                              start_ns=t0, end_ns=t0 + int(secs * 1e9), elapsed_s=secs,
                              params=params))
        phases.append(StoredPhase(run="r", index=i, task="t", kernel="command",
                                  variant=variant, rep=rep, workers=1, point=key,
                                  params=params, t0_ns=t0))
    info = RunInfo("r", "p", "", plan_raw, [], 0, None, "finished", {}, RunNotes())
    return RunData.of("r", info, read_records(records, phases))


# ---- stores: a command task with six metrics; a run with samples and telemetry -------------
def cmd_store(path) -> None:
    """A command task with six metrics at workers 1, 2, 4 (two reps each)."""
    spec = TaskSpec("bwa", "command", {}, command=["bwa"], metrics=dict(SIX))
    st = Store(path)
    st.begin_run("r1", Plan(name="six", tasks=[spec], raw={}), [], {"hostname": "n1"})
    st.write_nodes("r1", [StoredNode("r1", "n1", "127.0.0.1", 4, 4)])
    i = 0
    for w in (1, 2, 4):
        for rep in range(2):
            t0 = T + i * 10 * S
            recs = [Record(run="r1", phase=i, task="bwa", kernel="command", variant="", rep=rep,
                           workers=w, node="n1", slot=s, cpu=s, t0_ns=t0, start_ns=t0 + 1000 * s,
                           end_ns=t0 + 2 * S, elapsed_s=2.0,
                           metrics={"exit_status": 0, "reads_per_s": 123456.0 / w,
                                    "bw_mib_s": 900.0 + 300 * w + rep, "fsync_us": 133000.0 + s,
                                    "wall_s": 2.0 + 0.1 * s, "mapped_pct": 99.1, "gflops": 3.5})
                    for s in range(w)]
            st.write_phase("r1", Phase(i, spec, "command", "", rep, w, "spread", "core", {},
                                       f"bwa-{w}"), t0, recs)
            i += 1
    st.end_run("r1", "finished")
    st.close()


def write_samples(phase: int, workers: int) -> list[Sample]:
    # each slot writes 100 MiB/s for 1 s, sampled every 100 ms
    return [Sample("r1", phase, rank, "n1", k / 10, k * 10 * MiB, "bytes")
            for rank in range(workers) for k in range(11)]


def phase_telemetry(phase: int) -> list[TelemetryRow]:
    return [TelemetryRow("r1", "n1", T + phase * S + k * S // 10, 0.1, phase, 20.0, 30.0, 5.0,
                         1 << 30, 1 << 29, 0.0, 2e8, 80.0, 1e3, 1e3) for k in range(10)]


class StoreWithSamples(Store):
    """The store as it will be once samples and telemetry are stored (issue 10, items 3-4)."""
    samples_by_run: list[Sample] = []
    telemetry_by_run: list[TelemetryRow] = []

    def samples(self, run_id, phase_id=None):
        return [s for s in self.samples_by_run if s.run == run_id
                and phase_id in (None, s.phase_id)]

    def sample_counts(self, run_id):
        counts: dict[int, int] = {}
        for s in self.samples(run_id):
            counts[s.phase_id] = counts.get(s.phase_id, 0) + 1
        return counts

    def telemetry_rows(self, run_id):
        return iter([t for t in self.telemetry_by_run if t.run == run_id])


def make_store(path) -> tuple[list[Sample], list[TelemetryRow]]:
    null = TaskSpec("sync", "null", {})
    wr = TaskSpec("write", "io.write", {})
    st = Store(path)
    st.begin_run("r1", Plan(name="plots", tasks=[null, wr], raw={}), [], {"hostname": "n1"})
    st.write_nodes("r1", [StoredNode("r1", "n1", "127.0.0.1", 4, 4)])
    samples, telemetry = [], []
    i = 0
    for w in (1, 2, 4):
        for rep in range(2):
            t0 = T + i * S
            st.write_phase("r1", Phase(i, null, "null", "", rep, w, "spread", "core", {},
                                       f"sync-{w}"), t0,
                           [Record(run="r1", phase=i, task="sync", kernel="null", variant="",
                                   rep=rep, workers=w, node="n1", slot=s, cpu=s, t0_ns=t0,
                                   start_ns=t0 + 1000 * s, end_ns=t0 + 1000 * s + 50)
                            for s in range(w)])
            i += 1
    for w in (1, 2, 4):
        t0 = T + i * S
        p = {"size": 100 * MiB}
        st.write_phase("r1", Phase(i, wr, "io.write", "", 0, w, "spread", "core", p,
                                   f"write-{w}"), t0,
                       [Record(run="r1", phase=i, task="write", kernel="io.write", variant="",
                               rep=0, workers=w, node="n1", slot=s, cpu=s, t0_ns=t0,
                               start_ns=t0 + 10_000 * s, end_ns=t0 + S + 10_000 * s,
                               elapsed_s=1.0, ops=100, bytes=100 * MiB, params=p,
                               hist={10: 50, 20: 50}) for s in range(w)])
        samples += write_samples(i, w)
        telemetry += phase_telemetry(i)
        i += 1
    st.end_run("r1", "finished")
    st.close()
    return samples, telemetry


# ---- processes a run left behind: found by a tag in their environment ------------------------

ORPHAN_TAG = "MB_ORPHAN_TAG"   # a test's commands (or wraps) export it; their children inherit
SETTLE_S = 10.0                # "a few seconds": how long leftovers are given to go


def tagged(tag: str) -> list:
    """The live processes whose environment holds ORPHAN_TAG=tag (psutil.Process)."""
    import psutil
    out = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(ORPHAN_TAG) == tag:
                out.append(p)
        except psutil.Error:
            pass
    return out


def survivors(tag: str) -> list:
    """The tagged processes still alive once they had SETTLE_S to go (a zombie is gone)."""
    import time

    import psutil
    end = time.monotonic() + SETTLE_S
    while True:
        alive = []
        for p in tagged(tag):
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.Error:
                pass
        if not alive or time.monotonic() > end:
            return alive
        time.sleep(0.2)


def stored_inventories(out: str) -> dict[str, dict]:
    """Each stored node's inventory (results.db's nodes table), by node name."""
    import json
    import sqlite3
    db = sqlite3.connect(os.path.join(out, "results.db"))
    rows = dict(db.execute("SELECT name, inventory FROM nodes").fetchall())
    db.close()
    return {n: json.loads(i) for n, i in rows.items()}


# ---- a curve over workers with repeatable spreads: each phase's aggregate rate given -------
def rate_curve(task: str, kernel: str, reps: dict[int, list[float]], *, op_bytes: int = 0,
               params: dict | None = None, first: int = 0
               ) -> tuple[list[Record], list[StoredPhase]]:
    """A task's phases, one per repetition at each worker count, whose aggregate rate is
    the value given (ops/s, or bytes/s when op_bytes): each slot does 1,000 operations of
    op_bytes and the phase's window makes the rate. Phases are numbered from `first`."""
    records, phases = [], []
    i = first
    for workers, rates in reps.items():
        point = f"{task}|{workers}|{sorted((params or {}).items())}"
        for rate in rates:
            t0 = T + i * 100 * S
            window = round(workers * 1000 * (op_bytes or 1) / rate * S)
            records += [rec(i, s, t0, t0, t0 + window, task=task, kernel=kernel,
                            workers=workers, params=dict(params or {}), ops=1000,
                            bytes=1000 * op_bytes, elapsed_s=window / S)
                        for s in range(workers)]
            phases.append(pinfo(i, point, task=task, kernel=kernel, workers=workers,
                                params=dict(params or {}), t0=t0))
            i += 1
    return records, phases


# ---- export ----------------------------------------------------------------------------------


def assert_export_streams(directory: str) -> None:
    """`manybench export`'s records, streamed a phase at a time (results/record_stream.py),
    are what the whole table the results API gives (frames.table_rows) writes, in every
    format: the same rows, columns and order (issue 30)."""
    import io
    import pandas as pd
    from manybench.record import COLUMNS
    from manybench.results import export as E
    from manybench.results.export_cli import export_table
    from manybench.results.frames import table_rows
    from manybench.results.store import Store
    with Store(directory, readonly=True) as st:
        for fmt in E.FORMATS:
            out = os.path.join(directory, f"streamed.{fmt}")
            assert export_table(st, "records", fmt, out, None, False) == ""
            whole = io.BytesIO() if fmt == "parquet" else io.StringIO(newline="")
            E.write(table_rows(st, "records", None, fmt in E.KEEPS_OBJECTS), fmt, whole,
                    COLUMNS)
            if fmt == "parquet":
                pd.testing.assert_frame_equal(pd.read_parquet(out),
                                              pd.read_parquet(io.BytesIO(whole.getvalue())))
            else:
                with open(out, newline="") as f:
                    assert f.read() == whole.getvalue(), fmt
            os.unlink(out)


def batch_cluster(queue: str, tmp_path, *, slots: int = 2, lines: str = "") -> str:
    """A plan's [cluster] table for one node job on a local Slurm or SGE queue (the worker
    listens on loopback; its logs in tmp_path), `lines` added to it."""
    return f"""
[cluster]
queue = "{queue}"
nodes = 1
slots = {slots}
cores = 1
memory = "1GB"
walltime = "00:10:00"
interface = "lo"
local_directory = "{tmp_path}"
log_directory = "{tmp_path}"
{lines}
"""


# one small task of each kernel the standalone mbkernel runs (a variant's wrap runs them)
STANDALONE_TASKS = """
    [[task]]
    name = "write"
    kernel = "io.write"
    size = "4MiB"
    block = "256KiB"
    [[task]]
    name = "read"
    kernel = "io.read"
    size = "4MiB"
    [[task]]
    name = "sync"
    kernel = "null"
    [[task]]
    name = "stream"
    kernel = "mem.stream"
    elements = 200000
    ntimes = 3
    [[task]]
    name = "himeno"
    kernel = "cpu.himeno"
    grid = "XS"
    iterations = 20
    """
