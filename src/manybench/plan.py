"""Plan files: TOML -> --set overrides -> validation with field paths -> Plan.

Every problem is collected (a user fixes a plan in one go, not one error per try) and told as
one line `PATH:LINE: FIELD: message`, FIELD in the dotted syntax --set takes. Validation works
on raw locations such as ("task", 0, "block"); only the final formatting turns them into task
names and source lines, so the checks themselves never care where a value came from.
"""
from __future__ import annotations

import copy
import difflib
import itertools
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

import jsonschema

from .kernels import KERNELS, REQUIRED, Kernel
from .model import Plan, TaskSpec, Variant
from .templates import fields as template_fields
from .units import parse_duration, parse_size

# Names every command template may use besides the task's own parameters.
BUILTIN_NAMES = ("node", "slot", "rank", "scratch", "run", "workers", "rep", "phase", "variant",
                 "task")
TASK_FIELDS = ("name", "kernel", "command", "shell", "workers", "dir", "timeout", "env", "metrics")
ORDERS = ("spread", "pack")
PINS = ("core", "numa", "none")
# What a variant may change: per-phase things. Run-wide fields (slots, repeat, ...) would make
# the variants' phases incomparable or cannot differ within one run.
_VARIANT_SETTABLE = ("task", "placement", "scratch")

Loc = tuple  # a raw location: ("task", 0, "block"), ("placement", "workers"), ...


