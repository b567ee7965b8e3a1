"""The node protocol and the one place clocks are converted; kernel traits, not names."""
from __future__ import annotations

import ast
import os

from fake_engine import FakeEngine

import manybench
from manybench.engines.base import Node, to_coordinator, to_node
from manybench.inventory.topology import Cpu
from manybench.kernels import KERNELS, Result, declared_metrics, kernel
from manybench.model import Phase, TaskSpec
from manybench.node import protocol as P

T = 1_700_000_000_000_000_000


def test_to_node_and_back():
    n = Node("n3", 2, (Cpu(0, 0, 0, 0),), offset_ns=5_000_000_000)   # its clock 5 s ahead
    assert to_node(T, n) == T + 5_000_000_000
    res = Result(start_ns=T + 5_000_000_100, end_ns=T + 5_000_000_900,
                 armed_ns=T + 4_999_000_000, elapsed_ns=800, ops=3)
    back = to_coordinator(res, n)
    assert (back.start_ns, back.end_ns, back.armed_ns) == (T + 100, T + 900, T - 1_000_000)
    assert (back.elapsed_ns, back.ops) == (800, 3)          # durations are not stamps
    assert res.start_ns == T + 5_000_000_100                 # the node's result is left alone
    # a slot with no stamps (failed before T0) keeps zeros, never "T0 minus the offset"
    failed = to_coordinator(Result(status="error", error="x"), n)
    assert (failed.start_ns, failed.end_ns, failed.armed_ns) == (0, 0, 0)


def _fake(publish: bool) -> FakeEngine:
    """Node a's clock runs 7 us behind; its slots started 10 and 30 ns after each node's T0."""
    def answer(e: FakeEngine) -> dict:
        return {"a": {0: Result(start_ns=e.sent["a"] + 10, end_ns=e.sent["a"] + 20,
                                armed_ns=e.sent["a"] - 50)},
                "b": {0: Result(start_ns=e.sent["b"] + 30, end_ns=e.sent["b"] + 40)}}

    def endpoints(work: dict) -> dict:
        return {n: {a.place.slot: {"port": 4000 + a.rank} for a in assigned}
                for n, assigned in work.items()}
    return FakeEngine(nodes=[Node("a", 2, (), offset_ns=-7000, host="10.0.0.1"),
                             Node("b", 2, (), offset_ns=0, host="10.0.0.2")],
                      answer=answer, endpoints=endpoints if publish else None)


def _phase(kernel_name: str) -> Phase:
    return Phase(0, TaskSpec("t", kernel_name, {}), kernel_name, "", 0, 2, "spread", "core", {},
                 "p")


def _work() -> dict:
    place = P.SlotPlace(0, 0, (0,), True)
    return {"a": [P.Assignment(place, 0)], "b": [P.Assignment(place, 1)]}


def test_engines_take_and_give_the_coordinators_clock():
    e = _fake(publish=False)
    e.prepare(_phase("null"), _work(), lambda: None)
    e.go(T)
    assert e.sent == {"a": T - 7000, "b": T}       # each node gets T0 in its own clock
    got = e.results()
    # both slots started 10 and 30 ns after T0 as the coordinator's clock reads it
    assert (got["a"][0].start_ns, got["b"][0].start_ns) == (T + 10, T + 30)
    assert got["a"][0].armed_ns == T - 50 and e.t0_ns == T
    assert e.peers is None                          # null's slots do not connect


def test_peers_are_built_once_for_kernels_that_connect():
    e = _fake(publish=True)
    e.prepare(_phase("net.pingpong"), _work(), lambda: None)
    assert e.peers == {0: {"host": "10.0.0.1", "port": 4000},
                       1: {"host": "10.0.0.2", "port": 4001}}


