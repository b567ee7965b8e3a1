"""What every benchmark shares: a peer measured in the same run, alternated with manybench
pair by pair, and a goal judged on the median of the paired ratios.

    rounds = alternate({"manybench": ours, "fio": peer}, rounds=5)   # + 1 warm-up pair
    ok = verdict(Goal("io.write / fio", 0.95, upper=1.05), rounds["manybench"],
                 rounds["fio"], "MiB/s")

- Warm-up: the first pair is run and shown but not counted (caches, page tables, CPU
  frequency, a first exec of a tool).
- A/B alternation: which side runs first alternates from pair to pair, so neither side
  always inherits the other's after-effects (dirty pages, a warm or cold cache).
- Paired ratios: each pair runs both sides back to back, so a slow minute of a shared
  machine spoils both halves of one pair; the median of the per-pair ratios is the gate,
  robust to the pairs outside load spoils. The best-of-N ratio (each side's best run, since
  outside load only ever subtracts) is printed beside it, never gated.
- Goals: `Goal(name, threshold, direction)`, "higher" (rates) or "lower" (latencies,
  overheads) is better; `upper` makes it a two-sided agreement goal (within 0.95-1.05).
  Absolute goals of the issues (20 us of skew, 20 MB per slot) are `absolute(...)` lines,
  printed with their peer's figure and ratio beside them.
- Agreement with a reference tool (`agreement`): the two sides agree when they do the same
  work per item (work.py's counters, or the compiled loops, printed side by side) and the
  distribution-free 95% interval of the median of the paired ratios lies inside 0.95-1.05
  (an equivalence test; wider: "can't tell"). Noise widens the interval; it cannot move
  the work.
- Peers are built with the package's own compiler and flags (`compile_c`: the extension's
  `_native.build_info()`, defined once in setup.py) and pinned exactly as the slots they are
  compared with (`slot_affinity`, `pinned`, `taskset`, `mpirun_pinned`: run/placement.py's
  `place` on this machine's topology).
"""
from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
if SRC not in sys.path:
    sys.path.insert(0, SRC)
# for child processes (`python -m manybench`, measurement scripts): this source tree
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (SRC,
                                                                   os.environ.get("PYTHONPATH"))))}

from manybench import _native  # noqa: E402
from manybench.build_isa import running_cflags  # noqa: E402
from manybench.inventory.topology import topology  # noqa: E402
from manybench.node import slot as _slot  # noqa: E402
from manybench.run.placement import place  # noqa: E402

SPIN_NS = _slot.SPIN_NS   # what a slot with a core of its own spins before T0
# topology() reads the cpus this process may use, once (cached): read them now, before a
# benchmark pins itself as a slot, so placement always sees the whole machine
topology()

# -- goals, alternation, paired ratios -----------------------------------------------------


@dataclass(frozen=True)
class Goal:
    name: str                   # what is compared: "io.write, 1 slot / fio"
    threshold: float            # the ratio (manybench / peer) the median must reach
    direction: str = "higher"   # "higher": rates; "lower": latencies, overheads
    upper: float | None = None  # agreement: the median must also stay at or below this

    def __post_init__(self) -> None:
        if self.direction not in ("higher", "lower"):
            raise ValueError(f"direction must be 'higher' or 'lower', not {self.direction!r}")

    def met(self, ratio: float) -> bool:
        if self.upper is not None:
            return self.threshold <= ratio <= self.upper
        return ratio >= self.threshold if self.direction == "higher" else ratio <= self.threshold

    def best(self, values: list[float]) -> float:
        """A side's best run: the highest rate or the lowest latency."""
        return max(values) if self.direction == "higher" else min(values)

    def text(self) -> str:
        if self.upper is not None:
            return f"within {self.threshold:g}-{self.upper:g}"
        return f"{'>=' if self.direction == 'higher' else '<='} {self.threshold:g}"


def alternate(sides: dict[str, Callable[[], Any]], rounds: int, warmup: int = 1,
              show: Callable[[int, dict[str, Any]], None] | None = None
              ) -> dict[str, list[Any]]:
    """Run every side once per pair: `warmup` uncounted pairs, then `rounds` counted ones.
    The first pair runs the sides in the order given, the next in reverse, and so on.
    Returns each side's figures (whatever its function returns), counted pairs only, in
    order. show(rnd, figures) is called after every pair; rnd < 0 for a warm-up pair."""
    names = list(sides)
    out: dict[str, list[Any]] = {n: [] for n in names}
    for i in range(warmup + rounds):
        order = names if i % 2 == 0 else names[::-1]
        got = {n: sides[n]() for n in order}
        rnd = i - warmup
        if show:
            show(rnd, got)
        if rnd >= 0:
            for n in names:
                out[n].append(got[n])
    return out


