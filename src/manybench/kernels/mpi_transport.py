"""What carried a parallel job's messages, as its MPI library said (native/mbtransport.c).

Each rank sends, at MPI_Finalize, one line of key:value words read from its library:

  pml:NAME, mtl:NAME   Open MPI's selected components
  btl:PEER:NAME        the btl Open MPI's bml chose for sends to world rank PEER
  device:NAME          MPICH's device (ch4:ucx, ch4:ofi)
  nolocal:0|1          MPICH's MPIR_CVAR_NOLOCAL: 1, its node's ranks use the network module
  node:R,R,...         the world ranks the library counts on this rank's node
                       (MPI_COMM_TYPE_SHARED); a trailing "+": more than fitted
  ucx:TL/DEVICE        a lane of one of the rank's UCP endpoints
  ofi:PROVIDER         a libfabric provider the rank opened a fabric of ("tcp;ofi_rxm")

`parse` makes a rank's dict (the record's extra["transport"]); `job_transport` makes the job's
one line (the fact `mpi_transport` on its first record) and a warning for each path that
carried ranks on different nodes through shared memory (the pairs worked out per rank:
transport_pairs.py).
"""
from __future__ import annotations

import re
from typing import Any

from ..results.contract import WarningKind
from .transport_pairs import Pairs, Took

SHOWN_PAIRS = 4                              # pairs named per path; the rest counted
# a word as a library names things: a rank's line is its program's to write, so nothing
# else (a terminal's escape, a spreadsheet's formula) goes on the record
WORD = re.compile(r"[A-Za-z0-9_.:/,;+-]+")
LONGEST = 200           # a word's length at most; the node's ranks up to libmbrank's room
LONGEST_NODE = 3000     # for them (mbtransport.c WORDS): 64 ranks of 4 digits, 324


def parse(words: list[str]) -> dict[str, Any]:
    """A rank's transport words as a dict; words it does not know are left out."""
    out: dict[str, Any] = {}
    for w in words:
        key, _, value = w.partition(":")
        if not WORD.fullmatch(w) or w.startswith(("-", "+")) \
                or len(w) > (LONGEST_NODE if key == "node" else LONGEST):
            continue
        if not value:
            continue
        if key in ("pml", "mtl", "device"):
            out[key] = value
        elif key == "nolocal" and value in ("0", "1"):
            out[key] = int(value)
        elif key == "btl":
            peer, _, name = value.partition(":")
            if peer.isdigit() and name:
                out.setdefault("btl", {}).setdefault(peer, name)
        elif key == "node":
            ranks = value.split(",")
            out["node"] = [int(r) for r in ranks if r.isdigit()]
            if ranks[-1] == "+":
                out["node_cut"] = True
        elif key in ("ucx", "ofi"):
            out.setdefault(key, [])
            if value not in out[key]:
                out[key].append(value)
    if "ofi" in out:    # a core provider a layered one opened ("tcp" under "tcp;ofi_rxm")
        layered = [p.split(";") for p in out["ofi"] if ";" in p]
        out["ofi"] = [p for p in out["ofi"] if ";" in p or not any(p in q for q in layered)]
    return out


def _pairs_text(took: Took) -> str:
    shown = ", ".join(f"{a}-{b}" for a, b in took.first[:SHOWN_PAIRS])
    more = took.count - SHOWN_PAIRS
    return shown + (f" and {more} more" if more > 0 else "")


def job_transport(ranks: dict[int, dict], nodes: dict[int, str]
                  ) -> tuple[str, list[tuple[str, str]]]:
    """The job's line (empty when no rank said) and its warnings [(kind, text)], from each
    rank's parsed words (by job rank) and the node each rank ran on."""
    said = {r: {**t, "rank": r} for r, t in ranks.items() if t}
    if not said:
        return "", []
    first = said[min(said)]
    parts = []
    if "pml" in first:
        parts.append(f"Open MPI pml {first['pml']}" + (f", mtl {first['mtl']}"
                                                      if "mtl" in first else ""))
    elif "device" in first:
        parts.append(f"MPICH {first['device']}")
    by_path, across = Pairs(said, sorted(ranks), nodes).carried(SHOWN_PAIRS)
    for path, took in by_path.items():
        parts.append(f"{path} between ranks {_pairs_text(took)}")
    for key, name in (("ucx", "UCX lanes"), ("ofi", "libfabric")):
        seen = list(dict.fromkeys(x for t in said.values() for x in t.get(key, [])))
        if seen and not any(name in p for p in by_path):
            parts.append(f"{name} " + ", ".join(seen))
    if len(said) < len(ranks):
        parts.append(f"{len(said)} of {len(ranks)} ranks said")
    # one warning per path, naming its first pair: a job of thousands of ranks across
    # namespace nodes would otherwise say it once per pair
    warnings = []
    for path, took in across.items():
        (a, b), more = took.first[0], took.count - 1
        warnings.append((WarningKind.JOB_SHARED_MEMORY,
                         f"ranks {a} (node {nodes[a]}) and {b} (node {nodes[b]})"
                         + (f" and {more} more pairs on different nodes" if more else "")
                         + f" talked through {path}, as their MPI chose: figures between "
                         "those nodes are not the network's"))
    return "; ".join(parts), warnings
