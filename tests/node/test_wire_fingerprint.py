"""The wire is pinned to its version (issue 33, item 2): the fingerprint of every wire type's
fields and types, nested, is the one node/wire_pins.py holds for PROTOCOL_VERSION; any change
without a bump fails here, naming the type, the field and its old and new type. int32: a field
added to Result passed the whole fast pass with the version unchanged."""
from __future__ import annotations

import dataclasses
import enum
import os
import re
import typing

import pytest

from manybench.model import Phase, TaskSpec
from manybench.node import fingerprint as F
from manybench.node import protocol as P
from manybench.node import wire_pins
from manybench.node import wire_types as W


def _problems(version: int | None = None) -> list[str]:
    return F.check(F.of_protocol(), P.PROTOCOL_VERSION if version is None else version,
                   wire_pins.VERSION, wire_pins.PINNED)


def _with_field(t: type, name: str = "added", typ: object = int) -> type:
    """t with one more field at its end, under its own name (as an edit of its source)."""
    new = dataclasses.make_dataclass(t.__name__, [(name, typ, dataclasses.field(default=0))],
                                     bases=(t,), frozen=t.__dataclass_params__.frozen)
    new.__qualname__, new.__module__ = t.__qualname__, t.__module__
    return new


def _swap(monkeypatch, old: type, new: type) -> None:
    """new in old's place: in the table and wherever a field names it."""
    monkeypatch.setattr(P, "WIRE_TYPES", tuple(new if t is old else t for t in P.WIRE_TYPES))
    for module in (P, W):
        if getattr(module, old.__qualname__, None) is old:
            monkeypatch.setattr(module, old.__qualname__, new)


def test_the_wire_is_its_versions_pinned_fingerprint():
    assert _problems() == []


@pytest.mark.parametrize("t", P.WIRE_TYPES, ids=lambda t: t.__qualname__)
def test_a_field_added_to_any_wire_type_without_a_bump_fails_naming_it(t, monkeypatch):
    _swap(monkeypatch, t, _with_field(t))
    got = _problems()
    assert got == [f"the wire changed with PROTOCOL_VERSION still {P.PROTOCOL_VERSION}: "
                   f"{t.__qualname__}.added: added (int)"]


def test_a_field_retyped_names_its_old_and_new_type_and_a_bump_must_be_pinned(monkeypatch):
    from manybench.kernels.base import Result
    retyped = dataclasses.make_dataclass("Result", [("ops", float, dataclasses.field(default=0))],
                                         bases=(Result,), frozen=True)
    retyped.__qualname__ = "Result"
    _swap(monkeypatch, Result, retyped)
    got = _problems()
    assert got == [f"the wire changed with PROTOCOL_VERSION still {P.PROTOCOL_VERSION}: "
                   "Result.ops: int -> float"]
    # bumped but not pinned: told how, and what changed since the last pinned version
    bumped = _problems(version=P.PROTOCOL_VERSION + 1)
    assert len(bumped) == 1 and "has no pinned fingerprint: pin it" in bumped[0]
    assert bumped[0].endswith(f"since version {P.PROTOCOL_VERSION}: Result.ops: int -> float")


class Reading(typing.TypedDict, total=False):
    seconds: float


class ReadingPlus(typing.TypedDict, total=False):      # Reading, a key added
    seconds: float
    cpus: int


class Kind(str, enum.Enum):
    OK = "ok"
    LOST = "lost"


def _msg(reading: type) -> type:
    return dataclasses.make_dataclass("Msg", [("reading", reading | None)], frozen=True)


def test_the_fingerprint_follows_fields_into_the_types_they_name():
    assert F.fingerprint([_msg(Reading)]) == {"Msg": ["reading: Reading | None"],
                                              "Reading": ["seconds?: float"]}
    # an enum's values are the wire's too: a status added is a change
    kinds = F.fingerprint([dataclasses.make_dataclass("Msg", [("kind", Kind)])])
    assert kinds == {"Msg": ["kind: Kind"], "Kind": ["OK = 'ok'", "LOST = 'lost'"]}
    assert F.changes(kinds, {**kinds, "Kind": kinds["Kind"] + ["GONE = 'gone'"]}) == [
        "Kind.GONE: added ('gone')"]
    plus = F.fingerprint([_msg(ReadingPlus)])
    assert F.changes({"Msg": ["reading: Reading | None"], "Reading": ["seconds?: float"]},
                     {t.replace("Plus", ""): [f.replace("Plus", "") for f in lines]
                      for t, lines in plus.items()}) == ["Reading.cpus?: added (int)"]