class PlanError(Exception):
    """An invalid plan; `problems` holds one line per problem."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# ---------------------------------------------------------------- structural schema

def _workers_schema() -> dict:
    return {"anyOf": [{"type": "integer", "minimum": 1},
                      {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}}],
            "x-message": "expected a worker count or a list of them, e.g. 4 or [1, 2, 4]"}


def _choice_schema(choices: tuple) -> dict:
    return {"anyOf": [{"type": "string", "enum": list(choices)},
                      {"type": "array", "minItems": 1, "items": {"enum": list(choices)}}],
            "x-message": f"expected one of {', '.join(choices)} (or a list of them)"}


_ENV = {"type": "object", "additionalProperties": {
    "type": ["string", "integer", "number"], "x-message": "environment values are strings"}}
_SCHEMA = {
    "type": "object",
    "required": ["task"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "repeat": {"type": "integer", "minimum": 1},
        "slots": {"type": "integer", "minimum": 1},
        "scratch": {"type": "string", "minLength": 1},
        "keep": {"type": "boolean"},
        "placement": {"type": "object", "additionalProperties": False, "properties": {
            "workers": _workers_schema(), "order": _choice_schema(ORDERS),
            "pin": _choice_schema(PINS)}},
        "task": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "minLength": 1},
                "kernel": {"type": "string"},
                "command": {"type": "array", "minItems": 1, "items": {"type": "string"},
                            "x-message": 'expected a non-empty list of strings, '
                                         'e.g. ["dd", "bs={block}"]'},
                "shell": {"type": "boolean"},
                "workers": _workers_schema(),
                "dir": {"type": "string", "minLength": 1},
                "timeout": {"type": ["string", "number"], "format": "duration"},
                "env": _ENV,
                "metrics": {"type": "object", "additionalProperties": {"type": "string"}}}}},
        "variant": {"type": "array", "items": {
            "type": "object", "required": ["name"], "additionalProperties": False,
            "properties": {"name": {"type": "string", "minLength": 1},
                           "set": {"type": "object"}, "env": _ENV}}},
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


def _known(names: Iterable[str], bad: str) -> str:
    names = sorted(names)
    near = difflib.get_close_matches(bad, names, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"(known: {', '.join(names)}){hint}"


def _explain(err: jsonschema.ValidationError) -> Iterator[tuple[Loc, str]]:
    """Plain-language problems from one jsonschema error."""
    loc, v, inst = tuple(err.absolute_path), err.validator, err.instance
    schema = err.schema if isinstance(err.schema, dict) else {}
    if v == "additionalProperties":
        props = schema.get("properties", {})
        for extra in sorted(set(inst) - set(props)):
            yield loc + (extra,), f"unknown field {extra!r} {_known(props, extra)}"
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
    elif v == "enum":
        yield loc, f"expected one of {', '.join(map(str, err.validator_value))}, got {inst!r}"
    elif v == "minLength":
        yield loc, "must not be empty"
    elif v == "format" and err.cause is not None:
        yield loc, str(err.cause)
    else:
        yield loc, err.message


# ---------------------------------------------------------------- field paths and overrides

def _names(raw: dict, section: str) -> dict[int, str]:
    """Index -> name for entries addressable by name (a string, first of its name)."""
    out: dict[int, str] = {}
    seen: set[str] = set()
    items = raw.get(section)
    for i, item in enumerate(items if isinstance(items, list) else []):
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name and name not in seen:
            out[i] = name
            seen.add(name)
    return out


def field_name(raw: dict, loc: Loc) -> str:
    """The --set style dotted path of a raw location (list element indexes are left out)."""
    parts: list[str] = []
    for k, part in enumerate(loc):
        if k == 1 and isinstance(part, int) and loc[0] in ("task", "variant"):
            name = _names(raw, loc[0]).get(part)
            if name is None:
                parts[-1] += f"[{part}]"
            else:
                parts.append(name)
        elif not isinstance(part, int):
            parts.append(str(part))
    return ".".join(parts)


def resolve_key(raw: dict, key: str) -> Loc:
    """Raw location of a --set key (`task.write.block`, `task[1].env.X`); ValueError if none."""
    parts = key.split(".")
    if not key or any(not p.strip() for p in parts):
        raise ValueError("not a field path (e.g. repeat, placement.workers, task.write.block)")
    head = parts[0]
    m = re.fullmatch(r"(task|variant)\[(\d+)\]", head)
    if m or head in ("task", "variant"):
        section = m.group(1) if m else head
        items = raw.get(section) if isinstance(raw.get(section), list) else []
        if m:
            idx, rest = int(m.group(2)), parts[1:]
            if idx >= len(items):
                raise ValueError(f"there is no {section}[{idx}] (the plan has {len(items)})")
        else:
            names = _names(raw, section)
            # Longest match first, so a task named "io.write" is still addressable.
            for j in range(len(parts), 1, -1):
                hit = [i for i, n in names.items() if n == ".".join(parts[1:j])]
                if hit:
                    idx, rest = hit[0], parts[j:]
                    break
            else:
                wanted = parts[1] if len(parts) > 1 else ""
                raise ValueError(f"no {section} named {wanted!r} "
                                 f"(the plan has: {', '.join(names.values()) or 'none'})")
        if not rest:
            raise ValueError(f"names a whole {section}; give one of its fields, "
                             f"e.g. {key}.workers")
        if section == "variant" and rest[0] == "set" and len(rest) > 1:
            rest = ["set", ".".join(rest[1:])]  # a variant's set keys are paths themselves
        return (section, idx, *rest)
    return tuple(parts)


def assign(raw: dict, loc: Loc, value: Any) -> None:
    """Set raw[loc] = value, creating tables on the way; ValueError if a non-table is in it."""
    node: Any = raw
    for k, part in enumerate(loc[:-1]):
        if isinstance(part, int):  # resolve_key checked the index
            node = node[part]
            continue
        if part not in node:
            node[part] = {}
        node = node[part]
        if not isinstance(node, list if isinstance(loc[k + 1], int) else dict):
            raise ValueError(f"{part!r} is not a table")
    node[loc[-1]] = value


def parse_value(text: str) -> Any:
    """A --set VALUE: a TOML value when it is one (3, true, [2,4], "x"), else the plain string.

    `[64KiB, 1MiB]` is not TOML (unquoted items) but obviously a list, so such a list is split
    and each item read the same way, instead of becoming one odd string.
    """
    try:
        doc = tomllib.loads(f"v = {text}")
        if list(doc) == ["v"]:
            return doc["v"]
    except tomllib.TOMLDecodeError:
        pass
    s = text.strip()
    if s.startswith("[") and s.endswith("]"):
        items = [x.strip() for x in s[1:-1].split(",")]
        return [parse_value(x) for x in items if x]
    return text


def _flatten(table: dict, prefix: str = "") -> dict[str, Any]:
    """Nested tables -> dotted keys: `task.write.block = 1` unquoted in TOML nests tables."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        if isinstance(v, dict) and v:
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# ---------------------------------------------------------------- source lines

