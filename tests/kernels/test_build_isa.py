"""Builds that run on every node (issue 33, item 3): the default build is portable (x86-64-v2)
but for the hot loops' clones, picked when the extension loads; the clone bound here is the
best this cpu has; a cpu that lacks the build's instruction sets is refused before the
extension loads, with a message naming both, never a SIGILL."""
from __future__ import annotations

import ctypes
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import textwrap

import pytest
from suite_paths import ROOT, TESTS

native = pytest.importorskip("manybench._native", reason="the C kernels are not built")

from manybench import build_isa  # noqa: E402
from manybench.build_isa import CpuMismatch  # noqa: E402

PACKAGE = os.path.dirname(native.__file__)
INFO = native.build_info()
OBJECTS = {"extension": native.__file__,
           "mbkernel": os.path.join(PACKAGE, "kernels", "mbkernel"),
           "libmbrank.so": os.path.join(PACKAGE, "kernels", "libmbrank.so")}
portable = pytest.mark.skipif(not INFO["clones"], reason="a build for one processor "
                              "(MANYBENCH_MARCH): every function is for it, no clones")

# Beyond x86-64-v2 (SSE4.2, POPCNT): any VEX or EVEX instruction (AVX and later: a mnemonic
# starting with v, a ymm, zmm or mask register), BMI1/2, LZCNT, MOVBE, ADX. Not tzcnt: gcc
# emits it as rep bsf, which a cpu without BMI1 runs as bsf.
BEYOND = re.compile(r"^\s*[0-9a-f]+:\s+(?:v[a-z0-9]+|andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|"
                    r"pext|rorx|sarx|shlx|shrx|lzcnt|movbe|adcx|adox)\s|%[yz]mm\d|%k[0-7]\b")
# probe.c's FMA peaks: each compiled for its own target, called only when
# __builtin_cpu_supports says this cpu has it
GUARDED = {"fma128", "fma256", "fma512"}
# x86-64-v3 and v4 as /proc/cpuinfo names their instruction sets (the psABI's levels)
V3 = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe"}
V4 = V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}


# the clones' symbol suffixes: loops_serial.arch_x86_64_v4, loops_serial.default
SUFFIXES = {"default" if t == "default" else f"arch_{t.replace('-', '_')}" for t in INFO["clones"]}


