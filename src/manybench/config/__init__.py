"""manybench's timings, one configuration as Dask has it (distributed.yaml + dask.config):
defaults in manybench.yaml beside this file, their meaning in schema.yaml, overridden by a
user file and then by the environment (MANYBENCH_SECTION__KEY=value), read once per process.

    from manybench import config
    config.timing("lease.length")      # 10.0
    config.switch("run.gc_pause")      # True: a choice, not a timing (true or false)

A bad value is a ConfigError naming the key and where it came from (the CLI: exit 2). Values
the nodes must share with their coordinator (schema.yaml's `x-read-by`) are the
coordinator's: it sends them (Start, Renew) or records them (the run's notes); a node's own
file or environment does not decide them.

Importing this module costs next to nothing (os, contextlib, typing): YAML is read at the first
value asked, and jsonschema imported only when a user file or variable overrides a default
(the defaults are checked against the schema by the tests). The command line reads it before
a command only when something overrides a default (check).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator, Mapping

ENV_PREFIX = "MANYBENCH_"
ENV_FILE = "MANYBENCH_CONFIG"       # a user file elsewhere than the XDG place
NEST = "__"                         # MANYBENCH_LEASE__LENGTH: lease.length, as DASK_ does
DEFAULTS = os.path.join(os.path.dirname(__file__), "manybench.yaml")
SCHEMA = os.path.join(os.path.dirname(__file__), "schema.yaml")
# a value that must be shorter than another for either to work (renewals before the lease
# runs out; the agent's own kill before the coordinator calls the node lost)
SHORTER = (("lease.renew", "lease.length"), ("heartbeat.every", "heartbeat.stale"),
           ("node.kill_grace", "engines.lost_grace"))

Value = float | bool      # a timing, in seconds, or a switch (its default is true or false)
_values: dict[str, Value] | None = None


class ConfigError(ValueError):
    """A bad configuration: the message names the key and the file or variable it came from."""


def timing(key: str) -> float:
    """The timing `key` ("section.name") in seconds."""
    values = _values if _values is not None else load()
    return values[key]


def switch(key: str) -> bool:
    """The switch `key` ("section.name"): a key whose default is true or false."""
    values = _values if _values is not None else load()
    return bool(values[key])


def check() -> None:
    """Read now when a user file or a variable overrides a default, so a bad value is found
    before a command starts (ConfigError); with neither, nothing: the defaults are valid (the
    tests check them) and are read at the first value asked, so a command that asks none
    (`--help`) never imports YAML."""
    env = os.environ
    if os.path.isfile(user_file(env)) or env.get(ENV_FILE) or any(
            name.startswith(ENV_PREFIX) and NEST in name for name in env):
        load()


def load() -> dict[str, Value]:
    """Read the configuration (once: later calls return the same), or raise ConfigError."""
    global _values
    if _values is None:
        _values = read(os.environ)
    return _values


@contextlib.contextmanager
def set(values: Mapping[str, Value]) -> Iterator[None]:   # noqa: A001 (dask.config.set)
    """Within the block, these keys (dotted) have these values in seconds, or true or false
    for a switch (tests)."""
    global _values
    before = dict(load())
    unknown = sorted(k for k in values if k not in before)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]}")
    _values = {**before, **{k: bool(v) if isinstance(before[k], bool) else float(v)
                            for k, v in values.items()}}
    try:
        yield
    finally:
        _values = before


def user_file(environ: Mapping[str, str] | None = None) -> str:
    """$MANYBENCH_CONFIG, else $XDG_CONFIG_HOME/manybench/manybench.yaml, else
    ~/.config/manybench/manybench.yaml (read when it exists)."""
    env = os.environ if environ is None else environ
    return env.get(ENV_FILE) or os.path.join(
        env.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "manybench",
        "manybench.yaml")


def overridden() -> dict[str, Value]:
    """The keys whose values here are not the package's (a run records them: inventory)."""
    own = defaults()
    return {key: value for key, value in load().items() if value != own[key]}


def defaults() -> dict[str, Value]:
    """The package's own values, whatever the user's file or environment say (docs, tests)."""
    return read({}, user=False)