def fmt(v: float) -> str:
    """A figure for a line of output: 23,578.7 or 0.7512."""
    return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4g}"


def rfmt(r: float) -> str:
    """A ratio: 0.973, or 0.00012 when tiny."""
    return f"{r:.3f}" if r >= 0.01 or r == 0 else f"{r:.2g}"


def show_round(label: str, unit: str, key: Callable[[Any], float] | None = None
               ) -> Callable[[int, dict[str, Any]], None]:
    """A `show` for alternate(): one line per pair in the order run, warm-up pairs marked;
    key picks the figure to show when a side returns more than a number."""
    def show(rnd: int, got: dict[str, Any]) -> None:
        what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
        print(f"  {label + ' ' if label else ''}{what}: " + "   ".join(
            f"{n} {fmt(key(v) if key else v)} {unit}" for n, v in got.items()), flush=True)
    return show


def paired(ours: list[float], peer: list[float]) -> list[float]:
    """The per-pair ratios manybench / peer."""
    if len(ours) != len(peer) or not ours:
        raise ValueError(f"paired ratios need as many figures on both sides ({len(ours)} vs "
                         f"{len(peer)}), at least one")
    return [a / b if b else float("inf") for a, b in zip(ours, peer)]


def median_interval(values: list[float], confidence: float = 0.95
                    ) -> tuple[float, float, float]:
    """A distribution-free interval of the median (order statistics, binomial): (low, high,
    its coverage). The narrowest symmetric pair of order statistics covering at least
    `confidence`; with too few values for that (n < 6 at 95%), the whole range and the
    coverage it has (n = 5: 94%)."""
    s, n = sorted(values), len(values)
    def cover(k: int) -> float:      # P(X(k) <= median <= X(n-k+1)), k from 1
        return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0 ** n
    k = 1
    while k + 1 <= (n + 1) // 2 and cover(k + 1) >= confidence:
        k += 1
    return s[k - 1], s[n - k], cover(k)


def summary(goal: Goal, ours: list[float], peer: list[float], unit: str = "",
            gated: bool = True) -> tuple[str, bool]:
    """The goal's line and whether it is met: the median of the paired ratios (the gate)
    with its interval, best-of-N beside it, then every pair's ratio."""
    ratios = paired(ours, peer)
    med = statistics.median(ratios)
    lo, hi, cov = median_interval(ratios)
    bo, bp = goal.best(ours), goal.best(peer)
    ok = goal.met(med)
    n = len(ratios)
    verdict_text = f"(goal {goal.text()}) {'PASS' if ok else 'FAIL'}" if gated else \
        "(for information, not gated)"
    unit = f" {unit}" if unit else ""
    line = (f"{goal.name} = {rfmt(med)} [{rfmt(lo)}, {rfmt(hi)}: {cov * 100:.0f}% interval] "
            f"median of {n} paired ratios {verdict_text}; "
            f"best-of-{n} {rfmt(bo / bp if bp else float('inf'))} ({fmt(bo)} vs {fmt(bp)}{unit});"
            " pairs " + " ".join(rfmt(r) for r in ratios))
    return line, ok


AGREE = 0.05      # the agreement rule's tolerance around 1.0


def agreement(name: str, ours: list[float], peer: list[float], unit: str = "",
              work: list[str] | None = None, matched: str = "", direction: str = "higher"
              ) -> bool:
    """Print the agreement line and return whether the two sides agree by the rule: the same
    work per item (work: the differences found, [] for none, None when not measured) and
    the 95% interval of the median paired ratio inside 1.0 +- AGREE (an equivalence test:
    an interval that only reaches into the band is as wide as the noise, and says nothing,
    "can't tell"; one wholly outside it, "differ"). direction: which runs are best, for
    best-of-N ("lower" for times)."""
    ratios = paired(ours, peer)
    med = statistics.median(ratios)
    lo, hi, cov = median_interval(ratios)
    same = work is not None and not work
    ok = lo >= 1 - AGREE and hi <= 1 + AGREE and same
    apart = hi < 1 - AGREE or lo > 1 + AGREE or (work is not None and bool(work))
    said = "PASS" if ok else "FAIL" if apart else \
        "CAN'T TELL (the interval is wider than the band: more pairs, or a quieter machine)"
    n = len(ratios)
    interval = (f"{cov * 100:.0f}% interval {rfmt(lo)}-{rfmt(hi)}" if cov >= 0.95 else
                f"{cov * 100:.1f}% interval {rfmt(lo)}-{rfmt(hi)} (n {n} too small for 95%)")
    work_text = ("work not measured" if work is None else
                 f"same work ({matched})" if not work else "different work: " + "; ".join(work))
    best = min if direction == "lower" else max
    bo, bp = best(ours), best(peer)
    print(f"{name} = {rfmt(med)} median of {n} paired ratios, {interval} "
          f"(rule: same work and the interval inside {1 - AGREE:g}-{1 + AGREE:g}) "
          f"{said}; {work_text}; best-of-{n} "
          f"{rfmt(bo / bp if bp else float('inf'))} ({fmt(bo)} vs {fmt(bp)}"
          f"{' ' + unit if unit else ''}); pairs " + " ".join(rfmt(r) for r in ratios),
          flush=True)
    return ok


