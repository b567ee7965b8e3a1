"""The record table: every field of what a slot measures and of the record it becomes, each
declared once, here. The layers are made from it:

  result  kernels/base.Result: what a kernel's timed run measured, on the node
  arrays  node/arrays.SlotResults: a node's results of a phase, one list per field (or, for
          a `sparse` field, a map entry -> value where the value is not empty)
  record  record.Record, its column of results.db's records table (results/schema.py, the
          SQL type here), its column of the export contract (record.COLUMNS) when `export`

and record_columns.RecordColumns and run/outcome.collect assemble a record's fields from
their `source`: the run's (run, T0), its phase's (record_columns.PHASE_COLUMNS), the slot's
place on its node (node, slot, cpu) or the slot's result (the arrays' field named `of`).

Adding a field is one line here (its `since`: the results schema that adds its column,
results/schema.py adds it to older files) and, when a kernel sets it, the kernel's code.
Each layer is built keyword-only: no caller depends on the order of the fields.
"""
from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .status import Status

RESULT, ARRAYS, RECORD = "result", "arrays", "record"
ALL = frozenset((RESULT, ARRAYS, RECORD))
NODE = frozenset((RESULT, ARRAYS))           # measured on the node, not a record's column
STORED = frozenset((RECORD,))                # a record's only
SOURCES = ("run", "phase", "place", "slot")
REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()   # no default


@dataclass(frozen=True)
class Field:
    name: str
    type: str                       # its annotation, as written in a record
    sql: str = ""                   # its records column's SQL type ("": not a record's)
    default: Any = REQUIRED
    factory: Callable[[], Any] | None = None     # a fresh default each (a dict, a list)
    layers: frozenset[str] = ALL
    source: str = "slot"            # where a record's value comes from (SOURCES)
    of: str = ""                    # what a record's value is made from (default: its
                                    # name): a slot's arrays' field, a phase's attribute
    per: float = 0.0                # a slot's value divided by it, when set
    sparse: bool = False            # arrays: only where not empty
    packed: tuple[str, Callable, Callable] | None = None   # arrays: (type, to, back) where
                                    # the arrays hold a value otherwise than the Result does
    export: bool = True             # a column of the export contract (record.COLUMNS)
    json: bool = False              # stored as JSON text
    stamp: bool = False             # a node's clock reading: moved into the coordinator's
    alike: bool = False             # often one value for a whole phase: stored once then
    since: int = 1                  # the results schema version that added its column

    def __post_init__(self) -> None:
        # its name is an attribute, a column and a name in generated_function's code
        if not self.name.isidentifier() or self.source not in SOURCES:
            raise ValueError(f"record table: field {self.name!r} (source {self.source!r})")

    def empty(self) -> Any:
        """Its default, a fresh one where it is made by a factory."""
        return self.factory() if self.factory is not None else self.default

    @property
    def source_field(self) -> str:
        """What its value is made from: `of`, else its own name."""
        return self.of or self.name


def _pack_samples(samples: list[tuple[int, float]]) -> list[list]:
    return [[t for t, _ in samples], [d for _, d in samples]]


def _unpack_samples(got: list[list]) -> list[tuple[int, float]]:
    return list(zip(*got))