_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\\]*"|'[^']*')"""
_DOTTED = rf"({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)"
_KEY_RE = re.compile(rf"^\s*{_DOTTED}\s*=")
_AOT_RE = re.compile(rf"^\s*\[\[\s*{_DOTTED}\s*\]\]\s*(?:#.*)?$")
_TABLE_RE = re.compile(rf"^\s*\[\s*{_DOTTED}\s*\]\s*(?:#.*)?$")


def _key_parts(text: str) -> tuple[str, ...]:
    return tuple(p.strip("\"'") for p in re.findall(_KEY_PART, text))


def _line_index(source: str) -> dict[Loc, int]:
    """Raw location -> line for keys and table headers (best effort, a line-based scan)."""
    index: dict[Loc, int] = {}
    counts: dict[str, int] = {}
    prefix: Loc = ()
    in_multiline = False
    for no, line in enumerate(source.splitlines(), 1):
        # Lines inside multi-line strings are not keys, whatever they look like.
        opens = (line.count('"""') + line.count("'''")) % 2 == 1
        if in_multiline:
            in_multiline = not opens
            continue
        in_multiline = opens
        if m := _AOT_RE.match(line):
            parts = _key_parts(m.group(1))
            counts[parts[0]] = counts.get(parts[0], 0) + 1
            prefix = (parts[0], counts[parts[0]] - 1, *parts[1:])
        elif m := _TABLE_RE.match(line):
            parts = _key_parts(m.group(1))
            prefix = ((parts[0], counts[parts[0]] - 1, *parts[1:]) if parts[0] in counts
                      else parts)
        elif m := _KEY_RE.match(line):
            loc = prefix + _key_parts(m.group(1))
            index.setdefault(loc, no)
            if len(loc) > 4 and loc[0] == "variant" and loc[2] == "set":
                index.setdefault(loc[:3] + (".".join(loc[3:]),), no)
            continue
        else:
            continue
        index.setdefault(prefix, no)
    return index


def _find_line(index: dict[Loc, int], loc: Loc) -> int | None:
    """The key's line, else its enclosing task/variant/table header; never a mere guess."""
    loc = tuple(p for k, p in enumerate(loc) if k == 1 or not isinstance(p, int))
    for n in range(len(loc), 0, -1):
        if loc[:n] in index:
            return index[loc[:n]]
        if n == 2 and loc[0] in ("task", "variant"):
            break  # no header for it: do not fall back to an unrelated top-level line
    return None


# ---------------------------------------------------------------- validation

def _as_workers(value: Any) -> list[int] | None:
    """Worker counts when the value is well formed (the schema reports it otherwise)."""
    vals = value if isinstance(value, list) else [value]
    ok = vals and all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in vals)
    return list(vals) if ok else None


def _check_dir(loc: Loc, value: Any, check: bool, probs: list) -> str | None:
    """Expand $VARS and ~ (as in HPC job scripts) and, when asked, check it is writable."""
    if not isinstance(value, str) or not value:
        return None
    path = os.path.expanduser(os.path.expandvars(value))
    if check:
        unset = re.findall(r"\$\{?(\w+)", path)
        if unset:
            probs.append((loc, f"environment variable {unset[0]} is not set ({value!r})"))
        elif not os.path.exists(path):
            probs.append((loc, f"directory does not exist: {path}"))
        elif not os.path.isdir(path):
            probs.append((loc, f"not a directory: {path}"))
        elif not os.access(path, os.W_OK | os.X_OK):
            probs.append((loc, f"directory is not writable: {path}"))
    return path


def sweep_points(params: dict[str, Any]) -> list[dict[str, Any]]:
    """Cartesian product of the list values, first declared outermost; scalars ride along."""
    axes = [v if isinstance(v, list) else [v] for v in params.values()]
    return [dict(zip(params, combo)) for combo in itertools.product(*axes)]


