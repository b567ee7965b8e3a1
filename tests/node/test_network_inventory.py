"""A node's networks in its inventory (inventory/network.py), read from sysfs, so `manybench
diff` shows the networks two runs' nodes had (the MPI of both sides is in their programs)."""
from __future__ import annotations

import os

from manybench.inventory import network
from manybench.inventory.environment import collect
from manybench.results.diff import compare


def _sysfs(root, speed: int, ib_state: str) -> str:
    def put(path: str, text: str) -> None:
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text + "\n")
    put("class/net/lo/type", "772")
    for k, v in (("type", "1"), ("operstate", "up"), ("speed", str(speed)), ("mtu", "9000")):
        put(f"class/net/ib0/{k}", v)
    (root / "drivers/mlx5_core").mkdir(parents=True)
    (root / "class/net/ib0/device").mkdir()
    os.symlink(root / "drivers/mlx5_core", root / "class/net/ib0/device/driver")
    put("class/net/veth1/type", "1")
    put("class/net/veth1/operstate", "up")
    put("class/infiniband/mlx5_0/node_type", "1: CA")
    put("class/infiniband/mlx5_0/ports/1/state", ib_state)
    put("class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)")
    put("class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand")
    return str(root)


def test_interfaces_and_rdma_ports_are_read_from_sysfs(tmp_path):
    got = network.collect(_sysfs(tmp_path, 100000, "4: ACTIVE"))
    assert got["interfaces"] == {       # veth1, lo: no device behind them, left out
        "ib0": {"driver": "mlx5_core", "operstate": "up", "speed_mb_s": 100000, "mtu": 9000}}
    assert got["rdma"] == {"mlx5_0": {"node_type": "1: CA", "ports": {"1": {
        "state": "4: ACTIVE", "rate": "100 Gb/sec (4X EDR)", "link_layer": "InfiniBand"}}}}


def test_a_node_inventory_has_its_networks_and_diff_shows_a_change(tmp_path):
    assert "interfaces" in collect()["network"]      # this machine's, in every inventory
    a = {"network": network.collect(_sysfs(tmp_path / "a", 100000, "4: ACTIVE"))}
    b = {"network": network.collect(_sysfs(tmp_path / "b", 25000, "1: DOWN"))}
    sec, _ = compare("node n1", a, b, show_all=False)
    changed = {k: (x, y) for k, x, y in sec.changed}
    assert changed["network.interfaces.ib0.speed_mb_s"] == (100000, 25000)
    assert changed["network.rdma.mlx5_0.ports.1.state"] == ("4: ACTIVE", "1: DOWN")
