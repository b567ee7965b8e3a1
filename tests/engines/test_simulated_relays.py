"""Relays in the simulated cluster (--simulate with --fanout): a node chosen as a relay runs the
real relay (node/relay.py), carrying each round to its members over their direct channels and
measuring their clocks through their echoes; every simulated node's clock is off, so a
member's offset is composed (its relay's, plus its own against the relay) and must still
match the node's true offset; a member that dies is lost through its relay, the run goes on."""
from __future__ import annotations


from builders import stored_inventories
from conftest import export_json, run_cli

import pytest

pytestmark = pytest.mark.e2e

PLAN = """
    name = "sim-relays"
    repeat = {repeat}
    on_node_loss = "continue"
    [placement]
    workers = [{workers}]
    [[task]]
    name = "sync"
    kernel = "null"
"""


def test_members_through_simulated_relays_have_their_composed_clocks_corrected(
        plan_file, tmp_path):
    plan = plan_file(PLAN.format(repeat=4, workers=48))
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "--simulate", "12x4,offset=3ms,processes=2",
                  "--fanout", "3", timeout=120)
    assert res.returncode == 0, res.stderr + res.stdout
    nodes = stored_inventories(out)
    relays = {"sim01": ["sim02", "sim03", "sim04"], "sim05": ["sim06", "sim07", "sim08"],
              "sim09": ["sim10", "sim11", "sim12"]}
    for relay, members in relays.items():
        assert nodes[relay]["relay_for"] == members and nodes[relay]["channel"] == "direct"
        assert all(nodes[m]["channel"] == f"through relay {relay}" for m in members)
    truth = {n: inv["simulated"]["true_offset_ns"] for n, inv in nodes.items()}
    # the relays' own clocks are off too, and differ from their members': composition counts
    assert all(abs(truth[m] - truth[r]) > 0.2e6 for r, ms in relays.items() for m in ms[:1])
    rows = export_json(out)
    assert len(rows) == 4 * 48 and all(r["status"] == "ok" for r in rows)
    off = {r["node"]: (r["metrics"]["clock_offset_ns"], r["metrics"]["clock_error_ns"])
           for r in rows}
    assert set(off) == set(truth)
    for n, (offset, error) in off.items():
        assert abs(offset - truth[n]) <= error + 50_000, (n, offset, error, truth[n])
    # a member's bound is its relay's plus its own against the relay
    for relay, members in relays.items():
        assert all(off[m][1] > off[relay][1] for m in members), off
    for r in rows:       # stamps moved into the coordinator's clock: nobody starts before T0
        assert r["start_ns"] >= r["t0_ns"] - r["metrics"]["clock_error_ns"] - 50_000


def test_a_simulated_member_that_dies_is_lost_through_its_relay_and_the_run_goes_on(
        plan_file, tmp_path):
    plan = plan_file(PLAN.format(repeat=12, workers=12))
    out = str(tmp_path / "res")
    # seed 1 (each node's own draw per Run): relay sim05 dies in phase 1, taking its group
    # (sim06-08) with it; sim11, a member of sim09, dies in phase 11
    res = run_cli("run", plan, "-o", out, "--simulate", "12x2,loss=0.05,seed=1",
                  "--fanout", "3", timeout=120)
    assert res.returncode == 1, res.stderr + res.stdout      # nodes lost: the run says so
    assert "NODE LOST" in res.stderr, res.stderr
    nodes = stored_inventories(out)
    assert nodes["sim11"]["channel"] == "through relay sim09"
    rows = export_json(out)
    by_phase: dict[int, list[dict]] = {}
    for r in rows:
        by_phase.setdefault(r["phase"], []).append(r)
    assert sorted(by_phase) == list(range(12)) and all(len(g) == 12 for g in by_phase.values())
    lost = {r["node"]: r for r in rows if r["status"] == "lost"}
    assert {n: r["phase"] for n, r in lost.items()} == {
        "sim05": 1, "sim06": 1, "sim07": 1, "sim08": 1, "sim11": 11}
    assert "through relay sim09" in lost["sim11"]["error"], lost["sim11"]
    assert all("its relay sim05 was lost" in lost[m]["error"] for m in ("sim06", "sim07", "sim08"))
    for r in rows:      # a lost node's phase: the others' results kept; later: not placed
        if r["node"] in lost and r["phase"] >= lost[r["node"]]["phase"]:
            assert r["phase"] == lost[r["node"]]["phase"] and r["status"] == "lost", r
        else:
            assert r["status"] == "ok", r
