"""Seed corpora for the fuzzers in fuzz/: real frames and lines, whole and cut short.

    python fuzz/seeds.py wire DIR   message bodies as node/protocol.py encodes them: every
                                    message tests/node/test_codec.py round-trips
    python fuzz/seeds.py rank DIR   what a slot sends its rank (kernels/rank_link.py): its
                                    place line, then its go line

Run with src/ and tests/ importable (scripts/fuzz.sh sets PYTHONPATH).
"""
from __future__ import annotations

import hashlib
import importlib
import sys
from pathlib import Path


def cut_short(data: bytes) -> list[bytes]:
    """The input whole and cut at a few places: a frame or line that ended early."""
    n = len(data)
    return [data] + [data[:k] for k in sorted({1, n // 4, n // 2, 3 * n // 4, n - 1}) if 0 < k < n]


def _test_module(name: str):
    """A test module of tests/, in whichever of its folders it is (they are grouped by layer)."""
    [path] = (Path(__file__).resolve().parent.parent / "tests").rglob(f"{name}.py")
    sys.path.insert(0, str(path.parent))
    return importlib.import_module(name)


def wire() -> list[bytes]:
    import msgpack
    from manybench.node import protocol as P
    codec = _test_module("test_codec")
    bodies = [P.encode(m)[P.HEADER_SIZE:] for m in codec._messages() + codec._slot_messages()]
    # shared objects nested 300 deep: the stack overflow fixed in codec.py, kept as a seed
    nested = msgpack.packb([1])
    for _ in range(300):
        nested = msgpack.packb(msgpack.ExtType(P.CODEC.code[P.WirePhase], nested))
    # recipes (fuzz/wire_decode.c's build): an object of each code with no fields, a Renew
    # (code 4) with its one field, an array holding an object, a shared phase holding one
    recipes = [bytes([0xff, 6, 0, code]) for code in range(len(P.WIRE_TYPES) + 2)]
    recipes += [bytes([0xff, 6, 1, 4, 4, 9]), bytes([0xff, 5, 2, 6, 0, 1, 0, 0]),
                bytes([0xff, 7, 0, P.CODEC.code[P.WirePhase], 6, 2, 13, 3, 4, 0, 0])]
    return bodies + [nested] + recipes


def rank() -> list[bytes]:
    t0, spin = 1_700_000_000_123_456_789, 20_000_000
    places = ["0-3,8 0 /tmp/manybench/scratch/run-1/n1/3", "5 - /scratch/r", "- - /tmp",
              "- 0-1 /s", "0,2,4-6 1 /s"]
    lines = [f"place {p}\ngo {t0} {spin}\n".encode() for p in places]
    # the two hangs fixed in mbrank.c's parsers, kept as seeds: each must stay quick
    lines += [b"place -9223372036854775808-0 - /\n",
              f"place - - /\ngo {-(1 << 63) + 1} 100\n".encode()]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("wire", "rank"):
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    seeds = {s for whole in (wire() if argv[0] == "wire" else rank()) for s in cut_short(whole)}
    seeds.discard(b"\xff")
    for s in seeds:
        (out / hashlib.sha1(s).hexdigest()).write_bytes(s)
    print(f"{argv[0]}: {len(seeds)} seeds in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
