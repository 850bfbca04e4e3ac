"""Reading measured power traces: one entry point, :func:`read_trace`, for every format.

Formats (:data:`FORMATS`): WattAMeter NVML/RAPL logs, nvidia-smi CSV, the NLR aggregated
Parquet, LLM-PowerTrace long CSV, MLPerf training (MLLOG) and inference (PTDaemon
``spl.txt``) power logs, and aiload's own Parquet. See ``docs/traces.md``.
"""

from __future__ import annotations

from aiload.traces._trace import Trace, TraceMeta
from aiload.traces.combine import combine
from aiload.traces.detect import FORMATS, detect_format
from aiload.traces.nlr import read_nlr_metadata
from aiload.traces.reader import read_trace

__all__ = [
    "read_trace",
    "Trace",
    "TraceMeta",
    "FORMATS",
    "detect_format",
    "combine",
    "read_nlr_metadata",
]
