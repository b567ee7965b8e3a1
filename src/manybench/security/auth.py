"""The run's secret at work: every message of a run carries an HMAC made with a key derived
from it, and every channel a node opens for the run (direct.py, clock.py) opens only to a
peer that proves it holds the secret, by answering a fresh challenge, never by sending the
secret itself.

The secret is drawn by the coordinator for each run (a cluster's TLS keeps it private on
its way to the nodes, in Start); each use has its own key derived from it (a proof made for
one use is worth nothing for another), and each part of an HMAC is length-prefixed, so no
two different messages share one.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets as _secrets

NONCE = 16                 # bytes of a challenge
TAG = 32                   # bytes of an HMAC-SHA256


def new_secret() -> str:
    """A run's secret: 256 random bits, as text (it travels in Start)."""
    return _secrets.token_hex(32)


def nonce() -> bytes:
    return _secrets.token_bytes(NONCE)


def derive(secret: str, use: str) -> bytes:
    """The key for one use of the run's secret ("call", "direct", "echo", ...)."""
    return hmac.new(secret.encode(), b"manybench/" + use.encode(), hashlib.sha256).digest()


def tag(key: bytes, *parts: bytes) -> bytes:
    """HMAC-SHA256 of the parts, each prefixed by its length."""
    h = hmac.new(key, digestmod=hashlib.sha256)
    for p in parts:
        h.update(len(p).to_bytes(4, "big"))
        h.update(p)
    return h.digest()


def valid(key: bytes | None, given: object, *parts: bytes) -> bool:
    """Whether `given` is the tag of the parts under key (constant time); never with no key."""
    return (key is not None and isinstance(given, bytes)
            and hmac.compare_digest(tag(key, *parts), given))
