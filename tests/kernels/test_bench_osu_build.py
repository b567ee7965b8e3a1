"""benchmarks/bench_osu.py builds OSU in a directory of its own with FLOAT_PRECISION=3, from a
source tree configured in place or not, and never builds in the source tree. A stand-in tree
(a shell configure, Makefiles that record the CFLAGS they were configured with) plays OSU."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from suite_paths import ROOT

import manybench  # noqa: E402,F401  (the installed package, first: benchmarks/harness.py puts
# src/ first on sys.path for the benchmarks, whose tree may hold no built extension)

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import bench_osu  # noqa: E402
import harness  # noqa: E402

if harness.SRC in sys.path:    # nothing imported after this test module comes from src/
    sys.path.remove(harness.SRC)

# $OSU_GATE set: the first configure (of every builder) waits for $OSU_GATE/go
CONFIGURE = """#!/bin/sh
if [ -n "$OSU_GATE" ] && mkdir "$OSU_GATE/first" 2>/dev/null; then
    touch "$OSU_GATE/waiting"
    while [ ! -e "$OSU_GATE/go" ]; do sleep 0.05; done
fi
for a in "$@"; do case "$a" in CFLAGS=*) cflags="${a#CFLAGS=}";; esac; done
echo configured >> configure.log
echo "$cflags" > config.status
printf 'distclean:\\n\\trm -f config.status\\n\\techo yes > distcleaned\\n' > Makefile
for d in %s; do
    mkdir -p "$d"
    printf 'all:\\n\\tcp ../../../../config.status built-with\\n' > "$d/Makefile"
done
"""


@pytest.fixture
def source(tmp_path, monkeypatch):
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    monkeypatch.setattr(bench_osu.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    src = tmp_path / "osu"
    src.mkdir()
    (src / "configure.ac").write_text("AC_INIT([OSU-Micro-Benchmarks], [7.4])\n")
    (src / "configure").write_text(CONFIGURE % " ".join(bench_osu.BUILT))
    (src / "configure").chmod(0o755)
    return src


def _files(d) -> dict[str, bytes]:
    return {os.path.relpath(os.path.join(r, f), d): open(os.path.join(r, f), "rb").read()
            for r, _, fs in os.walk(d) for f in fs}


@pytest.mark.parametrize("in_place", [False, True])
def test_osu_is_built_in_a_copy_of_its_own_with_3_decimals(source, in_place):
    if in_place:     # configured (and built) in its own tree with OSU's default CFLAGS
        bench_osu.subprocess.run(["./configure", "CFLAGS=-g -O2"], cwd=source, check=True)
    before = _files(source)
    out = bench_osu.osu_build(str(source))
    assert os.path.realpath(out) != os.path.realpath(source)
    assert _files(source) == before                          # the source tree untouched
    for sub in bench_osu.BUILT:
        with open(os.path.join(out, sub, "built-with")) as f:
            assert f.read().strip() == "-O2 -DFLOAT_PRECISION=3"
    assert os.path.exists(os.path.join(out, "distcleaned")) == in_place
    bench_osu.osu_build(str(source))                        # configured once, reused
    with open(os.path.join(out, "configure.log")) as f:
        assert f.read().count("configured") == 1 + in_place


def _waits_for_a_lock(pid: int) -> bool:
    """The process waits for a file lock (a blocked request in /proc/locks: "N: -> FLOCK ...")."""
    with open("/proc/locks") as f:
        return any(w[1:2] == ["->"] and w[5:6] == [str(pid)] for w in map(str.split, f))


def test_two_builders_at_once_end_with_one_good_build(source, tmp_path):
    """A second builder that comes while the first configures waits for it, then reuses its
    build: without a lock it removed the tree the first was configuring, and the first failed
    (its configure ran on in a deleted directory)."""
    from waits import wait_for
    gate = tmp_path / "gate"
    gate.mkdir()
    script = ("import sys, manybench\n"
              f"sys.path.insert(0, {os.path.join(ROOT, 'benchmarks')!r})\n"
              f"import bench_osu\nprint(bench_osu.osu_build({str(source)!r}))\n")
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "OSU_GATE": str(gate)}
    builders = []

    def builder() -> subprocess.Popen:
        builders.append(subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        return builders[-1]
    try:
        first = builder()
        wait_for(lambda: (gate / "waiting").exists(), "the first builder configuring", proc=first)
        second = builder()
        wait_for(lambda: second.poll() is not None or _waits_for_a_lock(second.pid),
                 "the second builder done, or waiting for the first")
        (gate / "go").touch()
        said = [p.communicate(timeout=120) for p in builders]
    finally:
        (gate / "go").touch()
        for p in builders:       # ours, by pid
            p.kill()
            p.wait()
    assert [p.returncode for p in builders] == [0, 0], [err[-2000:] for _, err in said]
    built = said[0][0].strip()
    assert said[1][0].strip() == built
    for sub in bench_osu.BUILT:
        with open(os.path.join(built, sub, "built-with")) as f:
            assert f.read().strip() == "-O2 -DFLOAT_PRECISION=3"
    with open(os.path.join(built, "configure.log")) as f:
        assert f.read().count("configured") == 1             # configured once, by the first


def test_decimals_reads_a_tables_first_figure():
    assert bench_osu.decimals("# Size  Avg Latency(us)\n1   0.123\n2   0.125\n") == {3}
    assert bench_osu.decimals("# OSU\n1                       0.12\n") == {2}
