"""docs/configuration.md's table of every timing (and switch), written from manybench.yaml and schema.yaml,
so the page cannot say another value than the package:

    python -m manybench.config.doc --write docs/configuration.md    # regenerate
    python -m manybench.config.doc --check docs/configuration.md    # exit 1 if stale

The table sits between BEGIN and END (tests/run/test_config_docs.py fails when it is stale).
Other pages that quote a timing name its key beside the value, "every 2 s (`lease.renew`)",
and the same test checks each such value against the defaults.
"""
from __future__ import annotations

import re
import sys

from .. import docpage
from . import DEFAULTS, ENV_PREFIX, NEST, SCHEMA, _leaves, _yaml

BEGIN = ("<!-- every timing: written by `python -m manybench.config.doc --write "
         "docs/configuration.md` from config/manybench.yaml and schema.yaml; edit those -->")
END = "<!-- end of every timing -->"
# a value quoted in a page with its key: "10 s (`lease.length`)", "5 minutes
# (`mpi.startup_timeout`)"
QUOTED = re.compile(r"(\d+(?:\.\d+)?)\s?(ms|s|seconds?|m|min|minutes?|h|hours?|days?)\s?"
                    r"\(`([a-z_]+\.[a-z_]+)`\)")
_UNIT_S = {"ms": 1e-3, "s": 1.0, "second": 1.0, "seconds": 1.0, "m": 60.0, "min": 60.0,
           "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
           "day": 86400.0, "days": 86400.0}


def quoted_seconds(number: str, unit: str) -> float:
    return float(number) * _UNIT_S[unit]


def schema_leaves(schema: dict, prefix: str = "") -> dict[str, dict]:
    out: dict[str, dict] = {}
    for key, spec in schema.get("properties", {}).items():
        if spec.get("type") == "object":
            out.update(schema_leaves(spec, f"{prefix}{key}."))
        else:
            out[prefix + key] = spec
    return out


def markdown() -> str:
    defaults = _leaves(_yaml(DEFAULTS))
    specs = schema_leaves(_yaml(SCHEMA))
    rows = ["| key | default | variable | read by | meaning |", "|---|---|---|---|---|"]
    for key, value in defaults.items():
        spec = specs[key]
        var = ENV_PREFIX + NEST.join(key.split(".")).upper()
        text = " ".join(spec["description"].replace("|", "\\|").split())
        shown = str(value).lower() if isinstance(value, bool) else value   # as YAML writes it
        rows.append(f"| `{key}` | {shown} | `{var}` | {spec['x-read-by']} | {text} |")
    return "\n".join(rows) + "\n"


def with_section(text: str) -> str:
    """The page with its generated table replaced (appended when it has none)."""
    return docpage.with_section(text, BEGIN, END, markdown())


def main(argv: list[str]) -> int:
    return docpage.main(argv, with_section, __doc__, "its table of timings is not the "
                        "package's: run python -m manybench.config.doc")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
