"""Work counters: what a run did, measured where noise cannot move it.

Timing on a shared machine scatters (a VM's disk reads at 450 to 2,300 MiB/s from one run to
the next); the work a tool does per item does not. Beside the paired ratios, a benchmark
runs each side once more under these counters and prints them side by side:

  device bytes   read from and written to storage by the measured command's processes (the
                 kernel's I/O accounting of the tree, summed as it is reaped:
                 getrusage(RUSAGE_CHILDREN) ru_inblock/ru_oublock, 512-byte units): what
                 the command made the device do, whoever else uses the disk meanwhile
                 (/proc/diskstats counted every writer on it: on a shared machine a read
                 looked as if it wrote 46 MiB)
  system calls   every file system call on paths under the directory, from `strace -f -y`,
                 by name and size (reads and writes) or advice (fadvise): what the tool asked
                 of the kernel per item

Two sides agree on their work when they made the same calls the same number of times with the
same sizes, and moved the same bytes at the device within DEVICE_TOLERANCE.
"""
from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field

DEVICE_TOLERANCE = 0.05
SYSCALLS = ("read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
            "fsync", "fdatasync", "fadvise64", "openat", "creat", "unlink", "unlinkat",
            "mkdir", "mkdirat", "rmdir", "newfstatat", "statx", "stat", "lstat", "fstat",
            "close", "ftruncate", "fallocate", "lseek", "rename", "renameat")
MARKERS = (".manybench-run",)    # manybench's own bookkeeping files, not the benchmark's work
_LINE = re.compile(r"^(?:(\d+\.\d+) )?(\w+)\((.*)\)\s+=\s+(-?\d+)")
_FD = re.compile(r"^(\d+)<([^>]*)>")


def strace() -> str | None:
    return shutil.which("strace")


@dataclass
class Work:
    device_read: int = 0
    device_write: int = 0
    calls: Counter = field(default_factory=Counter)   # (name, size or advice) -> count

    def line(self) -> str:
        calls = ", ".join(f"{name}{f' {arg}' if arg else ''} x{n}"
                          for (name, arg), n in sorted(self.calls.items()))
        return (f"device read {self.device_read / 2**20:,.1f} MiB, written "
                f"{self.device_write / 2**20:,.1f} MiB; calls: {calls or 'none'}")


def device_of(path: str) -> str | None:
    """The name of the block device holding `path` (None: not a block
    device, e.g. tmpfs)."""
    dev = os.stat(path).st_dev
    link = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    return os.path.basename(os.path.realpath(link)) if os.path.exists(link) else None


