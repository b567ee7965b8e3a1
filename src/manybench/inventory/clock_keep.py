"""A node's stable clock: the highest of the busy-core clocks measured since the machine booted.

Where nothing rates the cpu's clock (a VM has no cpufreq), peaks are reckoned at a clock
measured on one busy core (kernels/native/probe.c). One measurement moves with the machine's
load (4.1-4.5 GHz on an idle 2-cpu VM, 3.2 GHz with its host busy), and every efficiency set
against it would move too; the clock the core can run at does not. So each measurement is
kept, per boot, in a small file of the user's own (<cache>/clock/<boot id>.json, cachedir.py)
and peaks take the highest so far. Keyed by the boot id: a reboot may bring another cpu or
firmware (a migrated VM), and machines sharing a home directory never share a file.

Written safely: the directory must be the user's and no one else's to write (created 0700;
owned, not group- or world-writable, not a link), every file in it is reached by descriptor
without following links, and a new value replaces the file whole (a file made exclusively,
synced, renamed over it) under a lock, so the agents of one machine (namespaced or simulated
nodes) keep the highest of all theirs. When any of that fails the measurement stands alone,
and its source says so and why.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from typing import Iterator

from ..config import timing
from .. import cachedir

BOOT_ID = "/proc/sys/kernel/random/boot_id"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MAX_BYTES = 4096             # the file is ~100 bytes; more is not ours
PLAUSIBLE_GHZ = (0.05, 20.0)
_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC


class NotKept(Exception):
    """Why a measurement could not be kept (one line)."""


@dataclass(frozen=True)
class Kept:
    ghz: float             # the clock to use: the highest kept this boot, this one included
    count: int             # how many measurements it is the highest of
    path: str | None       # the file it is kept in; None when it could not be kept
    why_not: str = ""

    def source(self, measured: str) -> str:
        """How the clock was obtained, after `measured` (what one measurement is)."""
        if self.path is None:
            return f"{measured}, one measurement (not kept: {self.why_not})"
        if self.count == 1:
            return f"{measured}, the first since boot"
        return f"{measured}, the highest of {self.count} since boot"


def boot_id() -> str | None:
    try:
        with open(BOOT_ID, encoding="ascii") as f:
            text = f.read().strip()
    except (OSError, ValueError):
        return None
    return text if _UUID.match(text) else None


def keep(ghz: float, directory: str | None = None, boot: str | None = None,
         again: bool = False) -> Kept:
    """Add one measurement (GHz) to this boot's and return the highest kept so far. again:
    this measurement was added before; the file is only read (no lock: it is replaced whole),
    and added to again if it is gone or damaged."""
    boot = boot or boot_id()
    if boot is None or not _UUID.match(boot):
        return Kept(ghz, 1, None, "no boot id")
    if not (math.isfinite(ghz) and PLAUSIBLE_GHZ[0] <= ghz <= PLAUSIBLE_GHZ[1]):
        return Kept(ghz, 1, None, f"{ghz} GHz is not a clock")
    where = directory or os.path.join(cachedir.base(), "clock")
    name = boot + ".json"
    try:
        dfd = _own_dir(where)
    except NotKept as e:
        return Kept(ghz, 1, None, str(e))
    except OSError as e:
        return Kept(ghz, 1, None, f"{where}: {e.strerror or e}")
    if again and (old := _read(dfd, name)) is not None:
        os.close(dfd)
        return Kept(max(old[0], ghz), old[1], os.path.join(where, name))
    try:
        with _locked(dfd):
            old = _read(dfd, name)
            best, count = (max(old[0], ghz), old[1] + 1) if old else (ghz, 1)
            _write(dfd, name, {"boot_id": boot, "ghz": best, "measurements": count,
                               "updated": round(time.time())})
        _prune(dfd, name)
    except NotKept as e:
        return Kept(ghz, 1, None, str(e))
    except OSError as e:
        return Kept(ghz, 1, None, f"{os.path.join(where, name)}: {e.strerror or e}")
    finally:
        os.close(dfd)
    return Kept(best, count, os.path.join(where, name))


def _own_dir(where: str) -> int:
    """A descriptor of the directory, made if missing; refused unless it is ours alone."""
    os.makedirs(where, mode=0o700, exist_ok=True)
    fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | _OPEN)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise NotKept(f"{where} is not this user's alone (owner uid {st.st_uid}, mode "
                      f"{stat.S_IMODE(st.st_mode):o})")
    return fd


@contextlib.contextmanager
def _locked(dfd: int) -> Iterator[None]:
    fd = os.open("lock", os.O_RDWR | os.O_CREAT | _OPEN, 0o600, dir_fd=dfd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotKept("its lock is not a regular file")
        # others hold the lock for a read and a rename: microseconds
        deadline = time.monotonic() + timing("inventory.clock_lock_wait")
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    held = timing("inventory.clock_lock_wait")
                    raise NotKept(f"its lock was held over {held:g} s") from None
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)        # releases the lock


def _read(dfd: int, name: str) -> tuple[float, int] | None:
    """(GHz, measurements) kept for this boot; None when there is no such file or it is not
    one of ours (a link, another owner's, damaged): it is then replaced."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _OPEN, dir_fd=dfd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        raw = os.read(fd, MAX_BYTES + 1)
        data = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict):
        return None
    ghz, n = data.get("ghz"), data.get("measurements")
    if not (isinstance(ghz, (int, float)) and not isinstance(ghz, bool)
            and math.isfinite(ghz) and PLAUSIBLE_GHZ[0] <= ghz <= PLAUSIBLE_GHZ[1]
            and isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        return None
    return float(ghz), n


def _write(dfd: int, name: str, data: dict) -> None:
    """The file replaced whole: written under a fresh name, synced, renamed over it."""
    tmp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN, 0o600, dir_fd=dfd)
    try:
        try:
            os.write(fd, json.dumps(data).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _prune(dfd: int, current: str) -> None:
    """Remove other boots' files unchanged for inventory.clock_stale (a month): one file a
    boot remains."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(dfd) as entries:
        for e in entries:
            if e.name == current or not _UUID.match(e.name.removesuffix(".json")) \
                    or not e.name.endswith(".json"):
                continue
            with contextlib.suppress(OSError):
                if now - e.stat(follow_symlinks=False).st_mtime > timing("inventory.clock_stale"):
                    os.unlink(e.name, dir_fd=dfd)
