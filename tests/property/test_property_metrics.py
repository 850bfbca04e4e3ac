"""metrics.summary under random and hostile series: an InputError naming what is wrong, or a
table whose figures agree with each other and with the energy computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from property_strategies import assert_clear_error, fast, hostile_floats, hostile_values

from aiload.errors import AiloadError
from aiload.metrics import summary

STEPS_S = [1, 60, 900]


@fast(40)
@given(
    values=st.lists(st.floats(0, 1e5, allow_nan=False), min_size=2, max_size=200),
    step_s=st.sampled_from(STEPS_S),
)
def test_figures_of_an_interval_series_agree(values, step_s):
    x = np.array(values)
    index = pd.date_range("2024-06-30 22:00", periods=len(x), freq=f"{step_s}s", tz="UTC")
    table = summary(pd.Series(x, index=index, name="site_kw"), windows=("1min",))
    fig = table.set_index(["metric", "window"])["value"]
    avail = table.set_index(["metric", "window"])["available"]
    # available figures are finite, unavailable ones NaN
    assert np.isfinite(fig[avail.to_numpy()]).all() and fig[~avail.to_numpy()].isna().all()
    level = table[table["group"] == "level"].set_index("metric")["value"]
    duration_h = len(x) * step_s / 3600
    assert level["duration_h"] == pytest.approx(duration_h)
    assert level["energy_kwh"] == pytest.approx(x.sum() * step_s / 3600, rel=1e-9, abs=1e-9)
    assert level["mean_kw"] == pytest.approx(level["energy_kwh"] / duration_h, rel=1e-9, abs=1e-9)
    assert level["max_kw"] == x.max() and level["min_kw"] == x.min()
    order = level[["min_kw", "median_kw", "p90_kw", "p95_kw", "p99_kw", "max_kw"]].to_numpy()
    assert (np.diff(order) >= -1e-9 * max(1.0, x.max())).all()
    if x.max() > 0:
        assert level["load_factor"] == pytest.approx(x.mean() / x.max(), rel=1e-9)
    demand = table[table["metric"] == "demand_15min_peak_kw"]["value"]
    assert (demand.dropna() <= x.max() * (1 + 1e-9) + 1e-9).all()


@fast(80)
@given(
    values=st.lists(hostile_floats, min_size=0, max_size=20),
    index_kind=st.sampled_from(["utc", "naive", "elapsed", "range", "repeated"]),
    unit=st.one_of(st.none(), st.sampled_from(["W", "kW", "MW", "kw", "GW"]), hostile_values),
    name=st.sampled_from(["p", "p_w", "p_kw", "p_mw", None]),
)
def test_hostile_series_are_named_errors_or_finite_tables(values, index_kind, unit, name):
    n = len(values)
    index = {
        "utc": pd.date_range("2024-01-01", periods=n, freq="1min", tz="UTC"),
        "naive": pd.date_range("2024-01-01", periods=n, freq="1min"),
        "elapsed": pd.timedelta_range(0, periods=n, freq="1s", name="elapsed"),
        "range": pd.RangeIndex(n),
        "repeated": pd.DatetimeIndex([pd.Timestamp("2024-01-01", tz="UTC")] * n),
    }[index_kind]
    try:
        table = summary(pd.Series(values, index=index, name=name, dtype=float), unit=unit)
    except AiloadError as err:
        assert_clear_error(err)
        event("refused")
        return
    event("summarised")
    assert np.isfinite(np.array(values, dtype=float)).all()  # nothing non-finite got through
    good = table["available"].to_numpy()
    assert np.isfinite(table["value"].to_numpy()[good]).all()
