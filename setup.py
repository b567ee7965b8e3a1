"""The C kernels are a CPython extension built by setuptools: `pip install .` compiles them.

The compile flags are defined here once and carried into the extension (`_native.build_info()`),
so runs record how their kernels were built and benchmarks build their C peers the same way.
"""
import glob
import os
import sysconfig

from setuptools import Extension, setup

NATIVE = "src/manybench/kernels/native/"
# core (timing, io, meta, spawn) and the kernel families, each a kernel file plus a bind file
CORE = ["module.c", "timing.c", "io.c", "meta.c", "spawn.c", "families.c"]
FAMILIES = ["stream", "himeno", "dgemm", "randio", "net"]
SOURCES = CORE + [f"{f}.c" for f in FAMILIES] + [f"bind_{f}.c" for f in FAMILIES]

CFLAGS = ["-O3", "-std=gnu11", "-Wall", "-fopenmp"]
# what setuptools compiles with: CC from the environment, else Python's; Python's own flags
CC = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
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
                   ("MB_PY_CFLAGS", _c_string(PY_CFLAGS))],
)

setup(ext_modules=[native])