def functions_beyond_baseline(binary: str) -> dict[str, int]:
    """function -> how many of its instructions are beyond x86-64-v2 (objdump -d)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True,
                         text=True, check=True).stdout
    found: dict[str, int] = {}
    fn = ""
    for line in out.splitlines():
        head = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if head:
            fn = head.group(1)
        elif BEYOND.search(line):
            found[fn] = found.get(fn, 0) + 1
    return found


def is_clone(fn: str) -> bool:
    """A target clone of a hot loop, or an OpenMP loop outlined from one: loops_serial.
    arch_x86_64_v4, loops_omp._omp_fn.0.arch_x86_64_v3 (not .default: that one is baseline)."""
    return any(part in SUFFIXES - {"default"} for part in fn.split("."))


def library_functions() -> set[str]:
    """The names the static C libraries define (glibc's own dispatched AVX variants of memcpy
    and the like are in a static mbkernel): not ours to check."""
    cc = shlex.split(INFO["compiler"])
    names: set[str] = set()
    for lib in ("libc.a", "libm.a", "libgomp.a", "libgcc.a"):
        path = subprocess.run([*cc, f"-print-file-name={lib}"], capture_output=True,
                              text=True).stdout.strip()
        if not os.path.isabs(path):
            continue
        out = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                             text=True).stdout
        names.update(parts[2] for parts in map(str.split, out.splitlines()) if len(parts) == 3)
    return names


@portable
def test_the_built_objects_carry_no_instruction_beyond_the_baseline_outside_the_clones():
    assert INFO["march"] == "x86-64-v2" and "-march=x86-64-v2" in INFO["cflags"]
    ours = {}
    for name, path in OBJECTS.items():
        found = functions_beyond_baseline(path)
        if name == "mbkernel":     # static: the C library's own functions are in it
            libs = library_functions()
            found = {fn: n for fn, n in found.items() if fn not in libs}
        ours[name] = {fn: n for fn, n in found.items() if not is_clone(fn) and fn not in GUARDED}
        if name != "libmbrank.so":   # the clones are there, and are what is beyond
            assert any(is_clone(fn) for fn in found), (name, sorted(found))
    assert ours == {name: {} for name in OBJECTS}


def clone_slots() -> dict[str, tuple[int, dict[str, int]]]:
    """Each cloned function of the loaded extension -> (the address of its GOT slot, which
    its IRELATIVE relocation had the loader fill with what its resolver chose; its clones by
    suffix -> their addresses). Every call of it goes through that slot (its PLT stub)."""
    path = native.__file__
    symbols: dict[int, list[str]] = {}
    for line in subprocess.run(["objdump", "-t", path], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 6 and re.fullmatch(r"[0-9a-f]{16}", parts[0]):
            symbols.setdefault(int(parts[0], 16), []).append(parts[-1])
    with open("/proc/self/maps") as f:
        base = next(int(line.split("-")[0], 16) for line in f
                    if line.rstrip().endswith(path) and line.split()[2] == "00000000")
    slots = {}
    for line in subprocess.run(["readelf", "-rW", path], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "R_X86_64_IRELATIVE":
            resolver = next(s for s in symbols[int(parts[3], 16)] if s.endswith(".resolver"))
            fn = resolver.removesuffix(".resolver")
            clones = {s[len(fn) + 1:]: base + a for a, names in symbols.items() for s in names
                      if s[len(fn) + 1:] in SUFFIXES and s.startswith(fn + ".")}
            slots[fn] = (base + int(parts[0], 16), clones)
    return slots


def bound_clones() -> dict[str, str]:
    """Each cloned function of the loaded extension -> the clone its GOT slot holds."""
    bound = {}
    for fn, (slot, clones) in clone_slots().items():
        held = ctypes.c_uint64.from_address(slot).value
        bound[fn] = next(f"{fn}.{suffix}" for suffix, a in clones.items() if a == held)
    return bound


def rebind(suffix: str) -> None:
    """Every cloned function bound to its clone `suffix` instead ("default": the build's
    baseline), as the resolver of a cpu of that level would have: the GOT slots made
    writable for it (they are read-only once relocated)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = os.sysconf("SC_PAGE_SIZE")
    for fn, (slot, clones) in clone_slots().items():
        start = slot & ~(page - 1)
        if libc.mprotect(start, page, 3) != 0:     # PROT_READ | PROT_WRITE
            raise OSError(ctypes.get_errno(), "mprotect")
        ctypes.c_uint64.from_address(slot).value = clones[suffix]


@portable
def test_the_clone_bound_is_the_best_this_cpu_has():
    flags = build_isa.cpu_flags() or set()
    best = "x86-64-v4" if V4 <= flags else "x86-64-v3" if V3 <= flags else "default"
    assert INFO["clone"] == best       # what runs record (build_info), the resolver's rule
    bound = bound_clones()
    # STREAM's loops (one thread, OpenMP's four), Himeno's Jacobi (one thread, OpenMP's)
    assert {"loops_serial", "loops_omp", "jacobi"} <= set(bound), bound
    suffix = "default" if best == "default" else f"arch_{best.replace('-', '_')}"
    assert {fn: suffix for fn in bound} == {fn: c.rsplit(".", 1)[1] for fn, c in bound.items()}


@pytest.fixture
def simulated():
    """check() reads the simulated cpu, and this process's own again afterwards."""
    build_isa._mismatch_here.cache_clear()
    yield
    build_isa._mismatch_here.cache_clear()


