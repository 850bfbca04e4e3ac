"""Tell a trace file's format from its name and first bytes."""

from __future__ import annotations

import os
from pathlib import Path

from aiload.errors import TraceFormatError

__all__ = ["FORMATS", "detect_format", "expand_directory"]

#: the formats :func:`aiload.traces.read_trace` reads, with what identifies each
FORMATS: dict[str, str] = {
    "wattameter": "WattAMeter NVML/RAPL log: '# timestamp reading-time[ns] gpu-0[mW] ...' header",
    "nvidia-smi": "nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv[,nounits]",
    "nlr-parquet": "NLR GenAI dataset series: Parquet 'power[W]' indexed by 'timestep[s]'",
    "nlr-metadata": "NLR GenAI dataset metadata.csv (run table; read with read_nlr_metadata)",
    "powertrace": "LLM-PowerTrace long CSV: run_id,timestamp,time_relative_s,gpu_id,power_w,...",
    "mlperf-mllog": "MLPerf training power log: ':::MLLOG' lines with key 'power_reading'",
    "mlperf-spl": "SPEC PTDaemon sample log (MLPerf inference spl.txt): 'Time,MM-DD-YYYY ...,Watts,...'",
    "aiload": "aiload's own Parquet / Arrow stream (schema metadata key 'aiload')",
}


def _first_line(path: Path) -> str:
    with path.open("rb") as fh:
        head = fh.read(4096)
    if not head.strip():
        raise TraceFormatError(
            f"{path}: the file is empty; expected a power trace in one of the formats "
            f"{list(FORMATS)}."
        )
    text = head.decode("utf-8-sig", errors="replace")  # a BOM (Excel, Windows) is not text
    return next((ln for ln in text.splitlines() if ln.strip()), "")


def detect_format(path: str | os.PathLike) -> str:
    """Return the :data:`FORMATS` name of one file.

    Raises
    ------
    aiload.errors.TraceFormatError
        When the file is empty or matches no known format.
    """
    path = Path(path)
    if not path.is_file():
        raise TraceFormatError(f"{path}: no such file; expected a trace file or a run directory.")
    name = path.name.lower()
    if name.endswith(".arrows"):
        return "aiload"
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
            raise TraceFormatError(
                f"{path}: not a readable Parquet file ({str(err)[:200]}); the file may be "
                "truncated or damaged. Write it again, or check the path."
            ) from None
        if schema.metadata and b"aiload" in schema.metadata:
            return "aiload"
        if "power[W]" in schema.names:
            return "nlr-parquet"
        raise TraceFormatError(
            f"{path}: a Parquet file with columns {schema.names[:8]} and no 'aiload' metadata; "
            "expected aiload's own trace or an NLR series with 'power[W]'."
        )
    first = _first_line(path)
    if first.startswith(":::MLLOG"):
        return "mlperf-mllog"
    if first.startswith("Time,") and ",Watts," in first:
        return "mlperf-spl"
    if first.startswith("#") and ("Power data for run" in first or "reading-time[ns]" in first):
        return "wattameter"
    header = first.lower()
    if "power.draw" in header and "timestamp" in header:
        return "nvidia-smi"
    cols = [c.strip() for c in first.split(",")]
    if "run_id" in cols and "power_w" in cols:
        return "powertrace"
    if "mean_power[W]" in cols or {"model", "nodes", "repeat", "slurmid"} <= set(cols):
        return "nlr-metadata"
    raise TraceFormatError(
        f"{path}: cannot tell the format from its first line {first[:80]!r}; expected one of "
        + "; ".join(f"{k} ({v})" for k, v in FORMATS.items())
        + ". Pass format= to read_trace to choose."
    )


def expand_directory(folder: Path) -> list[Path]:
    """Trace files of one run directory.

    MLPerf training ``node_*.txt`` (in node order), an MLPerf inference ``spl.txt``,
    WattAMeter ``*.log`` files, aiload ``*.parquet``/``*.arrows``, or the other
    ``*.csv``/``*.parquet`` files.
    """
    nodes = sorted(folder.glob("node_*.txt"), key=lambda p: (len(p.stem), p.stem))
    if nodes:
        return nodes
    if (folder / "spl.txt").is_file():
        return [folder / "spl.txt"]
    for pattern in ("*wattameter*.log", "*.log", "*.parquet", "*.arrows", "*.csv"):
        found = sorted(folder.glob(pattern))
        found = [p for p in found if p.name != "metadata.csv"]
        if found:
            return found
    raise TraceFormatError(
        f"{folder}: no trace files found; expected node_*.txt (MLPerf training), spl.txt "
        "(MLPerf inference), WattAMeter *.log, aiload *.parquet or a CSV log."
    )
