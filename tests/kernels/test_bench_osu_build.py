"""benchmarks/bench_osu.py builds OSU in a directory of its own with FLOAT_PRECISION=3, from a
source tree configured in place or not, and never builds in the source tree. A stand-in tree
(a shell configure, Makefiles that record the CFLAGS they were configured with) plays OSU."""
from __future__ import annotations

import os
import shutil
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

CONFIGURE = """#!/bin/sh
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


def test_decimals_reads_a_tables_first_figure():
    assert bench_osu.decimals("# Size  Avg Latency(us)\n1   0.123\n2   0.125\n") == {3}
    assert bench_osu.decimals("# OSU\n1                       0.12\n") == {2}
