"""Issue 18 on Dask nodes (namespace nodes, tests/cluster_lab.py): objects planted in a
slot's scratch are phase errors naming them, never writes, plain and inside a wrap; an
interrupt at start-up or mid-run ends with exit 130 and the run `interrupted` (or no run)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from cluster_lab import DaskLab
from conftest import export_json, run_cli

pytestmark = pytest.mark.e2e    # a Dask cluster of namespace nodes

VICTIM = b"outside scratch: these bytes must stay\n" * 4


@pytest.fixture(scope="module")
def lab():
    with DaskLab(2, slots=1) as lab:
        yield lab


PLANTS = {
    "hard link": ('ln "$V/io.dat" "$S/io.dat"', "has 2 links"),
    "symbolic link": ('ln -s "$V/io.dat" "$S/io.dat"', "io.dat is a symbolic link"),
    "fifo": ('mkfifo "$S/io.dat"', "io.dat is a FIFO"),
    # bound from inside $S: a socket's path is limited to 107 bytes, and a slot's path
    # under pytest's tmp (longer on an xdist worker: popen-gwN/) can exceed it
    "socket": ('cd "$S" && python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\'io.dat\')"',
               "io.dat is a socket"),
    "directory symlink": ('mv "$S" "$S.moved" && ln -s "$V" "$S"', "is a symbolic link, not a "
                                                                    "directory"),
}


@pytest.mark.parametrize("wrap", [False, True], ids=["plain", "wrapped"])
@pytest.mark.parametrize("what", list(PLANTS))
def test_an_object_planted_in_a_nodes_scratch_is_a_phase_error(lab, tmp_path, what, wrap):
    (tmp_path / "scr").mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "io.dat").write_bytes(VICTIM)
    plant, words = PLANTS[what]
    script = (f'S="{tmp_path}/scr/{{run}}/{{node}}.{{slot}}"; V="{victim}"; mkdir -p "$S"; '
              + plant)
    plan = tmp_path / "p.toml"
    plan.write_text(f"""
name = "hostile"
scratch = "{tmp_path}/scr"
[placement]
workers = 1
[[task]]
name = "plant"
command = ["sh", "-c", {json.dumps(script)}]
[[task]]
name = "io"
kernel = "io.write"
size = "256KiB"
block = "64KiB"
fsync = "never"
timeout = "20s"
""" + ('[[variant]]\nname = "wrapped"\nwrap = ["env", "--"]\n' if wrap else ""))
    out = tmp_path / "out"
    res = run_cli("run", str(plan), "-o", str(out), "-q", "--scheduler", lab.scheduler,
                  timeout=300)
    assert res.returncode == 1, (res.returncode, res.stderr)
    rows = {r["task"]: r for r in export_json(str(out))}
    assert rows["plant"]["status"] == "ok", rows["plant"]
    assert rows["io"]["status"] == "error" and words in rows["io"]["error"], rows["io"]
    assert rows["io"]["node"] in ("n1", "n2")        # on a Dask node, not the coordinator
    assert (victim / "io.dat").read_bytes() == VICTIM
    assert sorted(os.listdir(victim)) == ["io.dat"]


def _rows(out: str) -> list[str]:
    db = os.path.join(out, "results.db")
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT status FROM runs")]
    except sqlite3.Error:
        return []
    finally:
        con.close()


@pytest.mark.parametrize("delay", [0.5, 1.2, 2.0])
def test_an_interrupt_at_start_up_on_dask_ends_with_130(lab, tmp_path, delay):
    plan = tmp_path / "p.toml"
    plan.write_text('repeat = 50\n[placement]\nworkers = 2\n[[task]]\nname = "nap"\n'
                    'command = ["sleep", "0.2"]\n')
    out = str(tmp_path / "out")
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", str(plan), "-o", out,
                             "-q", "--scheduler", lab.scheduler],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err and "Aborted!" not in err, err
    assert _rows(out) in ([], ["interrupted"]), _rows(out)
