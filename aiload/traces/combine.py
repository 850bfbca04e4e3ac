"""Put a run split over several files (one per node or device) on one time base.

Each file's point samples are integrated exactly as a piecewise-linear curve over the bins
of a common grid (:func:`aiload.resampling.integrate_samples`), so every column keeps its
energy over the common span. The span is ``[latest first sample, earliest last sample]``
of the files; the grid starts at that latest first sample; its step is ``step_s`` or, by
default, the largest of the files' median sampling intervals rounded to the millisecond
(no file is upsampled). Samples outside the common span are dropped and the dropped
energy of each file is recorded in ``meta.extra["dropped_energy_wh"]``. Channels (temperature,
utilisation, ...) are integrated onto the same grid; a file's channels with missing values are
left out of the combined trace.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from aiload._checks import check_number
from aiload.errors import InputError
from aiload.resampling import find_gaps, integrate_samples
from aiload.traces._trace import Trace, TraceMeta

__all__ = ["combine"]

_NS = 1_000_000_000

#: most grid steps of a combined run (8 bytes per step and column, several columns)
_MAX_GRID = 200_000_000


def _grid_step_ns(traces: Sequence[Trace], step_s: float | None) -> int:
    if step_s is not None:
        check_number(step_s, "combine_step_s", ge=0.001, le=3600.0, unit="s",
                     hint="The grid step of a run read from several files, e.g. 0.1.")
        return int(round(step_s * _NS))
    median_s = max(t.meta.sampling_interval_s for t in traces)
    return max(int(round(median_s * 1000)), 1) * 1_000_000


def combine(
    parts: Sequence[tuple[str | None, Trace]],
    *,
    step_s: float | None = None,
    n_nodes: int | None = None,
    max_gap: str | pd.Timedelta | None = None,
) -> Trace:
    """Align several traces of one run onto a common grid, energy conserved.

    Parameters
    ----------
    parts : sequence of (prefix, Trace)
        The traces. With a prefix, each column becomes ``"<prefix>/<column>"`` (or just
        ``"<prefix>"`` when the trace has a single node-level column); with ``None`` the
        column names are kept (e.g. GPU and CPU files of one node).
    step_s : float, optional
        Grid step [s]; default: the largest median sampling interval, rounded to 1 ms.
    n_nodes : int, optional
        Nodes of the run; default: the sum over the parts.
    max_gap : str or pandas.Timedelta, optional
        Longest sample spacing accepted inside the span (see :func:`aiload.resampling.resample`).

    Returns
    -------
    Trace
        Interval means [W] on the grid (index ``freq`` set), ``meta.extra["values"] ==
        "interval means"``.
    """
    if not parts:
        raise InputError("combine: no traces given; expected at least one.")
    traces = [t for _, t in parts]
    kinds = {type(t.power_w.index) for t in traces}
    if len(kinds) > 1:
        raise InputError(
            "combine: some files have absolute time and others elapsed time "
            f"({sorted(k.__name__ for k in kinds)}); expected one kind for all files of a run."
        )
    start = max(int(t.power_w.index.as_unit("ns").asi8[0]) for t in traces)
    end = min(int(t.power_w.index.as_unit("ns").asi8[-1]) for t in traces)
    step_ns = _grid_step_ns(traces, step_s)
    if end - start < step_ns:
        spans = "; ".join(
            f"{t.meta.source[0]}: {t.power_w.index[0]} -> {t.power_w.index[-1]}" for t in traces
        )
        raise InputError(
            f"combine: the files do not overlap by one grid step of {step_ns / _NS:g} s ({spans}); "
            "expected files of the same run recorded at the same time."
        )
    n = (end - start) // step_ns
    if n > _MAX_GRID:
        raise InputError(
            f"combine: a grid of {step_ns / _NS:g} s over the {(end - start) / _NS:g} s the files "
            f"share has {n:,} steps, more than the {_MAX_GRID:,} aiload combines in memory; "
            "pass a larger combine_step_s."
        )
    edges = start + step_ns * np.arange(n + 1, dtype=np.int64)

    columns: dict[str, np.ndarray] = {}
    channels: dict[str, np.ndarray] = {}
    dropped_wh: dict[str, float] = {}
    for prefix, trace in parts:
        src = trace.meta.source[0]
        idx = trace.power_w.index
        gap = find_gaps(idx, max_gap, None, str(src))
        energy = integrate_samples(idx.as_unit("ns").asi8, trace.power_w.to_numpy(np.float64), edges, gap)
        means = energy / (step_ns / _NS)
        total_wh = float(
            np.trapezoid(trace.total_w().to_numpy(np.float64), (idx.as_unit("ns").asi8 - idx.as_unit("ns").asi8[0]) / _NS)
        ) / 3600.0
        dropped_wh[str(src)] = total_wh - float(energy.sum()) / 3600.0
        for j, col in enumerate(trace.power_w.columns):
            if prefix is None:
                name = str(col)
            elif trace.power_w.shape[1] == 1 and trace.meta.n_devices == trace.meta.n_nodes:
                name = prefix
            else:
                name = f"{prefix}/{col}"
            if name in columns:
                raise InputError(
                    f"combine: column {name!r} appears in more than one file ({src}); expected "
                    "distinct devices or nodes. Give each file a distinct node name."
                )
            columns[name] = means[:, j]
        ch = trace.channels
        if ch is not None and ch.shape[1] and not ch.isna().to_numpy().any():
            ch_energy = integrate_samples(ch.index.as_unit("ns").asi8, ch.to_numpy(np.float64), edges, gap)
            for j, col in enumerate(ch.columns):
                name = str(col) if prefix is None else f"{prefix}/{col}"
                channels[name] = ch_energy[:, j] / (step_ns / _NS)

    step = pd.Timedelta(step_ns, unit="ns")
    first = traces[0].power_w.index
    if isinstance(first, pd.DatetimeIndex):
        index = pd.date_range(pd.Timestamp(start, tz="UTC"), periods=n, freq=step, name="time")
    else:
        index = pd.timedelta_range(pd.Timedelta(start), periods=n, freq=step, name="elapsed")
    power = pd.DataFrame(columns, index=index)
    readings = {t.meta.reading for t in traces}
    # Keep only what all files agree on; per-file facts (node name, ...) would mislead.
    extra = {
        k: v
        for k, v in traces[0].meta.extra.items()
        if all(t.meta.extra.get(k, object()) == v for t in traces[1:])
    }
    extra.update(
        values="interval means",
        grid_step_s=step_ns / _NS,
        common_span=(str(index[0]), str(index[-1] + step)),
        dropped_energy_wh=dropped_wh,
        parts=[str(t.meta.source[0]) for t in traces],
    )
    meta = TraceMeta(
        source=tuple(s for t in traces for s in t.meta.source),
        format=traces[0].meta.format,
        hardware=next((t.meta.hardware for t in traces if t.meta.hardware), None),
        n_devices=sum(t.meta.n_devices for t in traces),
        n_nodes=n_nodes if n_nodes is not None else sum(t.meta.n_nodes for t in traces),
        workload=next((t.meta.workload for t in traces if t.meta.workload), None),
        sampling_interval_s=max(t.meta.sampling_interval_s for t in traces),
        reading=readings.pop() if len(readings) == 1 else "unknown",
        boundary=" + ".join(dict.fromkeys(t.meta.boundary for t in traces)),
        extra=extra,
    )
    ch_frame = pd.DataFrame(channels, index=index) if channels else None
    return Trace(power_w=power, meta=meta, channels=ch_frame)
