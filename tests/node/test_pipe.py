"""node/pipe.py: an agent's messages to its slots, one system call each way, in
multiprocessing's framing."""
from __future__ import annotations

import threading
from multiprocessing import Pipe

import pytest

from manybench.node import pipe


def test_a_message_crosses_both_ways_and_either_end_may_be_a_connection():
    a, b = Pipe(duplex=True)
    pipe.send(a.fileno(), b"go")
    assert b.recv_bytes() == b"go"             # read by multiprocessing's own framing
    b.send_bytes(b"done")
    assert pipe.recv(a.fileno()) == b"done"


def test_a_message_beyond_the_pipes_buffer_arrives_whole():
    a, b = Pipe(duplex=True)
    big = bytes(range(256)) * 20_000            # ~5 MB: written and read in several calls
    sender = threading.Thread(target=pipe.send, args=(a.fileno(), big))
    sender.start()
    got = pipe.recv(b.fileno())
    sender.join()
    assert got == big


def test_a_closed_pipe_is_eof_and_two_messages_at_once_are_refused():
    a, b = Pipe(duplex=True)
    a.send_bytes(b"one")
    a.send_bytes(b"two")                        # not how a slot speaks: one, then the reply
    with pytest.raises(ValueError, match="more than one message"):
        pipe.recv(b.fileno())
    a.close()
    with pytest.raises(EOFError):
        pipe.recv(b.fileno())
