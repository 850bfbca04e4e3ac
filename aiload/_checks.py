"""One set of input checks shared by every aiload layer.

Non-finite numbers (NaN, ±inf) are never let through: a configuration value, a series, a
price or a trace sample that is not finite is an :class:`~aiload.errors.InputError` naming the
field. Values outside physics are errors; values that are possible but suspicious (one trace
sample a million times the median) raise an :class:`~aiload.errors.InputWarning`.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from aiload.errors import InputError, InputWarning

__all__ = [
    "check_number",
    "check_finite_values",
    "warn_spikes",
    "available_memory_bytes",
    "require_memory",
    "require_facility_memory",
    "check_run_arguments",
    "warn_unit_slip",
    "SPIKE_FACTOR",
    "UNIT_SLIP_FACTOR",
]

#: a sample this many times the median of its column is reported as a likely glitch
SPIKE_FACTOR = 1e6

#: a power this many times off the quantity it is compared with (either way) is reported as a
#: likely unit slip (kW for MW, W for kW): a 1,000x slip lands beyond it, a real design
#: choice (a 100 kW import limit for a 10 MW site, 1/100) inside it
UNIT_SLIP_FACTOR = 300.0

_LADDER = ("W", "kW", "MW", "GW")


def _range_text(ge, gt, le, lt) -> str:
    low = f">= {ge:g}" if ge is not None else (f"> {gt:g}" if gt is not None else "")
    high = f"<= {le:g}" if le is not None else (f"< {lt:g}" if lt is not None else "")
    return " and ".join(p for p in (low, high) if p)


def check_number(
    value: Any,
    what: str,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    unit: str = "",
    optional: bool = False,
    allow_inf: bool = False,
    hint: str = "",
) -> float | None:
    """Return ``value`` as a float after checking it is a finite number in range.

    Parameters
    ----------
    value : object
        The value to check. ``bool`` is refused (``True`` is not a number of watts).
    what : str
        The field's name for the message, e.g. ``"FleetSpec.idle_w"``.
    ge, gt, le, lt : float, optional
        Bounds: greater-or-equal, greater-than, less-or-equal, less-than.
    unit : str
        Unit shown in the message, e.g. ``"W"``.
    optional : bool
        Let ``None`` through (returned as None).
    allow_inf : bool
        Let ``+inf`` through (a cap meaning "no limit"); NaN and ``-inf`` are still refused.
    hint : str
        How to fix it, appended to the message.

    Returns
    -------
    float or None

    Raises
    ------
    aiload.errors.InputError
        Naming ``what``, the value received and the range expected.
    """
    if value is None and optional:
        return None
    unit_text = f" [{unit}]" if unit else ""
    bounds = _range_text(ge, gt, le, lt)
    expected = f"a finite number{' ' + bounds if bounds else ''}{unit_text}"
    if allow_inf:
        expected = expected.replace("a finite number", "a number (inf for no limit)")
    tail = f" {hint}" if hint else ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise InputError(
            f"{what}: expected {expected}, got {value!r} ({type(value).__name__}).{tail}"
        )
    number = float(value)
    if math.isnan(number) or (math.isinf(number) and not (allow_inf and number > 0)):
        refused = "NaN and -inf are" if allow_inf else "NaN and infinite values are"
        raise InputError(
            f"{what}: expected {expected}, got {number!r}; {refused} not accepted.{tail}"
        )
    if (
        (ge is not None and not number >= ge)
        or (gt is not None and not number > gt)
        or (le is not None and not number <= le)
        or (lt is not None and not number < lt)
    ):
        raise InputError(f"{what}: expected {expected}, got {value!r}.{tail}")
    return number


def check_finite_values(
    values: Any, what: str, *, labels: Any = None, hint: str = ""
) -> np.ndarray:
    """Return ``values`` as a float64 array after checking every element is finite.

    Parameters
    ----------
    values : array-like or pandas.Series/DataFrame
        Numbers to check (any shape).
    what : str
        Name of the data for the message.
    labels : sequence, optional
        Row labels (e.g. the time index) to name where the first bad value is; a Series or
        DataFrame uses its own index when not given.
    hint : str
        How to fix it, appended to the message.

    Raises
    ------
    aiload.errors.InputError
        With the count of NaN/infinite values, the first one and where it is.
    """
    if labels is None and hasattr(values, "index"):
        labels = values.index
    columns = getattr(values, "columns", None)
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            f"{what}: expected numbers, got values of type "
            f"{getattr(values, 'dtype', type(values))}."
            f"{' ' + hint if hint else ''}"
        ) from None
    bad = ~np.isfinite(arr)
    if bad.any():
        first = np.argwhere(bad)[0]
        where = ""
        if labels is not None and arr.ndim >= 1:
            where = f" at {labels[int(first[0])]}"
        elif arr.ndim >= 1:
            where = f" at position {int(first[0])}"
        if columns is not None and arr.ndim == 2:
            where += f" in column {columns[int(first[1])]!r}"
        n_nan = int(np.isnan(arr).sum())
        n_inf = int(bad.sum()) - n_nan
        raise InputError(
            f"{what}: {n_nan} NaN and {n_inf} infinite value(s), first "
            f"{float(arr[tuple(first)])!r}{where}; "
            "expected finite numbers. aiload never fills or clips silently: drop, interpolate "
            f"or correct them first.{' ' + hint if hint else ''}"
        )
    return arr


def warn_spikes(values: np.ndarray, what: str, *, labels: Any = None,
                factor: float = SPIKE_FACTOR) -> None:
    """Warn when a sample is more than ``factor`` times the median of its column.

    Parameters
    ----------
    values : numpy.ndarray
        Non-negative samples, shape (n,) or (n, k) with one column per device.
    what : str
        Name of the data for the message; with ``(n, k)`` the column number is added.
    labels : sequence or callable, optional
        Row labels (or a function of the row number) to name where the spike is.
    factor : float
        Ratio to the median above which a sample is reported [-].
    """
    arr = np.asarray(values, dtype=np.float64)
    arr2 = arr.reshape(arr.shape[0], -1)
    for j in range(arr2.shape[1]):
        x = arr2[:, j]
        if x.size < 3:
            continue
        median = float(np.median(x))
        if not median > 0:
            continue
        i = int(np.argmax(x))
        if x[i] >= factor * median:
            if callable(labels):
                where = f" at {labels(i)}"
            else:
                where = f" at {labels[i]}" if labels is not None else f" at sample {i}"
            column = f" (column {j})" if arr2.shape[1] > 1 else ""
            warnings.warn(
                f"{what}{column}: a sample of {x[i]:g}{where} is {x[i] / median:.3g} times the "
                f"median {median:g}; this is almost certainly a glitch in the file, not power. "
                "Check the file and drop or correct that sample.",
                InputWarning,
                stacklevel=3,
            )


def available_memory_bytes() -> int | None:
    """Memory the system can give a new allocation now [bytes]; None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def require_memory(needed_bytes: float, what: str, way_out: str,
                   available_bytes: int | None = None) -> None:
    """Refuse up front a job whose estimated memory exceeds what the machine has free.

    Parameters
    ----------
    needed_bytes : float
        Estimated peak memory of the job [bytes].
    what : str
        The job, for the message (e.g. ``"facility(start=..., end=..., freq='100ms')"``).
    way_out : str
        How to run it anyway (stream to disk, a coarser step, a shorter period).
    available_bytes : int, optional
        Free memory [bytes]; default :func:`available_memory_bytes`. Nothing is checked when
        it cannot be known.
    """
    free = available_memory_bytes() if available_bytes is None else available_bytes
    if free is None or needed_bytes <= free:
        return
    raise InputError(
        f"{what}: needs an estimated {needed_bytes / 2**30:.1f} GiB of memory, but only "
        f"{free / 2**30:.1f} GiB is free; it would fail with MemoryError part way through. "
        f"{way_out}"
    )


