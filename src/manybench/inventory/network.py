"""A node's networks, for its inventory (and so for `manybench diff`): its network devices
(interfaces backed by a device: no loopback, veth, bridge or tunnel) with their driver,
state, speed and MTU, and the RDMA devices (InfiniBand,
RoCE, iWARP) with each port's state, rate and link layer, all read from sysfs. What an MPI
job could run over; which one it did is the job's (its variant's environment).

  {"interfaces": {"eth0": {"driver": "mlx5_core", "operstate": "up", "speed_mb_s": 100000,
                           "mtu": 9000}, ...},
   "rdma": {"mlx5_0": {"node_type": "1: CA", "ports": {"1": {"state": "4: ACTIVE",
                       "rate": "100 Gb/sec (4X EDR)", "link_layer": "InfiniBand"}}}}}
"""
from __future__ import annotations

import os


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:     # a virtual interface has no speed: EINVAL
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def interfaces(sysfs: str = "/sys") -> dict[str, dict]:
    out: dict[str, dict] = {}
    base = os.path.join(sysfs, "class", "net")
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        d = os.path.join(base, name)
        driver = os.path.join(d, "device", "driver")
        if not os.path.exists(driver):   # loopback, veth, bridges, tunnels: made and gone
            continue                     # with containers and labs, no network of the node's
        speed = _int(_read(os.path.join(d, "speed")))
        out[name] = {
            "driver": os.path.basename(os.path.realpath(driver)),
            "operstate": _read(os.path.join(d, "operstate")),
            "speed_mb_s": speed if speed is not None and speed > 0 else None,
            "mtu": _int(_read(os.path.join(d, "mtu"))),
        }
    return out


def rdma(sysfs: str = "/sys") -> dict[str, dict]:
    out: dict[str, dict] = {}
    base = os.path.join(sysfs, "class", "infiniband")
    for dev in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        ports_dir = os.path.join(base, dev, "ports")
        ports = {}
        for p in sorted(os.listdir(ports_dir)) if os.path.isdir(ports_dir) else []:
            pd = os.path.join(ports_dir, p)
            ports[p] = {k: _read(os.path.join(pd, k)) for k in ("state", "rate", "link_layer")}
        out[dev] = {"node_type": _read(os.path.join(base, dev, "node_type")), "ports": ports}
    return out


def collect(sysfs: str = "/sys") -> dict:
    return {"interfaces": interfaces(sysfs), "rdma": rdma(sysfs)}
