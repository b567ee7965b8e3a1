"""cpu.dgemm's `blas = "best"`: library x core type, each trial a process of its own.

Gated on which combination is chosen and what is recorded, never on GFLOPS: the timings are
injected, except in the trials that check what a child process really loads."""
from __future__ import annotations

import os

import pytest

from manybench.inventory.cpu_peak import parse_cpuinfo
from manybench.kernels import blas, blas_trial
from manybench.kernels.blas_trial import Trial, Variant

ZEN5 = parse_cpuinfo("vendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
                     "flags\t\t: fpu sse sse2 avx fma avx2 avx512f avx512cd avx512bw "
                     "avx512dq avx512vl avx512_bf16\n")
ZEN2 = parse_cpuinfo("vendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 49\n"
                     "flags\t\t: fpu sse sse2 avx fma avx2\n")
SYS = "/usr/lib/x86_64-linux-gnu/libopenblasp-r0.3.21.so"
NUMPY = "/site/numpy.libs/libscipy_openblas64_.so"
# what each library runs under each OPENBLAS_CORETYPE (a build without Cooperlake runs
# SkylakeX), and the GFLOPS its trial gives
RUNS = {SYS: {"": "Haswell", "SKYLAKEX": "SkylakeX", "COOPERLAKE": "Cooperlake",
              "ZEN": "Zen", "HASWELL": "Haswell", "SANDYBRIDGE": "Sandybridge"},
        NUMPY: {"": "Haswell", "SKYLAKEX": "SkylakeX", "COOPERLAKE": "SkylakeX",
                "ZEN": "Haswell", "HASWELL": "Haswell", "SANDYBRIDGE": "Sandybridge"}}
GFLOPS = {(SYS, ""): 62.0, (SYS, "SKYLAKEX"): 90.0, (SYS, "COOPERLAKE"): 89.0,
          (NUMPY, ""): 65.4, (NUMPY, "SKYLAKEX"): 98.7, (NUMPY, "COOPERLAKE"): 97.0}
CONFIG = "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"


class FakeLib:
    """blas_load as a library reads OPENBLAS_CORETYPE: when it loads, from the environment."""
    def __init__(self) -> None:
        self.loaded: list[tuple[str, str]] = []

        self.instances: dict[str, str] = {}    # path -> the core it initialised with

    def blas_load(self, path: str) -> dict:
        file = {"libopenblas.so.0": SYS}.get(path, path)
        file = {os.path.basename(f): f for f in RUNS}.get(os.path.basename(file), file)
        if file not in RUNS:
            raise OSError(2, "not found")
        core = self.instances.setdefault(path, RUNS[file][os.environ.get("OPENBLAS_CORETYPE",
                                                                         "")])
        self.loaded.append((file, core))
        return {"index": 0, "file": file, "config": CONFIG, "corename": core, "symbol": "x",
                "threads": 1, "path": path, "ilp64": file == NUMPY}


def fake_trial(asked: list[Variant]):
    def trial(v: Variant) -> Trial:
        asked.append(v)
        file = {"libopenblas.so.0": SYS}.get(v.path, v.path)
        if file not in RUNS:
            return Trial(v, unloadable="not found")
        core = dict(v.env).get("OPENBLAS_CORETYPE", "")
        return Trial(v, file=file, config=CONFIG, core=RUNS[file][core],
                     gflops=GFLOPS.get((file, core), 30.0))
    return trial


@pytest.fixture(autouse=True)
def no_knobs(monkeypatch):
    """Trials set the variables themselves, whatever this environment says (this machine's
    sets OPENBLAS_CORETYPE=Haswell)."""
    for k in blas_trial.KNOBS:
        monkeypatch.delenv(k, raising=False)


@pytest.fixture
def libs(monkeypatch):
    here = ["libopenblas.so.0", "libblis.so.4", SYS, NUMPY]
    monkeypatch.setattr(blas, "candidates", lambda b: [b] if b and b != blas.BEST else here)