F = Field
TABLE: tuple[Field, ...] = (
    F("run", "str", "TEXT NOT NULL", layers=STORED, source="run"),
    # a phase's field: `of` names the attribute of the coordinator's Phase it is (a method:
    # what it returns), run/outcome.py
    F("phase", "int", "INTEGER NOT NULL", layers=STORED, source="phase", of="index"),
    F("task", "str", "TEXT NOT NULL", layers=STORED, source="phase", of="task.name"),
    F("kernel", "str", "TEXT NOT NULL", layers=STORED, source="phase"),
    F("variant", "str", "TEXT NOT NULL", layers=STORED, source="phase"),
    F("rep", "int", "INTEGER NOT NULL", layers=STORED, source="phase"),
    F("workers", "int", "INTEGER NOT NULL", layers=STORED, source="phase"),
    F("node", "str", "TEXT NOT NULL", layers=STORED, source="place"),
    F("slot", "int", "INTEGER NOT NULL", layers=STORED, source="place"),
    F("cpu", "int", "INTEGER NOT NULL", layers=STORED, source="place"),
    # scheduled start, coordinator's clock
    F("t0_ns", "int", "INTEGER NOT NULL", layers=STORED, source="run"),
    # CLOCK_REALTIME at the first instant of the timed work; 0: not stamped (failed before)
    F("start_ns", "int", "INTEGER NOT NULL", 0, stamp=True),
    F("end_ns", "int", "INTEGER NOT NULL", 0, stamp=True),      # at the last instant
    F("elapsed_ns", "int", default=0, layers=NODE),       # CLOCK_MONOTONIC end - start
    # CLOCK_REALTIME when the slot began waiting for T0 (early margin): the coordinator puts
    # it in the record's extra and metrics (run/outcome.py)
    F("armed_ns", "int", default=0, layers=NODE, stamp=True),
    F("elapsed_s", "float", "REAL NOT NULL", 0.0, layers=STORED, of="elapsed_ns", per=1e9),
    F("ops", "int", "INTEGER NOT NULL", 0, alike=True),
    F("bytes", "int", "INTEGER NOT NULL", 0, alike=True),
    F("status", "str", "TEXT NOT NULL", Status.OK, alike=True),   # a Status (status.py)
    F("error", "str", "TEXT NOT NULL", "", sparse=True, alike=True),
    F("params", "dict[str, Any]", "TEXT NOT NULL", factory=dict, layers=STORED,
      source="phase", of="record_params", json=True),
    # the maps' types are the wire's (node/wire_types.py: Metrics, Hist, Extra), named here
    F("metrics", "Metrics", "TEXT NOT NULL", factory=dict, sparse=True, json=True),
    # sparse latency histogram {bucket: count} (kernels/hist.py)
    F("hist", "Hist | None", "TEXT", None, sparse=True, export=False, alike=True),
    # stdout/stderr tails, the library or engine used (Kernel.facts), armed_ns, rank, ...:
    # stored, exported after the contract's columns
    F("extra", "Extra", "TEXT NOT NULL", factory=dict, sparse=True, export=False,
      json=True),
    # progress inside the window (node/sampler.py): (CLOCK_REALTIME ns, cumulative done) at
    # a fixed interval, the last at end_ns; the arrays hold [[t_ns...], [done...]]; stored
    # as the samples table (run/samples.py), not in the record
    F("samples", "list[tuple[int, float]]", factory=list, layers=NODE, sparse=True,
      stamp=True, packed=("list[list[int] | list[float]]", _pack_samples, _unpack_samples)),
    F("sample_unit", "str", default="", layers=NODE, sparse=True),   # "bytes" | "ops"
)
del F


def fields_of(layer: str) -> tuple[Field, ...]:
    """The fields a layer carries, in the table's order."""
    return tuple(f for f in TABLE if layer in f.layers)


def _spec(f: Field, metadata: dict) -> Any:
    if f.factory is not None:
        return dataclasses.field(default_factory=f.factory, metadata=metadata)
    if f.default is REQUIRED:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=f.default, metadata=metadata)


def layer_dataclass(layer: str, *, frozen: bool = False) -> Callable[[type], type]:
    """A class decorator: the class (its methods, its docstring, fields of its own declared
    first) made a keyword-only dataclass with the layer's fields added, each with its
    default and, for a record, its `sql`, `json` and `export` as the field's metadata."""
    def make(cls: type) -> type:
        own = dict(inspect.get_annotations(cls))
        for f in fields_of(layer):
            if layer == ARRAYS:
                kind = f.packed[0] if f.packed else f.type
                annotation = f"dict[int, {kind}]" if f.sparse else f"list[{kind}]"
                spec: Any = dataclasses.field(default_factory=dict if f.sparse else list)
            else:
                annotation = f.type
                spec = _spec(f, {"sql": f.sql, "json": f.json, "export": f.export}
                             if layer == RECORD else {})
            own[f.name] = annotation
            setattr(cls, f.name, spec)
        cls.__annotations__ = own
        return dataclass(frozen=frozen, kw_only=True)(cls)
    return make


def positional(cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """A maker of plain objects of cls (not frozen, no __post_init__) from the values of
    `names`, in that order: each set as its keyword-only __init__ sets it, without the call's
    cost per keyword (the hot paths: a phase's 64,000 records). Generated from the names, as
    dataclasses generates __init__: a dict filled otherwise would lose the instances' shared
    keys, and its memory (results/record_read.py)."""
    return generated_function("make", names,
                              ["o = new(cls)", *(f"o.{n} = {n}" for n in names), "return o"],
                              {"new": object.__new__, "cls": cls})


def generated_function(name: str, args: Sequence[str], body: list[str],
                       scope: dict[str, Any]) -> Callable[..., Any]:
    """The function `name`(args) of these lines (indented as nested in it), made from the
    table's field names: the hot paths' code, written per field as by hand, made from the
    one declaration instead (as dataclasses makes __init__)."""
    assert all(a.isidentifier() for a in args)     # (the table's names: Field checks them)
    source = f"def {name}({', '.join(args)}):\n" + "".join(f"    {line}\n" for line in body)
    exec(source, scope)     # noqa: S102 (its names are the table's, identifiers)
    return scope[name]