def verdict(goal: Goal, ours: list[float], peer: list[float], unit: str = "") -> bool:
    """Print the goal's summary line; True when the median of the paired ratios meets it."""
    line, ok = summary(goal, ours, peer, unit)
    print(line, flush=True)
    return ok


def info(name: str, ours: list[float], peer: list[float], unit: str = "",
         direction: str = "higher") -> None:
    """Print a ratio in a goal's format, for information: no goal, it gates nothing.
    direction says which side's runs are best (for best-of-N)."""
    print(summary(Goal(name, 0.0, direction), ours, peer, unit, gated=False)[0], flush=True)


def absolute(name: str, value: float, limit: float, unit: str, direction: str = "lower",
             beside: str = "") -> bool:
    """An absolute goal of the issue (value <= limit, or >= for "higher"), its line printed
    with the peer's figure beside it; True when met."""
    ok = value <= limit if direction == "lower" else value >= limit
    print(f"{name}: {fmt(value)} {unit} (goal {'<=' if direction == 'lower' else '>='} "
          f"{limit:g} {unit}) {'PASS' if ok else 'FAIL'}" + (f"; {beside}" if beside else ""),
          flush=True)
    return ok


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile, as manybench's reports take them."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, -(-len(s) * q // 100) - 1))]


# -- building C peers as the package's kernels are built -----------------------------------
def build_command() -> list[str]:
    """The extension's own compile command line, without sources and outputs: the compiler
    it was built with, sysconfig's CFLAGS and CCSHARED (which setuptools put first), then
    setup.py's flags (build_info()["cflags"]) with the -march of the hot loops' clone this cpu
    runs (build_isa.running_cflags: a portable build's x86-64-v4 clone on an AVX-512 cpu)."""
    info = _native.build_info()
    py = [f for var in ("CFLAGS", "CCSHARED") for f in
          shlex.split(sysconfig.get_config_var(var) or "")]
    return [*shlex.split(info["compiler"]), *py, *running_cflags(info)]


def running_clone() -> str:
    """The symbol suffix of the hot loops' clones this cpu runs ("arch_x86_64_v4", "default";
    "" in a build without clones: the functions themselves)."""
    clone = _native.build_info()["clone"]
    return clone if clone in ("", "default") else f"arch_{clone.replace('-', '_')}"


def compiler_missing() -> str | None:
    """Why C peers cannot be built here (the extension's compiler is not on PATH), or None."""
    cc = shlex.split(_native.build_info()["compiler"])
    if cc and shutil.which(cc[0]):
        return None
    return f"the compiler the package was built with ({' '.join(cc)}) is not on PATH"


def compile_c(src: str, exe: str, *extra: str) -> list[str]:
    """Compile a C peer into `exe` as the package's kernels are compiled (+ `extra`, e.g.
    -D macros); returns the command line. Exits when the compiler fails."""
    cmd = [*build_command(), *extra, "-o", exe, src, "-lm"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"building the peer failed:\n{shlex.join(cmd)}\n{p.stderr}")
    return cmd


# -- pinning as slots are pinned -----------------------------------------------------------
def slot_places(workers: int = 1, order: str = "spread", pin: str = "core") -> list:
    """Slots 0..workers-1 as a one-node phase of `workers` / `order` / `pin` places them on
    this machine (run/placement.py's place() on inventory's topology()): SlotPlace(slot, cpu,
    affinity, spin, settle_ns) each."""
    return place(workers, order, pin, topology())


def slot_affinity(workers: int = 1, order: str = "spread", pin: str = "core"
                  ) -> list[tuple[int, ...]]:
    """The cpus each of slots 0..workers-1 may run on, for that workers / order / pin."""
    return [s.affinity for s in slot_places(workers, order, pin)]


def cpulist(affinity: tuple[int, ...]) -> str:
    """"0,2,3": a cpu list for taskset -c, fio --cpus_allowed, ..."""
    return ",".join(str(c) for c in sorted(affinity))


def pinned(affinity: tuple[int, ...]) -> Callable[[], None]:
    """A preexec_fn that pins a peer process exactly as a slot with this affinity."""
    return lambda: os.sched_setaffinity(0, affinity)


def taskset(affinity: tuple[int, ...]) -> list[str]:
    """A command prefix that pins what follows exactly as a slot with this affinity."""
    return ["taskset", "-c", cpulist(affinity)]


