"""Interval means at any resolution from 0.1 s to 1 h, energy conserved.

Two kinds of input are understood:

``"samples"``
    Point readings (what a power meter or NVML returns) at possibly irregular times. Power
    between two readings is taken as the straight line joining them, so the energy of the
    series is its trapezoid integral; each output bin gets the *exact* integral of that
    piecewise-linear curve over the bin divided by the bin length.
``"means"``
    Interval means already on a fixed grid (aiload's own convention: the value is the mean
    over the interval that starts at its label). Power is constant inside each interval, so
    cumulative energy is piecewise linear; interpolating it at the new bin edges gives block
    averages when downsampling and repeated values when upsampling, exactly.

Edge bins: only bins that the input covers completely are returned, so the energy of the
output equals the input's energy over the output span ``[first label, last label + step)``.
The rest of the input (less than one bin at each end) is dropped, never extrapolated.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from aiload.errors import InputError

__all__ = [
    "resample",
    "parse_step",
    "find_gaps",
    "integrate_samples",
    "MIN_STEP",
    "MAX_STEP",
    "FILL_POLICIES",
]

#: finest and coarsest resolutions :func:`resample` produces
MIN_STEP = pd.Timedelta("100ms")
MAX_STEP = pd.Timedelta("1h")
#: what to do about a gap between samples longer than ``max_gap``
FILL_POLICIES = (None, "interpolate", "zero", "nan")
_KINDS = ("auto", "samples", "means")
_NS = 1_000_000_000


def parse_step(freq: str | pd.Timedelta, what: str = "freq") -> pd.Timedelta:
    """Turn ``"15min"``, ``"100ms"``, ``"1h"`` or a Timedelta into a checked step.

    Parameters
    ----------
    freq : str or pandas.Timedelta
        The output resolution, between :data:`MIN_STEP` (0.1 s) and :data:`MAX_STEP` (1 h).
    what : str
        Name of the argument, for the error message.

    Returns
    -------
    pandas.Timedelta
        The step [s resolution, ns precision].
    """
    if isinstance(freq, (int, float, np.integer, np.floating)) and not isinstance(freq, bool) \
            and np.isfinite(freq):
        # pandas reads a bare number as nanoseconds: 60 would be 60 ns, not one minute
        raise InputError(
            f"{what}={freq!r} is a bare number without a unit; expected a pandas frequency "
            f"string such as '{freq:g}s' or '{freq:g}min', or a pandas.Timedelta."
        )
    try:
        step = pd.Timedelta(freq)
    except (TypeError, ValueError):
        try:
            step = pd.Timedelta(pd.tseries.frequencies.to_offset(freq))
        except (TypeError, ValueError):
            raise InputError(
                f"{what}={freq!r} is not a time step; expected a pandas frequency string such "
                "as '100ms', '1s', '15min' or '1h', or a pandas.Timedelta."
            ) from None
    if step is pd.NaT or pd.isna(step):
        raise InputError(
            f"{what}={freq!r} is not a time step; expected a pandas frequency string such as "
            "'100ms', '1s', '15min' or '1h', or a pandas.Timedelta."
        )
    if not MIN_STEP <= step <= MAX_STEP:
        raise InputError(
            f"{what}={freq!r} ({step.total_seconds():g} s) is outside the supported range "
            f"{MIN_STEP.total_seconds():g} s to {MAX_STEP.total_seconds():g} s; choose a step "
            "in that range (e.g. '1s', '15min', '1h')."
        )
    return step


def _times_ns(index: pd.Index, what: str) -> np.ndarray:
    """int64 nanoseconds of a tz-aware DatetimeIndex or a TimedeltaIndex."""
    if isinstance(index, pd.DatetimeIndex):
        if index.tz is None:
            raise InputError(
                f"{what}: the DatetimeIndex has no time zone (naive); aiload needs tz-aware time. "
                "Fix it with data.tz_localize('UTC') (or the zone the clock was in)."
            )
    elif not isinstance(index, pd.TimedeltaIndex):
        mixed = ""
        if len(index) and all(isinstance(v, pd.Timestamp) for v in index[:1000]):
            # pandas keeps times of several zones as plain objects
            mixed = (" of timestamps in several time zones; put them in one zone first, e.g. "
                     "data.index = pd.to_datetime(data.index, utc=True)")
        raise InputError(
            f"{what}: expected a tz-aware DatetimeIndex or a TimedeltaIndex named 'elapsed', got "
            f"{type(index).__name__}{mixed}."
        )
    t = index.as_unit("ns").asi8
    # an index with a freq is regular by construction: skip the O(n) check
    if t.size >= 2 and index.freq is None:
        bad = np.flatnonzero(np.diff(t) <= 0)
        if bad.size:
            i = int(bad[0])
            raise InputError(
                f"{what}: times must strictly increase; label {i + 1} ({index[i + 1]}) is not after "
                f"label {i} ({index[i]}). Sort the data and drop duplicate times first "
                "(data.sort_index(); data[~data.index.duplicated()])."
            )
    return t


def _source_step_ns(index: pd.Index, t_ns: np.ndarray) -> int:
    """The fixed step of interval means [ns], checked against the labels.

    A calendar ``freq`` (months, business days) has no fixed length, and a daily ``freq``
    in a zone with daylight saving time labels local midnights 23 or 25 hours apart while
    pandas reports 24 hours: both would put energy in the wrong hours, so both are refused.
    """
    freq = index.freq
    try:
        src_ns = int(pd.Timedelta(freq).value)
    except ValueError:
        raise InputError(
            f"resample: the index's freq {freq.freqstr!r} has no fixed length (calendar steps "
            "such as months or business days differ in length), so the values cannot be "
            "interval means of one step. Give the data on a fixed step (e.g. '1h'); if the "
            "values are point readings, not interval means, pass kind='samples'."
        ) from None
    if src_ns <= 0:
        raise InputError(
            f"resample: the index's freq {freq.freqstr!r} steps backwards; expected increasing "
            "times. Sort the data first (data.sort_index())."
        )
    # a sub-daily freq steps in real time by construction; a daily one (short series) is
    # checked label by label
    if src_ns >= 86_400 * _NS and t_ns.size > 1:
        bad = np.flatnonzero(np.diff(t_ns) != src_ns)
        if bad.size:
            i = int(bad[0])
            raise InputError(
                f"resample: the index's freq {freq.freqstr!r} says each interval is "
                f"{src_ns / _NS / 3600:g} h, but labels {index[i]} -> {index[i + 1]} are "
                f"{(t_ns[i + 1] - t_ns[i]) / _NS / 3600:g} h apart (a daylight-saving change "
                "in local calendar days), so the intervals' lengths are unknown. Give the data "
                "on an hourly or finer step, or on calendar days of a zone without daylight "
                "saving time (e.g. UTC)."
            )
    return src_ns


def _values(data: pd.DataFrame, what: str) -> np.ndarray:
    numeric = [c for c in data.columns if not pd.api.types.is_numeric_dtype(data[c])
               or pd.api.types.is_bool_dtype(data[c])]
    if numeric:
        raise InputError(
            f"{what}: column {numeric[0]!r} holds {data[numeric[0]].dtype} values; expected "
            "power as numbers. Convert it first (pd.to_numeric) or drop the column."
        )
    values = data.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        nan = np.argwhere(np.isnan(values))
        inf = np.argwhere(np.isinf(values))
        word, found = ("NaN", nan) if len(nan) else ("infinite", inf)
        row, col = found[0]
        raise InputError(
            f"{what}: {len(found)} {word} value(s), first in column {data.columns[col]!r} at "
            f"{data.index[row]}; expected finite numbers. Drop, fill or correct them before "
            "resampling."
        )
    return values


def _parse_gap(max_gap) -> int | None:
    """``max_gap`` as a positive number of ns, or None for the default."""
    if max_gap is None:
        return None
    try:
        gap = pd.Timedelta(max_gap)
    except (TypeError, ValueError):
        gap = pd.NaT
    if gap is pd.NaT or pd.isna(gap) or gap.value <= 0:
        raise InputError(
            f"resample: max_gap={max_gap!r} is not a positive duration; expected e.g. '10s', "
            "'5min' or a pandas.Timedelta, or None for 10 x the median spacing."
        )
    return int(gap.value)


def _origin_ns(origin, index: pd.Index) -> int | None:
    """The bin anchor [ns]: None for 'start', 0 for 'epoch', else the timestamp's value."""
    if isinstance(origin, str) and origin == "start":
        return None
    if isinstance(origin, str) and origin == "epoch":
        return 0
    try:
        value = (pd.Timestamp(origin) if isinstance(index, pd.DatetimeIndex)
                 else pd.Timedelta(origin))
    except (TypeError, ValueError):
        value = pd.NaT
    if value is pd.NaT or pd.isna(value):
        kind = "timestamp" if isinstance(index, pd.DatetimeIndex) else "elapsed time"
        raise InputError(
            f"resample: origin={origin!r} is not 'start', 'epoch' or a {kind}; expected e.g. "
            "origin='start' or pd.Timestamp('2024-01-01', tz='UTC')."
        )
    if isinstance(value, pd.Timestamp) and value.tz is None:
        raise InputError(
            f"origin={origin!r} is naive; give a tz-aware timestamp such as "
            "pd.Timestamp('2024-01-01', tz='UTC'), 'start' or 'epoch'."
        )
    return int(value.value)


