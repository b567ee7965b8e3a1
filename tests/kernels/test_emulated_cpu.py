"""The installed build on cpus without AVX-512 and without AVX (issue 33, item 3), emulated
by qemu-user: every built-in kernel whose work is this package's C code runs there, with the
clone of its level bound, in-process (the extension) and as the standalone mbkernel (under a
variant's wrap, through the command line). test_build_isa.py checks the instructions
themselves (objdump) and each clone's figures; this runs them on cpus that lack the rest.

Not here: `command` and `mpi` run the plan's programs (their own C is the extension's spawn,
run by the in-process kernels' slots too, and libmbrank.so, preloaded into MPI programs that
qemu-user would not follow into: objdump checks it)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from builders import STANDALONE_TASKS
from conftest import export_json, run_cli
from suite_paths import TESTS

native = pytest.importorskip("manybench._native", reason="the C kernels are not built")

QEMU = shutil.which("qemu-x86_64")
need_qemu = pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 is not installed (Debian "
                               "package qemu-user)")
INFO = native.build_info()
portable = pytest.mark.skipif(not INFO["clones"], reason="a build for one processor "
                              "(MANYBENCH_MARCH): it runs only on cpus like the build's")
# qemu's cpu models: Nehalem is x86-64-v2 (SSE4.2, POPCNT, no AVX), Haswell x86-64-v3 (AVX2,
# FMA, no AVX-512); the clone each binds (clones.h: symbol suffixes)
CPUS = {"Nehalem": "default", "Haswell": "arch_x86_64_v3"}
# knobs that force a BLAS core whatever the cpu (this machine's environment sets
# OPENBLAS_CORETYPE=Haswell): on an emulated Nehalem the library would die of SIGILL
FORCED_CORES = ("OPENBLAS_CORETYPE", "BLIS_ARCH_TYPE", "MKL_ENABLE_INSTRUCTIONS",
                "MKL_DEBUG_CPU_TYPE")

# one phase of each kernel, in one process under qemu: the clones it bound, and each status
CHILD = """
import json, os, sys, threading
sys.path.insert(0, sys.argv[1])
import test_build_isa
from manybench import _native
from manybench.kernels import KERNELS, SlotContext
from manybench.plan.tasks import kernel_params
root = sys.argv[1]
SOLO = {"null": {}, "io.write": {"size": "1MiB", "block": "64KiB"},
        "io.read": {"size": "1MiB", "block": "64KiB"},
        **{"meta." + m: {"items": 16} for m in ("mkdir", "statdir", "rename", "rmdir",
                                                 "create", "stat", "read", "unlink")},
        "mem.stream": {"elements": 100000, "ntimes": 2, "threads": 2},
        "cpu.himeno": {"grid": "XS", "iterations": 3},
        "cpu.dgemm": {"n": 64, "repeat": 2},
        "io.randread": {"size": "1MiB", "ops": 64}, "io.randwrite": {"size": "1MiB", "ops": 64}}
PAIRS = {"net.pingpong": {"iterations": 200, "warmup": 10},
         "net.stream": {"size": "1MiB", "msg_size": "64KiB"}}
LEAD_NS = 3_000_000_000     # emulated: each step is tens of times slower

def ctx(name, rank=0, workers=1):
    d = os.path.join(root, name, str(rank))
    os.makedirs(d, exist_ok=True)
    return SlotContext(run="r", node="n", slot=rank, rank=rank, workers=workers, cpu=-1,
                       scratch=d, shared=root, phase=1, task="t", job_key="k",
                       host="127.0.0.1")

out = {}
for name, values in SOLO.items():
    k = KERNELS[name]
    st = k.prepare(ctx(name), kernel_params(k, values))
    try:
        r = k.run(st, _native.now_ns() + LEAD_NS // 100, 0)
    finally:
        if k.cleanup:
            k.cleanup(st)
    out[name] = [r.status, r.error, r.ops]
for name, values in PAIRS.items():
    k = KERNELS[name]
    states = [k.prepare(ctx(name, r, 2), kernel_params(k, values)) for r in (0, 1)]
    peers = {r: {"host": "127.0.0.1", **k.publish(s)} for r, s in enumerate(states)}
    t0 = _native.now_ns() + LEAD_NS
    got = [None, None]
    def go(r):
        try:
            k.connect(states[r], peers)
            got[r] = k.run(states[r], t0, 0)
        finally:
            k.cleanup(states[r])
    threads = [threading.Thread(target=go, args=(r,)) for r in (0, 1)]
    [t.start() for t in threads]
    [t.join(300) for t in threads]
    out[name] = [[g.status, g.error, g.ops] if g else ["missing", "", 0] for g in got]
bound = sorted(set(c.rsplit(".", 1)[1] for c in test_build_isa.bound_clones().values()))
print(json.dumps({"bound": bound, "kernels": out}))
"""


def _env(**more: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in FORCED_CORES}, **more}


@need_qemu
@portable
@pytest.mark.e2e
@pytest.mark.parametrize("cpu", sorted(CPUS))
def test_every_builtin_kernel_runs_on_an_emulated_cpu_without_avx512(cpu, tmp_path):
    # the suite's helpers and test_build_isa (imported by the child)
    here = os.pathsep.join((str(TESTS), os.path.dirname(os.path.abspath(__file__))))
    res = subprocess.run([QEMU, "-cpu", cpu, sys.executable, "-c", CHILD, str(tmp_path)],
                         capture_output=True, text=True, timeout=600,
                         env=_env(PYTHONPATH=here), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.splitlines()[-1])
    assert got["bound"] == [CPUS[cpu]], got
    kernels = got["kernels"]
    from manybench.kernels import KERNELS
    # every kernel of the catalog is here but the two that run the plan's own programs
    assert set(kernels) == set(KERNELS) - {"command", "mpi"}, sorted(kernels)
    for name, said in kernels.items():
        for status, error, ops in (said if isinstance(said[0], list) else [said]):
            assert status == "ok", (cpu, name, error)
            assert ops > 0 or KERNELS[name].sync_only, (cpu, name)    # null does no work


@need_qemu
@pytest.mark.e2e
def test_mbkernel_runs_every_standalone_kernel_on_an_emulated_cpu_without_avx(plan_file,
                                                                              tmp_path):
    """mbkernel is a program of its own (static, its own clones): a variant's wrap runs it
    under qemu as a Nehalem, through a whole run."""
    from manybench.kernels import KERNELS
    plan = plan_file(STANDALONE_TASKS + f"""
        [[variant]]
        name = "nehalem"
        wrap = ["{QEMU}", "-cpu", "Nehalem"]
        """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q", timeout=600, env=_env())
    assert res.returncode == 0, res.stderr[-3000:] + res.stdout[-2000:]
    rows = export_json(out)
    assert {r["kernel"] for r in rows} == {n for n, k in KERNELS.items() if k.standalone}
    for r in rows:
        assert r["status"] == "ok" and r["variant"] == "nehalem", (r["task"], r.get("error"))
        assert r["metrics"]["wrap_startup_s"] > 0, r["task"]
    by_task = {r["task"]: r for r in rows}
    assert by_task["write"]["bytes"] == 4 * 2**20
    assert by_task["himeno"]["metrics"]["iterations"] == 20
    assert by_task["stream"]["metrics"]["triad_mb_s"] > 0