def test_best_picks_the_fastest_core_type_and_records_every_trial(libs):
    lib, asked = FakeLib(), []
    info, trials, stale = blas.best(lib, 1, 64, 1, 1.0, 0.0, trial=fake_trial(asked), cpu=ZEN5)
    # the winner is numpy's OpenBLAS under SKYLAKEX, loaded here with the variable set
    assert (info["file"], info["corename"]) == (NUMPY, "SkylakeX") and stale is None
    assert info["env"] == "OPENBLAS_CORETYPE=SKYLAKEX"
    assert lib.loaded[-1] == (NUMPY, "SkylakeX")
    assert "OPENBLAS_CORETYPE" not in os.environ        # restored after the load
    # every library (once per file, SYS reached by two names) x every core the cpu has
    cores = ["auto", "OPENBLAS_CORETYPE=COOPERLAKE", "OPENBLAS_CORETYPE=SKYLAKEX",
             "OPENBLAS_CORETYPE=ZEN", "OPENBLAS_CORETYPE=HASWELL",
             "OPENBLAS_CORETYPE=SANDYBRIDGE"]
    assert [(t["blas"], t["env"]) for t in trials if "round" not in t] == [
        (f, c) for f in (SYS, NUMPY) for c in cores]
    # the leaders (within 0.8 of the fastest) once more, in reverse order
    assert [(t["blas"], t["env"][18:]) for t in trials if t.get("round") == 2] == [
        (NUMPY, "SKYLAKEX"), (NUMPY, "COOPERLAKE"), (SYS, "SKYLAKEX"), (SYS, "COOPERLAKE")]
    # each trial names the core the library said it ran (numpy's has no Cooperlake)
    got = {(t["blas"], t["env"]): (t["core"], t["gflops"]) for t in trials}
    assert got[(NUMPY, "OPENBLAS_CORETYPE=COOPERLAKE")] == ("SkylakeX", 97.0)
    assert got[(SYS, "auto")] == ("Haswell", 62.0)
    prov = blas.provenance(type("L", (), {"blas_get_threads": staticmethod(lambda i: 1)}),
                           info)
    assert (prov["blas"], prov["blas_version"], prov["blas_core"], prov["blas_env"],
            prov["blas_threads_used"]) == (NUMPY, "0.3.21", "SkylakeX",
                                           "OPENBLAS_CORETYPE=SKYLAKEX", 1)


def test_a_library_this_process_loaded_under_another_core_is_loaded_again(libs, monkeypatch):
    """A slot process lives for the whole run: an earlier task may have loaded the winner
    under another core. A private copy of the file initialises again."""
    copies: list[str] = []
    monkeypatch.setattr(blas.shutil, "copyfile", lambda src, dst: copies.append(src) or
                        open(dst, "w").close())
    lib = FakeLib()
    lib.blas_load(NUMPY)                            # as loaded before: Haswell
    info, _, stale = blas.best(lib, 1, 64, 1, 1.0, 0.0, trial=fake_trial([]), cpu=ZEN5)
    assert copies == [NUMPY] and stale is None
    assert (info["file"], info["corename"]) == (NUMPY, "SkylakeX")
    # when even the copy runs another core (a wrapper over a library loaded before), the
    # next leader that runs as tried, and a warning naming both
    lib = FakeLib()
    lib.blas_load(NUMPY)
    monkeypatch.setattr(blas, "load_copy", lambda lib, v, threads: lib.blas_load(v.path))
    info, _, stale = blas.best(lib, 1, 64, 1, 1.0, 0.0, trial=fake_trial([]), cpu=ZEN5)
    assert (info["file"], info["corename"], info["env"]) == (SYS, "SkylakeX",
                                                             "OPENBLAS_CORETYPE=SKYLAKEX")
    assert stale and stale.startswith(f"cpu.dgemm: blas = \"best\"'s fastest trial, {NUMPY} "
                                      "with OPENBLAS_CORETYPE=SKYLAKEX (SkylakeX kernels, 98.7")
    assert f"it runs {SYS} with OPENBLAS_CORETYPE=SKYLAKEX (SkylakeX kernels, 90.0" in stale


def test_core_types_the_cpu_lacks_are_never_tried(libs):
    asked: list[Variant] = []
    blas.best(FakeLib(), 1, 64, 1, 1.0, 0.0, trial=fake_trial(asked), cpu=ZEN2)
    forced = {dict(v.env).get("OPENBLAS_CORETYPE") for v in asked} - {None}
    assert forced == {"ZEN", "HASWELL", "SANDYBRIDGE"}        # no AVX-512 core on a Zen 2
    assert not blas_trial.variants(SYS, "openblas", "OpenBLAS 0.3.21 NO_AFFINITY Haswell",
                                   ZEN5["flags"])             # one core: nothing to force
    # BLIS and MKL: their own variables, by the same flags
    assert [v.env for v in blas_trial.variants("/l/libblis.so.4", "blis", "0.9.0",
                                               ZEN2["flags"])] == [
        (("BLIS_ARCH_TYPE", "zen3"),), (("BLIS_ARCH_TYPE", "haswell"),),
        (("BLIS_ARCH_TYPE", "sandybridge"),)]
    assert (("MKL_ENABLE_INSTRUCTIONS", "AVX512"),) in [
        v.env for v in blas_trial.variants("/l/libmkl_rt.so", "mkl", "", ZEN5["flags"])]


