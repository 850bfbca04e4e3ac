"""The grid figures draw what the results hold."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import grid
from grid import plots


def test_plots_draw_the_results(lumi_kw, scale_to):
    net = grid.networks.load("cigre_mv")
    load = scale_to(lumi_kw.iloc[:48], 1.5)
    res = grid.timeseries(net, load, bus=9)

    ax = plots.voltage_envelope(res, [9, 4], freq="6h")
    assert len(ax.collections) == 2  # one band per bus
    low = ax.collections[0].get_paths()[0].vertices[:, 1].min()
    assert low == np.float64(res.vm_pu[9].min())
    plt.close(ax.figure)

    ax = plots.loading_duration(res, top=3)
    curves = ax.get_lines()[:3]
    top = pd.concat([res.line_loading_percent, res.trafo_loading_percent], axis=1).max().max()
    assert curves[0].get_ydata()[0] == top
    assert all(np.all(np.diff(c.get_ydata()) <= 0) for c in curves)  # duration = sorted
    plt.close(ax.figure)

    hc = {"bus 9": grid.HostingCapacity(1.2, 9, "line 1", "loading_percent", 100.2, 100.0,
                                        None, 0.01)}
    ax = plots.hosting_capacity_bars(hc, peak_mw=1.5)
    assert [p.get_height() for p in ax.patches] == [1.2]
    assert "line 1" in ax.texts[0].get_text()
    plt.close(ax.figure)

    table = grid.contingency(net, load, bus=9, outages="trafos", n_peak=2)
    ax = plots.n1_heatmap(table)
    assert ax.get_images()[0].get_array().shape == (len(table), 4)
    plt.close(ax.figure)


def test_pv_curves_draw_each_curve_to_its_nose():
    net = grid.networks.load("cigre_mv")
    curve = grid.pv_curve(net, bus=5, power_factor=0.95)
    ax = plots.pv_curves({"intact": curve}, peak_mw=2.0)
    drawn = ax.get_lines()[0]
    assert list(drawn.get_xdata()) == list(curve.curve.p_mw)
    assert ax.get_lines()[1].get_xdata()[0] == curve.nose_p_mw
    assert "nose" in ax.get_legend().get_texts()[0].get_text()
    plt.close(ax.figure)
