"""The C kernels are a CPython extension built by setuptools: `pip install .` compiles them."""
import glob

from setuptools import Extension, setup

NATIVE = "src/manybench/kernels/native/"
# core (timing, io, meta, spawn) and the kernel families, each a kernel file plus a bind file
CORE = ["module.c", "timing.c", "io.c", "meta.c", "spawn.c", "families.c"]
FAMILIES = ["stream", "himeno", "dgemm", "randio", "net"]
SOURCES = CORE + [f"{f}.c" for f in FAMILIES] + [f"bind_{f}.c" for f in FAMILIES]

native = Extension(
    "manybench._native",
    sources=[NATIVE + s for s in SOURCES],
    depends=sorted(glob.glob(NATIVE + "*.h")),
    extra_compile_args=["-O3", "-std=gnu11", "-Wall", "-fopenmp"],
    extra_link_args=["-fopenmp"],
    libraries=["dl", "pthread"],
)

setup(ext_modules=[native])
