"""Grid-facing figures and plots of any power series.

Utilities judge a load by its peaks, ramps and oscillations: :func:`summary` computes
them all (level, ramps on real time, swings, Welch spectra in bands, billing demand) as a
tidy table that marks what the sampling cannot support; :func:`check` compares a series
with interconnection :class:`Limits`; the ``plot_*`` functions draw the usual pictures.
"""

from __future__ import annotations

from aiload.metrics.billing import demand_kw
from aiload.metrics.level import load_duration_curve
from aiload.metrics.limits import Limits, check
from aiload.metrics.plots import (
    plot_calendar_bands,
    plot_comparison,
    plot_load_duration,
    plot_percentile_bands,
    plot_psd,
    plot_ramp_histogram,
)
from aiload.metrics.ramps import dynamic_range, ramp_duration_curve, ramp_rates, ramp_statistics
from aiload.metrics.spectrum import GRID_BANDS_HZ, band_fluctuation, power_spectrum
from aiload.metrics.summary import summary

__all__ = [
    "summary",
    "Limits",
    "check",
    "ramp_rates",
    "power_spectrum",
    "ramp_statistics",
    "ramp_duration_curve",
    "dynamic_range",
    "band_fluctuation",
    "GRID_BANDS_HZ",
    "demand_kw",
    "load_duration_curve",
    "plot_percentile_bands",
    "plot_calendar_bands",
    "plot_ramp_histogram",
    "plot_load_duration",
    "plot_psd",
    "plot_comparison",
]
