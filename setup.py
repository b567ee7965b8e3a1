"""The C kernels are a CPython extension built by setuptools: `pip install .` compiles them.

They are compiled portable by default: for x86-64-v2 (where the compiler accepts it), so one
install serves every node of a cluster (a shared file system holds one install for nodes of
several processors), with the hot loops (mem.stream's, cpu.himeno's Jacobi) compiled as well for
x86-64-v3 and v4 and picked when the extension loads (gcc's target_clones: clones.h).
MANYBENCH_MARCH=native (or any -march value) builds everything for that processor instead, with
no clones; the processor's instructions are then required of every node, and checked before
the extension loads (build_isa.json, manybench/build_isa.py).
MANYBENCH_SANITIZE=1 builds everything C (the extension, mbkernel, libmbrank.so) under
AddressSanitizer and UndefinedBehaviorSanitizer, for tests only (scripts/sanitized.sh): the
sanitizers' runtimes must then be preloaded into Python (docs/architecture.md). The compile
flags are defined here once and carried into the extension (`_native.build_info()`), so runs
record how their kernels were built and benchmarks build their C peers the same way.
"""
import glob
import json
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
        "records.c", "wire.c", "clones.c"]
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


# the default -march: the x86-64 baseline every node of a current cluster has (SSE4.2,
# POPCNT); none where the compiler takes no such value (another architecture: its own baseline)
PORTABLE_MARCH = "x86-64-v2"
# MANYBENCH_MARCH=native (or "znver4", ...): everything built for that processor, no clones.
# (MANYBENCH_PORTABLE=1, the way out of -march=native before, is no longer read: portable is
# the default.)
ASKED_MARCH = os.environ.get("MANYBENCH_MARCH", "").strip()
# THE compile flags of the kernels, defined here only: the extension is compiled with them,
# they are carried into it (MB_CFLAGS -> _native.build_info()["cflags"]) and benchmarks/
# builds its C peers from build_info(), never from a copy
CFLAGS = ["-O3", "-std=gnu11", "-Wall", "-fopenmp"]
MARCH = ""
if ASKED_MARCH:
    if not _accepts(f"-march={ASKED_MARCH}"):
        raise SystemExit(f"MANYBENCH_MARCH={ASKED_MARCH}: {CC} does not accept "
                         f"-march={ASKED_MARCH}")
    CFLAGS += [f"-march={ASKED_MARCH}", "-DNB_NO_CLONES"]
    MARCH = (_native_arch() or "native") if ASKED_MARCH == "native" else ASKED_MARCH
elif _accepts(f"-march={PORTABLE_MARCH}"):
    CFLAGS.append(f"-march={PORTABLE_MARCH}")
    MARCH = PORTABLE_MARCH

# /proc/cpuinfo's name of each instruction set that a -march lets the compiler use in C code
# without intrinsics, by the macro the compiler defines for it: the flags a node's cpu must
# have to run this build (build_isa.json, checked before the extension loads)
ISA_FLAGS = {
    "__SSE__": "sse", "__SSE2__": "sse2", "__SSE3__": "pni", "__SSSE3__": "ssse3",
    "__SSE4_1__": "sse4_1", "__SSE4_2__": "sse4_2", "__POPCNT__": "popcnt",
    "__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16": "cx16", "__LAHF_SAHF__": "lahf_lm",
    "__AVX__": "avx", "__AVX2__": "avx2", "__FMA__": "fma", "__F16C__": "f16c",
    "__BMI__": "bmi1", "__BMI2__": "bmi2", "__LZCNT__": "abm", "__MOVBE__": "movbe",
    "__ADX__": "adx", "__AES__": "aes", "__PCLMUL__": "pclmulqdq", "__SHA__": "sha_ni",
    "__GFNI__": "gfni", "__VAES__": "vaes", "__VPCLMULQDQ__": "vpclmulqdq",
    "__AVXVNNI__": "avx_vnni", "__AVX512F__": "avx512f", "__AVX512CD__": "avx512cd",
    "__AVX512BW__": "avx512bw", "__AVX512DQ__": "avx512dq", "__AVX512VL__": "avx512vl",
    "__AVX512IFMA__": "avx512ifma", "__AVX512VBMI__": "avx512vbmi",
    "__AVX512VBMI2__": "avx512_vbmi2", "__AVX512VNNI__": "avx512_vnni",
    "__AVX512BITALG__": "avx512_bitalg", "__AVX512VPOPCNTDQ__": "avx512_vpopcntdq",
    "__AVX512BF16__": "avx512_bf16", "__AVX512FP16__": "avx512_fp16",
    "__AVX512VP2INTERSECT__": "avx512_vp2intersect",
}


def _required_flags() -> list[str]:
    """The cpu flags (ISA_FLAGS) the compiler may use with CFLAGS' -march, from the macros
    it predefines for it; [] when it says none (another architecture)."""
    march = [f for f in CFLAGS if f.startswith("-march=")]
    try:
        out = subprocess.run([*shlex.split(CC), *march, "-dM", "-E", "-x", "c", os.devnull],
                             capture_output=True, text=True).stdout
    except OSError:
        return []
    macros = {line.split()[1] for line in out.splitlines() if line.startswith("#define ")}
    return sorted({flag for macro, flag in ISA_FLAGS.items() if macro in macros})


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


# The extension is manybench._native_c; manybench/_native.py loads it once the cpu is checked
native = Extension(
    "manybench._native_c",
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


def write_build_isa(out: str) -> None:
    """build_isa.json: the -march the kernels were built for and the cpu flags it requires,
    read (manybench/build_isa.py) before the extension is loaded, which on a cpu without them
    could die of an illegal instruction."""
    with open(out, "w") as f:
        json.dump({"march": MARCH, "flags": _required_flags()}, f, indent=1)
        f.write("\n")


class BuildExt(build_ext):
    """The extension, then build_isa.json, mbkernel and libmbrank.so beside it (in the source
    tree with --inplace)."""

    def run(self) -> None:
        super().run()
        package = os.path.dirname(self.get_ext_fullpath("manybench._native_c"))
        write_build_isa(os.path.join(package, "build_isa.json"))
        kernels = os.path.dirname(self.get_ext_fullpath("manybench.kernels.mbkernel"))
        os.makedirs(kernels, exist_ok=True)
        build_mbkernel(os.path.join(kernels, "mbkernel"))
        build_mbrank(os.path.join(kernels, "libmbrank.so"))


setup(ext_modules=[native], cmdclass={"build_ext": BuildExt})
