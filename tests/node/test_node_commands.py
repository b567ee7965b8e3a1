"""Setup/teardown commands on nodes (protocol.RunCommands): in order, stopping at the first
failure, output kept, the node snapshotted before and after; through the local engine, the
agent server and a Dask worker whose clock is shifted (stamps come back in ours)."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time

import pytest

from cluster_lab import faketime_lib, node_env
from conftest import client_security, loopback_scheduler, stop
from manybench.engines.local import LocalEngine
from manybench.node import commands
from manybench.node.commands import run_commands
from manybench.node.protocol import (CommandOutput, CommandsDone, RunCommands, SnapshotTaken,
                                     TakeSnapshot)
from manybench.node.server import AgentServer


def test_commands_run_in_order_with_env_and_stop_at_the_first_failure(tmp_path):
    log = tmp_path / "log"
    req = RunCommands([["sh", "-c", f"echo one $MB_X >> {log}; echo warn >&2"],
                       ["sh", "-c", f"echo {{node}} >> {log}"],
                       ["sh", "-c", "echo about to fail; exit 3"],
                       ["sh", "-c", f"echo never >> {log}"]],
                      env={"MB_X": "x1"}, timeout=30)
    done = run_commands(req, "n7")
    assert [o.exit_status for o in done.outputs] == [0, 0, 3]     # the fourth never ran
    assert log.read_text() == "one x1\nn7\n"
    first, _, failed = done.outputs
    assert (first.stdout, first.stderr) == ("", "warn\n") and not first.timed_out
    assert failed.stdout == "about to fail\n"
    assert all(o.started_ns <= o.ended_ns for o in done.outputs)
    assert done.outputs[1].started_ns >= first.ended_ns
    assert done.before["taken_ns"] < first.started_ns and done.after["taken_ns"] > failed.ended_ns
    # not found: 127 and why, like a shell; nothing after it runs
    done = run_commands(RunCommands([["no-such-command-xyz", "a"], ["true"]]))
    [o] = done.outputs
    assert o.exit_status == 127 and "not found" in o.stderr and o.argv[0] == "no-such-command-xyz"


def test_a_timeout_kills_the_command_and_what_it_started(tmp_path):
    pidfile = tmp_path / "pid"
    # an hour's sleep: only the timeout ends it within the test's own time limit
    done = run_commands(RunCommands([["sh", "-c", f"sleep 3600 & echo $! > {pidfile}; wait"],
                                     ["true"]], timeout=0.5))
    [o] = done.outputs
    assert o.timed_out and o.exit_status < 0
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.05)
    else:
        assert not os.path.exists(f"/proc/{pid}"), "the background sleep outlived the timeout"


def test_only_the_tail_of_a_long_output_is_kept():
    n = commands.OUTPUT_TAIL * 2
    done = run_commands(RunCommands([["sh", "-c", f"head -c {n} /dev/zero | tr '\\0' x; "
                                      "echo; echo LAST"]]))
    out = done.outputs[0].stdout
    assert out.startswith("[...]") and out.endswith("LAST\n") and len(out) <= commands.OUTPUT_TAIL + 8


def test_the_snapshots_capture_what_the_commands_changed(tmp_path):
    """A setup that installs a tool: before it the node has none, after it has it."""
    bin_dir = tmp_path / "bin"
    tool = bin_dir / "mb-test-tool"
    req = RunCommands([["mkdir", "-p", str(bin_dir)],
                       ["sh", "-c", f"printf '#!/bin/sh\\n' > {tool}; chmod +x {tool}"]],
                      env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},
                      dirs={"scratch": str(tmp_path)}, programs=["mb-test-tool"])
    done = run_commands(req)      # programs looked up in the commands' PATH
    assert done.before["programs"]["mb-test-tool"] == {"found": False}
    assert done.after["programs"]["mb-test-tool"]["path"] == str(tool)
    assert done.after["dirs"]["scratch"]["exists"] and done.after["dirs"]["scratch"]["fstype"]


def test_messages_pickle():
    out = CommandOutput(["a"], 0, "o", "e", 1, 2)
    for m in (RunCommands([["a"]], {"X": "1"}, 2.0, ["/tmp"], ["a"]),
              CommandsDone([out], {"k": 1}, {"k": 2}), TakeSnapshot({"s": "/tmp"}, []),
              SnapshotTaken({"a": 1})):
        assert pickle.loads(pickle.dumps(m)) == m


def test_the_agent_server_runs_them_with_or_without_slots():
    server = AgentServer(conn=None)
    got = server.handle(TakeSnapshot(["/"], ["sh"]))
    assert isinstance(got, SnapshotTaken) and got.data["dirs"]["/"]["mount_point"] == "/"
    done = server.handle(RunCommands([["sh", "-c", "echo hi"]]))
    assert done.outputs[0].stdout == "hi\n"


def test_the_local_engine_runs_them_on_its_node(tmp_path):
    e = LocalEngine()
    e.start("cmd-test", 1, str(tmp_path), False)
    try:
        done = e.run_commands(RunCommands([["sh", "-c", "echo {node}"]], dirs=[str(tmp_path)]))
        snaps = e.snapshot([str(tmp_path)], ["sh"])
    finally:
        e.close()
    node = e.nodes[0].name
    assert list(done) == [node] == list(snaps)
    assert done[node].outputs[0].stdout == f"{node}\n"
    assert snaps[node]["programs"]["sh"]["found"]


SHIFT_S = 5.0


@pytest.fixture
def shifted_worker():
    """A Dask scheduler and one `manybench worker` whose clock runs SHIFT_S ahead."""
    if faketime_lib() is None:
        pytest.skip("libfaketime not installed (Debian package faketime)")
    addr, sched = loopback_scheduler()
    procs = [sched]
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "manybench", "worker", addr,
                                       "--name", "w1", "--slots", "1", "--host", "127.0.0.1"],
                                      env=node_env(SHIFT_S), stderr=subprocess.DEVNULL))
        yield addr
    finally:
        stop(procs)


@pytest.mark.e2e
def test_dask_carries_them_and_stamps_come_back_in_our_clock(shifted_worker, tmp_path):
    from distributed import Client
    from manybench.engines.dask import DaskEngine
    client = Client(shifted_worker, timeout="30s", security=client_security())
    engine = DaskEngine(client, default_slots=1, on_close=client.close, expected=1)
    engine.start("cmd-dask", 1, str(tmp_path), False)
    try:
        [node] = engine.nodes
        assert abs(node.offset_ns - SHIFT_S * 1e9) < 0.5e9      # the shift was measured
        t0 = time.time_ns()
        done = engine.run_commands(RunCommands([["sh", "-c", "echo {node} $MB_Y"],
                                                ["sh", "-c", "exit 4"], ["true"]],
                                               env={"MB_Y": "y"}, dirs=[str(tmp_path)],
                                               programs=["sh"]))
        snaps = engine.snapshot({"scratch": str(tmp_path)}, ["sh"])
        t1 = time.time_ns()
    finally:
        engine.close()
    d = done["w1"]
    assert [o.exit_status for o in d.outputs] == [0, 4]
    assert d.outputs[0].stdout == "w1 y\n"
    # the node stamped in its clock, 5 s ahead; converted, they fall inside our call
    for stamp in (d.outputs[0].started_ns, d.outputs[1].ended_ns, d.before["taken_ns"],
                  d.after["taken_ns"], snaps["w1"]["taken_ns"]):
        assert t0 - 0.5e9 < stamp < t1 + 0.5e9, (stamp - t0) / 1e9
    assert snaps["w1"]["dirs"]["scratch"]["exists"]
