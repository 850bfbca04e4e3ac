"""``aiload record``: run a command (or wait a while) and record GPU and CPU power meanwhile.

::

    aiload record -o run-{host}.parquet [--interval 0.1] [--flush-interval 10] [--label TEXT]
                  [--cpu-only] [--power-only] [--overwrite] -- COMMAND [ARGS...]
    aiload record -o idle.parquet --duration 60

The exit code is the command's (128 + N when a signal N ended it). SIGINT and SIGTERM end
the recording cleanly: SIGTERM is passed on to the command (Slurm sends it to the whole job
step; SIGINT from a terminal already reaches the command through its process group).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from aiload.errors import InputError
from aiload.measure.recorder import Recorder

__all__ = ["register", "record", "expand_output"]


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``aiload record`` to the ``aiload`` command line."""
    parser = subparsers.add_parser(
        "record",
        help="record GPU (NVML) and CPU (RAPL) power while a command runs",
        description=(
            "Run a command (or wait --duration seconds) and record GPU (NVML) and CPU (RAPL) "
            "power meanwhile, into one aiload trace file (Parquet) per node. Exits with the "
            "command's exit code."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  aiload record -o run-{host}.parquet --label 'llama 70B, 4 nodes' -- python train.py\n"
            "  aiload record -o idle.parquet --duration 60 --cpu-only\n"
            "The file is read back with aiload.read_trace(path)."
        ),
    )
    parser.add_argument("-o", "--output", required=True,
                        help="Parquet file to write; '{host}' is replaced by the host name")
    parser.add_argument("--interval", type=float, default=0.1, metavar="S",
                        help="sampling interval [s] (default 0.1)")
    parser.add_argument("--flush-interval", type=float, default=10.0, metavar="S",
                        help="write buffered samples to disk this often [s] (default 10)")
    parser.add_argument("--label", default=None, help="free text stored in the file's metadata")
    parser.add_argument("--duration", type=float, default=None, metavar="S",
                        help="record for this long [s] instead of running a command")
    parser.add_argument("--cpu-only", action="store_true",
                        help="record CPU packages through RAPL only (no NVIDIA driver needed)")
    parser.add_argument("--power-only", action="store_true",
                        help="GPU power and energy only (no temperature, clock, utilisation): "
                        "the lowest overhead")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]",
                        help="the command to run while recording")
    parser.set_defaults(func=record)
    return parser


def expand_output(output: str, host: str | None = None) -> Path:
    """The output path with ``{host}`` replaced by the host name (one file per node)."""
    return Path(output.replace("{host}", host or socket.gethostname()))


def _check_command(cmd: list[str], duration_s: float | None) -> None:
    if cmd and duration_s is not None:
        raise InputError(
            f"record: got both --duration {duration_s} and a command ({' '.join(cmd)}); give "
            "one: a command is recorded while it runs, --duration records without one."
        )
    if not cmd and duration_s is None:
        raise InputError(
            "record: nothing to record: give a command after '--' (aiload record -o run.parquet "
            "-- python train.py) or a time with --duration SECONDS."
        )
    if duration_s is not None and not duration_s > 0:
        raise InputError(f"record: --duration must be a positive number of seconds, got {duration_s}.")
    if cmd and shutil.which(cmd[0]) is None:
        raise InputError(
            f"record: command not found: {cmd[0]!r}; check the spelling and PATH (nothing was recorded)."
        )


def record(args: argparse.Namespace, *, nvml: Any = None, powercap_root: Any = None) -> int:
    """Run ``aiload record``; returns the exit code.

    ``nvml`` and ``powercap_root`` replace the hardware interfaces (tests pass fakes).
    """
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    _check_command(cmd, args.duration)
    recorder = Recorder(
        expand_output(args.output),
        interval_s=args.interval,
        flush_interval_s=args.flush_interval,
        gpu=not args.cpu_only,
        cpu=True if args.cpu_only else None,
        gpu_state=not args.power_only,
        label=args.label,
        command=cmd or None,
        overwrite=args.overwrite,
        nvml=nvml,
        powercap_root=powercap_root,
    )
    stop = threading.Event()
    child: subprocess.Popen | None = None
    caught: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        caught.append(signum)
        stop.set()
        if child is not None and signum == signal.SIGTERM and child.poll() is None:
            child.send_signal(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        recorder.start()
        code = 0
        try:
            if cmd and not stop.is_set():  # a signal before the launch: do not launch
                child = subprocess.Popen(cmd)
                returncode = child.wait()
                code = 128 - returncode if returncode < 0 else returncode
            else:
                stop.wait(args.duration)
        finally:
            path = recorder.stop()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    how = f" (stopped by {signal.Signals(caught[0]).name})" if caught else ""
    reading = ", ".join(f"{d} {r}" for d, r in recorder.power_reading.items())
    print(
        f"aiload record: {recorder.n_samples} samples at {args.interval} s{how} -> {path} [{reading}]"
        + (f"; {recorder.missed_ticks} ticks skipped (reads overran)" if recorder.missed_ticks else ""),
        file=sys.stderr,
    )
    return code