def test_types_reordered_change_their_codes_and_are_named():
    old = {"A": [], "B": []}
    assert F.changes(old, {"B": [], "A": []}) == [
        "types reordered (a wire type's code is its place): B, A"]
    assert F.changes({"A": ["x: int", "y: str"]}, {"A": ["y: str", "x: int"]}) == [
        "A: fields reordered (y, x)"]


def test_no_field_of_the_wire_is_a_bare_dict_or_any():
    """int32: 21 fields were a bare dict, list or Any: what they held was not the protocol's."""
    assert F.untyped(F.of_protocol()) == []


def test_every_wire_type_is_owned_by_the_node_package_and_imported_from_there():
    """int32: Result and SlotContext were kernels', Cpu inventory's, TelemetryRow results'."""
    import ast
    import importlib
    import os

    import manybench
    assert [t.__qualname__ for t in P.WIRE_TYPES
            if not t.__module__.startswith("manybench.node.")] == []
    wire = set(P.WIRE_TYPES)
    names = {t.__qualname__ for t in wire}
    root = os.path.dirname(manybench.__file__)
    elsewhere = []
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(d, root)
            package = "manybench" + ("" if rel == "." else "." + rel.replace(os.sep, "."))
            text = open(path, encoding="utf-8").read()
            if not any(n in text for n in names):
                continue
            for node in ast.walk(ast.parse(text)):
                if not isinstance(node, ast.ImportFrom) or not node.level and not (
                        node.module or "").startswith("manybench"):
                    continue
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = (f"{base}.{node.module}" if node.module else base) if node.level \
                    else node.module
                if source.startswith("manybench.node") or not {
                        a.name for a in node.names} & names:
                    continue
                module = importlib.import_module(source)
                got = [a.name for a in node.names
                       if any(getattr(module, a.name, None) is t for t in wire)]
                if got:
                    elsewhere.append(f"{os.path.relpath(path, root)}: {got} from {source}")
    assert elsewhere == []


def test_a_nested_dataclass_is_a_wire_type_itself():
    """The fingerprint follows a field into a dataclass only the codec can carry: one of
    WIRE_TYPES."""
    import dataclasses as dc
    wire = {t.__qualname__ for t in P.WIRE_TYPES}
    reached = [t for t in F.of_protocol() if t not in wire and not t.startswith("(")]
    from manybench.node import wire_types as W
    assert [t for t in reached if dc.is_dataclass(getattr(W, t, None))] == []


def _crossing_text(text: str) -> str:
    """A model field's type as its wire copy declares it: lists as tuples, model objects as
    their wire copies, Any as open data."""
    text = re.sub(r"list\[([^\[\]]*)\]", r"tuple[\1, ...]", text)
    return (text.replace("TaskSpec", "WireTask").replace("Phase", "WirePhase")
            .replace(F.UNTYPED, F.OPEN))


@pytest.mark.parametrize("wire, model, names", [
    (W.WirePhase, Phase, W.PHASE_FIELDS), (W.WireTask, TaskSpec, W.TASK_FIELDS)],
    ids=["Phase", "TaskSpec"])
