"""A message down the pipe between an agent and one of its slots, in one system call each way.

The pipe is a multiprocessing Pipe (a socket pair) and its framing is multiprocessing's own
(a 4-byte big-endian length, then the bytes), so either end may still be a Connection's
send_bytes or recv_bytes. Connection.recv_bytes reads the length and the body apart (two
reads, each through an io.BytesIO); a slot's phase is a go and a result each way, so
that was four reads and their Python per node-phase. Here a message is written with one
write and read with one read: its peer sends one message and waits for the answer (the
Slot* exchange of protocol.py is strictly request then reply), so nothing beyond it can be
waiting on the pipe.
"""
from __future__ import annotations

import os
import struct

_LEN = struct.Struct("!i")
READ = 1 << 16            # a first read takes what a phase's messages are, whole
MAX = 0x7FFFFFFF          # multiprocessing's framing beyond this is another header: not ours


def send(fd: int, data: bytes) -> None:
    """data as one message (OSError when the peer is gone)."""
    if len(data) > MAX:
        raise ValueError(f"a message of {len(data)} bytes is beyond a slot pipe's framing")
    buf = _LEN.pack(len(data)) + data
    done = os.write(fd, buf)
    if done < len(buf):      # a message beyond the pipe's buffer: the rest as it drains
        view = memoryview(buf)
        while done < len(buf):
            done += os.write(fd, view[done:])


def recv(fd: int) -> bytes:
    """The next message; EOFError when the peer closed, ValueError for what is not one."""
    head = os.read(fd, READ)
    if not head:
        raise EOFError("the pipe closed")
    while len(head) < _LEN.size:
        head += _more(fd, _LEN.size - len(head))
    (n,) = _LEN.unpack_from(head)
    if n < 0:
        raise ValueError("a message beyond a slot pipe's framing: not a manybench peer")
    got = len(head) - _LEN.size
    if got > n:
        raise ValueError("more than one message at once: not a manybench peer")
    if got == n:
        return head[_LEN.size:]
    parts = [head[_LEN.size:]]
    while got < n:
        part = _more(fd, min(n - got, 1 << 20))
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _more(fd: int, n: int) -> bytes:
    part = os.read(fd, n)
    if not part:
        raise EOFError("the pipe closed mid-message")
    return part