#: the facility model's peak memory per interval, as multiples of one kept series: the
#: summing arrays and the frame being built (measured: 144-257 B per interval for the
#: 56-64 B series of the colocation and inference presets, i.e. 2.6-4 times)
_FACILITY_WORK_COPIES = 3


def require_facility_memory(n_bins: int, n_columns: int, replicates: int, streaming: bool,
                            what: str, available_bytes: int | None = None) -> float:
    """Refuse a facility run whose series would not fit in memory; return the estimate [bytes].

    Parameters
    ----------
    n_bins : int
        Output intervals per replicate [-].
    n_columns : int
        Float64 columns of the output frame (the time index counts once more) [-].
    replicates : int
        Replicates; all but a streamed first one are kept in memory [-].
    streaming : bool
        True when the first replicate is written to disk window by window (``stream_to=``).
    what : str
        The call, for the message.
    available_bytes : int, optional
        Free memory [bytes]; default :func:`available_memory_bytes`.
    """
    per_series = 8.0 * (n_columns + 1) * n_bins
    kept = replicates - (1 if streaming else 0)
    if kept <= 0:
        return 0.0
    needed = per_series * (kept + _FACILITY_WORK_COPIES)
    require_memory(
        needed, what,
        f"Write the series to disk window by window with stream_to='facility.parquet' "
        f"(and replicates=1; read it back with aiload.facility.read_facility), or choose a "
        f"coarser freq or a shorter period (one series is {per_series / 2**30:.1f} GiB).",
        available_bytes,
    )
    return needed


