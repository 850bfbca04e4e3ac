"""Measure GPU (NVML) and CPU (RAPL) power at 0.1 s into aiload trace files.

- :class:`Recorder` — a context manager / start-stop object that records on a background
  thread to ``<name>.parquet`` (streamed to ``<name>.parquet.partial.arrows`` while running);
- :class:`NvmlSource`, :class:`RaplSource` — the hardware sources it reads;
- :func:`read_partial`, :func:`finalize` — read or convert the stream file a killed recording
  leaves behind;
- ``aiload record`` (:mod:`aiload.measure.cli`) — the command line.

The file format is described in ``docs/record.md``.
"""

from __future__ import annotations

from aiload.measure.nvml import AVERAGED, INSTANTANEOUS, NvmlSource
from aiload.measure.rapl import COUNTER_DIFFERENCE, RaplSource, counter_delta_uj
from aiload.measure.recorder import Recorder
from aiload.measure.sources import SourceUnavailableError, open_sources
from aiload.measure.writer import finalize, partial_path, read_partial

__all__ = [
    "Recorder",
    "NvmlSource",
    "RaplSource",
    "SourceUnavailableError",
    "open_sources",
    "counter_delta_uj",
    "read_partial",
    "finalize",
    "partial_path",
    "INSTANTANEOUS",
    "AVERAGED",
    "COUNTER_DIFFERENCE",
]