def kernel_params(kernel: Kernel, values: dict[str, Any]) -> dict[str, Any]:
    """One point's values parsed (bytes, seconds) with defaults filled; unset optionals left out.

    Keys follow the kernel's declaration order, so every variant's phases list them alike.
    """
    out: dict[str, Any] = {}
    for name, p in kernel.params.items():
        if name in values:
            out[name] = p.parse(values[name])
        elif name != "dir" and p.default is not None and p.default is not REQUIRED:
            out[name] = p.parse(p.default)
    return out


def _first(value: Any, default: str) -> str:
    """Plan.order/pin: the value, or the first of a sweep (phases read the sweep from raw)."""
    v = value[0] if isinstance(value, list) and value else value
    return v if isinstance(v, str) else default


def _slot_check(loc: Loc, workers: list[int] | None, slots: int | None, probs: list) -> None:
    over = [w for w in workers or () if slots is not None and w > slots]
    if over:
        probs.append((loc, f"{', '.join(map(str, over))} workers but only {slots} slots"))


def _env(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _task(i: int, t: Any, ctx: dict, probs: list) -> TaskSpec | None:
    if not isinstance(t, dict):
        return None
    loc = ("task", i)
    kname, command = t.get("kernel"), t.get("command")
    if "kernel" in t and "command" in t:
        probs.append((loc + ("kernel",), "give either kernel or command, not both"))
    elif "kernel" not in t and "command" not in t:
        probs.append((loc, 'needs kernel = "..." (a built-in) or command = [...]'))
    workers = _as_workers(t["workers"]) if "workers" in t else None
    _slot_check(loc + ("workers",), workers, ctx["slots"], probs)
    tdir = _check_dir(loc + ("dir",), t.get("dir"), ctx["check_dirs"], probs)
    timeout = None
    try:
        if "timeout" in t and not isinstance(t["timeout"], bool):
            timeout = parse_duration(t["timeout"])
            if timeout <= 0:
                probs.append((loc + ("timeout",), "must be greater than zero"))
    except ValueError:
        pass  # reported by the schema's duration format
    params = {k: v for k, v in t.items() if k not in TASK_FIELDS}
    spec = TaskSpec(name=str(t.get("name", f"task{i}")), kernel="command", params=params,
                    timeout=timeout, env=_env(t.get("env")), dir=tdir, workers=workers)
    if "kernel" in t:
        spec.kernel = str(kname)
        _kernel_task(loc, t, params, tdir or ctx["scratch"], probs)
    elif isinstance(command, list) and all(isinstance(c, str) for c in command):
        spec.command, spec.shell = command, t.get("shell") is True
        spec.metrics = {k: v for k, v in (t.get("metrics") or {}).items() if isinstance(v, str)}
        _command_task(loc, command, params, spec.metrics, probs)
    return spec


def _kernel_task(loc: Loc, t: dict, params: dict, tdir: str | None, probs: list) -> None:
    kernel = KERNELS.get(t["kernel"]) if isinstance(t["kernel"], str) else None
    if kernel is None:
        if isinstance(t["kernel"], str):
            probs.append((loc + ("kernel",), f"unknown kernel {t['kernel']!r} "
                                             f"{_known(KERNELS, t['kernel'])}"))
        return
    for f in ("shell", "metrics"):
        if f in t:
            probs.append((loc + (f,), f"only for command tasks, not for kernel {kernel.name}"))
    n_before = len(probs)
    for name, value in params.items():
        p = kernel.params.get(name)
        if p is None:
            known = _known([k for k in kernel.params if k != "dir"], name)
            probs.append((loc + (name,),
                          f"unknown field {name!r} for kernel {kernel.name} {known}"))
            continue
        if isinstance(value, list) and not value:
            probs.append((loc + (name,), "empty sweep"))
        for v in value if isinstance(value, list) else [value]:
            try:
                p.parse(v)
            except ValueError as e:
                probs.append((loc + (name,), str(e)))
    for name, p in kernel.params.items():
        if p.default is REQUIRED and name not in params and name != "dir":
            probs.append((loc + (name,), f"required by kernel {kernel.name}, missing"))
    if len(probs) == n_before and kernel.check:
        seen: dict[tuple[str, str], None] = {}
        for point in sweep_points(params):
            vals = kernel_params(kernel, point)
            vals["dir"] = tdir
            for fld, msg in kernel.check(vals):
                seen.setdefault((fld, msg), None)
        probs.extend((loc + (fld,), msg) for fld, msg in seen)


def _command_task(loc: Loc, command: list[str], params: dict, metrics: dict,
                  probs: list) -> None:
    for name, value in params.items():
        if name in BUILTIN_NAMES:
            probs.append((loc + (name,), f"{name!r} is a built-in template name; "
                                         "rename this parameter"))
        if isinstance(value, list) and not value:
            probs.append((loc + (name,), "empty sweep"))
        elif any(isinstance(v, (dict, list)) for v in (value if isinstance(value, list)
                                                       else [value])):
            probs.append((loc + (name,), "a template parameter is a value or a list of values"))
    unknown: dict[str, None] = {}
    for arg in command:
        try:
            for n in template_fields(arg):
                if n not in params and n not in BUILTIN_NAMES:
                    unknown.setdefault(n, None)
        except ValueError as e:
            probs.append((loc + ("command",), str(e)))
    for n in unknown:
        probs.append((loc + ("command",), f"template names unknown parameter {n!r} "
                                          f"(define it in the task, or use one of "
                                          f"{', '.join(BUILTIN_NAMES)})"))
    for name, rx in metrics.items():
        try:
            if "value" not in re.compile(rx).groupindex:
                probs.append((loc + ("metrics", name), "needs a named group (?P<value>...)"))
        except re.error as e:
            probs.append((loc + ("metrics", name), f"invalid regular expression: {e}"))


def _build(raw: dict, path: str, slots: int | None, check_dirs: bool,
           with_variants: bool = True) -> tuple[Plan | None, list[tuple[Loc, str]]]:
    probs: list[tuple[Loc, str]] = []
    for err in _VALIDATOR.iter_errors(raw):
        probs.extend(_explain(err))
    if slots is None and isinstance(raw.get("slots"), int) and not isinstance(raw["slots"], bool):
        slots = raw["slots"]
    place = raw.get("placement") if isinstance(raw.get("placement"), dict) else {}
    workers = _as_workers(place["workers"]) if "workers" in place else [slots or 1]
    _slot_check(("placement", "workers"), workers, slots, probs)
    scratch = _check_dir(("scratch",), raw.get("scratch"), check_dirs, probs)
    ctx = {"slots": slots, "scratch": scratch, "check_dirs": check_dirs}
    tasks_raw = raw.get("task") if isinstance(raw.get("task"), list) else []
    tasks = [s for i, t in enumerate(tasks_raw) if (s := _task(i, t, ctx, probs))]
    names = _names(raw, "task")
    for i, t in enumerate(tasks_raw):
        if i not in names and isinstance(t, dict) and isinstance(t.get("name"), str) and t["name"]:
            probs.append((("task", i, "name"), f"duplicate task name {t['name']!r}"))
    variants = _variants(raw, path, slots, check_dirs, probs) if with_variants else []
    if probs:
        return None, probs
    name = raw.get("name") or ("plan" if path.startswith("<") else Path(path).stem)
    return Plan(name=name, tasks=tasks, repeat=raw.get("repeat", 1), workers=workers or [1],
                order=_first(place.get("order"), "spread"), pin=_first(place.get("pin"), "core"),
                slots=slots, scratch=scratch, keep=raw.get("keep", False), variants=variants,
                path=path, raw=raw), probs


def _variants(raw: dict, path: str, slots: int | None, check_dirs: bool,
              probs: list) -> list[Variant]:
    """Each variant's set is applied to a copy of the plan and validated as a whole; only the
    problems the variant adds are reported, on the set key that caused them when known."""
    items = raw.get("variant") if isinstance(raw.get("variant"), list) else []
    base_probs = set(probs)
    names = _names(raw, "variant")
    out: list[Variant] = []
    for i, v in enumerate(items):
        if not isinstance(v, dict):
            continue
        if i not in names and isinstance(v.get("name"), str) and v["name"]:
            probs.append((("variant", i, "name"), f"duplicate variant name {v['name']!r}"))
        sets = _flatten(v["set"]) if isinstance(v.get("set"), dict) else {}
        out.append(Variant(name=str(v.get("name", "")), set=sets, env=_env(v.get("env"))))
        vraw = copy.deepcopy({k: val for k, val in raw.items() if k != "variant"})
        targets: dict[Loc, str] = {}
        for key, value in sets.items():
            kloc = ("variant", i, "set", key)
            head = re.sub(r"\[\d+\]$", "", key.split(".")[0])
            try:
                if head not in _VARIANT_SETTABLE:
                    raise ValueError(f"a variant cannot set {head!r} "
                                     "(only task.*, placement.* and scratch)")
                loc = resolve_key(vraw, key)
                if loc[0] == "task" and loc[2:] == ("name",):
                    raise ValueError("a variant cannot rename a task")
                assign(vraw, loc, value)
                targets[loc] = key
            except ValueError as e:
                probs.append((kloc, str(e)))
        _, vprobs = _build(vraw, path, slots, check_dirs, with_variants=False)
        for ploc, msg in vprobs:
            if (ploc, msg) in base_probs:
                continue
            key = next((k for t, k in targets.items() if ploc[:len(t)] == t), None)
            if key is not None:
                probs.append((("variant", i, "set", key), msg))
            else:
                probs.append((("variant", i, "set"),
                              f"with this variant, {field_name(vraw, ploc)}: {msg}"))
    return out


# ---------------------------------------------------------------- entry points

def load_plan(path: str | os.PathLike, overrides: Iterable[str] = (), slots: int | None = None,
              check_dirs: bool = True) -> Plan:
    """Read, override, validate; PlanError lists every problem found."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError([f"{path}: cannot read the plan: {getattr(e, 'strerror', None) or e}"])
    return parse_plan(text, str(path), overrides, slots, check_dirs)


def parse_plan(text: str, path: str = "<plan>", overrides: Iterable[str] = (),
               slots: int | None = None, check_dirs: bool = True) -> Plan:
    """Validate a plan's TOML text (path is only used in messages and for the default name)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        where = f"{path}:{m.group(1)}:{m.group(2)}" if m else path
        raise PlanError([f"{where}: TOML syntax: {re.sub(r' *[(]at line.*', '', str(e))}"])
    problems: list[str] = []
    if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int) or slots < 1):
        problems.append(f"--slots: must be a positive integer, got {slots!r}")
        slots = None
    overridden: list[Loc] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"--set {item!r}: expected KEY=VALUE (e.g. --set repeat=3)")
            continue
        try:
            loc = resolve_key(raw, key)
            assign(raw, loc, parse_value(value))
            overridden.append(loc)
        except (ValueError, IndexError) as e:
            problems.append(f"--set: {key}: {e}")
    plan, probs = _build(raw, path, slots, check_dirs)
    index = _line_index(text)
    found: list[tuple[float, str]] = []
    for loc, msg in probs:
        field = field_name(raw, loc)
        if any(loc[:len(o)] == o for o in overridden):
            found.append((float("inf"), f"{path}: {field}: {msg} (from --set)"))
            continue
        line = _find_line(index, loc)
        where = f"{path}:{line}" if line else path
        found.append((line or float("inf"), f"{where}: {field}: {msg}" if field
                      else f"{where}: {msg}"))
    found.sort(key=lambda x: x[0])  # stable: same-line problems keep the order found
    problems += list(dict.fromkeys(s for _, s in found))
    if problems or plan is None:
        raise PlanError(problems)
    plan.source = text
    for i, t in enumerate(plan.tasks):
        t.line = _find_line(index, ("task", i))
    return plan


def variant_plan(plan: Plan, variant: Variant) -> Plan:
    """The plan as one variant's phases see it: its `set` applied (validated at load time)."""
    raw = copy.deepcopy({k: v for k, v in plan.raw.items() if k != "variant"})
    for key, value in variant.set.items():
        assign(raw, resolve_key(raw, key), value)
    vplan, probs = _build(raw, plan.path, plan.slots, check_dirs=False, with_variants=False)
    if vplan is None:  # only when the plan was built without parse_plan
        raise PlanError([f"{plan.path}: {field_name(raw, loc)}: {msg}" for loc, msg in probs])
    vplan.source = plan.source
    for t, base in zip(vplan.tasks, plan.tasks):
        t.line = base.line
    return vplan
