"""Figures of a sizing: they draw what the dispatch holds, in the stated units."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import microgrid as mg
from microgrid.plots import plot_cost_breakdown, plot_dispatch_week, plot_import_duration, plot_soc


@pytest.fixture(scope="module")
def sized():
    index = pd.date_range("2025-07-01", periods=72, freq="1h", tz="UTC")
    load = pd.Series(1000.0, index=index)
    load[(index.hour >= 17) & (index.hour < 21)] = 1500.0
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.08, fuel_usd_per_kwh=0.12)
    return mg.size(load, pv_availability=mg.pv_availability(index=index), costs=costs,
                   import_limit_kw=1200.0)


def test_dispatch_week_stacks_sources_up_to_the_load(sized):
    fig = plot_dispatch_week(sized, days=3)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"PV", "grid import", "load", "import limit"} <= set(labels)
    assert ax.get_ylabel() == "power [MW]"
    # the top of the stacked sources equals load + charge + export (+ nothing else) [MW]
    d = sized.dispatch
    top = (d.pv_kw + d.battery_discharge_kw + d.generator_kw + d.grid_import_kw) / 1000
    need = (d.load_kw + d.battery_charge_kw + d.grid_export_kw) / 1000
    assert np.allclose(top, need, atol=1e-6)


def test_other_figures_and_summary(sized, tmp_path):
    for fig in (plot_soc(sized, days=3), plot_import_duration({"1.2 MW": sized}),
                plot_cost_breakdown({"1.2 MW": sized})):
        fig.savefig(tmp_path / "f.png", dpi=50)
    duration = plot_import_duration({"1.2 MW": sized}).axes[0].lines[0].get_ydata()
    assert duration[0] == pytest.approx(sized.dispatch.grid_import_kw.max() / 1000)
    summary = json.loads(json.dumps(sized.summary()))
    assert summary["annual_cost_usd"]["pv_capital"] == pytest.approx(70 * sized.pv_kwp)
