"""The plan's structure as a JSON schema, and its errors as plain-language problems.

Only shape is checked here (types, known fields, choices, size and duration formats); what
depends on several fields or on a kernel is checked when the plan is built.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterable, Iterator

import jsonschema

from ..units import parse_duration, parse_size
from .limits import MAX_CPUS, MAX_REPEAT, MAX_WORKERS
from .overrides import Loc

ORDERS = ("spread", "pack")
PINS = ("core", "numa", "none")
BINDS = ("none", "core", "numa")


def _workers_schema() -> dict:
    one = {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS}
    return {"anyOf": [one, {"type": "array", "minItems": 1, "items": one}],
            "x-message": f"expected a worker count (1 to {MAX_WORKERS:,}) or a list of them, "
                         "e.g. 4 or [1, 2, 4]"}


RANKS_ALL = "workers"     # ranks = "workers": one job of all the phase's workers


def _ranks_schema() -> dict:
    one = {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS}
    message = ("expected ranks per job (1 or more) or a list of them, e.g. 4 or [1, 2, 4], "
               f'or "{RANKS_ALL}" (one job of every worker)')
    return {"anyOf": [one, {"type": "array", "minItems": 1, "items": one},
                      {"type": "string", "enum": [RANKS_ALL], "x-message": message}],
            "x-message": message}


def _choice_schema(choices: tuple) -> dict:
    return {"anyOf": [{"type": "string", "enum": list(choices)},
                      {"type": "array", "minItems": 1, "items": {"enum": list(choices)}}],
            "x-message": f"expected one of {', '.join(choices)} (or a list of them)"}


_ENV = {"type": "object", "additionalProperties": {
    "type": ["string", "integer", "number"], "x-message": "environment values are strings"}}
_STRINGS = {"type": "array", "items": {"type": "string"}}
# [cluster]: how a batch system or SSH starts the nodes' Dask workers (dask-jobqueue's and
# SSHCluster's own option names, so their documentation applies).
_CLUSTER = {"type": "object", "additionalProperties": False, "properties": {
    "nodes": {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS},
    "slots": {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS},
    "queue": {"type": "string"}, "account": {"type": "string"},
    "walltime": {"type": "string"}, "memory": {"type": "string"},
    "cores": {"type": "integer", "minimum": 1},
    "job_script_prologue": _STRINGS, "job_extra_directives": _STRINGS,
    "python": {"type": "string"}, "interface": {"type": "string"},
    "local_directory": {"type": "string"}, "log_directory": {"type": "string"},
    "scheduler_port": {"type": "integer", "minimum": 0},
    "ssh": {"type": "object", "additionalProperties": False, "properties": {
        "username": {"type": "string"}, "port": {"type": "integer"},
        "known_hosts": {"type": "string"}, "client_keys": _STRINGS}},
    "credentials": {"type": "string", "minLength": 1},
    "tls": {"type": "object", "additionalProperties": False, "properties": {
        "ca_file": {"type": "string"}, "cert": {"type": "string"}, "key": {"type": "string"},
        "require_encryption": {"type": "boolean"}}},
}}
# a binding: "none" | "core" | "numa" | { cpus = "0-3" or [0, 1] or per slot ["0-1", "2-3"],
# mems = likewise }; checked further in plan/binding.py
_IDS = {"anyOf": [{"type": "string", "minLength": 1},
                  {"type": "array", "minItems": 1, "items": {"type": ["integer", "string"]}}],
        "x-message": 'expected a cpu list such as "0-3,8", a list of ids such as [0, 1], or one '
                     'cpu list per slot such as ["0-1", "2-3"]'}
_BIND_ONE = {"anyOf": [{"type": "string", "enum": list(BINDS)},
                       {"type": "object", "additionalProperties": False, "minProperties": 1,
                        "properties": {"cpus": _IDS, "mems": _IDS}}],
             "x-message": f"expected one of {', '.join(BINDS)} or a table "
                          '{ cpus = "0-3", mems = "0" }'}
_BIND = {"anyOf": [_BIND_ONE, {"type": "array", "minItems": 1, "items": _BIND_ONE}],
         "x-message": _BIND_ONE["x-message"] + " (or a list of them)"}
_CPUS_ONE = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_CPUS},
                       {"type": "string", "enum": ["numa"]}],
             "x-message": 'expected a cpu count per slot (e.g. 2) or "numa" (a NUMA node each)'}
_CPUS = {"anyOf": [_CPUS_ONE, {"type": "array", "minItems": 1, "items": _CPUS_ONE}],
         "x-message": _CPUS_ONE["x-message"] + " (or a list of them)"}
_ARGVS_TEXT = ('expected a list of commands, each a list of strings, e.g. '
               '[["tuned-adm", "profile", "latency-performance"]]')
_ARGVS = {"type": "array", "x-message": _ARGVS_TEXT,
          "items": {"type": "array", "minItems": 1, "items": {"type": "string"},
                    "x-message": _ARGVS_TEXT}}
_REF_ONE = {"type": "object", "required": ["value"], "additionalProperties": False,
            "properties": {"value": {"type": "number"},
                           "lower": {"type": "number", "maximum": 0},
                           "upper": {"type": "number", "minimum": 0},
                           "at": {"type": "object"}},
            "x-message": "expected { value = N, lower = -0.05, upper = 0.20 } (bounds relative "
                         "to value; at = { workers = 4 } to pick points)"}
# task, variant and group names: shown in messages, reports and labels, one line each
_NAME = {"type": "string", "minLength": 1, "pattern": r"^[^\x00-\x1f\x7f]+$",
         "x-message": "expected a name: not empty, no control characters (newline, tab, ...)"}
_SCHEMA = {
    "type": "object",
    "required": ["task"],
    "additionalProperties": False,
    "properties": {
        # the name is the default results directory's: one path component, no escape
        "name": {"type": "string", "minLength": 1,
                 "pattern": r"^(?!\.\.?$)[^/\\\x00-\x1f]+$",
                 "x-message": "expected a name usable as a directory name: no '/', '\\' or "
                              "control characters, not '.' or '..'"},
        "repeat": {"type": "integer", "minimum": 1, "maximum": MAX_REPEAT},
        "slots": {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS},
        "warmup": {"type": "integer", "minimum": 0, "maximum": MAX_REPEAT},
        "sample": {"type": ["string", "number"], "format": "duration"},
        "telemetry": {"type": ["string", "number"], "format": "duration"},
        "noise": {"type": ["string", "number"], "format": "duration"},
        "late_target": {"type": "number", "minimum": 0, "maximum": 1,
                        "x-message": "expected the share of phases allowed a late start, "
                                     "0 to 1, e.g. 0.01"},
        "scratch": {"type": "string", "minLength": 1},
        "keep": {"type": "boolean"},
        "on_node_loss": {"type": "string", "enum": ["abort", "continue"]},
        "clock_tolerance": {"type": ["string", "number"], "format": "duration"},
        "cluster": _CLUSTER,
        "peaks": {"type": "object", "additionalProperties": {
            "type": "number", "exclusiveMinimum": 0,
            "x-message": "a peak is a positive number in the metric's unit, e.g. "
                         "dp_gflops = 2150.4 or mb_s = 750"}},
        "baseline": {"type": "string", "minLength": 1},
        "concurrent": {"type": "array", "items": {
            "type": "object", "required": ["name", "tasks"], "additionalProperties": False,
            "properties": {"name": _NAME,
                           "tasks": {"type": "array", "minItems": 2, "items": {"type": "string"},
                                     "x-message": 'expected two or more task names, e.g. '
                                                  '["write", "mdtest"]'}}}},
        "reference": {"type": "object", "additionalProperties": {
            "anyOf": [_REF_ONE, {"type": "array", "minItems": 1, "items": _REF_ONE}],
            "x-message": _REF_ONE["x-message"]}},
        "placement": {"type": "object", "additionalProperties": False, "properties": {
            "workers": _workers_schema(), "order": _choice_schema(ORDERS),
            "pin": _choice_schema(PINS), "cpus": _CPUS, "bind": _BIND,
            "resources": {"type": "object"}}},
        "task": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name"], "properties": {
                "name": _NAME,
                "kernel": {"type": "string"},
                "command": {"type": "array", "minItems": 1, "items": {"type": "string"},
                            "x-message": 'expected a non-empty list of strings, '
                                         'e.g. ["dd", "bs={block}"]'},
                "shell": {"type": "boolean"},
                "parse": {"type": "string"},
                "workers": _workers_schema(),
                "order": _choice_schema(ORDERS),
                "ranks": _ranks_schema(),
                "launcher": {"type": "string", "minLength": 1,
                             "x-message": 'expected "auto", "mpirun", "mpiexec", "srun" or a '
                                          "launcher program's name or path"},
                "launcher_args": {"type": "array", "items": {"type": "string"},
                                  "x-message": 'expected a list of strings, e.g. ["--mca", '
                                               '"btl", "self,tcp"]'},
                "startup_timeout": {"type": ["string", "number"], "format": "duration"},
                "nodes": {"type": "array", "minItems": 1, "items": {"type": "string"},
                          "x-message": 'expected a list of node names, e.g. ["node01"]'},
                "dir": {"type": "string", "minLength": 1},
                "timeout": {"type": ["string", "number"], "format": "duration"},
                "warmup": {"type": "integer", "minimum": 0, "maximum": MAX_REPEAT},
                "sample": {"type": ["string", "number"], "format": "duration"},
                "env": _ENV,
                "metrics": {"type": "object", "additionalProperties": {"type": "string"}}}}},
        "variant": {"type": "array", "items": {
            "type": "object", "required": ["name"], "additionalProperties": False,
            "properties": {"name": _NAME,
                           "set": {"type": "object"}, "env": _ENV,
                           "tasks": {"type": "array", "minItems": 1, "items": {"type": "string"},
                                     "x-message": 'expected a list of task names, e.g. ["read"]'},
                           "bind": _BIND_ONE,
                           "wrap": {"type": "array", "minItems": 1, "items": {"type": "string"},
                                    "x-message": 'expected a launcher prefix, e.g. ["ch-run", '
                                                 '"-b", "{scratch}", "{image}", "--"]'},
                           "vars": {"type": "object", "additionalProperties": {
                               "type": ["string", "integer", "number"],
                               "x-message": "template values are strings"}},
                           "setup": _ARGVS, "teardown": _ARGVS,
                           "dir": {"type": "string", "minLength": 1}}}},
    },
}
_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("size", raises=ValueError)
def _is_size(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, (int, str)) or parse_size(value) >= 0


@_FORMATS.checks("duration", raises=ValueError)
def _is_duration(value: Any) -> bool:
    return (isinstance(value, bool) or not isinstance(value, (int, float, str))
            or parse_duration(value) >= 0)


_VALIDATOR = jsonschema.Draft202012Validator(_SCHEMA, format_checker=_FORMATS)
_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string",
               "boolean": "true or false", "array": "a list", "object": "a table"}


def known_names(names: Iterable[str], bad: str) -> str:
    names = sorted(n if n.isprintable() else repr(n) for n in names)
    return f"(known: {', '.join(names)}){did_you_mean(names, bad)}"


def did_you_mean(names: Iterable[str], bad: str) -> str:
    """'; did you mean 'x'?' naming the known name nearest a typo, or '' when none is near."""
    near = difflib.get_close_matches(bad, list(names), n=1)
    return f"; did you mean {near[0]!r}?" if near else ""


def _explain(err: jsonschema.ValidationError) -> Iterator[tuple[Loc, str]]:
    """Plain-language problems from one jsonschema error."""
    loc, v, inst = tuple(err.absolute_path), err.validator, err.instance
    schema = err.schema if isinstance(err.schema, dict) else {}
    if v == "additionalProperties":
        props = schema.get("properties", {})
        for extra in sorted(set(inst) - set(props)):
            yield loc + (extra,), f"unknown field {extra!r} {known_names(props, extra)}"
    elif v == "required":
        for name in err.validator_value:
            if name not in inst:
                yield loc + (name,), ("the plan has no [[task]]; add at least one"
                                      if loc == () else "required field missing")
    elif v in ("anyOf", "oneOf") and err.context:
        # Explain the branch of the right type (a list's problems for a list), if exactly one.
        branches = {i for i, b in enumerate(err.validator_value)
                    if "type" in b and _VALIDATOR.is_type(inst, b["type"])}
        if len(branches) == 1:
            (b,) = branches
            for sub in err.context:
                if sub.schema_path[0] == b:
                    yield from _explain(sub)
        else:
            yield loc, schema.get("x-message") or "not a valid value"
    elif schema.get("x-message"):
        yield loc, schema["x-message"]
    elif v == "minItems":
        yield loc, ("the plan has no [[task]]; add at least one" if loc == ("task",)
                    else "empty sweep" if loc and loc[-1] in ("workers", "order", "pin")
                    else "must not be empty")
    elif v == "type":
        want = err.validator_value
        want = want if isinstance(want, list) else [want]
        yield loc, f"expected {' or '.join(_TYPE_WORDS.get(t, t) for t in want)}, got {inst!r}"
    elif v == "minimum":
        yield loc, f"must be at least {err.validator_value}, got {inst!r}"
    elif v == "maximum":
        yield loc, f"must be at most {err.validator_value:,}, got {inst!r}"
    elif v == "enum":
        yield loc, f"expected one of {', '.join(map(str, err.validator_value))}, got {inst!r}"
    elif v == "minLength":
        yield loc, "must not be empty"
    elif v == "format" and err.cause is not None:
        yield loc, str(err.cause)
    else:
        yield loc, err.message



def schema_problems(raw: dict) -> list[tuple[Loc, str]]:
    """Every structural problem of a raw plan, at its raw location."""
    probs: list[tuple[Loc, str]] = []
    for err in _VALIDATOR.iter_errors(raw):
        probs.extend(_explain(err))
    return probs
