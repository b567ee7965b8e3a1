"""The C kernels are a CPython extension built by setuptools: `pip install .` compiles them.

They are compiled for the machine that builds them (-march=native, as STREAM's and Himeno's
users build them) when the compiler accepts it; MANYBENCH_PORTABLE=1 builds for the
architecture's baseline instead (a shared install on a cluster of unlike nodes).
MANYBENCH_SANITIZE=1 builds everything C (the extension, mbkernel, libmbrank.so) under
AddressSanitizer and UndefinedBehaviorSanitizer, for tests only (scripts/sanitized.sh): the
sanitizers' runtimes must then be preloaded into Python (docs/architecture.md). The compile
flags are defined here once and carried into the extension (`_native.build_info()`), so runs
record how their kernels were built and benchmarks build their C peers the same way.
"""
import glob
import os
import shlex
import subprocess
import sysconfig
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE = "src/manybench/kernels/native/"
# core (timing, io, meta, spawn) and the kernel families, each a kernel file plus a bind file
CORE = ["module.c", "timing.c", "io.c", "scratch.c", "spawn.c", "numa.c", "families.c",
        "records.c", "wire.c"]
FAMILIES = ["meta", "stream", "himeno", "dgemm", "randio", "net", "probe"]
SOURCES = CORE + [f"{f}.c" for f in FAMILIES] + [f"bind_{f}.c" for f in FAMILIES]

# the compiler command setuptools runs: $CC when set, else Python's own (sysconfig's CC); it
# puts sysconfig's CFLAGS and CCSHARED before extra_compile_args (CFLAGS below)
CC = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"


def _accepts(flag: str) -> bool:
    """Whether the compiler builds a trivial file with `flag`."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("int main(void) { return 0; }\n")
        try:
            return subprocess.run([*shlex.split(CC), flag, "-c", src, "-o", src + ".o"],
                                  capture_output=True).returncode == 0
        except OSError:
            return False


def _native_arch() -> str:
    """What -march=native means here (gcc: "znver3", "skylake-avx512", ...), or ""."""
    try:
        out = subprocess.run([*shlex.split(CC), "-march=native", "-Q", "--help=target"],
                             capture_output=True, text=True).stdout
    except OSError:
        return ""
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "-march=":
            return parts[1]
    return ""


PORTABLE = os.environ.get("MANYBENCH_PORTABLE", "") not in ("", "0")
# THE compile flags of the kernels, defined here only: the extension is compiled with them,
# they are carried into it (MB_CFLAGS -> _native.build_info()["cflags"]) and benchmarks/
# builds its C peers from build_info(), never from a copy
CFLAGS = ["-O3", "-std=gnu11", "-Wall", "-fopenmp"]
MARCH = ""
if not PORTABLE and _accepts("-march=native"):
    CFLAGS.append("-march=native")
    MARCH = _native_arch() or "native"
SANITIZE = os.environ.get("MANYBENCH_SANITIZE", "") not in ("", "0")
SANITIZERS = "address,undefined"    # build_info()["sanitize"]: "" when not sanitized
# any report ends the process (no recovery), with frames to read; -fno-wrapv undoes
# sysconfig's -fwrapv, under which signed overflow is not checked
SANITIZE_FLAGS = [f"-fsanitize={SANITIZERS}", "-fno-sanitize-recover=all",
                  "-fno-omit-frame-pointer", "-g", "-fno-wrapv"]
if SANITIZE:
    CFLAGS += SANITIZE_FLAGS
# build_info() hands the flags back as a list split on whitespace: a flag must not hold any
assert not any(any(ch.isspace() for ch in f) for f in CFLAGS), CFLAGS
# OpenMP and the sanitizers need their runtimes at link time
LINK_FLAGS = [f for f in CFLAGS if f == "-fopenmp" or f.startswith("-fsanitize=")]


def _c_string(text: str) -> str:
    """The value of a -D macro that is a C string literal holding `text`. setuptools passes
    each -D as one argument (no shell in between), so only C's own escaping is needed."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    body = "".join(chr(b) if 32 <= b < 127 else f"\\{b:03o}" for b in body.encode())
    return f'"{body}"'


native = Extension(
    "manybench._native",
    sources=[NATIVE + s for s in SOURCES],
    depends=sorted(glob.glob(NATIVE + "*.h")) + [NATIVE + "mbkernel.c", NATIVE + "mbrank.c"],
    extra_compile_args=CFLAGS,
    extra_link_args=LINK_FLAGS,
    libraries=["dl", "pthread"],
    define_macros=[("MB_CC", _c_string(CC)), ("MB_CFLAGS", _c_string(" ".join(CFLAGS))),
                   ("MB_MARCH", _c_string(MARCH)),
                   ("MB_SANITIZE", _c_string(SANITIZERS if SANITIZE else ""))],
)

# mbkernel: the built-in kernels as a standalone executable, for slots whose work runs inside
# a variant's `wrap` (a container sees no Python of ours). Static when it links, so it runs
# in any image; installed beside the kernels' modules as package data.
MBKERNEL_SOURCES = ["mbkernel.c", "timing.c", "io.c", "scratch.c", "stream.c", "himeno.c",
                    "numa.c"]


def build_mbkernel(out: str) -> None:
    srcs = [NATIVE + s for s in MBKERNEL_SOURCES]
    cmd = [*shlex.split(CC), *sysconfig.get_config_var("CFLAGS").split(), *CFLAGS, "-o", out,
           *srcs, "-lm"]
    # a sanitized build links its runtimes as shared libraries: never static
    for extra in ([] if SANITIZE else ["-static"], []):
        done = subprocess.run(cmd[:-1] + extra + cmd[-1:], capture_output=True, text=True)
        if done.returncode == 0:
            return
    raise RuntimeError(f"building mbkernel failed: {' '.join(cmd)}\n{done.stderr}")


# libmbrank.so: preloaded into the ranks of parallel tasks (ranks = N) so they start at T0
# with MPI_Init behind them (kernels/mpi_job.py). It needs no MPI to build: the calls it
# interposes have no MPI types, and it finds the real ones (PMPI_*) at run time, so one
# build serves every MPI. Portable flags: it runs inside other programs, on every node.
# Bound now (-z now): a call's first resolution through the PLT (a symbol lookup across the
# program's libraries, microseconds) must not fall between the start stamp and the return.
MBRANK_SOURCES = ["mbrank.c", "mbtransport.c", "timing.c", "numa.c"]


def build_mbrank(out: str) -> None:
    cmd = [*shlex.split(CC), "-O2", "-std=gnu11", "-Wall", "-fPIC", "-shared",
           "-fvisibility=hidden", "-Wl,-z,now", *(SANITIZE_FLAGS if SANITIZE else []), "-o", out,
           *[NATIVE + s for s in MBRANK_SOURCES], "-ldl"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building libmbrank.so failed: {' '.join(cmd)}\n{done.stderr}")


class BuildExt(build_ext):
    """The extension, then mbkernel and libmbrank.so beside it (in the source tree with
    --inplace)."""

    def run(self) -> None:
        super().run()
        kernels = os.path.dirname(self.get_ext_fullpath("manybench.kernels.mbkernel"))
        os.makedirs(kernels, exist_ok=True)
        build_mbkernel(os.path.join(kernels, "mbkernel"))
        build_mbrank(os.path.join(kernels, "libmbrank.so"))


setup(ext_modules=[native], cmdclass={"build_ext": BuildExt})
