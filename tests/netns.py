"""Multi-host test labs on one machine: Linux network namespaces behind a bridge.

Plain helper module for the tests (``from netns import Lab, require_netns``).

A :class:`Lab` creates N network namespaces ``mb<pid>n<i>``, each with ``lo`` up and one veth
pair whose root-side end is a port of a Linux bridge ``mb<pid>br`` in the ROOT namespace.
Addresses come from ``10.231.<k>.0/24`` (k derived from our pid, and moved on if any route or
address on the machine overlaps): the bridge gets ``.1``, namespace i gets ``.(10+i)`` on its
``eth0``.  The root namespace (the test process, a coordinator) reaches every namespace
directly on-link through the bridge and namespaces reach each other by plain L2 bridging, so
no sysctl (ip_forward, ...) is touched.

Only addresses we create are ever used: ``10.231.k.0/24`` of the lab and loopback.

Cleanup (``close()``, also on ``__exit__`` and at interpreter exit) stops only processes this
lab started: the ones it launched (by pid, and by process group when it created the session),
their descendants, and any process living inside one of the lab's own namespaces; then deletes
the namespaces, the veths, the bridge and any bridge-scoped firewall rule it added.

Requirements: root, iproute2 (``ip``), a kernel with netns/veth/bridge; sshd (openssh-server)
and ssh/ssh-keygen (openssh-client) for :meth:`Lab.start_sshd`.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from fastpass import require_e2e

__all__ = ["Lab", "SshHost", "NetnsUnavailable", "netns_available", "require_netns",
           "require_sshd"]

IP = shutil.which("ip") or "/usr/sbin/ip"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
SUBNET_BASE = (10, 231)          # labs use 10.231.<k>.0/24
HOST_OFFSET = 10                 # namespace i gets .(10 + i)
MAX_HOSTS = 254 - HOST_OFFSET
_LOCK_DIR = "/run/lock" if os.path.isdir("/run/lock") else tempfile.gettempdir()
_LOCK_FILE = os.path.join(_LOCK_DIR, "manybench-netns.lock")

_live_tags: set[str] = set()     # tags of labs open in this process
_live_lock = threading.Lock()


class NetnsUnavailable(RuntimeError):
    """Network namespaces can't be used here (not root, no `ip`, `ip netns add` refused...)."""


# --------------------------------------------------------------------------- small helpers

def _run(argv: list[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({out.returncode}): "
                           f"{(out.stderr or out.stdout).strip()}")
    return out


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return _run([IP, *args], check=check)


def _link_exists(name: str, netns: str | None = None) -> bool:
    argv = [IP] + (["-n", netns] if netns else []) + ["link", "show", "dev", name]
    return subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL).returncode == 0


def _netns_names() -> set[str]:
    out = _ip("-j", "netns", "list", check=False)
    try:
        return {e["name"] for e in json.loads(out.stdout or "[]")}
    except (ValueError, KeyError, TypeError):
        return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


_netns_cache: tuple[bool, str] | None = None


