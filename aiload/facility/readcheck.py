"""Checks of a facility power file read back from disk (:func:`aiload.facility.read_facility`).

A file written by :meth:`FacilityLoad.to_parquet` may since have been edited by hand or by
another tool: its aiload metadata (the JSON under the key ``aiload``), its rows or its
columns. Each check here says what was found, what a facility file holds and how to get a
good file back. Only what has one possible reading is repaired, with an
:class:`~aiload.errors.InputWarning` saying so: rows out of time order (sorted; each row is
labelled with its interval's start), a missing ``freq_s`` (taken from the regular index), and
a lost pandas index record (the ``time`` column made the index again). Everything else is an
:class:`~aiload.errors.InputError`.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import InputError, InputWarning

__all__ = ["parse_meta", "check_power", "KW_COLUMNS"]

#: the power columns of a facility file [kW] that are checked when present; ``facility_kw``
#: is required (a FacilityLoad built by hand from a meter series may have only that one)
KW_COLUMNS = ("it_kw", "losses_kw", "cooling_kw", "facility_kw")

_REWRITE = ("write the file again with FacilityLoad.to_parquet (or rerun the facility model), "
            "or restore the original file")


def _step(nanoseconds: int) -> str:
    """A step as a reader writes it: 15 min, 1 h, 30 s, 0.5 s."""
    seconds = nanoseconds / 1e9
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


def parse_meta(path: Path, raw: bytes) -> dict:
    """The ``aiload`` metadata of ``path`` as a dict, or an error that says it was damaged."""
    try:
        meta = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(
            f"read_facility: {str(path)!r}: its 'aiload' metadata is not valid JSON ({exc}); "
            f"it was edited or damaged. Expected a JSON object such as "
            f'{{"kind": "facility", "freq_s": 900.0, ...}}: {_REWRITE}.') from None
    if not isinstance(meta, dict):
        raise InputError(
            f"read_facility: {str(path)!r}: its 'aiload' metadata is a JSON "
            f"{type(meta).__name__}, expected a JSON object with 'kind' and 'freq_s'; "
            f"{_REWRITE}.")
    return meta


def _freq_of_meta(path: Path, meta: dict) -> pd.Timedelta | None:
    """``freq_s`` of the metadata as a Timedelta; None when the key is absent."""
    if "freq_s" not in meta:
        return None
    value = meta["freq_s"]
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value) and value > 0)
    if ok:
        step = pd.Timedelta(seconds=value)
        ok = step > pd.Timedelta(0) and step.value % 1000 == 0  # whole microseconds or more
    if not ok:
        raise InputError(
            f"read_facility: {str(path)!r}: its metadata gives freq_s = {value!r}; expected the "
            f"series' step as a positive number of seconds (e.g. 900.0 for 15 min). The "
            f"metadata was edited: {_REWRITE}.")
    return step


def _index_of(path: Path, power: pd.DataFrame) -> pd.DataFrame:
    """``power`` with its time index; the ``time`` column put back as the index when only
    the pandas record of it was lost (one reading only)."""
    if isinstance(power.index, pd.DatetimeIndex):
        return power
    time = power.get("time")
    if (isinstance(power.index, pd.RangeIndex) and time is not None
            and isinstance(time.dtype, pd.DatetimeTZDtype)):
        warnings.warn(
            f"read_facility: {str(path)!r}: the record of its index was missing from the file "
            "(the pandas metadata was removed); used the 'time' column as the index.",
            InputWarning, stacklevel=4)
        return power.set_index("time")
    raise InputError(
        f"read_facility: {str(path)!r}: its rows are labelled by {power.index.dtype} values "
        f"(first {str(power.index[0]) if len(power.index) else 'none'}), "
        "expected a tz-aware DatetimeIndex named 'time' (the start of each interval); the "
        f"file was edited or written by another tool: {_REWRITE}.")


def check_power(path: Path, meta: dict, power: pd.DataFrame) -> pd.DataFrame:
    """``power`` with its ``freq`` set, after checking it is a facility power series.

    Raises
    ------
    aiload.errors.InputError
        A naive or irregular index, repeated times, a step other than the metadata's
        ``freq_s``, no ``facility_kw``, a non-numeric kW column, NaN or infinite power.
    """
    power = _index_of(path, power)
    index = power.index
    if index.tz is None:
        raise InputError(
            f"read_facility: {str(path)!r}: its time index has no time zone (first "
            f"{index[0] if len(index) else 'none'}); expected tz-aware times, as "
            "FacilityLoad.to_parquet writes them. If the times are UTC, fix it with "
            "power.index = power.index.tz_localize('UTC') and write the file again; otherwise "
            f"{_REWRITE}.")
    if "facility_kw" not in power.columns:
        raise InputError(
            f"read_facility: {str(path)!r}: no column 'facility_kw' (the power at the meter "
            f"[kW]), which every facility file has; found {list(power.columns)}. A column was "
            f"removed or renamed: {_REWRITE}.")
    for column in [c for c in KW_COLUMNS if c in power.columns]:
        values = power[column]
        if not pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(
                values.dtype):
            raise InputError(
                f"read_facility: {str(path)!r}: column {column!r} holds {values.dtype} values, "
                f"expected numbers [kW]; {_REWRITE}.")
        bad = ~np.isfinite(values.to_numpy(dtype=np.float64))
        if bad.any():
            raise InputError(
                f"read_facility: {str(path)!r}: column {column!r} has {int(bad.sum())} NaN or "
                f"infinite value(s), the first at {index[int(np.argmax(bad))]}; expected "
                f"finite power [kW]. aiload never fills them silently: {_REWRITE}.")
    if index.has_duplicates:
        first = index[index.duplicated()][0]
        raise InputError(
            f"read_facility: {str(path)!r}: the time {first} labels "
            f"{int((index == first).sum())} rows; expected one row per interval. Rows were "
            f"copied or appended: {_REWRITE}.")
    if not index.is_monotonic_increasing:
        # each row carries its own interval start: the order is recoverable exactly
        warnings.warn(
            f"read_facility: {str(path)!r}: its rows were not in time order (edited or "
            "shuffled); sorted them by time.", InputWarning, stacklevel=3)
        power = power.sort_index()
        index = power.index
    step = _freq_of_meta(path, meta)
    steps = np.unique(np.diff(index.asi8)) if len(index) > 1 else np.array([], dtype=np.int64)
    if len(steps) > 1:
        gaps = np.diff(index.asi8)
        at = int(np.argmax(gaps != gaps.min() if step is None else gaps != step.value))
        raise InputError(
            f"read_facility: {str(path)!r}: its times are not evenly spaced: "
            f"{index[at]} is followed by {index[at + 1]} ({_step(int(gaps[at]))} later, against "
            f"{_step(step.value if step is not None else int(gaps.min()))} elsewhere); "
            f"expected a fixed step. Rows were removed or added: {_REWRITE}.")
    if step is None:
        if not len(steps):
            raise InputError(
                f"read_facility: {str(path)!r}: its metadata has no 'freq_s' and one row, so "
                f"the step cannot be known; expected freq_s (the step [s]) in the 'aiload' "
                f"metadata. {_REWRITE[0].upper() + _REWRITE[1:]}.")
        step = pd.Timedelta(int(steps[0]))
        warnings.warn(
            f"read_facility: {str(path)!r}: its metadata has no 'freq_s'; used the step of its "
            f"times, {_step(step.value)}.", InputWarning, stacklevel=3)
    elif len(steps) and steps[0] != step.value:
        raise InputError(
            f"read_facility: {str(path)!r}: its metadata says the step is {meta['freq_s']!r} s "
            f"({_step(step.value)}) but its times are {_step(int(steps[0]))} apart; one of them was "
            f"edited, and aiload cannot tell which is right. {_REWRITE[0].upper() + _REWRITE[1:]}.")
    power.index.freq = step
    return power
