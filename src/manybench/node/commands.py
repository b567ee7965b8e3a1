"""A variant's setup or teardown commands, run on the node by its agent (protocol.RunCommands).

One after the other, as argument lists (no shell unless a command is ["sh", "-c", ...]), each
in a session of its own so a timeout kills it and everything it started; the first that fails
(non-zero exit, timeout, not found) stops the rest, since later steps of a setup assume the
earlier ones worked. Output goes to temporary files, not pipes: a chatty command (a package
install, a mount helper) can neither fill memory nor block on a full pipe, and only the tails
are kept. The node is snapshotted before and after (inventory/provenance.py), so what the
commands changed (a tuned profile, a mount, THP) is on record.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time

from ..inventory.provenance import snapshot
from .protocol import CommandOutput, CommandsDone, RunCommands

OUTPUT_TAIL = 16 * 1024     # bytes of stdout and of stderr kept per command


def run_commands(req: RunCommands, node: str = "") -> CommandsDone:
    """Snapshot, run req.commands in order until one fails, snapshot again. Never raises for
    a command's failure: its CommandOutput says what happened."""
    # programs are resolved as the variant's commands will find them: in its env's PATH
    env = {**os.environ, **{str(k): str(v) for k, v in req.env.items()}}
    before = snapshot(req.dirs, req.programs, env=env)
    outputs = []
    for argv in req.commands:
        argv = [str(a).replace("{node}", node) if node else str(a) for a in argv]
        out = run_one(argv, env, req.timeout)
        outputs.append(out)
        if out.exit_status != 0 or out.timed_out:
            break
    return CommandsDone(outputs, before, snapshot(req.dirs, req.programs, env=env))


def run_one(argv: list[str], env: dict[str, str], timeout: float | None) -> CommandOutput:
    """One command to its end (or its timeout), with the tails of its output."""
    started = time.time_ns()
    if not argv:
        return _not_run(argv, 127, "an empty command", started)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 env=env, start_new_session=True)
        except FileNotFoundError:
            return _not_run(argv, 127, f"{argv[0]}: command not found", started)
        except (PermissionError, IsADirectoryError) as e:      # as a shell says it: 126
            return _not_run(argv, 126, f"{argv[0]}: {e.strerror or e}", started)
        except (OSError, ValueError) as e:                     # not an executable, a NUL
            return _not_run(argv, 127, f"{argv[0]}: {e}", started)
        timed_out = False
        try:
            status = p.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(p.pid)
            status = p.wait()
        except BaseException:   # Ctrl-C, the agent told to stop: its own session would
            _kill_group(p.pid)  # not get the signal, so it goes with us
            p.wait()
            raise
        ended = time.time_ns()
        return CommandOutput(argv, status, _tail(out), _tail(err), started, ended, timed_out)


def _kill_group(pgid: int) -> None:
    """Kill the session a timed-out command was started in (our own child's, by its id), so
    what it started dies with it. A command that ends normally keeps what it left running:
    a setup may start a server on purpose."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _not_run(argv: list[str], status: int, why: str, started: int) -> CommandOutput:
    return CommandOutput(list(argv), status, "", why, started, time.time_ns())


def _tail(f) -> str:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - OUTPUT_TAIL))
    data = f.read()
    if size > OUTPUT_TAIL:
        # cut at a line start where possible, and say that the head was left out
        nl = data.find(b"\n")
        data = b"[...]\n" + (data[nl + 1:] if 0 <= nl < 512 else data)
    return data.decode("utf-8", errors="replace")