def netns_available() -> tuple[bool, str]:
    """(ok, reason): whether this process may create network namespaces (probed once)."""
    global _netns_cache
    if _netns_cache is not None:
        return _netns_cache
    if sys.platform != "linux":
        res = (False, f"network namespaces need Linux (this is {sys.platform})")
    elif os.geteuid() != 0:
        res = (False, f"network namespaces need root (euid is {os.geteuid()})")
    elif not os.path.exists(IP):
        res = (False, "iproute2's `ip` is not installed")
    else:
        probe = f"mbprobe{os.getpid()}"[:15]
        out = subprocess.run([IP, "netns", "add", probe], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            res = (False, f"`ip netns add` refused: {out.stderr.strip() or out.returncode}")
        else:
            subprocess.run([IP, "netns", "del", probe], capture_output=True,
                           stdin=subprocess.DEVNULL)
            res = (True, "")
    _netns_cache = res
    return res


def require_netns() -> None:
    """pytest.skip (with the reason) unless network namespaces can be created here."""
    ok, reason = netns_available()
    if not ok:
        import pytest
        pytest.skip(reason)


def require_sshd() -> None:
    """require_netns(), and pytest.skip unless OpenSSH's sshd, ssh and ssh-keygen are there."""
    require_netns()
    missing = [t for t in (SSHD, "ssh", "ssh-keygen")
               if not (os.path.exists(t) if os.path.isabs(t) else shutil.which(t))]
    if missing:
        import pytest
        pytest.skip(f"OpenSSH missing ({', '.join(missing)}): apt-get install openssh-server "
                    "openssh-client")


def _proc_stat(pid: int) -> tuple[int, int, int, str, int] | None:
    """(ppid, pgid, sid, state, starttime) of pid, or None if it's gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        return None
    rest = data[data.rfind(")") + 2:].split()
    try:
        return int(rest[1]), int(rest[2]), int(rest[3]), rest[0], int(rest[19])
    except (IndexError, ValueError):
        return None


def _all_pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _netns_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _alive(pid: int, starttime: int) -> bool:
    st = _proc_stat(pid)
    return st is not None and st[4] == starttime and st[3] not in ("Z", "X")


# --------------------------------------------------------------------------- ssh

@dataclass
class SshHost:
    """An OpenSSH server that a Lab started inside one of its namespaces."""
    index: int                  # namespace index in the lab
    host: str                   # lab.ip(index)
    port: int
    user: str
    client_key: str             # private ed25519 key whose .pub is the only authorized key
    known_hosts: str            # "host key-type key" line for this server
    ssh_config: str             # ssh -F file: Host <host> with the key, known_hosts, user
    sshd_config: str
    pid_file: str
    log_file: str
    proc: subprocess.Popen
    startup_seconds: float      # from launching sshd to its port accepting connections
    connect_options: dict = field(default_factory=dict)

    def ssh_argv(self, *command: str) -> list[str]:
        """argv for the OpenSSH client running `command` on this host (BatchMode, no prompts)."""
        return ["ssh", "-F", self.ssh_config, "-p", str(self.port),
                f"{self.user}@{self.host}", *command]

    def run(self, *command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(self.ssh_argv(*command), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)


# --------------------------------------------------------------------------- the lab

@dataclass
class _Started:
    proc: subprocess.Popen
    starttime: int
    own_session: bool
    ns: int
    argv: list[str]


class Lab:
    """N network namespaces on a private bridge; see the module docstring.

    >>> with Lab(3) as lab:
    ...     p = lab.popen(0, [sys.executable, "-m", "http.server", "8000", "--bind", lab.ip(0)])
    ...     lab.wait_port(0, 8000)
    """

    def __init__(self, n: int = 2, *, term_timeout: float = 5.0):
        require_e2e("starts network-namespace nodes")
        if not 1 <= n <= MAX_HOSTS:
            raise ValueError(f"a lab has 1..{MAX_HOSTS} namespaces, not {n}")
        ok, reason = netns_available()
        if not ok:
            raise NetnsUnavailable(reason)
        self.n = n
        self.term_timeout = term_timeout
        self.pid = os.getpid()
        self._started: list[_Started] = []
        self._tmpdirs: list[str] = []
        self._fw_rules: list[list[str]] = []
        self._ns_ids: dict[str, tuple[int, int]] = {}
        self._closed = False
        self._created_ns: list[str] = []
        self._created_links: list[str] = []
        self.ssh_hosts: dict[int, SshHost] = {}
        self.close_errors: list[str] = []
        self.tag = self._claim_tag()
        self.names = [f"{self.tag}n{i}" for i in range(n)]
        self.bridge = f"{self.tag}br"
        self.veths = [f"{self.tag}v{i}" for i in range(n)]
        atexit.register(self.close)
        try:
            self._create()
        except BaseException:
            self.close()
            raise

    # ---- naming / addressing
    def _claim_tag(self) -> str:
        """`mb<pid>`, or `mb<pid>a`, `mb<pid>b`... for further labs open at once in this process."""
        with _live_lock:
            for suffix in [""] + [chr(c) for c in range(ord("a"), ord("z") + 1)]:
                tag = f"mb{self.pid}{suffix}"
                if tag not in _live_tags:
                    _live_tags.add(tag)
                    return tag
        raise RuntimeError("too many labs open at once in this process")

    @staticmethod
    def _used_networks() -> list[ipaddress.IPv4Network]:
        nets = []
        out = _ip("-j", "-4", "route", "show", "table", "all", check=False)
        for r in json.loads(out.stdout or "[]"):
            dst = r.get("dst", "")
            if dst and dst != "default":
                with contextlib.suppress(ValueError):
                    nets.append(ipaddress.ip_network(dst, strict=False))
        out = _ip("-j", "-4", "addr", "show", check=False)
        for link in json.loads(out.stdout or "[]"):
            for a in link.get("addr_info", []):
                with contextlib.suppress(ValueError, KeyError):
                    nets.append(ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}",
                                                     strict=False))
        return nets

    def _pick_subnet(self) -> int:
        used = self._used_networks()
        for j in range(256):
            k = (self.pid + j) % 256
            net = ipaddress.ip_network(f"{SUBNET_BASE[0]}.{SUBNET_BASE[1]}.{k}.0/24")
            if not any(net.overlaps(u) for u in used):
                return k
        raise NetnsUnavailable("every 10.231.k.0/24 overlaps an existing route or address")

    def ip(self, i: int) -> str:
        if not 0 <= i < self.n:
            raise IndexError(f"lab has namespaces 0..{self.n - 1}, not {i}")
        return f"{self.subnet_prefix}.{HOST_OFFSET + i}"

    # ---- setup
    def _create(self) -> None:
        # stale objects named with our pid can only be left by a dead process that had it
        stale = _netns_names()
        for name in self.names:
            if name in stale:
                _ip("netns", "del", name, check=False)
        for link in [*self.veths, self.bridge]:
            if _link_exists(link):
                _ip("link", "del", link, check=False)

        lock_fd = os.open(_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)       # parallel sessions pick k one at a time
            self.k = self._pick_subnet()
            self.subnet_prefix = f"{SUBNET_BASE[0]}.{SUBNET_BASE[1]}.{self.k}"
            self.subnet = f"{self.subnet_prefix}.0/24"
            self.bridge_ip = f"{self.subnet_prefix}.1"
            self._created_links.append(self.bridge)
            _ip("link", "add", "name", self.bridge, "type", "bridge",
                "stp_state", "0", "forward_delay", "0")
            _ip("addr", "add", f"{self.bridge_ip}/24", "dev", self.bridge)  # claims k
        finally:
            fcntl.flock(lock_fd, fcntl.LOCK_UN)
            os.close(lock_fd)
        self._setup_bridge_filtering()
        _ip("link", "set", "dev", self.bridge, "up")

        for i, (name, veth) in enumerate(zip(self.names, self.veths)):
            self._created_ns.append(name)
            _ip("netns", "add", name)
            self._ns_ids[name] = _netns_id(f"/run/netns/{name}")
            _ip("-n", name, "link", "set", "dev", "lo", "up")
            self._created_links.append(veth)
            _ip("link", "add", "name", veth, "type", "veth", "peer", "name", "eth0",
                "netns", name)
            _ip("link", "set", "dev", veth, "master", self.bridge)
            _ip("link", "set", "dev", veth, "up")
            _ip("-n", name, "addr", "add", f"{self.ip(i)}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "dev", "eth0", "up")

    def _setup_bridge_filtering(self) -> None:
        """Keep host firewalls (br_netfilter + iptables) from dropping traffic on our bridge.

        With br_netfilter loaded, bridged IPv4 goes through iptables' FORWARD chain when
        *either* the per-bridge option or the netns-wide sysctl
        net.bridge.bridge-nf-call-iptables is on (the kernel ORs them).  We switch the
        per-bridge options off (enough when the sysctl is 0) and leave the sysctl alone.  If
        the sysctl is on and iptables has a filter policy/rules for FORWARD or INPUT, we insert
        ACCEPT rules scoped to this bridge (`-i BR`), removed again by close().
        """
        for opt in ("nf_call_iptables", "nf_call_ip6tables", "nf_call_arptables"):
            _ip("link", "set", "dev", self.bridge, "type", "bridge", opt, "0", check=False)
        try:
            with open("/proc/sys/net/bridge/bridge-nf-call-iptables") as f:
                global_on = f.read().strip() == "1"
        except OSError:
            global_on = False            # br_netfilter not loaded: bridged frames skip iptables
        self.br_netfilter_global = global_on
        iptables = shutil.which("iptables")
        if not iptables:
            return
        for chain, match in (("FORWARD", ["-i", self.bridge, "-o", self.bridge]),
                             ("INPUT", ["-i", self.bridge])):
            if chain == "FORWARD" and not global_on:
                continue
            listing = _run([iptables, "-w", "-S", chain], check=False).stdout.split("\n")
            rules = [r for r in listing if r.strip()]
            if rules == [f"-P {chain} ACCEPT"]:
                continue                 # nothing there that could drop our traffic
            rule = [chain, *match, "-j", "ACCEPT"]
            if _run([iptables, "-w", "-I", *rule], check=False).returncode == 0:
                self._fw_rules.append([iptables, "-w", "-D", *rule])

    # ---- processes
    def exec_argv(self, i: int, argv: list[str]) -> list[str]:
        """argv that runs `argv` inside namespace i (`ip netns exec` execs it: same pid)."""
        return [IP, "netns", "exec", self.names[i], *argv]

    def popen(self, i: int, argv: list[str], env: dict | None = None,
              **kw) -> subprocess.Popen:
        """Start `argv` inside namespace i; recorded for close().  start_new_session defaults
        to True so close() can stop the whole process group/session it spawns."""
        if self._closed:
            raise RuntimeError("lab is closed")
        kw.setdefault("start_new_session", True)
        kw.setdefault("stdin", subprocess.DEVNULL)
        proc = subprocess.Popen(self.exec_argv(i, list(argv)), env=env, **kw)
        st = _proc_stat(proc.pid)
        self._started.append(_Started(proc, st[4] if st else -1,
                                      bool(kw["start_new_session"]), i, list(argv)))
        return proc

    def run(self, i: int, argv: list[str], *, timeout: float = 60, env: dict | None = None,
            **kw) -> subprocess.CompletedProcess:
        """Run `argv` to completion inside namespace i (captured text output by default)."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(self.exec_argv(i, list(argv)), timeout=timeout, env=env, **kw)

    def wait_port(self, i: int, port: int, timeout: float = 10.0,
                  proc: subprocess.Popen | None = None) -> float:
        """Wait until ip(i):port accepts TCP connections (from the root namespace).

        Returns the seconds waited; raises TimeoutError, or RuntimeError early if `proc`
        (the server being waited for) exits first."""
        host = self.ip(i)
        t0 = time.monotonic()
        deadline = t0 + timeout
        last: Exception | None = None
        while True:
            try:
                with socket.create_connection((host, port), timeout=1.0):
                    return time.monotonic() - t0
            except OSError as e:
                last = e
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"process {proc.pid} exited ({proc.returncode}) before "
                                   f"{host}:{port} accepted connections")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{host}:{port} (namespace {self.names[i]}) did not accept "
                                   f"connections within {timeout}s: {last}")
            time.sleep(0.05)

    def processes(self) -> list[int]:
        """Pids of live processes inside this lab's namespaces."""
        return [pid for pid, _ in self._ns_members()]

    def _ns_members(self) -> list[tuple[int, int]]:
        ids = {v for v in self._ns_ids.values() if v}
        found = []
        if not ids:
            return found
        for pid in _all_pids():
            if _netns_id(f"/proc/{pid}/ns/net") in ids:
                st = _proc_stat(pid)
                if st and st[3] not in ("Z", "X"):
                    found.append((pid, st[4]))
        return found

    # ---- ssh
    def ssh_logins(self, tmp_path, slots: list[str],
                   env: dict | None = None) -> tuple[str, str, str]:
        """sshd on each node (`env` set in its sessions, as start_sshd's), node i given
        slots[i] in a hostfile: (the known_hosts file, the client keys as TOML strings "a",
        "b", the hostfile) for a plan's [cluster] ssh and --hosts."""
        hosts = [self.start_sshd(i, env=env) for i in range(len(slots))]
        known = os.path.join(str(tmp_path), "known_hosts")
        with open(known, "w") as f:
            f.write("".join(open(h.known_hosts).read() for h in hosts))
        keys = ", ".join(f'"{h.client_key}"' for h in hosts)
        hostfile = os.path.join(str(tmp_path), "hosts")
        with open(hostfile, "w") as f:
            f.write("".join(f"{self.ip(i)} {s}\n" for i, s in enumerate(slots)))
        return known, keys, hostfile

    def start_sshd(self, i: int, port: int = 22, timeout: float = 15.0,
                   env: dict | None = None) -> SshHost:
        """Start OpenSSH's sshd (our own process, `sshd -D -f cfg`) in namespace i on ip(i):port.

        Root login by a freshly generated ed25519 key only. `env` is set in every session with
        sshd's SetEnv (default: this process's PATH, so `python` etc. resolve as here)."""
        if i in self.ssh_hosts:
            return self.ssh_hosts[i]
        for tool in (SSHD, shutil.which("ssh-keygen")):
            if not tool or not os.path.exists(tool):
                raise NetnsUnavailable("OpenSSH (openssh-server/openssh-client) not installed")
        host = self.ip(i)
        d = tempfile.mkdtemp(prefix=f"{self.tag}-ssh{i}-")
        self._tmpdirs.append(d)
        host_key = os.path.join(d, "ssh_host_ed25519_key")
        client_key = os.path.join(d, "client_ed25519")
        for path, comment in ((host_key, f"host-{host}"), (client_key, "manybench-test")):
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path])
        authorized = os.path.join(d, "authorized_keys")
        shutil.copyfile(client_key + ".pub", authorized)
        known_hosts = os.path.join(d, "known_hosts")
        with open(host_key + ".pub") as f:
            ktype, kdata = f.read().split()[:2]
        hostpat = host if port == 22 else f"[{host}]:{port}"
        with open(known_hosts, "w") as f:
            f.write(f"{hostpat} {ktype} {kdata}\n")
        pid_file = os.path.join(d, "sshd.pid")
        log_file = os.path.join(d, "sshd.log")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")} if env is None else env
        setenv = " ".join(f'"{k}={v}"' for k, v in env.items())
        sshd_config = os.path.join(d, "sshd_config")
        lines = [
            f"ListenAddress {host}:{port}",
            f"HostKey {host_key}",
            f"PidFile {pid_file}",
            f"AuthorizedKeysFile {authorized}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "MaxStartups 100:30:200",
            "MaxSessions 50",
            "LogLevel INFO",
            "Subsystem sftp internal-sftp",
        ]
        if setenv:
            lines.append(f"SetEnv {setenv}")
        with open(sshd_config, "w") as f:
            f.write("\n".join(lines) + "\n")
        ssh_config = os.path.join(d, "ssh_config")
        with open(ssh_config, "w") as f:
            f.write(f"Host {host}\n"
                    f"  HostName {host}\n  Port {port}\n  User root\n"
                    f"  IdentityFile {client_key}\n  IdentitiesOnly yes\n"
                    f"  UserKnownHostsFile {known_hosts}\n  GlobalKnownHostsFile /dev/null\n"
                    f"  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 10\n"
                    f"  LogLevel ERROR\n")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)   # sshd's privilege-separation dir
        _run([SSHD, "-t", "-f", sshd_config])                 # config check, clear error
        t0 = time.monotonic()
        proc = self.popen(i, [SSHD, "-D", "-f", sshd_config, "-E", log_file],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.wait_port(i, port, timeout=timeout, proc=proc)
        except (TimeoutError, RuntimeError) as e:
            with contextlib.suppress(OSError), open(log_file) as f:
                raise RuntimeError(f"sshd in {self.names[i]}: {e}\n{f.read()}") from None
            raise
        sh = SshHost(index=i, host=host, port=port, user="root", client_key=client_key,
                     known_hosts=known_hosts, ssh_config=ssh_config, sshd_config=sshd_config,
                     pid_file=pid_file, log_file=log_file, proc=proc,
                     startup_seconds=time.monotonic() - t0,
                     connect_options={"known_hosts": known_hosts, "client_keys": [client_key],
                                      "username": "root"})
        if port != 22:
            sh.connect_options["port"] = port
        self.ssh_hosts[i] = sh
        return sh

    # ---- teardown
    def _signal_all(self, sig: int) -> list[tuple[int, int]]:
        """Send sig to everything we own that still runs; return the (pid, starttime) hit."""
        targets: dict[int, int] = {}
        table = {}
        for pid in _all_pids():
            st = _proc_stat(pid)
            if st:
                table[pid] = st
        me = os.getpid()
        for rec in self._started:
            p = rec.proc
            if p.returncode is None:
                # not reaped by us, so its pid (and pgid/sid if it leads them) stays ours
                if rec.own_session:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(p.pid, sig)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p.pid, sig)
                if p.pid in table:
                    targets[p.pid] = table[p.pid][4]
            leader_reused = (p.pid in table and table[p.pid][4] != rec.starttime)
            if rec.own_session and not leader_reused:
                # members of the session it created (pid number is held while they exist)
                for pid, st in table.items():
                    if pid != p.pid and (st[1] == p.pid or st[2] == p.pid):
                        targets[pid] = st[4]
            if not leader_reused and p.pid in table:
                # descendants through ppid
                frontier = [p.pid]
                while frontier:
                    parent = frontier.pop()
                    for pid, st in table.items():
                        if st[0] == parent and pid not in targets:
                            targets[pid] = st[4]
                            frontier.append(pid)
        for pid, starttime in self._ns_members():
            targets[pid] = starttime
        targets.pop(me, None)
        hit = []
        for pid, starttime in targets.items():
            if _alive(pid, starttime):           # still the same process we found
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
                    hit.append((pid, starttime))
        return hit

    def _reap(self) -> None:
        for rec in self._started:
            with contextlib.suppress(Exception):
                rec.proc.poll()

    def _wait_gone(self, hit: list[tuple[int, int]], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            self._reap()
            pending = [h for h in hit if _alive(*h)]
            pending += [(r.proc.pid, 0) for r in self._started if r.proc.returncode is None]
            if not pending and not self._ns_members():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def stop_processes(self) -> None:
        """SIGTERM, then SIGKILL, everything this lab started (see module docstring)."""
        hit = self._signal_all(signal.SIGTERM)
        if not self._wait_gone(hit, self.term_timeout):
            hit = self._signal_all(signal.SIGKILL)
            if not self._wait_gone(hit, 5.0):
                left = [r.proc.pid for r in self._started if r.proc.returncode is None]
                left += self.processes()
                self.close_errors.append(f"processes still running after SIGKILL: {left}")
        for rec in self._started:
            with contextlib.suppress(Exception):
                rec.proc.wait(timeout=1)
            for stream in (rec.proc.stdout, rec.proc.stderr, rec.proc.stdin):
                with contextlib.suppress(Exception):
                    if stream:
                        stream.close()

    def close(self) -> None:
        """Stop our processes, delete namespaces, veths, bridge, firewall rules, temp dirs.
        Idempotent; never raises (problems go to self.close_errors)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        try:
            self.stop_processes()
        except Exception as e:               # keep going: the rest must be deleted anyway
            self.close_errors.append(f"stopping processes: {e!r}")
        for name in self._created_ns:
            out = _ip("netns", "del", name, check=False)
            if out.returncode != 0 and name in _netns_names():
                self.close_errors.append(f"ip netns del {name}: {out.stderr.strip()}")
        for link in reversed(self._created_links):
            if _link_exists(link):
                out = _ip("link", "del", link, check=False)
                if out.returncode != 0 and _link_exists(link):
                    self.close_errors.append(f"ip link del {link}: {out.stderr.strip()}")
        for rule in self._fw_rules:
            with contextlib.suppress(Exception):
                _run(rule, check=False)
        for d in self._tmpdirs:
            shutil.rmtree(d, ignore_errors=True)
        with _live_lock:
            _live_tags.discard(self.tag)

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Lab({self.n}, bridge={self.bridge}, subnet="
                f"{getattr(self, 'subnet', '?')}, closed={self._closed})")
