"""mbmpi, the project's own MPI test program (kernels/native/mpi/mbmpi.c: ping-pong,
bandwidth and collectives over message sizes, OSU-like tables for `parse = "osu"`), and
mbhimeno (native/mpi/mbhimeno.c: Himeno with MPI ranks and OpenMP threads, `parse =
"himeno"`), built on demand with an MPI family's compiler wrapper: the package's own build
needs no MPI.

    from manybench.kernels.mpi_program import build
    path = build("openmpi")          # or "mpich", or "auto" (the `mpicc` on PATH)

The executable is cached in CACHE_DIR/mpi/<family>-<key>/<program>, where CACHE_DIR is
$MANYBENCH_CACHE_DIR, else $XDG_CACHE_HOME/manybench, else ~/.cache/manybench; <key> hashes
the source, the wrapper's path and what it compiles with (`-show` / `--showme`, the
compiler's version), so a changed MPI gets its own build and a cached one is reused. On a
cluster, put the cache on a shared file system or build on every node.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile

from .. import cachedir
from ..config import timing

SOURCE = os.path.join(os.path.dirname(__file__), "native", "mpi", "mbmpi.c")
# the programs and their own flags: mbhimeno is the Himeno benchmark with MPI ranks and
# OpenMP threads (native/mpi/mbhimeno.c), compiled as optimised as Himeno's usual builds
PROGRAMS = {"mbmpi": [], "mbhimeno": ["-O3", "-fopenmp"]}
# the wrapper each family's Debian package installs (mpicc alone is whichever is the default)
COMPILERS = {"auto": "mpicc", "openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich"}
PACKAGES = {"auto": "an MPI -dev package", "openmpi": "libopenmpi-dev", "mpich": "libmpich-dev"}
CFLAGS = ["-O2", "-std=gnu11"]


class MpiBuildError(RuntimeError):
    """The program cannot be built: no compiler wrapper, or it failed (the message says)."""


def cache_dir() -> str:
    return os.path.join(cachedir.base(), "mpi")


def compiler(family: str, mpicc: str | None = None) -> str:
    """The wrapper's absolute path; MpiBuildError naming the package when it is missing."""
    if family not in COMPILERS:
        raise MpiBuildError(f"unknown MPI family {family!r} (known: {', '.join(COMPILERS)})")
    name = mpicc or COMPILERS[family]
    path = shutil.which(name)
    if path is None:
        raise MpiBuildError(f"no {name} for MPI family {family!r}: install {PACKAGES[family]}"
                            " (or give the compiler wrapper's path)")
    return path


def _describe(cc: str) -> str:
    """What the wrapper compiles with: its link line and the compiler's version."""
    out = []
    for args in (["-show"], ["--showme"], ["--version"]):
        try:
            done = subprocess.run([cc, *args], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            out.append(done.stdout)
    return "\n".join(out)


def build(family: str = "auto", mpicc: str | None = None, force: bool = False,
          program: str = "mbmpi") -> str:
    """The path of `program` (mbmpi, mbhimeno) built with that family's wrapper (`mpicc`
    overrides the wrapper), reusing a cached build unless `force`."""
    if program not in PROGRAMS:
        raise MpiBuildError(f"unknown program {program!r} (known: {', '.join(PROGRAMS)})")
    cc = compiler(family, mpicc)
    source = os.path.join(os.path.dirname(SOURCE), program + ".c")
    flags = CFLAGS + PROGRAMS[program]
    with open(source, "rb") as f:
        src = f.read()
    key = hashlib.sha256(src + cc.encode() + _describe(cc).encode()
                         + " ".join(flags).encode()).hexdigest()[:16]
    out_dir = os.path.join(cache_dir(), f"{family}-{key}")
    exe = os.path.join(out_dir, program)
    if os.access(exe, os.X_OK) and not force:
        return exe
    os.makedirs(out_dir, exist_ok=True)
    # built under a temporary name, then renamed: concurrent builds never see half a file
    fd, tmp = tempfile.mkstemp(prefix=f".{program}-", dir=out_dir)
    os.close(fd)
    try:
        done = subprocess.run([cc, *flags, "-o", tmp, source], capture_output=True,
                              text=True, timeout=timing("mpi.build_timeout"))
        if done.returncode != 0:
            raise MpiBuildError(f"{cc} failed to build {source}:\n{done.stderr.strip()}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, exe)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return exe
