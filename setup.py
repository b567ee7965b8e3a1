"""The C kernels are a CPython extension built by setuptools: `pip install .` compiles them.

They are compiled for the machine that builds them (-march=native, as STREAM's and Himeno's
users build them) when the compiler accepts it; MANYBENCH_PORTABLE=1 builds for the
architecture's baseline instead (a shared install on a cluster of unlike nodes). The compile
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

NATIVE = "src/manybench/kernels/native/"
# core (timing, io, meta, spawn) and the kernel families, each a kernel file plus a bind file
CORE = ["module.c", "timing.c", "io.c", "spawn.c", "families.c"]
FAMILIES = ["meta", "stream", "himeno", "dgemm", "randio", "net"]
SOURCES = CORE + [f"{f}.c" for f in FAMILIES] + [f"bind_{f}.c" for f in FAMILIES]

# what setuptools compiles with: CC from the environment, else Python's; Python's own flags
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
CFLAGS = ["-O3", "-std=gnu11", "-Wall", "-fopenmp"]
MARCH = ""
if not PORTABLE and _accepts("-march=native"):
    CFLAGS.append("-march=native")
    MARCH = _native_arch() or "native"
PY_CFLAGS = " ".join(filter(None, (sysconfig.get_config_var("CFLAGS"),
                                   sysconfig.get_config_var("CCSHARED"))))


def _c_string(text: str) -> str:
    """A macro value that is a C string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


native = Extension(
    "manybench._native",
    sources=[NATIVE + s for s in SOURCES],
    depends=sorted(glob.glob(NATIVE + "*.h")),
    extra_compile_args=CFLAGS,
    extra_link_args=["-fopenmp"],
    libraries=["dl", "pthread"],
    define_macros=[("MB_CC", _c_string(CC)), ("MB_CFLAGS", _c_string(" ".join(CFLAGS))),
                   ("MB_PY_CFLAGS", _c_string(PY_CFLAGS)), ("MB_MARCH", _c_string(MARCH))],
)

setup(ext_modules=[native])
