"""The recorder: samples NVML and RAPL on a background thread at a fixed interval."""

from __future__ import annotations

import logging
import math
import os
import queue
import socket
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from aiload._version import __version__
from aiload.errors import InputError
from aiload.measure.schedule import run_fixed_interval
from aiload.measure.sources import Source, open_sources
from aiload.measure.writer import (
    FORMAT_NAME,
    FORMAT_VERSION,
    StreamWriter,
    finalize,
    partial_path,
    trace_schema,
)
from aiload.outputs import check_output_file, clean_debris

__all__ = ["Recorder"]

_log = logging.getLogger(__name__)


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat(timespec="microseconds")


class Recorder:
    """Record GPU (NVML) and CPU (RAPL) power to an aiload trace file while code runs.

    A background thread reads every source at ``start + k * interval_s`` (k = 1, 2, ...;
    absolute deadlines, so the grid does not drift), stamps each sample at the midpoint of its
    read and keeps the read's duration; :meth:`stop` takes one last reading when the last tick
    is more than half an interval old, so the trace covers the end of the run. Samples are appended to
    ``<path>.partial.arrows`` every ``flush_interval_s``; :meth:`stop` converts that stream to
    ``path`` (Parquet) with an atomic rename. Use it as a context manager or call
    :meth:`start` and :meth:`stop`. It installs no signal handler: ``aiload record`` does.

    Parameters
    ----------
    path : path
        The Parquet file to write; its name must end in ``.parquet``.
    interval_s : float
        Sampling interval [s] (default 0.1).
    flush_interval_s : float
        How often buffered samples are written to disk [s]; a killed process loses at most
        this much (default 10).
    gpu : bool
        Record NVIDIA GPUs through NVML; an error when NVML cannot start (default True).
    cpu : bool or None
        Record CPU packages through RAPL: True requires it, None (default) uses it when
        present, False skips it.
    gpu_state : bool
        Also record GPU temperature, SM clock and utilisation (default True); False records
        power and energy only, for the lowest overhead.
    label, command : optional
        Free text and the command line stored in the metadata.
    host : str, optional
        Node name stored in the metadata (``read_trace`` names a multi-node run's columns
        ``<host>/<dev>``); the host name by default.
    overwrite : bool
        Replace an existing ``path`` (a leftover ``.partial.arrows`` is never replaced).
    nvml : module, optional
        NVML binding (``pynvml`` by default); tests pass a fake.
    powercap_root : path, optional
        RAPL powercap directory [``/sys/class/powercap``]; tests pass a fake tree.

    Examples
    --------
    >>> with Recorder("run.parquet", cpu=False) as rec:  # doctest: +SKIP
    ...     train()
    >>> aiload.read_trace("run.parquet")  # doctest: +SKIP
    """

    def __init__(
        self,
        path: os.PathLike | str,
        *,
        interval_s: float = 0.1,
        flush_interval_s: float = 10.0,
        gpu: bool = True,
        cpu: bool | None = None,
        gpu_state: bool = True,
        label: str | None = None,
        command: Sequence[str] | None = None,
        host: str | None = None,
        overwrite: bool = False,
        nvml: Any = None,
        powercap_root: os.PathLike | str | None = None,
    ) -> None:
        self.path = Path(path)
        if self.path.suffix != ".parquet":
            raise InputError(
                f"Recorder: the output must be a .parquet file, got {str(path)!r}; "
                f"use e.g. {self.path.with_suffix('.parquet').name!r}."
            )
        if not (isinstance(interval_s, (int, float)) and math.isfinite(interval_s) and interval_s > 0):
            raise InputError(
                f"Recorder: interval_s must be a positive number of seconds, got {interval_s!r}."
            )
        if not (
            isinstance(flush_interval_s, (int, float))
            and math.isfinite(flush_interval_s)
            and flush_interval_s >= interval_s
        ):
            raise InputError(
                f"Recorder: flush_interval_s must be at least interval_s ({interval_s} s), got "
                f"{flush_interval_s!r}; 10 s is a good default."
            )
        self.partial_path = partial_path(self.path)
        self.interval_s = float(interval_s)
        self.flush_interval_s = float(flush_interval_s)
        self.gpu, self.cpu, self.gpu_state = gpu, cpu, gpu_state
        self.label = label
        self.command = None if command is None else [str(c) for c in command]
        self.overwrite = overwrite
        self.host = host or socket.gethostname()
        self._nvml, self._powercap_root = nvml, powercap_root
        self._sources: list[Source] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._writer: StreamWriter | None = None
        self.columns: tuple[str, ...] = ()
        self.power_reading: dict[str, str] = {}
        self.n_samples = 0
        self.missed_ticks = 0
        self.metadata: dict[str, Any] = {}
        self._times: list[int] = []
        self._values: list[list[float]] = []
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._writer_thread: threading.Thread | None = None
        self._last_sample_ns = 0
        self._flush_every = 1

    # -- life cycle -----------------------------------------------------------------------
    def start(self) -> Recorder:
        """Open the sources, create the stream file and start sampling.

        Raises
        ------
        SourceUnavailableError
            When the sources asked for cannot be used; no file is created then.
        InputError
            When ``path`` exists (and not ``overwrite``) or a ``.partial.arrows`` is left over.
        """
        if self._thread is not None:
            raise RuntimeError("Recorder.start: already started; a Recorder records once.")
        if self.partial_path.exists():
            raise InputError(
                f"{self.partial_path} exists: the stream of an earlier recording that did not "
                "finish. Read it with aiload.read_trace, or delete it, before recording again."
            )
        # a folder, a missing or read-only parent: refused before any source is opened;
        # temporary files of a recorder killed while finishing are removed
        check_output_file(self.path, overwrite=True, what="record output")
        clean_debris(self.path.parent, self.partial_path.name)
        if self.path.exists() and not self.overwrite:
            raise InputError(
                f"{self.path} exists; pass overwrite=True (--overwrite) or choose another name."
            )
        self._sources = open_sources(
            gpu=self.gpu,
            cpu=self.cpu,
            gpu_state=self.gpu_state,
            nvml=self._nvml,
            powercap_root=self._powercap_root,
        )
        try:
            self._open_file()
        except BaseException:
            self._close_sources()
            raise
        # disk writes (fsync can take 100s of ms on a busy node) happen on their own thread
        # so that they never delay a sample
        self._writer_thread = threading.Thread(target=self._write_batches, name="aiload-writer", daemon=True)
        self._writer_thread.start()
        self._thread = threading.Thread(target=self._run, name="aiload-recorder", daemon=True)
        self._thread.start()
        return self

    def _open_file(self) -> None:
        self.columns = tuple(c for s in self._sources for c in s.columns)
        for source in self._sources:
            self.power_reading.update(source.power_reading)
        described: dict[str, Any] = {}
        for source in self._sources:
            described.update(source.describe())
        gpu_models = described.get("gpu_models", [])
        hardware = [f"{gpu_models.count(m)}x {m}" for m in dict.fromkeys(gpu_models)]
        if described.get("cpu_model"):
            hardware.append(f"{described['cpu_packages']}x {described['cpu_model']}")
        # wall clock once, then the monotonic clock: an NTP step mid-run cannot bend the axis
        self._wall0_ns, self._mono0_ns = time.time_ns(), time.monotonic_ns()
        self.metadata = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "host": self.host,
            "gpu_models": gpu_models,
            "driver_version": described.get("driver_version"),
            "nvml_version": described.get("nvml_version"),
            "command": self.command,
            "label": self.label,
            "start": _iso(self._wall0_ns),
            "end": None,
            "interval_s": self.interval_s,
            "power_reading": dict(self.power_reading),
            "hardware": "; ".join(hardware) or None,
            "aiload_version": __version__,
        }
        self._writer = StreamWriter(self.partial_path, trace_schema(self.columns, self.metadata))

    def _sample(self) -> None:
        clock = time.monotonic_ns
        before = clock()
        row: list[float] = []
        for source in self._sources:
            row += source.read()
        after = clock()
        self._last_sample_ns = after
        self._times.append(self._wall0_ns + (before + after) // 2 - self._mono0_ns)
        self._values[0].append((after - before) / 1e9)
        for column, value in zip(self._values[1:], row):
            column.append(value)
        self.n_samples += 1
        if len(self._times) >= self._flush_every:
            self._flush()

    def _run(self) -> None:
        self._values = [[] for _ in range(len(self.columns) + 1)]
        self._flush_every = max(1, round(self.flush_interval_s / self.interval_s))
        try:
            for source in self._sources:
                source.prime()
            start = self._last_sample_ns = time.monotonic_ns()
            self.missed_ticks = run_fixed_interval(
                self._sample,
                start_ns=start,
                interval_ns=round(self.interval_s * 1e9),
                clock_ns=time.monotonic_ns,
                wait_s=self._stop.wait,
            )
        except BaseException as exc:  # re-raised by stop() after the data are saved
            self._error = exc
            self._stop.set()

    def _flush(self) -> None:
        if self._times:
            self._queue.put((self._times, self._values))
            self._times = []
            self._values = [[] for _ in self._values]

    def _write_batches(self) -> None:
        while (batch := self._queue.get()) is not None:
            try:
                self._writer.write(*batch)
            except BaseException as exc:
                self._error = self._error or exc
                self._stop.set()
                return

    def stop(self) -> Path:
        """Stop sampling, write what is buffered and convert the stream to Parquet.

        Returns
        -------
        pathlib.Path
            The Parquet file.
        """
        if self._thread is None:
            raise RuntimeError("Recorder.stop: the recorder was not started.")
        self._stop.set()
        self._thread.join()
        try:
            if self._writer is not None and not self._writer.closed:
                # a last reading covers the tail since the last tick (as WattAMeter's final
                # read), unless a tick just happened: two reads ms apart make RAPL noise
                since_ns = time.monotonic_ns() - self._last_sample_ns
                if self._error is None and since_ns >= self.interval_s * 1e9 / 2:
                    self._sample()
                end_ns = self._wall0_ns + time.monotonic_ns() - self._mono0_ns
                self._flush()
                self._queue.put(None)
                self._writer_thread.join()
                self._writer.close()
                finalize(self.partial_path, self.path, _iso(end_ns))
                self.metadata["end"] = _iso(end_ns)
        finally:
            self._close_sources()
        if self.missed_ticks:
            _log.warning("%d sampling ticks were skipped because reads overran them", self.missed_ticks)
        if self._error is not None:
            raise self._error
        return self.path

    @property
    def running(self) -> bool:
        """True while the sampling thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def _close_sources(self) -> None:
        for source in self._sources:
            source.close()
        self._sources = []

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        # the samples taken are valid even when the recorded code failed: keep them
        self.stop()
