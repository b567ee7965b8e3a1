"""The body of every message that crosses to a node: msgpack, typed, no pickle.

A message is a frozen dataclass of a fixed table of wire types (protocol.WIRE_TYPES). An
object of one is a msgpack array: first a msgpack extension with no data whose code is the
type's place in that table (1, 2, ...), then its fields in declaration order. A tuple is the
same with code 0, so what is sent as a tuple comes back a tuple (a list stays a list). The
one phase sent to every node and a node's assignments sent phase after phase (the `shared`
types) are instead the extension of their code whose data is that array packed once, and
reused while among the last packed or unpacked of their type (an identity cache holding
them, so an id is never reused under it; wire types are frozen; how many per type: the
`shared` table), and bytes that come again make no new object: the agent passes the phase
it got on to its slots without packing it again. Every other value is msgpack's own: None, bool, int, float, str, bytes, arrays, maps
(int or str keys). Anything else is refused when packing (TypeError), and unpacking builds
nothing but those types: a peer that is not manybench can speak this with any msgpack library
and the table, and a hostile one can make no code run.
"""
from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from operator import attrgetter
from typing import Any, Callable, Mapping, Sequence

import msgpack

try:   # the hooks in C (kernels/native/wire.c); these Python ones are the reference
    from .._native import WireHooks
except ImportError:      # the extension is not built: plan checks, dry runs, the coordinator
    WireHooks = None

TUPLE = 0            # the code of a tuple
# msgpack's integers: int 64 down to -2**63, uint 64 up to 2**64 - 1 (beyond: OverflowError
# when packing); a plan's values are checked against them when it is read (plan/wire_values.py)
INT_MIN, INT_MAX = -2**63, 2**64 - 1
KEEP_PACKER = 1 << 20   # a packer whose message was larger is dropped (its buffer with it)
# Shared objects inside shared objects, at most (a Run's phase holds its task: 2). Each is
# unpacked by a call of msgpack's unpacker from inside its hook, ~32 kB of C stack a level:
# a frame of them nested 1,000 deep (5 kB) overflowed the stack and killed the process.
MAX_NESTED = 8


class _Mark:
    """The extension heading an object's array: which type it is."""
    __slots__ = ("code",)

    def __init__(self, code: int) -> None:
        self.code = code