_NOT_A_TIME = {"", "nan", "nat", "inf", "+inf", "-inf", "infinity", "none", "null"}


def check_run_arguments(what: str, *, seed: Any, start: Any, end: Any, freq: Any) -> None:
    """Refuse a seed, start, end or freq that no run can use, naming the argument.

    Parameters
    ----------
    what : str
        The function, for the message (e.g. ``"facility"``).
    seed : int
        Seed of the random draws: a whole number >= 0.
    start, end : timestamp-like, or for ``end`` a duration such as ``"7D"``
        Never NaN, NaT, inf or None.
    freq : str or pandas.Timedelta
        Never NaN, NaT, inf or None.
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(
            f"{what}(seed=): expected a whole number >= 0, got {seed!r}; the same seed gives "
            "the same output, e.g. seed=0."
        )
    for name, value in (("start", start), ("end", end), ("freq", freq)):
        missing = value is None or value is pd.NaT
        if isinstance(value, (float, np.floating)) and not math.isfinite(value):
            missing = True
        if isinstance(value, str) and value.strip().lower() in _NOT_A_TIME:
            missing = True
        if missing:
            example = {"start": "'2025-01-06 00:00+00:00'", "end": "'7D' or a tz-aware timestamp",
                       "freq": "'1min'"}[name]
            raise InputError(
                f"{what}({name}=): got {value!r}; expected a real value, e.g. {example}."
            )
    if isinstance(end, str) and not any(c in end for c in "-:"):
        if re.fullmatch(r"\s*\d+(\.\d*)?\s*m\s*", end):
            # pandas reads a lone 'm' as minutes; a planner writing '1m' or '6m' for the end of
            # a study most likely means months, and would get a run of minutes without a word
            raise InputError(
                f"{what}(end=): {end!r} is ambiguous: pandas reads 'm' as minutes, not months. "
                f"Write {end.strip()[:-1].strip() + 'min'!r} for minutes, or days (e.g. '30D', "
                "'182D') or an end timestamp for months."
            )
        try:
            pd.Timedelta(end)
        except (TypeError, ValueError):
            calendar = ("; months and years have no fixed length, so give days (e.g. '30D', "
                        "'365D') or an end timestamp" if end.strip()[-1:] in ("M", "Y", "y")
                        or "month" in end or "year" in end else "")
            raise InputError(
                f"{what}(end=): cannot read {end!r} as a duration or a timestamp{calendar}; give "
                "e.g. '7D', '12h' or '2025-01-13 00:00+00:00'."
            ) from None


def warn_unit_slip(value: Any, what: str, *, reference: float, reference_what: str,
                   unit: str = "kW", too_small: bool = True, too_large: bool = True,
                   fix: str = "", stacklevel: int = 3) -> bool:
    """Warn when a power is about 1,000x off the scale of what it is compared with.

    One rule for every layer (issue 26): ``value`` in ``unit`` against ``reference`` (the
    facility's peak, the network's load, ...) in the same unit; a ratio beyond
    :data:`UNIT_SLIP_FACTOR` either way (as enabled) raises an
    :class:`~aiload.errors.InputWarning` naming the unit the value was probably given in and
    the value it would then be. Zero, negative, non-finite values and references are left to
    the other checks. Returns whether it warned.
    """
    try:
        v, ref = float(value), float(reference)
    except (TypeError, ValueError):
        return False
    if not (math.isfinite(v) and math.isfinite(ref) and v > 0 and ref > 0):
        return False
    ratio = v / ref
    i = _LADDER.index(unit) if unit in _LADDER else None
    if too_small and ratio < 1.0 / UNIT_SLIP_FACTOR:
        other = _LADDER[i + 1] if i is not None and i + 1 < len(_LADDER) else f"1000 {unit}"
        guess = (f"If it is in {other}, give {v * 1000:,.6g} {unit}"
                 f"{' (' + fix + ')' if fix else ''}.")
        shown = f"1/{1 / ratio:,.0f}"
    elif too_large and ratio > UNIT_SLIP_FACTOR:
        other = _LADDER[i - 1] if i is not None and i > 0 else f"{unit}/1000"
        guess = (f"If it is in {other}, give {v / 1000:,.6g} {unit}"
                 f"{' (' + fix + ')' if fix else ''}.")
        shown = f"{ratio:,.0f}x"
    else:
        return False
    warnings.warn(
        f"{what}: {v:,.6g} {unit} is {shown} of {reference_what} ({ref:,.6g} {unit}), about "
        f"1,000x off its scale: a unit slip? {guess} (Checked by the unit-slip rule: more than "
        f"{UNIT_SLIP_FACTOR:g}x either way; silence with warnings.filterwarnings('ignore', "
        "category=aiload.errors.InputWarning).)",
        InputWarning,
        stacklevel=stacklevel,
    )
    return True
