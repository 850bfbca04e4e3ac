"""The one-call summary of every grid-facing figure of a power series."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from aiload.errors import InputError
from aiload.metrics._input import as_power
from aiload.metrics._table import to_frame
from aiload.metrics.billing import demand_rows
from aiload.metrics.level import level_rows
from aiload.metrics.ramps import ramp_rows, swing_rows, window_seconds
from aiload.metrics.spectrum import DEFAULT_BANDS_HZ, spectrum_rows

__all__ = ["summary", "DEFAULT_WINDOWS"]

#: ramp and swing windows of the summary
DEFAULT_WINDOWS = ("1s", "5s", "10s", "1min", "15min")


def summary(
    power: pd.Series | pd.DataFrame,
    *,
    unit: str | None = None,
    kind: str = "auto",
    windows: Sequence[str | float] = DEFAULT_WINDOWS,
    ramp_threshold: float | None = None,
    fractions: Sequence[float] = (0.5, 0.8, 0.9),
    bands: Sequence[tuple[float, float]] = DEFAULT_BANDS_HZ,
) -> pd.DataFrame:
    """Grid-facing figures of one power series, as a tidy table.

    Parameters
    ----------
    power : pandas.Series or one-column pandas.DataFrame
        Power [W, kW or MW] on a tz-aware DatetimeIndex or a TimedeltaIndex (``elapsed``).
        Regular series are read as interval means (the value holds over the interval that
        starts at its label); irregular ones as point samples joined by straight lines.
    unit : {"W", "kW", "MW"}, optional
        Unit of ``power``; inferred from a name ending in ``_w``, ``_kw`` or ``_mw`` when
        omitted. Every figure is reported in kW.
    kind : {"auto", "intervals", "samples"}
        Force the reading of the values (e.g. ``"samples"`` for a regular point-sampled
        trace such as the MLPerf inference logs).
    windows : sequence of str or float
        Ramp and swing windows (``"5s"``, ``"1min"`` or seconds) [s].
    ramp_threshold : float, optional
        Upward ramp rate that counts as a ramp event [kW/s]; default, per window, the
        95th percentile of upward ramps (LLM-PowerTrace).
    fractions : sequence of float
        Fractions of the peak for ``hours_above_fraction_of_peak_h``.
    bands : sequence of (float, float)
        Oscillation bands ``(low, high)`` [Hz].

    Returns
    -------
    pandas.DataFrame
        One row per figure with columns ``group, metric, window, value, unit, available,
        note``. A figure the sampling cannot support has ``value`` NaN, ``available``
        False and the reason in ``note``.

    Examples
    --------
    >>> import pandas as pd
    >>> from aiload.metrics import summary
    >>> idx = pd.date_range("2024-01-01", periods=4, freq="15min", tz="UTC")
    >>> table = summary(pd.Series([1.0, 2.0, 3.0, 2.0], index=idx, name="it_kw"))
    >>> float(table.set_index("metric").loc["energy_kwh", "value"])
    2.0
    """
    x = as_power(power, unit=unit, kind=kind)
    windows_s = [window_seconds(w) for w in windows]
    for frac in fractions:
        if not 0 < frac <= 1:
            raise InputError(f"fractions: got {frac!r}; expected fractions of the peak in (0, 1].")
    for band in bands:
        if len(band) != 2 or not 0 <= band[0] < band[1]:
            raise InputError(f"bands: got {band!r}; expected (low_hz, high_hz) with 0 <= low < high.")
    if ramp_threshold is not None and not 0 < ramp_threshold < math.inf:
        raise InputError(
            f"ramp_threshold: got {ramp_threshold!r}; expected a positive rate [kW/s], finite."
        )
    rows = level_rows(x, tuple(fractions))
    rows += demand_rows(x)
    rows += ramp_rows(x, windows_s, ramp_threshold)
    rows += swing_rows(x, windows_s)
    rows += spectrum_rows(x, tuple(tuple(b) for b in bands))
    return to_frame(rows)