class Codec:
    def __init__(self, types: Sequence[type], shared: Mapping[type, int] = {},
                 native: bool = True) -> None:
        """types: the wire types, in their fixed order (their codes are 1, 2, ...); shared:
        those whose packed bytes are reused (one object sent to every node), each with how
        many of its objects are kept (the most recent): a phase is new at every phase, a
        placement's assignments come back phase after phase. native: msgpack's hooks in C
        where the extension is built (the same bytes and objects: tests/node/test_codec.py)."""
        self.types = tuple(types)
        self.code = {t: i + 1 for i, t in enumerate(self.types)}
        self.head = {t: msgpack.ExtType(c, b"") for t, c in self.code.items()}
        self.fields = {t: tuple(f.name for f in dataclasses.fields(t)) for t in self.types}
        # each type's fields read in one C call (a getattr per field cost a call each)
        self.values = {t: _reader(self.fields[t]) for t in self.types}
        self.shared = frozenset(shared)
        self.limit = {self.code[t]: n for t, n in shared.items()}
        self.marks = [_Mark(c) for c in range(len(self.types) + 1)]
        # an object's bytes up to its first field: the array's length, the type's extension
        self.prefix = {t: msgpack.Packer().pack_array_header(len(self.fields[t]) + 1)
                       + msgpack.packb(self.head[t]) for t in self.types}
        self.last = len(self.types)     # the highest code
        self.names = [(), *[self.fields[t] for t in self.types]]
        # id -> (the object, its packed extension), oldest first; the object is held, so
        # its id is not reused while it is here
        self.recent: dict[int, OrderedDict[int, tuple[object, msgpack.ExtType]]] = {
            c: OrderedDict() for c in self.limit}
        # per type, packed bytes -> the shared object decoded from them: the same
        # assignments come phase after phase (64 per node), decoded once (wire types are
        # frozen: one object may serve every message that holds it)
        self.decoded: dict[int, OrderedDict[bytes, object]] = {
            c: OrderedDict() for c in self.limit}
        # msgpack calls a hook for every object, tuple and type head: in C they cost no frame
        # each (a null node-phase crosses ~35 of them between agent and slot); what they do
        # not take (shared objects, subclasses, refusals) comes back to _ext and _default
        self.native = native and WireHooks is not None
        self._ext_hook, self._list_hook, self._default_hook = self._ext, self._list, self._default
        if self.native:
            plain = {t: c for t, c in self.code.items() if t not in self.shared}
            try:
                hooks = WireHooks((None, *self.types), tuple(self.names),
                                  (_TUPLE_HEAD, *[self.head[t] for t in self.types]), plain,
                                  _TUPLE_HEAD, self._ext, self._default,
                                  {t: self.code[t] for t in self.shared}, self.recent,
                                  self.decoded, self.limit, msgpack.unpackb, msgpack.ExtType,
                                  MAX_NESTED)
            except TypeError:    # an extension built from other sources: the Python hooks
                self.native = False
        if self.native:
            self.marks = list(hooks.marks)
            self._ext_hook, self._list_hook = hooks.ext_hook, hooks.list_hook
            self._default_hook = hooks.default
        self.packers: list[msgpack.Packer] = []
        self.nesting = threading.local()    # .depth: shared objects being unpacked, per thread

    # -- packing -----------------------------------------------------------------------------
    def pack(self, msg: object) -> bytes:
        """msg as msgpack bytes; TypeError naming what is not a wire value."""
        # packers kept, one per level of nesting (a shared object is packed apart inside
        # the pack of the message that holds it): a new one each time allocates its
        # buffer, and one made inside another's pack grew the heap and gave it back (brk
        # twice, ~20 us) at every new phase
        free = self.packers
        packer = free.pop() if free else msgpack.Packer(
            default=self._default_hook, use_bin_type=True, strict_types=True)
        try:
            out = packer.pack(msg)        # autoreset: empty again, even after a TypeError
        except BaseException:
            free.append(packer)
            raise
        if len(out) <= KEEP_PACKER:       # its buffer grew to the message: not kept past this
            free.append(packer)
        return out

    def pack_with(self, msg: object, packed: Mapping[str, bytes]) -> bytes:
        """pack(msg), byte for byte, with the fields named in `packed` already packed
        (pack(value) of each, by a caller that sends the same large value again and again:
        a node's assignments, phase after phase). An object is its fields' packings after a
        prefix, so they are joined, not packed again."""
        prefix = self.prefix.get(type(msg))
        if prefix is None or type(msg) in self.shared:
            return self.pack(msg)          # not an array of its fields: packed as it is
        parts = [prefix]
        for f in self.fields[type(msg)]:
            got = packed.get(f)
            parts.append(got if got is not None else self.pack(getattr(msg, f)))
        return b"".join(parts)

    def _default(self, obj: Any) -> Any:
        t = type(obj)
        if t is tuple:
            return [_TUPLE_HEAD, *obj]
        head = self.head.get(t)
        if head is None:
            for base in (int, float, str, bytes, list, dict):   # a subclass of one (IntEnum)
                if isinstance(obj, base):
                    return base(obj)
            raise TypeError(f"{t.__module__}.{t.__qualname__} cannot cross to a node (not a "
                            "wire type of node/protocol.py)")
        if t not in self.shared:
            return [head, *self.values[t](obj)]
        got = self.recent[head.code].get(id(obj))
        if got is not None and got[0] is obj:
            return got[1]
        ext = msgpack.ExtType(head.code, self.pack(list(self.values[t](obj))))
        self._remember(obj, ext)
        return ext

    def _remember(self, obj: object, ext: msgpack.ExtType) -> None:
        recent = self.recent[ext.code]
        recent[id(obj)] = (obj, ext)
        if len(recent) > self.limit[ext.code]:
            recent.popitem(last=False)

    # -- unpacking ---------------------------------------------------------------------------
    def unpack(self, data: bytes | memoryview) -> Any:
        """The message packed in data; ValueError when it is not one of ours."""
        try:
            return self._unpack(data)
        except (msgpack.UnpackException, ValueError, TypeError, IndexError) as e:
            raise ValueError(f"not a manybench message: {type(e).__name__}: {e}") from None

    def _unpack(self, data: bytes | memoryview) -> Any:
        return msgpack.unpackb(data, ext_hook=self._ext_hook, list_hook=self._list_hook,
                               raw=False, strict_map_key=False)

    def _ext(self, code: int, data: bytes) -> Any:
        if not 0 <= code <= self.last:
            raise ValueError(f"unknown wire type {code}")
        if not data:           # an object's head: the most common
            return self.marks[code]
        decoded = self.decoded.get(code)
        obj = None if decoded is None else decoded.get(data)
        if obj is not None:
            return obj
        depth = getattr(self.nesting, "depth", 0)
        if depth >= MAX_NESTED:
            raise ValueError(f"shared objects nested deeper than {MAX_NESTED}")
        self.nesting.depth = depth + 1
        try:
            values = self._unpack(data)      # a shared object: its array packed apart
        finally:
            self.nesting.depth = depth
        if code == TUPLE or not isinstance(values, list):
            raise ValueError(f"wire type {code} packed apart holds no fields")
        obj = self._make(code, values)
        if decoded is not None:
            # sent on (the agent hands the phase to its slots): its bytes as they came
            self._remember(obj, msgpack.ExtType(code, data))
            decoded[data] = obj
            if len(decoded) > self.limit[code]:
                decoded.popitem(last=False)
        return obj

    def _list(self, values: list) -> Any:
        if not values or type(values[0]) is not type(self.marks[0]):
            return values
        code = values[0].code
        if code == TUPLE:
            return tuple(values[1:])
        names = self.names[code]
        if len(values) != len(names) + 1:
            return self.types[code - 1](*values[1:])
        obj = object.__new__(self.types[code - 1])     # as _make, inline: every object
        obj.__dict__.update(zip(names, values[1:]))
        return obj

    def _make(self, code: int, values: list) -> Any:
        """An object of the type: its fields set as its __init__ would (wire types are plain
        dataclasses without __post_init__, frozen ones refuse only later changes), without
        calling it: a frozen __init__ costs a call per field. A count of fields that does
        not match goes through __init__ (its defaults, or its TypeError)."""
        names = self.names[code]
        if len(values) != len(names):
            return self.types[code - 1](*values)
        obj = object.__new__(self.types[code - 1])
        obj.__dict__.update(zip(names, values))
        return obj


_TUPLE_HEAD = msgpack.ExtType(TUPLE, b"")


def _reader(names: tuple[str, ...]) -> Callable[[object], tuple]:
    """obj -> its fields' values in order, as a tuple (attrgetter of one name gives the value
    alone, of none is no getter at all)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()
