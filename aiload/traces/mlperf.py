"""MLPerf power logs: training ``node_*.txt`` (MLLOG) and inference ``spl.txt`` (PTDaemon).

Training (``mlperf-mllog``): one file per node, lines ``:::MLLOG {json}``; readings are the
lines with ``"key": "power_reading"``, ``value`` in W and ``time_ms`` in Unix epoch
milliseconds (UTC). Other keys (``power_measurement_start``/``stop``) are markers.

Inference (``mlperf-spl``): SPEC PTDaemon sample log, one line per sample, no header:
``Time,MM-DD-YYYY HH:MM:SS.fff,Watts,<total W>,Volts,..,Amps,..,PF,..,Mark,<mark>,Ch1,Watts,
<W>,...``. The first ``Watts`` is the analyzer's total; per-channel watts go to
``Trace.channels``. The clock has no zone (UTC assumed unless ``tz=``). When the folder holds
LoadGen's ``mlperf_log_detail.txt``, the trace is cut to its ``power_begin``/``power_end``
window (the measured benchmark window; ``window="all"`` keeps the whole log).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import TraceFormatError
from aiload.traces._trace import Trace, TraceMeta, check_power, check_times, tz_localize

__all__ = ["read_mllog", "read_spl", "mlperf_hardware", "MAX_NODE_W"]

#: largest believable reading of one node's wall power [W] (a mW log reads 1000x more)
MAX_NODE_W = 50_000.0
#: 2000-01-01 UTC in Unix epoch milliseconds: power logs are later
_EPOCH_MS_2000 = 946_684_800_000
_HW = re.compile(r"(GB200|B200|H200|H100|A100|L40S|MI300X)[-\s]?(SXM|PCIE|NVL)?", re.I)


def mlperf_hardware(path: str | os.PathLike) -> tuple[str | None, int | None]:
    """Node hardware (``"8xH100-SXM"``) and node count from the MLPerf ``systems/*.json``.

    Looks for ``<root>/systems/<system>.json`` where the path reads
    ``<root>/results/<system>/...``. Returns ``(None, None)`` when it is not there.
    """
    parts = Path(path).resolve().parts
    if "results" not in parts:
        return None, None
    i = len(parts) - 1 - parts[::-1].index("results")
    if i + 1 >= len(parts):
        return None, None
    desc = Path(*parts[:i]) / "systems" / f"{parts[i + 1]}.json"
    if not desc.is_file():
        return None, None
    info = json.loads(desc.read_text(encoding="utf-8"))
    match = _HW.search(str(info.get("accelerator_model_name", "")))
    per_node = info.get("accelerators_per_node")
    hardware = None
    if match and per_node:
        form = f"-{match.group(2).upper()}" if match.group(2) else ""
        hardware = f"{int(per_node)}x{match.group(1).upper()}{form}"
    nodes = info.get("number_of_nodes")
    return hardware, int(nodes) if nodes not in (None, "") else None


def _workload(path: Path) -> str | None:
    """Benchmark name from ``.../results/<system>/<benchmark>/...``."""
    parts = path.resolve().parts
    if "results" in parts:
        i = len(parts) - 1 - parts[::-1].index("results")
        if i + 2 < len(parts) - 1:
            return parts[i + 2]
    return None


def read_mllog(path: str | os.PathLike) -> Trace:
    """Read one MLPerf training power log (one node) [W].

    Parameters
    ----------
    path : path-like
        A ``node_<i>.txt`` file of ``:::MLLOG`` lines.

    Returns
    -------
    Trace
        One column named after the file stem (``node_1``) [W], UTC time index.
    """
    path = Path(path)
    times: list[int] = []
    watts: list[float] = []
    lines: list[int] = []
    with path.open(encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.startswith(":::MLLOG"):
                if line.strip():
                    raise TraceFormatError(
                        f"{path}: line {lineno} does not start with ':::MLLOG' (found "
                        f"{line[:40]!r}); expected an MLPerf power log of ':::MLLOG {{json}}' lines."
                    )
                continue
            try:
                rec = json.loads(line[len(":::MLLOG"):])
            except json.JSONDecodeError as err:
                raise TraceFormatError(
                    f"{path}: line {lineno} is not valid MLLOG JSON ({err.msg}); expected "
                    "':::MLLOG {\"key\": ..., \"value\": ..., \"time_ms\": ...}'."
                ) from None
            if rec.get("key") != "power_reading":
                continue
            if "time_ms" not in rec or "value" not in rec:
                raise TraceFormatError(
                    f"{path}: line {lineno} is a power_reading without 'time_ms' or 'value'; "
                    "expected both."
                )
            try:
                watts.append(float(rec["value"]) if rec["value"] is not None else np.nan)
            except (TypeError, ValueError):
                raise TraceFormatError(
                    f"{path}: line {lineno}: power_reading value {rec['value']!r} is not a number "
                    "[W]."
                ) from None
            try:
                times.append(int(rec["time_ms"]))
            except (TypeError, ValueError):
                raise TraceFormatError(
                    f"{path}: line {lineno}: power_reading time_ms {rec['time_ms']!r} is not a "
                    "whole number; expected Unix epoch milliseconds (UTC)."
                ) from None
            lines.append(lineno)
    if not lines and path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: the file is empty; expected ':::MLLOG' power_reading lines.")
    if not watts:
        raise TraceFormatError(
            f"{path}: found no 'power_reading' lines; expected an MLPerf power log "
            "(':::MLLOG' lines with \"key\": \"power_reading\")."
        )
    t_ms, w, line_arr = np.asarray(times), np.asarray(watts), np.asarray(lines)
    # The logger sometimes writes one reading twice (same time, same value, e.g. line 275 of
    # the 1-node LoRA run); an exact repeat carries no information and is dropped. A repeated
    # time with a different value is an error (check_times below).
    repeat = np.zeros(t_ms.size, dtype=bool)
    repeat[1:] = (np.diff(t_ms) == 0) & (np.diff(w) == 0)
    t_ms, w, dropped, line_arr = t_ms[~repeat], w[~repeat], line_arr[repeat], line_arr[~repeat]
    watts = w
    if t_ms.size and t_ms[0] < _EPOCH_MS_2000:
        # MLPerf power logging began in 2019: a time before 2000 is in seconds, not ms
        raise TraceFormatError(
            f"{path}: line {line_arr[0]}: power_reading time_ms = {t_ms[0]} is "
            f"{pd.Timestamp(int(t_ms[0]), unit='ms', tz='UTC')}, before 2000; expected Unix epoch "
            "milliseconds (UTC). Were seconds written to time_ms?"
        )
    index = pd.DatetimeIndex(pd.to_datetime(t_ms, unit="ms", utc=True), name="time")
    check_times(index, path, line_arr)
    power = pd.DataFrame({path.stem: watts}, index=index)
    check_power(power, path, unit="W", max_plausible_w=MAX_NODE_W, lines=line_arr)
    hardware, _ = mlperf_hardware(path)
    meta = TraceMeta(
        source=(str(path),),
        format="mlperf-mllog",
        hardware=hardware,
        n_devices=1,
        n_nodes=1,
        workload=_workload(path),
        sampling_interval_s=float(np.median(np.diff(index.as_unit("ns").asi8))) / 1e9,
        reading="unknown",
        boundary="AC input of the node (MLPerf power_reading)",
        extra={"node": path.stem, "run": path.parent.name}
        | ({"repeated_lines_dropped": dropped.tolist()} if dropped.size else {}),
    )
    return Trace(power_w=power, meta=meta)


def _power_window(folder: Path, tz: str | None) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    detail = folder / "mlperf_log_detail.txt"
    if not detail.is_file():
        return None
    found: dict[str, str] = {}
    with detail.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if '"power_begin"' in line or '"power_end"' in line:
                try:
                    rec = json.loads(line.split(":::MLLOG", 1)[1])
                    found[rec["key"]] = rec["value"]
                except (IndexError, KeyError, TypeError, ValueError):
                    raise TraceFormatError(
                        f"{detail}: line {lineno} is not a valid ':::MLLOG {{json}}' record with "
                        f"'key' and 'value' (found {line.strip()[:80]!r}); the power window cannot "
                        "be read. Fix the file, or read the whole spl.txt with window='all'."
                    ) from None
    if set(found) != {"power_begin", "power_end"}:
        return None
    try:
        stamps = pd.to_datetime([found["power_begin"], found["power_end"]],
                                format="%m-%d-%Y %H:%M:%S.%f")
    except (TypeError, ValueError):
        raise TraceFormatError(
            f"{detail}: power_begin {found['power_begin']!r} / power_end {found['power_end']!r} "
            "are not 'MM-DD-YYYY HH:MM:SS.fff' times; fix the file, or read the whole spl.txt "
            "with window='all'."
        ) from None
    stamps = tz_localize(stamps, tz, {}, detail)
    return stamps[0], stamps[1]


def read_spl(path: str | os.PathLike, *, tz: str | None = None, window: str = "power") -> Trace:
    """Read a SPEC PTDaemon ``spl.txt`` sample log (MLPerf inference power) [W].

    Parameters
    ----------
    path : path-like
        The ``spl.txt`` file.
    tz : str, optional
        Zone of the analyzer clock; default UTC (recorded in ``meta.extra["tz_assumed"]``).
    window : {"power", "all"}
        ``"power"`` cuts to LoadGen's ``power_begin``/``power_end`` when
        ``mlperf_log_detail.txt`` sits next to the file; ``"all"`` keeps every sample.

    Returns
    -------
    Trace
        Column ``node`` = the analyzer's total watts [W]; channels ``ch<i>_power_w`` [W],
        ``voltage_v`` [V], ``current_a`` [A], ``power_factor``.
    """
    path = Path(path)
    if window not in ("power", "all"):
        raise TraceFormatError(f"read_spl: window={window!r}; expected 'power' or 'all'.")
    try:
        raw = pd.read_csv(path, header=None, dtype=str, skip_blank_lines=True)
    except pd.errors.EmptyDataError:
        raise TraceFormatError(f"{path}: the file is empty; expected PTDaemon 'Time,...' lines.") from None
    lines = np.arange(1, len(raw) + 1)
    if raw.shape[1] < 4 or not ((raw[0] == "Time") & (raw[2] == "Watts")).all():
        bad = int(np.flatnonzero(~((raw[0] == "Time") & (raw.get(2) == "Watts")))[0]) if raw.shape[1] >= 4 else 0
        raise TraceFormatError(
            f"{path}: line {bad + 1} reads {','.join(raw.iloc[bad, :4].astype(str))!r}; expected "
            "'Time,MM-DD-YYYY HH:MM:SS.fff,Watts,<W>,...' (SPEC PTDaemon sample log)."
        )
    extra: dict = {"units": "W"}
    try:
        times = pd.to_datetime(raw[1], format="%m-%d-%Y %H:%M:%S.%f")
    except ValueError as err:
        raise TraceFormatError(
            f"{path}: a timestamp is not 'MM-DD-YYYY HH:MM:SS.fff' ({err}); fix the line."
        ) from None
    index = pd.DatetimeIndex(tz_localize(times, tz, extra, path), name="time")
    check_times(index, path, lines)
    total = pd.to_numeric(raw[3], errors="coerce").to_numpy()
    power = pd.DataFrame({"node": total}, index=index)
    check_power(power, path, unit="W", max_plausible_w=MAX_NODE_W, lines=lines)
    channels = {}
    for col in raw.columns[:-1]:
        label = raw[col].iloc[0]
        if isinstance(label, str) and re.fullmatch(r"Ch\d+", label) and raw[col + 1].iloc[0] == "Watts":
            channels[f"{label.lower()}_power_w"] = pd.to_numeric(raw[col + 2], errors="coerce").to_numpy()
    for name, key in (("voltage_v", "Volts"), ("current_a", "Amps"), ("power_factor", "PF")):
        pos = int(np.flatnonzero(raw.iloc[0].to_numpy() == key)[0]) if (raw.iloc[0] == key).any() else None
        if pos is not None:
            channels[name] = pd.to_numeric(raw[pos + 1], errors="coerce").to_numpy()
    ch = pd.DataFrame(channels, index=index)
    if raw.shape[1] > 11 and raw[10].iloc[0] == "Mark":
        extra["mark"] = str(raw[11].iloc[0])
    if window == "power":
        win = _power_window(path.parent, tz)
        if win is not None:
            keep = (index >= win[0]) & (index <= win[1])
            if keep.sum() < 2:
                raise TraceFormatError(
                    f"{path}: only {int(keep.sum())} sample(s) fall inside power_begin {win[0]} -> "
                    f"power_end {win[1]} of {path.parent / 'mlperf_log_detail.txt'}; the log spans "
                    f"{index[0]} -> {index[-1]}. Are both from the same run? window='all' reads "
                    "the whole log."
                )
            power, ch = power[keep], ch[keep]
            extra["window"] = {"power_begin": str(win[0]), "power_end": str(win[1])}
            extra["window_source"] = str(path.parent / "mlperf_log_detail.txt")
    hardware, _ = mlperf_hardware(path)
    parts = path.resolve().parts
    workload = None
    if "results" in parts:
        i = len(parts) - 1 - parts[::-1].index("results")
        workload = "/".join(parts[i + 2 : i + 4]) if i + 3 < len(parts) else None
    meta = TraceMeta(
        source=(str(path),),
        format="mlperf-spl",
        hardware=hardware,
        n_devices=1,
        n_nodes=1,
        workload=workload,
        sampling_interval_s=float(np.median(np.diff(index.as_unit("ns").asi8))) / 1e9,
        reading="averaged",
        boundary="AC wall of the node (power analyzer, sum of input channels)",
        extra=extra,
    )
    return Trace(power_w=power, meta=meta, channels=ch)