def _edges_ns(t0: int, t1: int, step_ns: int, origin, index: pd.Index) -> np.ndarray:
    """Edges of all whole bins of length ``step_ns`` inside ``[t0, t1]`` [ns]."""
    o = _origin_ns(origin, index)
    if o is None:
        first = t0
    else:
        first = o + -((o - t0) // step_ns) * step_ns  # ceil to the grid
    n = (t1 - first) // step_ns
    return first + step_ns * np.arange(max(n, 0) + 1, dtype=np.int64)


def find_gaps(
    index: pd.Index, max_gap: str | pd.Timedelta | None, fill: str | None, what: str
) -> np.ndarray:
    """Mark sample spacings longer than ``max_gap``; raise on any when ``fill`` is None.

    Parameters
    ----------
    index : pandas.DatetimeIndex or pandas.TimedeltaIndex
        Strictly increasing sample times.
    max_gap : str or pandas.Timedelta, optional
        Longest spacing that is not a gap; default 10 x the median spacing, at least 1 s.
    fill : str or None
        The caller's fill policy; ``None`` turns a gap into an error.
    what : str
        Name of the data, for the message.

    Returns
    -------
    numpy.ndarray of bool
        One flag per spacing (``len(index) - 1``).
    """
    t_ns = index.as_unit("ns").asi8
    dt_ns = np.diff(t_ns)
    given_ns = _parse_gap(max_gap)
    limit_ns = max(10 * int(np.median(dt_ns)), _NS) if given_ns is None else given_ns
    gap = dt_ns > limit_ns
    if gap.any() and fill is None:
        i = int(np.flatnonzero(gap)[0])
        raise InputError(
            f"{what}: {int(gap.sum())} gap(s) longer than max_gap={limit_ns / _NS:g} s; the first "
            f"is {dt_ns[i] / _NS:g} s between {index[i]} and {index[i + 1]}. Pass "
            "fill='interpolate', 'zero' or 'nan' to choose how to bridge it, or a larger max_gap."
        )
    return gap


def integrate_samples(
    t_ns: np.ndarray,
    values: np.ndarray,
    edges_ns: np.ndarray,
    gap: np.ndarray | None = None,
    gap_fill: str = "interpolate",
) -> np.ndarray:
    """Exact integral of piecewise-linear samples over consecutive bins [value x s].

    Parameters
    ----------
    t_ns : numpy.ndarray
        Strictly increasing sample times [ns], shape (n,).
    values : numpy.ndarray
        Samples, shape (n, k) [W].
    edges_ns : numpy.ndarray
        Bin edges [ns] inside ``[t_ns[0], t_ns[-1]]``, shape (m + 1,).
    gap : numpy.ndarray of bool, optional
        Shape (n - 1,): segments treated as gaps.
    gap_fill : str
        ``"interpolate"`` (the straight line), ``"zero"`` (no energy) or ``"nan"``.

    Returns
    -------
    numpy.ndarray
        Energy per bin, shape (m, k) [W s].
    """
    # Relative float seconds keep 1e-9 s resolution over decades of samples.
    t = (t_ns - t_ns[0]) / _NS
    x = (edges_ns - t_ns[0]) / _NS
    dt = np.diff(t)
    slope = np.diff(values, axis=0) / dt[:, None]
    seg = 0.5 * (values[1:] + values[:-1]) * dt[:, None]
    weight = np.ones(dt.size)
    bridged = gap is not None and bool(gap.any()) and gap_fill != "interpolate"
    if bridged:
        weight[gap] = 0.0
    cum = np.concatenate([np.zeros((1, values.shape[1])), np.cumsum(seg * weight[:, None], axis=0)])
    k = np.clip(np.searchsorted(t, x, side="right") - 1, 0, dt.size - 1)
    h = (x - t[k])[:, None]
    partial = (values[k] * h + 0.5 * slope[k] * h * h) * weight[k][:, None]
    energy = np.diff(cum[k] + partial, axis=0)
    if bridged and gap_fill == "nan":
        # Bins that overlap a gap segment carry no trustworthy energy.
        for i in np.flatnonzero(gap):
            lo = max(int(np.searchsorted(x, t[i], side="right")) - 1, 0)
            hi = int(np.searchsorted(x, t[i + 1], side="left"))
            energy[lo:hi] = np.nan
    return energy


def _means(values: np.ndarray, t0_ns: int, src_ns: int, edges_ns: np.ndarray) -> np.ndarray:
    """Interval means of piecewise-constant power on new bin edges.

    Whole multiples take the exact shortcuts (block average, repeat); other ratios
    interpolate the cumulative energy, which is exact in arithmetic because it is piecewise
    linear between the source edges.
    """
    step_ns = int(edges_ns[1] - edges_ns[0])
    n = edges_ns.size - 1
    offset = int(edges_ns[0] - t0_ns)
    if step_ns % src_ns == 0 and offset % src_ns == 0:
        ratio, first = step_ns // src_ns, offset // src_ns
        return values[first : first + n * ratio].reshape(n, ratio, -1).mean(axis=1)
    if src_ns % step_ns == 0 and offset % step_ns == 0:
        ratio = src_ns // step_ns
        first = offset // src_ns
        fine = np.repeat(values[first:], ratio, axis=0)
        skip = (offset - first * src_ns) // step_ns
        return fine[skip : skip + n]
    cum = np.concatenate([np.zeros((1, values.shape[1])), np.cumsum(values * (src_ns / _NS), axis=0)])
    src = np.arange(values.shape[0] + 1) * (src_ns / _NS)
    x = (edges_ns - t0_ns) / _NS
    at = np.column_stack([np.interp(x, src, cum[:, j]) for j in range(values.shape[1])])
    return np.diff(at, axis=0) / (step_ns / _NS)


def _output_index(index: pd.Index, edges_ns: np.ndarray, step: pd.Timedelta) -> pd.Index:
    n = edges_ns.size - 1
    if isinstance(index, pd.DatetimeIndex):
        # a Timedelta freq steps in real (UTC) time, so a DST change neither adds nor drops bins
        start = pd.Timestamp(int(edges_ns[0]), tz="UTC").tz_convert(index.tz)
        return pd.date_range(start, periods=n, freq=step, name=index.name)
    return pd.timedelta_range(pd.Timedelta(int(edges_ns[0])), periods=n, freq=step, name=index.name)


def _wrap(data, values: np.ndarray, index: pd.Index):
    if isinstance(data, pd.Series):
        return pd.Series(values[:, 0], index=index, name=data.name)
    return pd.DataFrame(values, index=index, columns=data.columns)


def resample(
    data,
    freq: str | pd.Timedelta,
    *,
    kind: str = "auto",
    max_gap: str | pd.Timedelta | None = None,
    fill: str | None = None,
    origin: str | pd.Timestamp = "start",
):
    """Interval means of power on a fixed grid, energy conserved.

    Parameters
    ----------
    data : pandas.Series, pandas.DataFrame or aiload.traces.Trace
        Power [W] (or any power unit; the unit is kept) on a tz-aware DatetimeIndex or a
        TimedeltaIndex. A Trace contributes its ``power_w`` (point samples).
    freq : str or pandas.Timedelta
        Output step, from ``"100ms"`` to ``"1h"``.
    kind : {"auto", "samples", "means"}
        ``"samples"``: point readings, integrated as a piecewise-linear curve.
        ``"means"``: interval means on a fixed grid (index ``freq`` set). ``"auto"``: a Trace
        is samples (means when it was combined from several files); a Series/DataFrame whose
        index has a ``freq`` is means; else samples.
    max_gap : str or pandas.Timedelta, optional
        Longest spacing of samples that is not a gap [s]. Default: 10 x the median spacing,
        at least 1 s. Only used for ``kind="samples"``.
    fill : {None, "interpolate", "zero", "nan"}
        What a gap becomes. ``None`` raises :class:`aiload.errors.InputError` naming the gap;
        ``"interpolate"`` joins the samples on each side by a straight line; ``"zero"``
        counts no energy in the gap; ``"nan"`` makes every bin touching the gap NaN.
    origin : {"start", "epoch"} or pandas.Timestamp
        Where bins are anchored: at the first sample, at multiples of ``freq`` since
        1970-01-01 UTC (or elapsed 0), or at a given timestamp.

    Returns
    -------
    pandas.Series or pandas.DataFrame
        Interval means [same unit as the input], labelled by interval start, index ``freq``
        set, time zone (or the ``elapsed`` name) preserved. Only whole bins covered by the
        input are returned, so ``sum(out) * step`` equals the exact integral of the input
        over ``[out.index[0], out.index[-1] + step)``.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.to_datetime(["2024-01-01 00:00:00", "2024-01-01 00:00:02"], utc=True)
    >>> resample(pd.Series([100.0, 300.0], index=t), "1s").tolist()
    [150.0, 250.0]
    """
    from aiload.traces._trace import Trace  # the trace package imports this module

    is_trace = isinstance(data, Trace)
    trace_means = is_trace and data.is_interval_means
    if is_trace:
        data = data.power_w
    if not isinstance(data, (pd.Series, pd.DataFrame)):
        raise InputError(
            f"resample: expected a pandas Series, DataFrame or aiload Trace, got "
            f"{type(data).__name__}."
        )
    if not isinstance(kind, str) or kind not in _KINDS:
        raise InputError(f"resample: kind={kind!r} is not one of {_KINDS}.")
    if not (fill is None or isinstance(fill, str)) or fill not in FILL_POLICIES:
        raise InputError(f"resample: fill={fill!r} is not one of {FILL_POLICIES}.")
    step = parse_step(freq)
    step_ns = step.value
    _parse_gap(max_gap)
    frame = data.to_frame() if isinstance(data, pd.Series) else data
    if len(frame) == 0:
        raise InputError("resample: the data is empty; expected at least two samples.")
    t_ns = _times_ns(frame.index, "resample")
    values = _values(frame, "resample")
    if kind == "auto":
        if is_trace:
            kind = "means" if trace_means else "samples"
        else:
            kind = "samples" if frame.index.freq is None else "means"

    if kind == "means":
        if frame.index.freq is None:
            raise InputError(
                "resample: kind='means' needs interval means on a fixed grid (index.freq set); "
                "got an index without freq. Use kind='samples' for point readings, or set the "
                "freq with data.asfreq(...)."
            )
        src_ns = _source_step_ns(frame.index, t_ns)
        start, end = int(t_ns[0]), int(t_ns[-1]) + src_ns
        edges = _edges_ns(start, end, step_ns, origin, frame.index)
        if edges.size < 2:
            raise InputError(
                f"resample: the data spans {(end - start) / _NS:g} s and holds no whole output "
                f"bin of {step.total_seconds():g} s aligned to origin={origin!r}; choose a finer "
                "freq or origin='start'."
            )
        out = _means(values, start, src_ns, edges)
        return _wrap(data, out, _output_index(frame.index, edges, step))

    if len(frame) < 2:
        raise InputError("resample: point samples need at least two readings to integrate.")
    gap = find_gaps(frame.index, max_gap, fill, "resample")
    edges = _edges_ns(int(t_ns[0]), int(t_ns[-1]), step_ns, origin, frame.index)
    if edges.size < 2:
        raise InputError(
            f"resample: the samples span {(t_ns[-1] - t_ns[0]) / _NS:g} s and hold no whole "
            f"output bin of {step.total_seconds():g} s aligned to origin={origin!r}; choose a "
            "finer freq or origin='start'."
        )
    energy = integrate_samples(t_ns, values, edges, gap, fill or "interpolate")
    return _wrap(data, energy / step.total_seconds(), _output_index(frame.index, edges, step))