def children_io() -> tuple[int, int]:
    """Bytes read from and written to storage so far by this process's reaped children and
    their reaped descendants (write: dirtied for writeback, less what truncation cancelled)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_inblock * 512, ru.ru_oublock * 512


# a *at call from the current directory with a full path walks the path as the plain call
# does (glibc makes mkdir() one or the other): counted under the plain call's name, while a
# call relative to a directory descriptor (meta.* at = true) keeps its own
_AT_WALK = {"mkdirat": "mkdir", "renameat": "rename", "renameat2": "rename",
            "newfstatat": "stat", "statx": "stat", "lstat": "stat", "openat": "open"}


def _walk_name(name: str, args: str) -> str:
    if name == "lstat":
        return "stat"
    if not args.startswith("AT_FDCWD"):
        return name
    if name == "unlinkat":
        return "rmdir" if "AT_REMOVEDIR" in args else "unlink"
    return _AT_WALK.get(name, name)


def parse(text: str, under: str, windows: list[tuple[float, float]] | None = None) -> Counter:
    """strace -y output of one process (-ff: no call split by another process's) ->
    Counter of (call, size or advice) on paths under `under`. windows: with strace -ttt
    stamps, only the calls made inside one of these (start, end) epoch seconds (the timed
    windows of a phase, not its untimed prepare)."""
    calls: Counter = Counter()
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m or m.group(2) not in SYSCALLS:
            continue
        if windows is not None and not (m.group(1) and any(
                a <= float(m.group(1)) <= b for a, b in windows)):
            continue
        name, args, ret = m.group(2), m.group(3), int(m.group(4))
        name = _walk_name(name, args)
        fd = _FD.match(args)
        path = fd.group(2) if fd else (re.search(r'"([^"]*)"', args) or [None, ""])[1]
        inside = path == under or path.startswith(under.rstrip("/") + "/")
        if not inside or any(path.endswith(x) for x in MARKERS):
            continue
        arg = ""
        if name in ("read", "write", "pread64", "pwrite64") and ret >= 0:
            arg = str(ret)       # bytes moved (a short read at the end shows as its size)
        elif name == "fadvise64":
            arg = args.rsplit(",", 1)[-1].strip()
        calls[(name, arg)] += 1
    return calls


def traced(cmd: list[str], under: str, env: dict | None = None) -> list[str]:
    """Run `cmd` under strace -ff -y -ttt; the trace of each of its processes."""
    with tempfile.TemporaryDirectory(suffix=".strace") as out:
        p = subprocess.run([strace() or "strace", "-ff", "-y", "-qq", "-ttt", "-o",
                            os.path.join(out, "p"), "-e", "trace=" + ",".join(SYSCALLS), *cmd],
                           capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed under strace: {p.stderr.strip()}")
        texts = []
        for name in os.listdir(out):
            with open(os.path.join(out, name), errors="replace") as f:
                texts.append(f.read())
    return texts


def counted(texts: list[str], under: str, windows: list[tuple[float, float]] | None = None
            ) -> Work:
    """The calls of traced() texts on paths under `under` (inside `windows`, if given)."""
    calls: Counter = Counter()
    for text in texts:
        calls += parse(text, os.path.realpath(under), windows)
    return Work(calls=calls)


def measure(cmd: list[str], under: str, env: dict | None = None) -> tuple[Work, str]:
    """Run `cmd` under strace, counting its work under the directory `under`; (work, its
    stdout)."""
    with tempfile.TemporaryDirectory(suffix=".strace") as out:
        os.sync()
        before = children_io()
        # -ff: one file per process, so no call is split by another's ("<unfinished ...>")
        p = subprocess.run([strace() or "strace", "-ff", "-y", "-qq", "-o",
                            os.path.join(out, "p"), "-e", "trace=" + ",".join(SYSCALLS), *cmd],
                           capture_output=True, text=True, env=env)
        after = children_io()      # the command and its tree, reaped: their own bytes
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed under strace: {p.stderr.strip()}")
        calls: Counter = Counter()
        for name in os.listdir(out):
            with open(os.path.join(out, name), errors="replace") as f:
                calls += parse(f.read(), os.path.realpath(under))
    return Work(after[0] - before[0], after[1] - before[1], calls), p.stdout


def agree(a: Work, b: Work, only: tuple[str, ...] = (),
          device: tuple[str, ...] = ("read", "write")) -> list[str]:
    """What differs between two sides' work (empty: they agree). only: compare these calls;
    device: the directions of device bytes that are the items' work (a write job's reads are
    its program's own pages when it starts cold, not its writes)."""
    diffs = []
    keys = {k for k in set(a.calls) | set(b.calls) if not only or k[0] in only}
    for k in sorted(keys):
        if a.calls.get(k, 0) != b.calls.get(k, 0):
            diffs.append(f"{k[0]}{f' {k[1]}' if k[1] else ''}: {a.calls.get(k, 0)} vs "
                         f"{b.calls.get(k, 0)}")
    for what, x, y in (("device read", a.device_read, b.device_read),
                       ("device write", a.device_write, b.device_write)):
        if what.split()[1] not in device:
            continue
        if max(x, y) > 2**20 and abs(x - y) > DEVICE_TOLERANCE * max(x, y):
            diffs.append(f"{what}: {x / 2**20:,.1f} vs {y / 2**20:,.1f} MiB")
    return diffs


# -- the compiled loops: what the compiler made of each side's timed loops ----------------------
_INSN = re.compile(r"^\s*[0-9a-f]+:\s+(v?(?:fmadd|fmsub|fnmadd|mul|add|sub|div|mov(?:nt)?(?:apd|"
                   r"upd|sd|dqa|dqu|dqa64|dqu64|ntpd|ntdq))\w*)\s+(.*)$")
_WIDTH = (("zmm", 512), ("ymm", 256), ("xmm", 128))


def loops(binary: str, functions: tuple[str, ...], clone: str = "") -> Counter:
    """(instruction kind, vector width) -> count, over the functions whose names start with
    one of `functions` in `binary` (objdump -d): the floating point moves and arithmetic the
    compiler emitted. Two sides whose main loops use the same kinds at the same widths (FMA
    on 512-bit registers, say, and no non-temporal stores on either) do the same work per
    element; unrolling and epilogues change the counts, not the kinds. clone: only the clones
    of that name ("arch_x86_64_v4": harness.running_clone()), the code that runs here."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True,
                         text=True, check=True).stdout
    kinds: Counter = Counter()
    inside = False
    for line in out.splitlines():
        head = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if head:
            inside = (head.group(1).startswith(functions)
                      and (not clone or head.group(1).endswith(f".{clone}")))
            continue
        m = _INSN.match(line) if inside else None
        if not m:
            continue
        width = next((w for reg, w in _WIDTH if reg in m.group(2)), 0)
        if width < 512 and not m.group(1).startswith("vmovnt"):
            continue       # the wide main loops and any streaming store: scalar code and
                           # epilogues differ with unrolling, not with the work per element
        # operand order is the compiler's choice; an aligned move (movapd) moves what the
        # unaligned one does on aligned data
        kind = re.sub(r"(132|213|231)", "", m.group(1)).replace("movapd", "movupd")
        kinds[(kind, width)] += 1
    return kinds


def same_loops(a: Counter, b: Counter) -> list[str]:
    """The instruction kinds one side's loops have and the other's lack (empty: the same)."""
    diffs = [f"{k} {w}-bit: only {'manybench' if k_w in a else 'the reference'}"
             for k_w in sorted(set(a) ^ set(b)) for k, w in [k_w]]
    return diffs


def loops_line(c: Counter) -> str:
    return ", ".join(f"{k} {w}-bit" for k, w in sorted(c)) or "no 512-bit loops"


def per_item(w: Work, items: int) -> dict[str, float]:
    """Calls by name (sizes folded) per item: what each item of a metadata phase cost."""
    by: Counter = Counter()
    for (name, _), n in w.calls.items():
        by[name] += n
    return {name: n / items for name, n in by.items()}


def agree_per_item(a: Work, b: Work, items: int, names: tuple[str, ...],
                   tolerance: float = 0.01) -> list[str]:
    """The calls of `names` whose count per item differs by more than `tolerance` (a tool's
    own few set-up calls, a tree's root directories, are not per-item work)."""
    pa, pb = per_item(a, items), per_item(b, items)
    return [f"{n}: {pa.get(n, 0):.3f} vs {pb.get(n, 0):.3f} per item" for n in names
            if abs(pa.get(n, 0) - pb.get(n, 0)) > tolerance]
