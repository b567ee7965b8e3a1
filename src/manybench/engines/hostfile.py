"""Hostfiles: Pwrake style (`node01 8`) or MPI style (`node01 slots=8`), one host a line."""
from __future__ import annotations

import re

_LINE = re.compile(r"^(?P<host>[A-Za-z0-9_.:\[\]-]+)(?:\s+(?:slots\s*=\s*)?(?P<slots>\d+))?\s*$")


class HostfileError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def parse_hostfile(text: str, path: str = "<hostfile>") -> list[tuple[str, int | None]]:
    """[(host, slots or None)] in file order; None: the node's own cpu count."""
    hosts: list[tuple[str, int | None]] = []
    problems = []
    seen = set()
    for no, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if not m:
            problems.append(f"{path}:{no}: expected `host N` or `host slots=N`, got {line!r}")
            continue
        host, slots = m["host"], int(m["slots"]) if m["slots"] else None
        if slots == 0:
            problems.append(f"{path}:{no}: {host}: slots must be at least 1")
        elif host in seen:
            problems.append(f"{path}:{no}: {host} is listed twice")
        else:
            seen.add(host)
            hosts.append((host, slots))
    if not hosts and not problems:
        problems.append(f"{path}: no hosts")
    if problems:
        raise HostfileError(problems)
    return hosts


def load_hostfile(path: str) -> list[tuple[str, int | None]]:
    try:
        with open(path) as f:
            return parse_hostfile(f.read(), path)
    except OSError as e:
        raise HostfileError([f"{path}: {e.strerror}"]) from None
