"""Issue 26, hostile inputs: a service that is not a Dask scheduler at `aiload sweep
--scheduler ADDRESS` (an HTTP server, garbage, a huge length, a closed connection). It was a
raw allocation error from inside Dask ("Unable to allocate 3.07 EiB"); it is now a clear,
fast error naming the address and what was expected, before anything is written.

The servers here listen on 127.0.0.1 only, on a port the system picks, serve at most a few
connections and stop by themselves after a few seconds."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from aiload.errors import InputError
from scenarios import scheduler_probe
from scenarios.cli import main
from scenarios.sweep import _check_scheduler

SCENARIO = """name = "s"
[facility]
preset = "inference-1mw"
start = 2025-01-01T00:00:00Z
end = 2025-01-01T01:00:00Z
freq = "15min"
"""

HTTP_400 = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def _reply(kind: str, conn: socket.socket) -> None:
    if kind == "http":  # a web server: waits for a request, then answers
        try:
            if conn.recv(4096):
                conn.sendall(HTTP_400)
        except OSError:
            pass
    elif kind == "http at once":
        conn.sendall(HTTP_400)
    elif kind == "garbage":
        conn.sendall(b"\xff" * 8 + b"not dask\n" * 4)
    elif kind == "huge length":  # a length Dask's client would try to allocate
        conn.sendall(struct.pack("<Q", 10 * 2**30))
    elif kind == "wrong frames":  # a plausible length, then bytes that are no frames
        conn.sendall(struct.pack("<Q", 32) + b"\x07" * 32)
    elif kind == "short":  # a plausible length, then the connection closes
        conn.sendall(struct.pack("<Q", 200) + b"\x01" * 10)
    # "close": nothing at all


@pytest.fixture
def service(request):
    """A loopback server of the given kind; returns its address."""
    kind = request.param
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    deadline = time.monotonic() + 8.0  # stops by itself, or when the test ends
    stop = threading.Event()

    def serve():
        with server:
            served = 0
            while not stop.is_set() and time.monotonic() < deadline and served < 4:
                try:
                    conn, _ = server.accept()
                except socket.timeout:
                    continue
                except OSError:
                    return
                served += 1
                with conn:
                    conn.settimeout(2.0)
                    _reply(kind, conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(timeout=10)


EXPECTED = ("expected the address of a running `dask scheduler` (tcp://HOST:PORT, port 8786 "
            "by default; its dashboard on port 8787 is not it)")


@pytest.mark.parametrize("service, found", [
    ("http", "a service listens there but sent nothing within 0.5 s, while a Dask scheduler "
             "greets at once (an HTTP or other server waits like this)"),
    ("http at once", "a service answers there that does not speak Dask's protocol (its first bytes: 'HTTP/1.1')"),
    ("garbage", "a service answers there that does not speak Dask's protocol (its first bytes: ff ff ff ff ff ff ff ff in "
                "hex)"),
    ("huge length", "a service answers there that does not speak Dask's protocol (its first bytes: 00 00 00 80 02 00 00 00 "
                    "in hex)"),
    ("wrong frames", "a service answers there with bytes that are not a Dask scheduler's greeting"),
    ("short", "a service answers there with bytes that are not a Dask scheduler's greeting"),
    ("close", "a service accepted the connection and closed it after 0 bytes, without a Dask greeting"),
], indirect=["service"])
def test_a_service_that_is_not_dask_is_named_fast(service, found, monkeypatch):
    monkeypatch.setattr(scheduler_probe, "GREETING_TIMEOUT_S", 0.5)
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        _check_scheduler(service)
    assert time.monotonic() - started < 3.0
    assert str(caught.value) == (f"--scheduler {service!r}: {found}; {EXPECTED}, or leave "
                                 "--scheduler out for a local cluster (--workers N). Nothing "
                                 "was written.")


@pytest.mark.parametrize("service", ["http at once"], indirect=True)
def test_the_command_line_says_it_in_one_paragraph_and_writes_nothing(service, tmp_path,
                                                                      capsys):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--scheduler", service, "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aiload sweep: error: --scheduler {service!r}: a service answers")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_the_greeting_of_dask_itself_passes():
    from distributed import LocalCluster

    # a real scheduler over TCP (threads: cheap to start); the probe leaves it working
    with LocalCluster(n_workers=0, processes=False, protocol="tcp://",
                      dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        _check_scheduler(address)


def test_dask_frame_packing_is_read_as_dask_writes_it():
    from distributed.protocol.utils import pack_frames

    frames = [b"\x81\xa1a\x01", b"xyz" * 10]
    body = pack_frames(frames)  # [n][len_1 len_2][frames], Dask's own packing
    assert scheduler_probe._is_dask_frames(body)
    assert scheduler_probe._is_dask_frames(body[:-len(frames[1])])  # the first frame only
    assert not scheduler_probe._is_dask_frames(body[:-1])
    assert not scheduler_probe._is_dask_frames(b"GET / HTTP/1.1\r\n\r\n")