def pin_self(affinity: tuple[int, ...]) -> None:
    """Pin this process as a slot (for kernels run in-process through prepare/run)."""
    os.sched_setaffinity(0, affinity)


# -- reference tools from this machine ------------------------------------------------------
def tool(name: str, env: str) -> str | None:
    """A reference tool: the path in $env, else `name` on PATH, else None."""
    path = os.environ.get(env) or shutil.which(name)
    return path if path and os.access(path, os.X_OK) else None


def machine() -> str:
    """This machine, for a benchmark's first line: the report's host line (hostname: cpu
    model, cpus, cores, memory, kernel, governor)."""
    from manybench.inventory.environment import collect   # noqa: PLC0415
    from manybench.report.header import host_summary   # noqa: PLC0415
    return host_summary(collect())


def mpirun_pinned(affinities: list[tuple[int, ...]], mpirun: str = "mpirun") -> list[str]:
    """Open MPI's mpirun (`mpirun`: its name or path) for len(affinities) local tasks, task r
    pinned to exactly affinities[r] (the cpus slot r gets), through taskset; root allowed.
    Append the command."""
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    cpus = " ".join(cpulist(a) for a in affinities)
    # sh -c SCRIPT sh "LISTS" CMD...: task r (its rank from the MPI launcher's variable)
    # takes the r-th list and execs CMD under taskset
    script = ('r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}; lists=$1; shift; '
              'i=0; for c in $lists; do [ "$i" = "$r" ] && cpus=$c; i=$((i+1)); done; '
              'exec taskset -c "$cpus" "$@"')
    return [mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(len(affinities)),
            "sh", "-c", script, "sh", cpus]


# -- manybench through its command line -----------------------------------------------------
# a run's start on 64 namespace nodes (`manybench run` launched -> its first phase; issue 11):
# bench_scale gates it, bench_node_phase prints its own runs' against it
START_GOAL_S = 15.0


def null_plan(workers: int, repeat: int) -> str:
    """A plan of `repeat` null phases with `workers` slots: what the scale benchmarks run."""
    return (f'repeat = {repeat}\n[placement]\nworkers = {workers}\n'
            '[[task]]\nname = "sync"\nkernel = "null"\n')


def write_null_plan(directory: str, workers: int, repeat: int) -> str:
    """null_plan written as directory/plan.toml; its path."""
    path = os.path.join(directory, "plan.toml")
    with open(path, "w") as f:
        f.write(null_plan(workers, repeat))
    return path


class StoredPhases:
    """How many phases a run being written has stored so far (its results.db, read-only;
    0 until the file can be read)."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.con: sqlite3.Connection | None = None

    def count(self) -> int:
        try:
            if self.con is None:
                self.con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
            return self.con.execute("SELECT COUNT(*) FROM phases").fetchone()[0]
        except sqlite3.Error:
            self.con = None
            return 0

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None


def run_plan_timed(text: str, *args: str, under: str | None = None
                   ) -> tuple[list[dict], float]:
    """Run a plan through the real command line (this source tree): its exported records
    and the whole command's wall time in seconds. Its results directory is made under
    `under` (default: the temp directory). Exits when the run fails."""
    d = tempfile.mkdtemp(prefix="mb-bench-", dir=under)
    try:
        plan = os.path.join(d, "plan.toml")
        with open(plan, "w") as f:
            f.write(text)
        t = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q",
                            *args], env=ENV, capture_output=True, text=True)
        wall = time.monotonic() - t
        if p.returncode != 0:
            sys.exit(f"manybench run failed (exit {p.returncode}):\n{p.stderr}")
        out = subprocess.run([sys.executable, "-m", "manybench", "export", d, "--format",
                              "json"], check=True, capture_output=True, text=True,
                             env=ENV).stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return json.loads(out), wall


def run_plan(text: str, *args: str, under: str | None = None) -> list[dict]:
    """Run a plan through the real command line; its exported records."""
    return run_plan_timed(text, *args, under=under)[0]


def phases(rows: list[dict]) -> dict[int, list[dict]]:
    """Records by phase."""
    out: dict[int, list[dict]] = {}
    for r in rows:
        out.setdefault(r["phase"], []).append(r)
    return out


def aggregate_rate(rows: list[dict], task: str, key: str = "bytes") -> float:
    """A task's aggregate rate as manybench reports it: sum over its slots / (last end -
    first start), per second (one phase)."""
    mine = [r for r in rows if r["task"] == task]
    if not mine or any(r["status"] != "ok" for r in mine):
        sys.exit(f"manybench task {task} failed: {[r['error'] for r in mine]}")
    window = (max(r["end_ns"] for r in mine) - min(r["start_ns"] for r in mine)) / 1e9
    return sum(r[key] for r in mine) / window
