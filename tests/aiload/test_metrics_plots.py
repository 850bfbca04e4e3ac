"""Plots return figures, change nothing global and draw the numbers they claim."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from aiload.errors import InputError
from aiload.metrics import (
    plot_calendar_bands,
    plot_comparison,
    plot_load_duration,
    plot_percentile_bands,
    plot_psd,
    plot_ramp_histogram,
)


@pytest.fixture
def week_kw() -> pd.Series:
    rng = np.random.default_rng(7)
    idx = pd.date_range("2024-03-04", periods=7 * 96, freq="15min", tz="America/New_York")
    daily = 500 + 200 * (idx.hour >= 9) * (idx.hour < 17) + 50 * (idx.dayofweek < 5)
    return pd.Series(daily + rng.normal(0, 10, idx.size), index=idx, name="site_kw")


def test_every_plot_returns_a_figure_and_leaves_globals_alone(week_kw):
    before = dict(matplotlib.rcParams)
    replicates = pd.concat([week_kw.rename(f"r{i}_kw") * (1 + i / 100) for i in range(5)], axis=1)
    figures = [
        plot_percentile_bands(replicates),
        plot_calendar_bands(week_kw),
        plot_ramp_histogram(week_kw, windows=("1s", "15min", "1h")),
        plot_load_duration({"a": week_kw, "b": week_kw * 0.8}),
        plot_psd(week_kw),
        plot_comparison({"before": week_kw, "after": week_kw.clip(upper=700)}),
    ]
    assert all(isinstance(f, Figure) for f in figures)
    assert plt.get_fignums() == []  # not registered with pyplot, so nothing to close
    assert dict(matplotlib.rcParams) == before
    for fig in figures:
        for ax in fig.axes:
            label = ax.get_ylabel() + ax.get_xlabel()
            assert "[" in label and "]" in label, label  # units on every axis pair


def test_percentile_bands_draw_the_median_across_replicates():
    idx = pd.to_timedelta(np.arange(100), unit="s").rename("elapsed")
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({f"n{i}_w": rng.uniform(5000, 7000, 100) for i in range(9)}, index=idx)
    fig = plot_percentile_bands(frame)
    line = fig.axes[0].lines[0]
    np.testing.assert_allclose(line.get_ydata(), np.median(frame.to_numpy(), axis=1) / 1e3)
    assert fig.axes[0].get_ylabel() == "power [kW]"
    with pytest.raises(InputError, match="got 1 replicate"):
        plot_percentile_bands(frame[["n0_w"]])


def test_calendar_bands_hour_of_day_median(week_kw):
    fig = plot_calendar_bands(week_kw)
    hours = fig.axes[0].lines[0].get_ydata()
    expected = week_kw.groupby(week_kw.index.hour).median().to_numpy()
    np.testing.assert_allclose(hours, expected)
    elapsed = week_kw.copy()
    elapsed.index = (week_kw.index - week_kw.index[0]).rename("elapsed")
    with pytest.raises(InputError, match="needs absolute time"):
        plot_calendar_bands(elapsed)


def test_ramp_histogram_counts_and_unavailable_windows(week_kw):
    fig = plot_ramp_histogram(week_kw, windows=("1s", "15min"))
    assert len(fig.axes) == 1
    counts = sum(p.get_height() for p in fig.axes[0].patches)
    assert counts == week_kw.size - 1
    assert "not available at this sampling: 1s" in fig.get_suptitle()
    with pytest.raises(InputError, match="no window in"):
        plot_ramp_histogram(week_kw, windows=("1s",))


def test_load_duration_curve_is_sorted_values(week_kw):
    fig = plot_load_duration(week_kw)
    line = fig.axes[0].lines[0]
    np.testing.assert_allclose(line.get_ydata(), np.sort(week_kw.to_numpy())[::-1])
    assert line.get_xdata()[-1] == pytest.approx(100.0)


def test_psd_marks_unresolvable_bands(week_kw):
    fig = plot_psd(week_kw)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "0.01-0.1Hz n/a" in texts and "1-5Hz n/a" in texts