def read(environ: Mapping[str, str], user: bool = True) -> dict[str, Value]:
    """The defaults, the user file's (unless not `user`) and the environment's values over
    them: every timing in seconds, every switch true or false, checked."""
    tree = _yaml(DEFAULTS)
    switches = {key for key, value in _leaves(tree).items() if isinstance(value, bool)}
    origin: dict[str, str] = {key: DEFAULTS for key in _leaves(tree)}
    path = user_file(environ)
    if user and (os.path.isfile(path) or environ.get(ENV_FILE)):
        _merge(tree, _yaml(path) or {}, path, origin)
    for name in sorted(environ):
        rest = name[len(ENV_PREFIX):]
        if name.startswith(ENV_PREFIX) and NEST in rest:
            keys = rest.lower().split(NEST)
            _merge(tree, _nested(keys, _scalar(environ[name])), "$" + name, origin)
    if any(where != DEFAULTS for where in origin.values()):
        _check_schema(tree, origin)
    values = {key: _switch(key, value, origin[key]) if key in switches
              else _duration(key, value, origin[key]) for key, value in _leaves(tree).items()}
    for short, long in SHORTER:
        if values[short] >= values[long]:
            raise ConfigError(f"{short} ({_said(short, tree, origin)}) must be shorter than "
                              f"{long} ({_said(long, tree, origin)})")
    return values


def _yaml(path: str) -> Any:
    import yaml
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        raise ConfigError(f"{path}: not YAML{at}: {getattr(e, 'problem', None) or e}") from None


def _scalar(text: str) -> Any:
    """An environment variable's value: a number when it reads as one, else the string."""
    try:
        return float(text)
    except ValueError:
        return text


def _nested(keys: list[str], value: Any) -> dict:
    for key in reversed(keys):
        value = {key: value}
    return value


def _merge(tree: dict, over: Any, where: str, origin: dict[str, str]) -> None:
    """Put `over`'s values into `tree` (the defaults': no key they lack), noting each key's
    origin. `where`: the file or variable, named in errors."""
    def walk(into: dict, part: Any, path: list[str]) -> None:
        if not isinstance(part, dict):
            name = ".".join(path) or "the file"
            raise ConfigError(f"{where}: {name} must be a mapping of keys, got {part!r}")
        for key, value in part.items():
            dotted = ".".join([*path, str(key)])
            if key not in into:
                known = ", ".join(sorted(".".join([*path, k]) for k in into))
                raise ConfigError(f"{where}: unknown key {dotted} (known: {known})")
            if isinstance(into[key], dict):
                walk(into[key], value, [*path, key])
            else:
                into[key] = value
                origin[dotted] = where
    walk(tree, over, [])


def _leaves(tree: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def _check_schema(tree: dict, origin: dict[str, str]) -> None:
    import jsonschema
    validator = jsonschema.Draft202012Validator(_yaml(SCHEMA))
    for error in sorted(validator.iter_errors(tree), key=lambda e: list(e.absolute_path)):
        key = ".".join(str(p) for p in error.absolute_path)
        raise ConfigError(f"{origin.get(key, DEFAULTS)}: {key}: {_why(error)}")


def _why(error: Any) -> str:
    if error.validator == "oneOf":     # a value's forms (schema.yaml's $defs): say what one is
        if error.schema.get("x-is") == "switch":
            return f"{error.instance!r} is not true or false"
        return f"{error.instance!r} is not a duration (try 10s, 500ms, 2m, or seconds > 0)"
    return error.message


def _duration(key: str, value: Any, where: str) -> float:
    from ..units import parse_duration
    try:
        s = parse_duration(value)
    except ValueError as e:
        raise ConfigError(f"{where}: {key}: {e}") from None
    if s <= 0:
        raise ConfigError(f"{where}: {key}: must be more than 0, got {value!r}")
    return s


# a switch as the environment writes it (YAML reads true/false, on/off, yes/no itself)
_SWITCH_TEXT = {"true": True, "on": True, "yes": True, "1": True,
                "false": False, "off": False, "no": False, "0": False}


def _switch(key: str, value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value in (0.0, 1.0):     # "0", "1" in the environment
        return bool(value)
    got = _SWITCH_TEXT.get(str(value).strip().lower())
    if got is None:
        raise ConfigError(f"{where}: {key}: {value!r} is not true or false")
    return got


def _said(key: str, tree: dict, origin: dict[str, str]) -> str:
    value = _leaves(tree)[key]
    return f"{value}" + ("" if origin[key] == DEFAULTS else f", from {origin[key]}")
