"""A provenance snapshot, taken on a node: what environment.collect() has (CPU, memory, kernel,
tunables: THP, cpufreq, tuned, sysctls), plus, for each directory a plan touches, the file
system it is on (mount point, type, options, source device, the block device's I/O
scheduler), and for each program it runs, the file that runs and its version.

Taken at the start of a run and around each variant's setup and teardown (node/commands.py),
so a tuned profile, a mount or a THP setting that a setup changes is on record, before and
after. Fast (tens of ms, the first owner lookup a few hundred) and never raises: whatever
cannot be found is left out.

Versions: the owning package's version (dpkg-query, or rpm; nothing executed); and, only for
VERSION_ARGS's well-known tools, the first line of their own version output. Unknown
programs are never run: running a binary to ask its version may run the benchmark itself
(IOR and mdtest have no version flag; xhpl reads HPL.dat and starts), so those get only
the package's version.
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from typing import Any

from ..config import timing
from .environment import PROBE_ERRORS, _read, collect
from .tunables import selected

# tool -> the arguments that make it print its version and exit (no other work). Looked up
# by the program's name as called, then by its symlink target's (mpirun -> orterun).
VERSION_ARGS: dict[str, list[str]] = {
    name: ["--version"] for name in (
        "fio", "ch-run", "ch-image", "apptainer", "singularity", "podman", "docker", "mpirun",
        "mpiexec", "orterun", "srun", "bowtie2", "bowtie2-align-s", "samtools", "iperf3",
        "qperf", "lfs", "dd", "taskset", "tuned-adm", "python3", "python", "stress-ng",
        "sysbench", "hwloc-bind", "lstopo")
}
VERSION_ARGS["bwa"] = []   # bwa has no version flag: with no arguments it prints its usage,
                           # "Version: 0.7.17-r1188" among it, and exits

_versions: dict[tuple, str | None] = {}     # (path, mtime, size) -> version line
_packages: dict[tuple, dict] = {}           # (path, realpath, package db mtime) -> facts


def _mountinfo() -> list[dict]:
    """/proc/self/mountinfo as dicts, in mount order (a later mount hides an earlier one on
    the same mount point)."""
    out = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        # id parent major:minor root mount_point options [optional...] - fstype source super
        left, sep, right = line.partition(" - ")
        a, b = left.split(), right.split()
        if not sep or len(a) < 6 or len(b) < 2:
            continue
        out.append({"mount_point": _unescape(a[4]), "device": a[2], "root": _unescape(a[3]),
                    "options": a[5], "fstype": b[0], "source": _unescape(b[1]),
                    "super_options": b[2] if len(b) > 2 else ""})
    return out


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes (\040 ...)
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _under(path: str, mount_point: str) -> bool:
    return mount_point == "/" or path == mount_point or path.startswith(mount_point + "/")


def _block(device: str) -> dict:
    """The block device's queue settings (scheduler, read-ahead, rotational) for major:minor;
    a partition's queue is its disk's. Empty for file systems without one (tmpfs, NFS)."""
    try:
        real = os.path.realpath(f"/sys/dev/block/{device}")
    except OSError:
        return {}
    for base in (real, os.path.dirname(real)):
        queue = os.path.join(base, "queue")
        if os.path.isdir(queue):
            out: dict = {"name": os.path.basename(real)}
            for name in ("scheduler", "read_ahead_kb", "rotational", "nr_requests"):
                v = _read(os.path.join(queue, name))
                if v is not None:
                    out[name] = selected(v) or v     # "mq-deadline [none]" -> "none"
            return out
    return {}


def directory(path: str, mounts: list[dict] | None = None) -> dict:
    """Where `path` lives: its real path, whether it exists, and the mount holding it (the
    longest mount point that is a prefix of the real path): mount_point, fstype, source,
    options (per mount), super_options (the file system's: NFS's proto, Lustre's flock...),
    device (major:minor) and block (its queue settings, when it has one)."""
    real = os.path.realpath(path)   # a missing tail is kept as given: its parent's mount
    out: dict[str, Any] = {"path": real, "exists": os.path.exists(real)}
    best = None
    for m in mounts if mounts is not None else _mountinfo():
        if _under(real, m["mount_point"]) and (
                best is None or len(m["mount_point"]) >= len(best["mount_point"])):
            best = m
    if best is not None:
        out.update({k: best[k] for k in ("mount_point", "fstype", "source", "options",
                                         "super_options", "device")})
        block = _block(best["device"])
        if block:
            out["block"] = block
    return out


# -- programs ---------------------------------------------------------------------------------
def _package_db_mtime() -> float:
    for db in ("/var/lib/dpkg/status", "/var/lib/rpm/rpmdb.sqlite", "/var/lib/rpm/Packages"):
        try:
            return os.stat(db).st_mtime
        except OSError:
            continue
    return 0.0


def _candidates(path: str, real: str) -> list[str]:
    # a package owns a file by the path it installed, which may be the symlink
    # (/usr/bin/mpirun), its target, or the other side of a merged /usr (/bin/fio)
    return list(dict.fromkeys(p for p in (real, path, _usr_flip(real), _usr_flip(path)) if p))


def _usr_flip(path: str) -> str | None:
    if path.startswith("/usr/"):
        return path[4:]
    if path.startswith(("/bin/", "/sbin/", "/lib")):
        return "/usr" + path
    return None


def _dpkg_owners(paths: list[str]) -> dict[str, dict]:
    """{path: {package, package_version}} for the paths some Debian package owns. Two
    dpkg-query calls for all of them (the first reads every file list: ~0.3 s); nothing of
    the programs is executed."""
    if not paths or not shutil.which("dpkg-query"):
        return {}
    got = _capture(["dpkg-query", "-S", *paths], 10.0)   # exit 1 when some are unowned
    owner: dict[str, str] = {}
    for line in (got[1] if got else "").splitlines():
        names, sep, path = line.partition(": /")
        if sep and not names.startswith("diversion"):
            owner["/" + path.strip()] = names.split(",")[0].strip()
    pkgs = sorted(set(owner.values()))
    versions: dict[str, str] = {}
    if pkgs:
        got = _capture(["dpkg-query", "-W", "-f", "${binary:Package}\t${Version}\n", *pkgs],
                       10.0)
        for line in (got[1] if got else "").splitlines():
            name, _, ver = line.partition("\t")
            versions[name] = versions[name.split(":")[0]] = ver.strip()
    return {p: {"package": pkg, **({"package_version": versions[pkg]} if versions.get(pkg)
                                   else {})} for p, pkg in owner.items()}


def _rpm_owner(path: str) -> dict:
    if not shutil.which("rpm"):
        return {}
    got = _capture(["rpm", "-qf", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}\n", path], 10.0)
    if got is None or got[0] != 0 or not got[1].strip():
        return {}
    name, _, ver = got[1].splitlines()[0].partition("\t")
    return {"package": name, "package_version": ver}


def _packages_of(found: list[tuple[str, str]]) -> dict[tuple[str, str], dict]:
    """{(path, realpath): {package, package_version} or {}} for resolved programs, cached
    until the package database changes."""
    db = _package_db_mtime()
    todo = [pr for pr in found if (*pr, db) not in _packages]
    if todo:
        owners = _dpkg_owners(list(dict.fromkeys(c for pr in todo for c in _candidates(*pr))))
        for path, real in todo:
            hit = next((owners[c] for c in _candidates(path, real) if c in owners), None)
            _packages[(path, real, db)] = hit if hit is not None else _rpm_owner(real)
    return {pr: _packages[(*pr, db)] for pr in found}


def _version(path: str, name: str, env: dict[str, str]) -> str | None:
    """The first line the tool prints for its version, for VERSION_ARGS's tools only. Run by
    the path it was found at: mpirun says "Open MPI" where its target orterun says less."""
    args = VERSION_ARGS.get(name)
    if args is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)    # a reinstalled tool is asked again
    if key not in _versions:
        env = {"USER": _user(), **env}     # ch-run refuses to start without USER
        got = _capture([path, *args], timing("inventory.version_timeout"), env)
        line = None
        if got is not None:
            lines = [l.strip() for l in (got[1] + "\n" + got[2]).splitlines() if l.strip()]
            if name == "bwa":
                lines = [l for l in lines if l.startswith("Version:")]
            line = lines[0][:200] if lines else None
        _versions[key] = line
    return _versions[key]


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _resolve(argv0: str, search: str | None) -> tuple[str, str] | None:
    path = shutil.which(argv0, path=search)
    if path is None:
        return None
    path = os.path.abspath(path)
    return path, os.path.realpath(path)


def resolve_programs(argv0s: list[str], versions: bool = True,
                     env: dict[str, str] | None = None) -> dict[str, dict]:
    """Each command's argv[0] as this node resolves it in env's PATH (default this process's):
    found, path, realpath (when symlinks or alternatives lead elsewhere), package and
    package_version, version (VERSION_ARGS tools, when `versions`); {"found": False} when it
    is not here."""
    env = dict(os.environ if env is None else env)
    resolved = {a: _safe(lambda a=a: _resolve(a, env.get("PATH", os.defpath)))
                for a in dict.fromkeys(argv0s) if isinstance(a, str) and a}
    pkgs = _safe(lambda: _packages_of([r for r in resolved.values() if r])) or {}
    out: dict[str, dict] = {}
    for argv0, r in resolved.items():
        if r is None:
            out[argv0] = {"found": False}
            continue
        path, real = r
        d: dict[str, Any] = {"found": True, "path": path}
        if real != path:
            d["realpath"] = real
        d.update(pkgs.get(r) or {})
        # ask by the name it was called (mpirun, not orterun), else by its target's
        v = versions and _safe(lambda: _version(path, os.path.basename(path), env)
                               or _version(path, os.path.basename(real), env))
        if v:
            d["version"] = v
        out[argv0] = d
    return out


def _capture(argv: list[str], timeout: float, env: dict | None = None
             ) -> tuple[int, str, str] | None:
    """(exit status, stdout, stderr) of a short query; None when it could not run or timed out
    (its whole process group is killed then: our own child's)."""
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, start_new_session=True)
    except OSError:
        return None
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        # not read to the end: something that left the group may still hold the pipes
        p.stdout.close()
        p.stderr.close()
        return None
    return (p.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


# -- the snapshot ------------------------------------------------------------------------------
def snapshot(dirs: list[str] | dict[str, str], programs: list[str], versions: bool = True,
             env: dict[str, str] | None = None) -> dict:
    """This node now: environment.collect()'s keys, taken_ns (this node's clock), dirs
    ({dir as given: directory()}, or {name: directory(path)} when dirs maps names to paths:
    stable keys for a diff when a path holds a run's own name) and programs
    (resolve_programs(): {argv[0]: facts}, looked up in env's PATH, default this process's).
    versions=False leaves the tools unasked (package versions are still looked up). A probe
    this machine does not allow is left out; only a bug of ours raises."""
    out = collect()
    out["taken_ns"] = time.time_ns()
    mounts = _safe(_mountinfo) or []
    named = dirs if isinstance(dirs, dict) else {d: d for d in dirs or ()}
    out["dirs"] = {str(k): _safe(lambda p=p: directory(p, mounts)) or {}
                   for k, p in named.items() if isinstance(p, str) and p}
    out["programs"] = _safe(lambda: resolve_programs(list(programs or ()), versions, env)) or {}
    return out


def _safe(fn: Any) -> Any:
    """fn(), or None when this machine does not let it read what it reads."""
    try:
        return fn()
    except PROBE_ERRORS:
        return None