def refuse(monkeypatch, isa: dict, lacking: set[str]) -> str:
    """The refusal of a cpu like this one less `lacking`, for a build of `isa`."""
    here = build_isa.cpu_flags() or set()
    monkeypatch.setattr(build_isa, "build_isa", lambda: isa)
    monkeypatch.setattr(build_isa, "cpu_flags", lambda: (here | set(isa["flags"])) - lacking)
    build_isa._mismatch_here.cache_clear()
    with pytest.raises(CpuMismatch) as e:
        build_isa.check()
    return str(e.value)


def test_a_cpu_without_the_builds_instructions_is_refused_naming_both(monkeypatch, simulated):
    # this build's own requirement, on a cpu without SSE4.2 and POPCNT (older than v2)
    msg = refuse(monkeypatch, build_isa.build_isa(), {"sse4_2", "popcnt"})
    assert f"-march={INFO['march']}" in msg
    assert "lacks popcnt sse4_2" in msg
    assert " ".join(sorted(build_isa.build_isa()["flags"])) in msg     # what the build needs
    assert "ssse3" in msg.split("its flags:")[1]                       # what the cpu has
    # a native build made on this Zen (AVX-512) read by a node without AVX-512
    native_isa = {"march": "znver3", "flags": ["avx", "avx2", "avx512f", "avx512vl", "fma"]}
    msg = refuse(monkeypatch, native_isa, {"avx512f", "avx512vl"})
    assert "-march=znver3" in msg and "lacks avx512f avx512vl" in msg
    assert "avx2" in msg.split("its flags:")[1]
    # a cpu that has them all is not refused
    monkeypatch.setattr(build_isa, "cpu_flags", lambda: set(native_isa["flags"]))
    build_isa._mismatch_here.cache_clear()
    build_isa.check()


def test_the_agent_and_the_local_engine_refuse_the_cpu_before_any_slot(monkeypatch, simulated):
    from manybench.engines.base import EngineError
    from manybench.engines.local import LocalEngine
    from manybench.node.agent import Agent
    from manybench.node.protocol import Start
    msg = refuse(monkeypatch, {"march": "znver3", "flags": ["avx512f"]}, {"avx512f"})
    with pytest.raises(CpuMismatch, match="lacks avx512f"):
        Agent.of(Start("r", "n", 1, "/tmp"))
    engine = LocalEngine()
    with pytest.raises(EngineError) as e:
        engine.start("r", 1, "/tmp", False)
    assert str(e.value) == f"the local agent: {msg}" and engine.agent is None
    # a cluster's node (Dask, ssh): its server answers the run's Start with the refusal
    from manybench.node.protocol import Failed
    from manybench.node.server import AgentServer
    server = AgentServer(None)
    assert server.reply(Start("r", "n", 1, "/tmp")) == Failed(msg) and server.agent is None


