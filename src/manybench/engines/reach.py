"""One TCP connect to a scheduler's address before Dask's client joins it, so that an
address nothing listens on fails at once, naming the refusal. Dask retries a refused connect
until its connect timeout (distributed.comm.timeouts.connect, 30 s unless configured) and then
says only "Timed out"; a scheduler that accepts the connection but is slow to answer is still
Dask's to wait for, with its timeout."""
from __future__ import annotations

import socket
import ssl
from typing import Any

from ..config import timing
from .base import EngineError


def connect_timeout_s() -> float:
    """Dask's connect timeout, in seconds."""
    import dask
    from dask.utils import parse_timedelta
    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"),
                                 default="seconds"))


def check_reachable(address: str, security: Any = None) -> None:
    """EngineError when nothing answers a TCP connect at address (scheme://host:port): refused,
    no route, an unknown host, or no answer within Dask's connect timeout. An address TCP
    does not reach (another scheme, no port) is left to Dask."""
    from distributed.comm.addressing import parse_address, parse_host_port
    try:
        scheme, loc = parse_address(address)
        if scheme not in ("tcp", "tls"):
            return
        host, port = parse_host_port(loc)
    except ValueError:
        return
    timeout = connect_timeout_s()
    said = f"cannot reach the Dask scheduler at {address}"
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except ConnectionRefusedError:
        raise EngineError(f"{said}: connection refused: nothing listens on port {port} of "
                          f"{host}; start the scheduler there (`manybench scheduler` prints "
                          "its address, docs/howto-clusters.md) or give the address it "
                          "listens on") from None
    except socket.gaierror as e:
        raise EngineError(f"{said}: unknown host {host!r} ({e.strerror}); check the "
                          "address") from None
    except TimeoutError:
        raise EngineError(f"{said}: no answer to a connect in {timeout:g} s (a firewall "
                          "dropping the connection, or no host at that address)") from None
    except OSError as e:
        raise EngineError(f"{said}: {e.strerror or e}") from None
    _close(sock, scheme, security, min(timing("engines.probe_handshake"), timeout))


def _close(sock: socket.socket, scheme: str, security: Any, timeout: float) -> None:
    """A TLS scheduler logs a WARNING for every connection that leaves before its TLS
    handshake: the probe completes the handshake with the cluster's own context first (the
    scheduler then notes only, at INFO, a connection closed before Dask's handshake). A
    handshake that fails is Dask's to tell, as it does at once (a certificate refused)."""
    try:
        ctx = security.get_connection_args("client").get("ssl_context") \
            if scheme == "tls" and security is not None else None
        if isinstance(ctx, ssl.SSLContext):
            sock.settimeout(timeout)
            sock = ctx.wrap_socket(sock)
    except (OSError, ValueError):
        pass
    finally:
        sock.close()