def test_the_wire_copies_are_made_from_the_models_fields_never_written_twice(wire, model, names):
    """int32: WirePhase and WireTask wrote out again 13 and 10 fields of Phase and TaskSpec."""
    todo: list = []
    want = [(f.name, _crossing_text(F._text(typing.get_type_hints(model)[f.name], todo)))
            for f in dataclasses.fields(model) if f.name in names]
    got = [(f.name, F._text(typing.get_type_hints(wire, include_extras=True)[f.name], todo))
           for f in dataclasses.fields(wire)]
    assert got == want and len(got) == len(names)
    defaults = {f.name: f.default if f.default_factory is dataclasses.MISSING
                else f.default_factory() for f in dataclasses.fields(model)}
    made = wire(**{f.name: defaults[f.name] for f in dataclasses.fields(wire)
                   if f.default is dataclasses.MISSING and f.default_factory is
                   dataclasses.MISSING})
    for f in dataclasses.fields(wire):      # the model's defaults, lists as tuples
        if defaults[f.name] is not dataclasses.MISSING:
            assert getattr(made, f.name) == (tuple(defaults[f.name]) if isinstance(
                defaults[f.name], list) else defaults[f.name]), f.name
    # and no class statement of its own anywhere in src/
    import manybench
    root = os.path.dirname(manybench.__file__)
    declared = [os.path.join(d, f) for d, _, files in os.walk(root) for f in files
                if f.endswith(".py") and f"class {wire.__qualname__}" in
                open(os.path.join(d, f), encoding="utf-8").read()]
    assert declared == []


def test_a_field_added_to_phase_and_named_as_crossing_crosses_with_its_type():
    extended = dataclasses.make_dataclass("Phase", [("numa_hint", "list[int] | None", None)],
                                          bases=(Phase,))
    extended.__module__ = Phase.__module__
    copy = W._wire_copy(extended, "WirePhase", W.PHASE_FIELDS + ("numa_hint",), "doc")
    hint = typing.get_type_hints(copy, include_extras=True)["numa_hint"]
    assert F._text(hint, []) == "tuple[int, ...] | None"
    with pytest.raises(TypeError, match="Phase has no field nowhere"):
        W._wire_copy(Phase, "WirePhase", W.PHASE_FIELDS + ("nowhere",), "doc")


def test_a_nodes_noise_floor_has_the_keys_its_typed_dict_declares():
    """NoiseFloor.floor was a bare dict: its TypedDicts say what the probe gives, key by key."""
    from manybench.inventory import noise
    floor = noise.measure([0], 0.02)
    if floor is None:
        pytest.skip("the C probe is not built")
    assert set(floor) == set(W.NoiseReading.__annotations__)
    assert set().union(*floor["per_cpu"]) <= set(W.CpuNoise.__annotations__)


def test_the_pin_tool_refuses_a_change_without_a_bump_and_keeps_the_older_versions_digest(
        monkeypatch, capsys):
    from manybench.kernels.base import Result
    with monkeypatch.context() as m:
        _swap(m, Result, _with_field(Result))
        changed = F.of_protocol()
    monkeypatch.setattr(F, "of_protocol", lambda: changed)
    assert F._pin() == 2
    assert "bump PROTOCOL_VERSION" in capsys.readouterr().err
    assert F._pin(again=True) == 0      # a version not yet released: its pin replaced
    pins: dict = {}
    exec(capsys.readouterr().out, pins)
    assert (pins["VERSION"], pins["EARLIER"]) == (wire_pins.VERSION, wire_pins.EARLIER)
    assert F.unpinned(pins["PINNED"]) == changed
    monkeypatch.setattr(P, "PROTOCOL_VERSION", wire_pins.VERSION + 1)
    assert F._pin() == 0
    pins = {}
    exec(capsys.readouterr().out, pins)
    assert pins["VERSION"] == wire_pins.VERSION + 1
    assert F.unpinned(pins["PINNED"]) == changed
    assert pins["EARLIER"] == {**wire_pins.EARLIER,
                               wire_pins.VERSION: F.digest(F.unpinned(wire_pins.PINNED))}


def test_what_kernels_publish_for_their_peers_is_what_published_declares():
    """Prepared.published and Connect.peers were bare dicts: every key a kernel's publish
    function writes (kernels/*.py) is a key of the Published TypedDict."""
    import ast

    import manybench.kernels
    root = os.path.dirname(manybench.kernels.__file__)
    keys: dict[str, str] = {}
    for f in sorted(os.listdir(root)):
        if not f.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(root, f), encoding="utf-8").read())
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and re.fullmatch(r"_?publish(ed)?", fn.name):
                keys.update({k.value: f for d in ast.walk(fn) if isinstance(d, ast.Dict)
                             for k in d.keys if isinstance(k, ast.Constant)})
    assert {"port", "path", "abort_port"} <= set(keys)       # it reads them: net, io, mpi
    assert {k: f for k, f in keys.items() if k not in W.Published.__annotations__} == {}
