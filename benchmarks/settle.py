"""Between two I/O runs: sync, then wait until the device is idle again, so that no side pays
for the write-back of the side before it.

Run back to back on a `discard`-mounted virtio disk, the order of the sides swung I/O pairs
0.2-4.7x (issue 32, item 2): the write-back and discards of the run before were still going.
Idle: the page cache's write-back (/proc/meminfo Writeback) at 0, the dirty pages (Dirty, the
whole machine's) at or under `dirty_limit`, and no request in flight on the device that holds
the directory (/sys/block/DEV/stat, its in-flight count: reads, writes and discards), all
three for `quiet` seconds in a row; then `after` seconds more for what the guest cannot see:
a virtio disk's host writes back what the guest wrote (and punches what it discarded) after
the guest's requests completed, and the next side paid for it (issue 32: a sync and 6 s of
settling gave 0.994). Dirty and Writeback are the machine's, the in-flight count the
device's: on a shared machine other writers hold them up, so the wait ends at `timeout` and
says it did.

    line = settle(directory)       # "settled in 1.4 s (Dirty 12 MiB, Writeback 0, ...)"
"""
from __future__ import annotations

import os
import time

import work

MIB = 2**20
AFTER = 6.0                # s: the host's write-back, unseen by the guest (module doc)
DIRTY_LIMIT = 64 * MIB     # under dirty_background_bytes' usual range: no write-back due


def disk_of(path: str) -> str | None:
    """/sys/class/block/<disk> for the whole disk holding `path` (a partition's disk: the
    in-flight count is the queue's), or None (no block device: tmpfs, NFS)."""
    name = work.device_of(path)
    if name is None:
        return None
    real = os.path.realpath(f"/sys/class/block/{name}")
    disk = os.path.dirname(real) if os.path.exists(os.path.join(real, "partition")) else real
    return disk if os.path.exists(os.path.join(disk, "stat")) else None


def meminfo() -> tuple[int, int]:
    """(Dirty, Writeback) in bytes."""
    got = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Dirty", "Writeback"):
                got[key] = int(rest.split()[0]) * 1024
    return got.get("Dirty", 0), got.get("Writeback", 0)


def in_flight(disk: str | None) -> int:
    """Requests in flight on the disk (its stat's ninth field), 0 without one."""
    if disk is None:
        return 0
    with open(os.path.join(disk, "stat")) as f:
        return int(f.read().split()[8])


def settle(path: str, quiet: float = 1.0, dirty_limit: int = DIRTY_LIMIT,
           timeout: float = 60.0, poll: float = 0.02, after: float = AFTER) -> str:
    """sync, then wait until the machine's write-back and the device holding `path` have been
    idle for `quiet` seconds in a row (at most `timeout`), then `after` seconds more; a line
    saying how it went."""
    disk = disk_of(path)
    t0 = time.monotonic()
    os.sync()
    since = None
    while True:
        now = time.monotonic()
        dirty, wb = meminfo()
        busy = in_flight(disk)
        if wb == 0 and busy == 0 and dirty <= dirty_limit:
            since = since if since is not None else now
            if now - since >= quiet:
                time.sleep(after)
                return (f"settled in {now - t0:.1f} s (sync, then {quiet:g} s idle: Dirty "
                        f"{dirty / MIB:.0f} MiB, Writeback 0, in flight 0"
                        f"{' on ' + os.path.basename(disk) if disk else ''}) + {after:g} s "
                        "for the host")
        else:
            since = None
        if now - t0 >= timeout:
            return (f"NOT settled after {timeout:g} s: Dirty {dirty / MIB:.0f} MiB, Writeback "
                    f"{wb / MIB:.1f} MiB, {busy} in flight (other writers on this machine)")
        time.sleep(poll)
