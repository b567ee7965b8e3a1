"""What every benchmark shares: a peer measured in the same run, alternated with manybench
round by round, and a goal judged on the median of the paired ratios.

  rounds = alternate({"manybench": ours, "fio": peer}, rounds=7, warmup=1)
  ok = verdict(Goal("io.write / fio", 0.95), rounds["manybench"], rounds["fio"], "MiB/s")

Why paired medians: each round runs both sides back to back (which goes first alternates), so
a slow minute of a shared machine hits both halves of a pair; the median of the pair ratios
is robust to the rounds it spoils. The best-of-N ratio (each side's best run) is printed
beside it, since outside load only ever subtracts.

Peers are built with the package's own compiler and flags (`_native.build_info()`, from
setup.py) and pinned exactly as the slots they are compared with (`slot_affinity`).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from manybench import _native  # noqa: E402
from manybench.inventory.topology import topology  # noqa: E402
from manybench.run.placement import place  # noqa: E402


@dataclass(frozen=True)
class Goal:
    name: str                      # what is compared: "io.write / fio"
    threshold: float               # the ratio the median must reach
    higher_is_better: bool = True  # ratios of rates; False for latencies and overheads
    upper: float | None = None     # agreement: the ratio must also stay at or below this

    def met(self, ratio: float) -> bool:
        if self.upper is not None:
            return self.threshold <= ratio <= self.upper
        return ratio >= self.threshold if self.higher_is_better else ratio <= self.threshold

    def text(self) -> str:
        if self.upper is not None:
            return f"within {self.threshold:g}-{self.upper:g}"
        return f"{'>=' if self.higher_is_better else '<='} {self.threshold:g}"


def alternate(sides: dict[str, Callable[[], float]], rounds: int, warmup: int = 1,
              show: Callable[[int, dict[str, float]], None] | None = None
              ) -> dict[str, list[float]]:
    """Run every side once per round, `warmup` uncounted rounds first; the order of the
    sides reverses every round. Each side's figures, by side name, in round order."""
    names = list(sides)
    out: dict[str, list[float]] = {n: [] for n in names}
    for rnd in range(-warmup, rounds):
        order = names if rnd % 2 == 0 else names[::-1]
        got = {n: sides[n]() for n in order}
        if show:
            show(rnd, got)     # rnd < 0: a warm-up round
        if rnd >= 0:
            for n in names:
                out[n].append(got[n])
    return out


def fmt(v: float) -> str:
    """A figure for a line of output: 23,578.7 or 0.7512."""
    return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4g}"


def paired(ours: list[float], peer: list[float]) -> list[float]:
    return [a / b for a, b in zip(ours, peer)]


def verdict(goal: Goal, ours: list[float], peer: list[float], unit: str = "") -> bool:
    """Print the goal's line: median of the paired ratios (the gate), best-of-N beside it."""
    ratios = paired(ours, peer)
    med = statistics.median(ratios)
    best = (max if goal.higher_is_better else min)
    best_ratio = best(ours) / best(peer)
    ok = goal.met(med)
    unit = f" {unit}" if unit else ""
    print(f"{goal.name} = {med:.3f} median of {len(ratios)} paired ratios (goal {goal.text()})"
          f" {'PASS' if ok else 'FAIL'}; best-of-{len(ratios)} {best_ratio:.3f} "
          f"({fmt(best(ours))} vs {fmt(best(peer))}{unit}); pairs "
          + " ".join(f"{r:.3f}" for r in ratios), flush=True)
    return ok


def show_round(label: str, unit: str) -> Callable[[int, dict[str, float]], None]:
    """A `show` for alternate(): one line per round, warm-up rounds marked."""
    def show(rnd: int, got: dict[str, float]) -> None:
        what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
        print(f"  {label} {what}: " + "   ".join(f"{n} {fmt(v)} {unit}"
                                                  for n, v in got.items()), flush=True)
    return show


# -- building C peers as the package's kernels are built -----------------------------------
def build_flags() -> tuple[list[str], dict]:
    """The command line the extension's C was compiled with (compiler, Python's flags,
    setup.py's flags) and build_info() itself."""
    info = _native.build_info()
    cmd = [*info["compiler"].split(), *info["python_cflags"].split(), *info["cflags"].split()]
    return cmd, info


def compile_c(src: str, exe: str, *extra: str) -> list[str]:
    """Compile a peer with the package's compiler and flags (+ extra); its command line."""
    cmd, _ = build_flags()
    cmd = [*cmd, *extra, "-o", exe, src, "-lm"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"building the peer failed:\n{' '.join(cmd)}\n{p.stderr}")
    return cmd


# -- pinning as slots are pinned -----------------------------------------------------------
def slot_places(workers: int = 1, order: str = "spread", pin: str = "core") -> list:
    """Slots 0..workers-1 as the local engine places them on this machine for that workers /
    order / pin (run/placement.py): cpu, affinity, whether they spin."""
    return place(workers, order, pin, topology())


def slot_affinity(workers: int = 1, order: str = "spread", pin: str = "core"
                  ) -> list[tuple[int, ...]]:
    """The cpus each of slots 0..workers-1 may use on this machine."""
    return [s.affinity for s in slot_places(workers, order, pin)]


def pinned(affinity: tuple[int, ...]) -> Callable[[], None]:
    """A preexec_fn that pins a peer process exactly as a slot with this affinity."""
    return lambda: os.sched_setaffinity(0, affinity)


def pin_self(affinity: tuple[int, ...]) -> None:
    """Pin this process as a slot (for kernels run in-process through prepare/run)."""
    os.sched_setaffinity(0, affinity)


# -- reference tools from this machine ------------------------------------------------------
def tool(name: str, env: str) -> str | None:
    """A reference tool: the path in $env, else `name` on PATH, else None."""
    path = os.environ.get(env) or shutil.which(name)
    return path if path and os.access(path, os.X_OK) else None


def mpirun(n: int) -> list[str]:
    """mpirun for n local tasks, bound to cores as slots are (root allowed for Open MPI)."""
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return ["mpirun", "--oversubscribe", "--bind-to", "core", "-np", str(n)]


def run_plan(text: str, *args: str) -> list[dict]:
    """Run a plan through the real command line (this source tree); its exported records."""
    d = tempfile.mkdtemp(prefix="mb-bench-")
    plan = os.path.join(d, "plan.toml")
    with open(plan, "w") as f:
        f.write(text)
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q", *args],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"manybench run failed:\n{p.stderr}")
    out = subprocess.run([sys.executable, "-m", "manybench", "export", d, "--format", "json"],
                         check=True, capture_output=True, text=True, env=env).stdout
    shutil.rmtree(d, ignore_errors=True)
    return json.loads(out)


def aggregate_rate(rows: list[dict], task: str, key: str = "bytes") -> float:
    """A task's aggregate rate as manybench reports it: sum over its slots / (last end -
    first start), per second (one phase)."""
    mine = [r for r in rows if r["task"] == task]
    if not mine or any(r["status"] != "ok" for r in mine):
        sys.exit(f"manybench task {task} failed: {[r['error'] for r in mine]}")
    window = (max(r["end_ns"] for r in mine) - min(r["start_ns"] for r in mine)) / 1e9
    return sum(r[key] for r in mine) / window