def test_the_extension_is_not_loaded_on_a_cpu_without_its_instructions(tmp_path):
    # a fresh process, whose /proc/cpuinfo says this cpu less SSE4.2: importing the
    # extension is refused before its shared object is loaded (no code of it runs)
    flags = sorted((build_isa.cpu_flags() or set(build_isa.build_isa()["flags"])) - {"sse4_2"})
    fake = tmp_path / "cpuinfo"
    fake.write_text(f"processor\t: 0\nflags\t\t: {' '.join(flags)}\n")
    script = textwrap.dedent(f"""
        import sys
        from manybench import build_isa
        build_isa.CPUINFO = {str(fake)!r}
        try:
            from manybench import _native
        except build_isa.CpuMismatch as e:
            print(e)
        print("loaded" if "manybench._native_c" in sys.modules else "not loaded")
        from manybench.kernels.native import native
        from manybench.kernels.base import KernelError
        try:
            native()
        except KernelError as e:
            print(e)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert "lacks sse4_2" in out[0] and out[1] == "not loaded", out
    assert out[2] == out[0]      # a kernel's error is the refusal, not "not built"


@pytest.mark.e2e
def test_a_run_on_a_cpu_without_the_builds_instructions_ends_with_the_refusal(tmp_path):
    # `manybench run` in a process whose /proc/cpuinfo lacks SSE4.2: one line naming the
    # build's -march and the cpu's flags, exit 2, no traceback and no slot started
    flags = sorted((build_isa.cpu_flags() or set(build_isa.build_isa()["flags"])) - {"sse4_2"})
    fake = tmp_path / "cpuinfo"
    fake.write_text(f"processor\t: 0\nflags\t\t: {' '.join(flags)}\n")
    (tmp_path / "plan.toml").write_text('[[task]]\nname = "n"\nkernel = "null"\n')
    script = ("import sys\nfrom manybench import build_isa\n"
              f"build_isa.CPUINFO = {str(fake)!r}\n"
              "from manybench.cli import main\n"
              "sys.argv = ['manybench', 'run', 'plan.toml']\nmain()\n")
    res = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("manybench: the local agent: this cpu cannot run manybench's "
                                 f"C kernels: they were built for -march={INFO['march']}")
    assert "lacks sse4_2" in res.stderr and "Traceback" not in res.stderr


PEER = os.path.join(str(ROOT), "benchmarks",
                    "peers", "himeno_ref.c")
# in a fresh process: every clone bound to one suffix, then Himeno's gosa (grid XS, 5
# iterations, 1 thread) and mem.stream with 1 and 2 threads (its own check of the arrays)
CLONE_RUN = """
import json, sys
import test_build_isa as t
from builders import run_kernel
from manybench.kernels import SlotContext
t.rebind(sys.argv[1])
ctx = SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1, scratch=sys.argv[2],
                  shared=sys.argv[2])
h = run_kernel("cpu.himeno", ctx, {"grid": "XS", "iterations": 5})
s = [run_kernel("mem.stream", ctx, {"elements": 100000, "ntimes": 3, "threads": n})
     for n in (1, 2)]
print(json.dumps({"bound": sorted(set(c.rsplit(".", 1)[1] for c in t.bound_clones().values())),
                  "gosa": f"{h.metrics['gosa']:e}", "himeno": h.status,
                  "stream": [r.status for r in s], "errors": [r.error for r in s]}))
"""


@portable
def test_every_clone_computes_what_himenoBMTxp_built_for_its_level_does(tmp_path):
    # the clones this cpu does not pick never run here: each bound in turn, as a cpu of
    # its level would bind it, must pass mem.stream's check and print himenoBMTxp's gosa
    # built for that level (the baseline's without FMA, v3's and v4's with it)
    cc = shlex.split(INFO["compiler"])
    flags = [f for v in ("CFLAGS", "CCSHARED") for f in
             shlex.split(sysconfig.get_config_var(v) or "")]
    # the helpers beside conftest.py, and this module (imported by the child)
    here = os.pathsep.join((str(TESTS), os.path.dirname(os.path.abspath(__file__))))
    gosas = {}
    for target in INFO["clones"]:
        suffix = "default" if target == "default" else f"arch_{target.replace('-', '_')}"
        march = INFO["march"] if target == "default" else target
        exe = str(tmp_path / f"himeno_{suffix}")
        subprocess.run([*cc, *flags, *[f for f in INFO["cflags"] if not f.startswith("-march=")],
                        f"-march={march}", "-DXSMALL", "-o", exe, PEER, "-lm"], check=True,
                       capture_output=True)
        out = subprocess.run([exe, "0.01", "5"], check=True, capture_output=True, text=True)
        printed = re.search(r"Gosa : (\S+)", out.stdout).group(1)
        res = subprocess.run([sys.executable, "-c", CLONE_RUN, suffix, str(tmp_path)],
                             capture_output=True, text=True, check=True, cwd=tmp_path,
                             env={**os.environ, "PYTHONPATH": here})
        got = json.loads(res.stdout)
        assert got["bound"] == [suffix], got
        assert got["himeno"] == "ok" and got["stream"] == ["ok", "ok"], got
        assert got["gosa"] == printed, (target, got["gosa"], printed)
        gosas[target] = printed
    # the clones are different code: the baseline's gosa is not the FMA clones'
    assert gosas["default"] != gosas[INFO["clones"][0]], gosas
