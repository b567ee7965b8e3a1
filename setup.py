"""The C kernels are a CPython extension built by setuptools: `pip install .` compiles them."""
from setuptools import Extension, setup

native = Extension(
    "manybench._native",
    sources=[
        "src/manybench/kernels/native/module.c",
        "src/manybench/kernels/native/timing.c",
        "src/manybench/kernels/native/io.c",
        "src/manybench/kernels/native/meta.c",
        "src/manybench/kernels/native/spawn.c",
    ],
    depends=["src/manybench/kernels/native/native.h"],
    extra_compile_args=["-O2", "-std=gnu11", "-Wall"],
)

setup(ext_modules=[native])
