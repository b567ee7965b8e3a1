"""Another local user of a node, for the tests of issue 28 (test_secure_cluster.py).

Started as root (in a node's network namespace, as that node's local user would be), it
imports what it needs, then becomes the given uid for good (setgroups, setgid, setuid: no
capability is left), so it holds a Python with Dask as such a user would, but none of
root's rights: it cannot read the cluster's credentials, nor any file of root's.

    intruder.py UID GID client-run ADDRESS       Client(ADDRESS).run(os.getuid) on every worker
    intruder.py UID GID rpc ADDRESS KIND         the worker's mb_call(KIND) with no TLS, no tag
    intruder.py UID GID flood HOST SECONDS       every listening TCP port of this namespace,
                                                 held silent, fed a byte a second, announced
                                                 a 1 GiB frame, and 50 connections at once,
                                                 again and again, until its stdin closes
Prints one JSON object: what happened.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import time

import distributed                     # noqa: F401  (imported while root: the user's own copy)
from distributed import Client
from distributed.core import rpc

from manybench.node.protocol import Abort, Info, RunCommands, encode

PLANS = {"Abort": Abort(), "Info": Info(), "RunCommands": RunCommands([["id"]], {}, 5.0, {}, [])}


def drop(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    assert os.getuid() == uid and os.geteuid() == uid


def client_run(address: str) -> dict:
    try:
        with Client(address, timeout="5s") as c:
            return {"ran": {w: r for w, r in c.run(os.getuid).items()}}
    except Exception as e:   # noqa: BLE001  (what refused us is the result)
        return {"refused": f"{type(e).__name__}: {e}"}


async def _rpc(address: str, kind: str) -> object:
    r = rpc(address, timeouts={"connect": 5})
    try:
        return await r.mb_call(kind=kind, request=encode(PLANS[kind]))
    finally:
        await r.close_rpc()


def call(address: str, kind: str) -> dict:
    import asyncio
    try:
        got = asyncio.run(asyncio.wait_for(_rpc(address, kind), 15))
        return {"answered": repr(got)[:300]}
    except Exception as e:   # noqa: BLE001
        return {"refused": f"{type(e).__name__}: {e}"}


def listening() -> set[int]:
    """The TCP ports listening in this network namespace (/proc/net/tcp: readable by all)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for line in f.readlines()[1:]:
                    parts = line.split()
                    if parts[3] == "0A":
                        ports.add(int(parts[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


def _hold(hosts: tuple[str, ...], port: int, mode: str, stop: threading.Event,
          counts: dict) -> None:
    """One connection at a time to port, again whenever the other end closes it."""
    while not stop.is_set():
        s = None
        for host in hosts:
            try:
                s = socket.create_connection((host, port), timeout=2)
                break
            except OSError:
                pass
        if s is None:
            stop.wait(0.5)
            continue
        counts[mode] = counts.get(mode, 0) + 1
        try:
            s.settimeout(1.0)
            if mode == "frame":
                s.sendall(struct.pack("!I", (1 << 30) - 1) + b"\x00")
            while not stop.is_set():
                if mode in ("slow", "frame"):
                    s.send(b"\x01")
                try:
                    if s.recv(4096) == b"":
                        break          # closed on us: go again
                except socket.timeout:
                    pass
        except OSError:
            pass
        finally:
            s.close()
        stop.wait(0.5)     # then again: a patient intruder, not one burning the node's cpus


def flood(host: str, seconds: float) -> dict:
    stop = threading.Event()
    told = threading.Event()        # stdin closed: the test is done with us

    def watch() -> None:
        sys.stdin.read()
        told.set()
    threading.Thread(target=watch, daemon=True).start()
    counts: dict = {}
    attacked: set[int] = set()
    threads = []
    end = time.monotonic() + seconds
    while time.monotonic() < end and not told.is_set():
        for port in listening() - attacked:
            attacked.add(port)
            for mode in ("silent", "slow", "frame", *["many"] * 50):
                t = threading.Thread(target=_hold, args=((host, "127.0.0.1"), port, mode, stop,
                                                         counts), daemon=True)
                t.start()
                threads.append(t)
        time.sleep(0.2)
    stop.set()
    return {"ports": sorted(attacked), "connections": counts}


def main() -> None:
    uid, gid, what, *args = sys.argv[1:]
    drop(int(uid), int(gid))
    if what == "client-run":
        out = client_run(args[0])
    elif what == "rpc":
        out = call(args[0], args[1])
    else:
        out = flood(args[0], float(args[1]))
    print(json.dumps(out), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