def test_command_is_a_registered_kernel_with_traits():
    cmd = KERNELS["command"]
    assert cmd.runs_child and cmd.from_command and cmd.uses_dir and not cmd.sync_only
    assert KERNELS["null"].sync_only and KERNELS["null"].light_prepare
    assert KERNELS["net.pingpong"].wants_peers({}) and not KERNELS["null"].connects
    # io.* connect only for IOR's wear-out and reorder
    assert not KERNELS["io.write"].wants_peers({"wear_out": False})
    assert KERNELS["io.write"].wants_peers({"wear_out": True})
    assert KERNELS["io.read"].wants_peers({"reorder": True})
    assert all(k.uses_dir for n, k in KERNELS.items() if n.startswith(("io.", "meta.")))
    # a kernel this build does not know (an older run's) reads as one with no traits
    ghost = kernel("gone.kernel")
    assert ghost.name == "gone.kernel" and not (ghost.sync_only or ghost.runs_child)


def _kernel_name_tests(path: str) -> list[str]:
    """Comparisons of anything with a kernel's name (`x == "null"`, `k in {"null"}` ...);
    `"command" in table` asks whether a plan table has a field, and is not one."""
    names = set(KERNELS)
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            membership = all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
            sides = node.comparators if membership else [node.left, *node.comparators]
            consts = [c for s in sides for c in ast.walk(s)
                      if isinstance(c, ast.Constant) and c.value in names]
            if consts:
                found.append(f"{os.path.relpath(path)}:{node.lineno}: {consts[0].value!r}")
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (they may name anything)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _metric_names(path: str, names: set[str]) -> list[str]:
    """Every string constant (docstrings aside) equal to a metric a kernel declares."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    docs = _docstrings(tree)
    return [f"{os.path.relpath(path)}:{c.lineno}: {c.value!r}" for c in ast.walk(tree)
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value in names
            and id(c) not in docs]


# the same word meaning something else: a [reference] figure of the plan (aggregate bandwidth
# in MB/s, which a kernel metric of that name yields to), a column of the node_commands table,
# a parallel task's `launcher` field (its metric of that name: the launcher's path on the node),
# the FMA probe's figures in a node's inventory
NOT_METRICS = {("inventory/environment.py", "gflops"), ("analysis/reference.py", "mb_s"), ("plan/reference.py", "mb_s"),
               ("results/store.py", "exit_status"), ("plan/schema.py", "launcher"),
               ("plan/tasks.py", "launcher"), ("node/wire_types.py", "launcher"),
               # the extra key that names a rank's job (extra_keys.JOB), beside the metric
               ("extra_keys.py", "job"),
               # a package's version (pyproject's, an inventory's), not a tool's printed one
               ("bundle.py", "version"), ("inventory/provenance.py", "version")}


def test_no_code_outside_kernels_names_a_kernel_metric():
    """report/ and analysis/ iterate over the kernels' figure declarations
    (kernels/figures.py): a kernel's metric is named in kernels/ only. Parsers of tools'
    output name the metrics they make."""
    root = os.path.dirname(manybench.__file__)
    names = set(declared_metrics())
    assert {"cached_fraction", "stonewall_s", "wear_out_blocks", "reorder_shift",
            "wrap_startup_s", "exit_status", "gflops", "triad_mb_s"} <= names
    found = []
    for d, _, files in os.walk(root):
        if os.path.relpath(d, root).split(os.sep)[0] in ("kernels", "parsers"):
            continue
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), root)
                found += [x for x in _metric_names(os.path.join(d, f), names)
                          if (rel, x.rsplit(": ", 1)[1].strip("'")) not in NOT_METRICS]
    assert found == []


def test_no_code_outside_kernels_tests_a_kernel_name():
    root = os.path.dirname(manybench.__file__)
    found = []
    for d, _, files in os.walk(root):
        if os.path.relpath(d, root).split(os.sep)[0] == "kernels":
            continue
        found += [x for f in files if f.endswith(".py")
                  for x in _kernel_name_tests(os.path.join(d, f))]
    assert found == []
