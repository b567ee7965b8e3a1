"""MPI work counters: the calls an MPI benchmark makes, counted where noise cannot move them.

mpicount.c, preloaded into every rank, counts per rank and per (call, bytes) the calls, those
made inside the rank's timer (between its odd and even MPI_Wtime calls), the distinct
buffers they used and the first touch: at the first call on each buffer, how many of the
buffer's pages beyond the message were already resident (a buffer filled whole at the start
has them; one filled size by size, as OSU's point-to-point tests do, has none). Two programs
measure the same thing when, rank by rank, they make the same calls with the same sizes as
often, as many of them timed, on as many buffers, first touched alike, and with as many
barriers right after a timer closed (OSU's barrier after each timed collective call):

    lib = build("mpicc.openmpi", "/tmp/x")
    got = run(["/path/mbmpi", "bw", "-m", "8192:16384"], lib)      # {rank: {key: Count}}
    differences(got, run(["/path/osu_bw", "-m", "8192:16384"], lib))   # [] when the same

Not compared (UNCOMPARED): the plain barriers between message sizes, outside any timer (OSU
puts one or two there depending on the test, mbmpi one), and MPI_Wtime itself.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from typing import NamedTuple

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpicount.c")
UNCOMPARED = ("barrier",)
# how each family's launcher passes the preload to its ranks (and only to them)
LAUNCHERS = {
    "openmpi": lambda n, env: ["mpirun.openmpi", "--oversubscribe", "-np", str(n),
                               *[a for k, v in env.items() for a in ("-x", f"{k}={v}")]],
    "mpich": lambda n, env: ["mpiexec.mpich", "-n", str(n),
                             *[a for k, v in env.items() for a in ("-genv", k, v)]],
}
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
# mbmpi's tests and the OSU 7.x programs (under c/mpi/ of its build) they measure as; OSU 7's
# reductions default to MPI_CHAR, mbmpi's are MPI_FLOAT: OSU is asked for MPI_FLOAT
OSU_PAIRS = {"latency": ["pt2pt/standard/osu_latency"], "bw": ["pt2pt/standard/osu_bw"],
             "bibw": ["pt2pt/standard/osu_bibw"], "bcast": ["collective/blocking/osu_bcast"],
             "allreduce": ["collective/blocking/osu_allreduce", "-T", "mpi_float"],
             "alltoall": ["collective/blocking/osu_alltoall"]}


class Count(NamedTuple):
    """A line of mpicount.c's files after CALL BYTES, field by field in its order."""
    calls: int
    timed: int
    buffers: int
    resident: int      # pages beyond the message resident at the first call on each buffer


Counts = dict[int, dict[tuple[str, int], Count]]     # rank -> (call, bytes) -> Count


def build(mpicc: str, out_dir: str) -> str:
    """mpicount.c built as a shared library with the family's compiler wrapper; its path."""
    lib = os.path.join(out_dir, "libmpicount.so")
    subprocess.run([mpicc, "-O2", "-shared", "-fPIC", "-o", lib, SOURCE], check=True,
                   capture_output=True, text=True)
    return lib


def parse(texts: dict[int, str]) -> Counts:
    """The ranks' files (rank -> text) as counts."""
    out: Counts = {}
    for rank, text in texts.items():
        got = out.setdefault(rank, {})
        for text_line in text.splitlines():
            call, size, *fields = text_line.split()
            if len(fields) != len(Count._fields):
                raise ValueError(f"mpicount line {text_line!r}: CALL BYTES "
                                 f"{' '.join(Count._fields).upper()} expected")
            got[(call, int(size))] = Count(*map(int, fields))
    return out


def line(key: tuple[str, int], c: Count) -> str:
    """A counter as mpicount.c writes it (parse reads it back)."""
    return " ".join(map(str, (*key, *c)))


def run(command: list[str], lib: str, family: str = "openmpi", ranks: int = 2,
        launcher: list[str] | None = None, timeout: float = 900) -> tuple[str, Counts]:
    """Run `command` as `ranks` ranks with the counters preloaded: (its stdout, the counts).
    `launcher` replaces the family's (it must pass LD_PRELOAD and MPICOUNT_DIR on)."""
    with tempfile.TemporaryDirectory(prefix="mpicount-") as d:
        env = {"LD_PRELOAD": lib, "MPICOUNT_DIR": d}
        launch = launcher or LAUNCHERS[family](ranks, env)
        done = subprocess.run([*launch, *command], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **ROOT_OK, **env},
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): "
                               f"{done.stderr.strip()[-2000:]}")
        texts = {}
        for r in range(ranks):
            with open(os.path.join(d, f"rank{r}.txt")) as f:
                texts[r] = f.read()
    return done.stdout, parse(texts)


def to_json(counts: Counts) -> dict[str, list[str]]:
    """Counts as JSON (a fixture): rank -> the lines mpicount.c writes, sorted."""
    return {str(r): [line(k, c) for k, c in sorted(got.items())] for r, got in counts.items()}


def from_json(data: dict[str, list[str]]) -> Counts:
    return parse({int(r): "\n".join(lines) for r, lines in data.items()})


def differences(ours: Counts, peer: Counts, skip: tuple[str, ...] = UNCOMPARED) -> list[str]:
    """What differs between two programs' counts, one line per rank and key; [] if nothing."""
    out = []
    for rank in sorted(set(ours) | set(peer)):
        a, b = ours.get(rank, {}), peer.get(rank, {})
        for key in sorted(set(a) | set(b)):
            if key[0] in skip or a.get(key) == b.get(key):
                continue
            out.append(f"rank {rank} {key[0]} {key[1]} B: {_show(a.get(key))} vs "
                       f"{_show(b.get(key))}")
    return out


def _show(c: Count | None) -> str:
    return "none" if c is None else (f"{c.calls} calls ({c.timed} timed) on {c.buffers} buffers, "
                                     f"{c.resident} pages beyond resident at first call")


def table(ours: Counts, peer: Counts, names: tuple[str, str] = ("mbmpi", "OSU")) -> str:
    """Both sides' counts side by side, one line per rank and key."""
    what = "/".join(Count._fields)
    lines = [(f"  {'rank':>4} {'call':<20} {'bytes':>8}  "
              f"{names[0] + ' ' + what:>36}  {names[1] + ' ' + what:>36}")]
    for rank in sorted(set(ours) | set(peer)):
        a, b = ours.get(rank, {}), peer.get(rank, {})
        for key in sorted(set(a) | set(b)):
            cells = ["/".join(map(str, c)) if c else "-" for c in (a.get(key), b.get(key))]
            note = "" if a.get(key) == b.get(key) else \
                "  (not compared)" if key[0] in UNCOMPARED else "  DIFFERENT"
            lines.append(f"  {rank:>4} {key[0]:<20} {key[1]:>8}  {cells[0]:>36}  "
                         f"{cells[1]:>36}{note}")
    return "\n".join(lines)
