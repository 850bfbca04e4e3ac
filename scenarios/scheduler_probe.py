"""Is a Dask scheduler at ``aiload sweep --scheduler ADDRESS``? A bounded look before Dask's
client connects.

Dask's client reads the first 8 bytes a server sends as the length of its next message and
allocates that much: an HTTP server, a database or any other service at the address made
that a raw ``MemoryError`` ("Unable to allocate 3.07 EiB") or a wait of twice the timeout.
A Dask scheduler greets every new connection first, before it reads anything: one message
of a few hundred bytes, framed as ``[total][n][len_1 … len_n][frame_1 … frame_n]`` (8-byte
little-endian unsigned integers; ``distributed.comm.tcp``). So this module connects with a
short timeout, sends nothing, reads at most :data:`MAX_GREETING_BYTES` and checks that
framing; anything else is an :class:`~aiload.errors.InputError` naming the address and what
was expected. Only ``tcp://`` addresses (and bare ``host:port``) are looked at; other
transports (``tls://``, ``ucx://``, ``inproc://``) are left to Dask.
"""

from __future__ import annotations

import socket
import struct

from aiload.errors import InputError

__all__ = ["probe_scheduler", "refused", "CONNECT_TIMEOUT_S", "GREETING_TIMEOUT_S", "MAX_GREETING_BYTES"]

#: how long to wait for the TCP connection [s]
CONNECT_TIMEOUT_S = 3.0
#: how long to wait for the scheduler's greeting once connected [s]
GREETING_TIMEOUT_S = 3.0
#: the largest greeting accepted (a scheduler's is a few hundred bytes) [bytes]
MAX_GREETING_BYTES = 1 << 20

_EXPECTED = ("expected the address of a running `dask scheduler` (tcp://HOST:PORT, port 8786 "
             "by default; its dashboard on port 8787 is not it), or leave --scheduler out for "
             "a local cluster (--workers N). Nothing was written.")


def refused(address: str, what: str) -> InputError:
    """The error for a ``--scheduler`` address: what was found there, what was expected."""
    return InputError(f"--scheduler {address!r}: {what}; {_EXPECTED}")


def _read(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes, or fewer when the other side closes."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _is_dask_frames(body: bytes) -> bool:
    """Whether ``body`` is Dask's frame packing: ``[n][len_1 … len_n]`` and then whole
    frames, all of them or the first few (large buffers may follow as a message of their
    own; ``distributed.protocol.utils.unpack_frames(..., partial=True)``)."""
    if len(body) < 8:
        return False
    (n,) = struct.unpack_from("<Q", body)
    if not 1 <= n <= 64 or len(body) < 8 * (n + 1):
        return False
    size, ends = 8 * (n + 1), {8 * (n + 1)}
    for length in struct.unpack_from(f"<{n}Q", body, 8):
        size += length
        ends.add(size)
    return len(body) in ends and len(body) > 8 * (n + 1)


def probe_scheduler(address: str, scheme: str, host: str, port: int) -> None:
    """Raise :class:`~aiload.errors.InputError` unless a Dask scheduler greets at ``host:port``.

    Parameters
    ----------
    address : str
        The address as the user gave it (for the message).
    scheme, host, port
        Its parts (``distributed.comm.addressing``); nothing is checked unless ``scheme`` is
        ``"tcp"``.
    """
    if scheme != "tcp":
        return
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except socket.timeout:
        raise refused(address, f"no connection within {CONNECT_TIMEOUT_S:g} s (a firewall, or "
                               "no such host on this network)") from None
    except OSError as exc:
        raise refused(address, f"cannot connect ({exc.strerror or exc}): nothing listens "
                               "there") from None
    try:
        sock.settimeout(GREETING_TIMEOUT_S)
        try:
            head = _read(sock, 8)
        except socket.timeout:
            raise refused(address, "a service listens there but sent nothing within "
                                   f"{GREETING_TIMEOUT_S:g} s, while a Dask scheduler greets "
                                   "at once (an HTTP or other server waits like this)") from None
        except OSError as exc:
            raise refused(address, f"the connection failed ({exc.strerror or exc})") from None
        if len(head) < 8:
            raise refused(address, "a service accepted the connection and closed it "
                                   f"after {len(head)} bytes, without a Dask greeting")
        (total,) = struct.unpack("<Q", head)
        if not 16 <= total <= MAX_GREETING_BYTES:
            shown = (repr(head.decode("ascii")) if head.isascii()
                     else f"{head.hex(' ')} in hex")
            raise refused(address, "a service answers there that does not speak Dask's "
                                   f"protocol (its first bytes: {shown})")
        try:
            body = _read(sock, total)
        except (socket.timeout, OSError):
            body = b""
        if len(body) != total or not _is_dask_frames(body):
            raise refused(address, "a service answers there with bytes that are not a Dask "
                                   "scheduler's greeting")
    finally:
        sock.close()
