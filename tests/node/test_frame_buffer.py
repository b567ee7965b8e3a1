"""A ready socket's reads cut into the frames of the direct channel (node/direct.FrameBuffer):
the usual read (one whole frame) is taken as it came; frames split over reads, several in
one read and a length that is not ours give what they gave before."""
from __future__ import annotations

import socket

import pytest

from manybench.node.direct import FRAME, MAX_FRAME, FrameBuffer


def _framed(*bodies: bytes) -> bytes:
    return b"".join(FRAME.pack(len(b)) + b for b in bodies)


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_one_whole_frame_per_read_comes_out_as_it_was_sent(pair):
    a, b = pair
    buf = FrameBuffer()
    for body in (b"x" * 100, b"", b"\0\0\0\0"):
        a.sendall(_framed(body))
        assert buf.read(b) == [body]
        assert not buf.buf


def test_frames_split_over_reads_or_sharing_one_come_out_whole_and_in_order(pair):
    a, b = pair
    buf = FrameBuffer()
    data = _framed(b"first", b"second" * 50, b"third")
    a.sendall(data[:2])                       # not even a whole length
    assert buf.read(b) == []
    a.sendall(data[2:12])
    assert buf.read(b) == [b"first"]
    a.sendall(data[12:])
    assert buf.read(b) == [b"second" * 50, b"third"]
    assert not buf.buf
    a.sendall(_framed(b"a", b"b"))           # two whole frames in one read
    assert buf.read(b) == [b"a", b"b"]


def test_a_length_that_is_not_ours_or_a_closed_channel_is_said(pair):
    a, b = pair
    a.sendall(FRAME.pack(MAX_FRAME + 1) + b"x")
    with pytest.raises(ValueError):
        FrameBuffer().read(b)
    a.close()
    with pytest.raises(EOFError):
        FrameBuffer().read(b)