def test_a_trial_that_dies_is_recorded_with_its_signal_and_the_run_goes_on(libs, monkeypatch):
    monkeypatch.setattr(blas_trial, "CHILD", "import os, signal\n"
                                             "os.kill(os.getpid(), signal.SIGILL)")
    dead = blas_trial.run_trial(Variant(SYS, (("OPENBLAS_CORETYPE", "SKYLAKEX"),)), 1, 64, 1,
                                1.0, 0.0, 1000, blas.THREAD_ENV)
    assert dead.error == "died of SIGILL" and dead.gflops is None
    assert dead.record() == {"blas": SYS, "env": "OPENBLAS_CORETYPE=SKYLAKEX", "core": "",
                             "error": "died of SIGILL"}
    asked: list[Variant] = []
    alive = fake_trial(asked)

    def trial(v: Variant) -> Trial:
        return dead if v.path == NUMPY and v.env else alive(v)
    info, trials, _ = blas.best(FakeLib(), 1, 64, 1, 1.0, 0.0, trial=trial, cpu=ZEN5)
    assert (info["file"], info["corename"]) == (SYS, "SkylakeX")
    assert sum("error" in t for t in trials) == 5 and max(t.get("round", 1) for t in trials) == 2


def test_the_warning_names_the_core_that_runs_faster_here():
    asked: list[Variant] = []
    os.environ["OPENBLAS_CORETYPE"] = "HASWELL"      # how this run's library loaded
    pair = blas.faster_core(NUMPY, "Haswell", CONFIG, 1, 64, 1, 1.0, 0.0,
                            trial=fake_trial(asked), cpu=ZEN5)
    assert pair is not None and pair[0].variant.label() == "OPENBLAS_CORETYPE=SKYLAKEX"
    assert pair[1].variant.env == (("OPENBLAS_CORETYPE", "HASWELL"),)
    text = blas.core_mismatch("Haswell", CONFIG, ZEN5, faster=pair)
    assert text and ("OPENBLAS_CORETYPE=SKYLAKEX runs its SkylakeX kernels faster here (98.7 "
                     "GFLOPS in a trial against 30.0 as it runs now)") in text
    # nothing faster: no core named, and "best"'s winner says it won
    assert blas.faster_core(SYS, "Haswell", CONFIG, 1, 64, 1, 1.0, 0.0,
                            trial=lambda v: Trial(v, file=SYS, core="Haswell", gflops=50.0),
                            cpu=ZEN5) is None
    assert "fastest of the 12 trials" in blas.core_mismatch("Haswell", CONFIG, ZEN5, tried=12)


def _dynamic_openblas_or_skip() -> dict:
    from manybench import _native
    try:
        info = _native.blas_load("libopenblas.so.0")
    except OSError:
        pytest.skip("no system OpenBLAS")
    if "DYNAMIC_ARCH" not in info["config"]:
        pytest.skip("this OpenBLAS has one core: nothing to force")
    return info


@pytest.mark.parametrize("coretype, flag, core", [("SANDYBRIDGE", "avx", "Sandybridge"),
                                                  ("HASWELL", "avx2", "Haswell")])
def test_a_forced_core_runs_in_its_child_as_openblas_says(coretype, flag, core):
    """A fact load cannot move: the child loads the library with OPENBLAS_CORETYPE set and
    openblas_get_corename names the core it runs; this process is not touched."""
    info = _dynamic_openblas_or_skip()
    os.environ["OPENBLAS_CORETYPE"] = "Prescott"    # the run's own: not the trial's
    if flag not in blas._this_cpu().get("flags", ()):
        pytest.skip(f"this cpu has no {flag}")
    t = blas_trial.run_trial(Variant(info["file"], (("OPENBLAS_CORETYPE", coretype),)), 1,
                             48, 1, 1.0, 0.0, 1_000_000, blas.THREAD_ENV)
    assert not t.error and t.core == core and t.file == info["file"] and t.gflops > 0
    assert os.environ["OPENBLAS_CORETYPE"] == "Prescott"
