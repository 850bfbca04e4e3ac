"""Make the figures of docs/grid.md: a 100 MW AI campus on the IEEE 118-bus system.

Run from the project root::

    .venv/bin/python docs/scripts/make_grid_figures.py

The facility series is ``aiload.facility("campus-100mw", ...)``: one simulated year at hourly
steps (seed 1, a few minutes). Figures go to ``docs/figures/grid_*.png``; the numbers quoted
in docs/grid.md are printed.
"""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import aiload  # noqa: E402
import grid  # noqa: E402
from grid import plots  # noqa: E402

FIGURES = Path(__file__).resolve().parents[1] / "figures"
CANDIDATES = [11, 44, 49, 58, 75, 79]  # 138 kV buses spread over the network (0-based)
LIMITS = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06, loading_max_percent=100.0)
DPI = 90


def main(cache: str | None = None) -> None:
    logging.getLogger("pandapower").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    if cache and Path(cache).is_file():
        power = pd.read_parquet(cache)
    else:
        campus = aiload.facility("campus-100mw", start=pd.Timestamp("2024-01-01", tz="UTC"),
                                 end="365D", freq="1h", seed=1, progress=False)
        power = campus.power
        if cache:
            power.to_parquet(cache)
    load_kw = power["facility_kw"].asfreq("h")
    print(f"campus-100mw: mean {load_kw.mean() / 1e3:.1f} MW, peak {load_kw.max() / 1e3:.1f} MW,"
          f" min {load_kw.min() / 1e3:.1f} MW over {len(load_kw)} h")
    net = grid.networks.load("case118")

    hosting = {f"bus {b}": grid.hosting_capacity(net, bus=b, limits=LIMITS, power_factor=0.95)
               for b in CANDIDATES}
    for name, hc in hosting.items():
        print(f"{name}: {hc.p_mw:.1f} MW, binding {hc.element} {hc.quantity} "
              f"{hc.value:.4f} (limit {hc.limit})")
    ax = plots.hosting_capacity_bars(hosting, peak_mw=load_kw.max() / 1e3)
    ax.figure.savefig(FIGURES / "grid_hosting_capacity.png", dpi=DPI)
    plt.close(ax.figure)

    bus = 49
    res = grid.timeseries(net, load_kw, bus=bus, power_factor=0.95, limits=LIMITS)
    print(f"timeseries at bus {bus}: engine {res.engine}, {int(res.converged.sum())} of "
          f"{len(res.converged)} steps converged, violations: {len(res.violations())}")
    vm = res.vm_pu[bus]
    print(f"bus {bus} voltage: min {vm.min():.4f} max {vm.max():.4f} pu; slack import "
          f"{res.ext_grid_p_mw.min():.1f}..{res.ext_grid_p_mw.max():.1f} MW")
    ax = plots.voltage_envelope(res, [bus, 56, 50], freq="W")
    ax.figure.savefig(FIGURES / "grid_voltage_envelope.png", dpi=DPI)
    plt.close(ax.figure)

    # case118's branch ratings (9,900 MVA) say nothing about loading, so the loading study
    # uses CIGRE MV, with the campus shape scaled to a 1.6 MW site on its 20 kV feeder
    mv = grid.networks.load("cigre_mv")
    site_mw = (load_kw / load_kw.max() * 1.6).rename("facility_mw")
    mv_limits = grid.Limits(vm_min_pu=0.90)
    # CIGRE MV's loads are its design peak, at which the feeder is already past its limits
    # without any facility (lines 0-1 at ~138 %): run the other loads at 70 % of it
    background = pd.Series(0.7, index=site_mw.index)
    mv_res = grid.timeseries(mv, site_mw, bus=9, power_factor=0.95, limits=mv_limits,
                             background=background)
    table = mv_res.violations()
    print(f"CIGRE MV, 1.6 MW peak at bus 9: engine {mv_res.engine}; violations "
          f"{len(table)} in {table.time.nunique()} of {len(site_mw)} h; by element: "
          f"{table.element.value_counts().head(4).to_dict()}")
    print("CIGRE MV hosting capacity at bus 9 (other loads at 70 %):",
          grid.hosting_capacity(mv, bus=9, limits=mv_limits, power_factor=0.95,
                                background=background.iloc[:1]))
    ax = plots.loading_duration(mv_res, top=5)
    ax.set_title("CIGRE MV with a 1.6 MW site at bus 9: loading duration curves")
    ax.figure.savefig(FIGURES / "grid_loading_duration.png", dpi=DPI)
    plt.close(ax.figure)

    table = grid.contingency(net, load_kw, bus=bus, power_factor=0.95, n_peak=24)
    worst = table.sort_values("min_vm_pu").head(5)
    print("N-1 worst by voltage:\n" + worst.to_string(index=False))
    print(f"outages that island buses: {int((table.islanded_buses > 0).sum())}, "
          f"non-converged: {int((table.converged_steps < 24).sum())}")
    peak24 = load_kw.nlargest(24) / 1e3
    print(f"the 24 peak hours: {peak24.min():.1f} to {peak24.max():.1f} MW")
    cols = ["element", "where", "converged_steps", "min_vm_pu", "nose_mw", "collapse_margin_mw"]
    print("not converged at every peak hour:\n"
          + table[table.converged_steps < 24][cols].to_string(index=False))
    outages = table[table.element != "none"]
    low = outages[outages.min_vm_pu < LIMITS.vm_min_pu]
    print(f"outages below {LIMITS.vm_min_pu} pu with the campus: {len(low)} "
          f"({', '.join(low.element)})")
    # the same outages without the campus (its power set to 0 at the same hours)
    alone = grid.contingency(net, load_kw * 0.0, bus=bus, power_factor=0.95, n_peak=24)
    alone = alone[alone.element != "none"].set_index("element")
    low0 = alone[alone.min_vm_pu < LIMITS.vm_min_pu]
    print(f"outages below {LIMITS.vm_min_pu} pu without the campus: {len(low0)} "
          f"({', '.join(low0.index)}); intact network without it: lowest "
          f"{float(grid.timeseries(net, load_kw.iloc[:1] * 0.0, bus=bus).vm_pu.min(axis=1).iloc[0]):.4f} pu")
    for element in sorted(set(low.element) - set(low0.index)):
        print(f"  {element}: {alone.loc[element, 'min_vm_pu']:.4f} pu without the campus, "
              f"{low.set_index('element').loc[element, 'min_vm_pu']:.4f} pu with it")
    ax = plots.n1_heatmap(table, limits=LIMITS, top=15)
    ax.figure.savefig(FIGURES / "grid_n1_heatmap.png", dpi=DPI)
    plt.close(ax.figure)

    curves = {"intact": grid.pv_curve(net, bus=bus, power_factor=0.95),
              "line 65 out": grid.pv_curve(net, bus=bus, power_factor=0.95, outage="line 65"),
              "line 65 out, no Q limits": grid.pv_curve(net, bus=bus, power_factor=0.95,
                                                        outage="line 65", enforce_q_lims=False)}
    for name, pv in curves.items():
        print(f"P-V nose, {name}: {pv.nose_p_mw:.1f} MW at {pv.nose_vm_pu:.3f} pu")
    ax = plots.pv_curves(curves, peak_mw=load_kw.max() / 1e3)
    ax.figure.savefig(FIGURES / "grid_pv_curve.png", dpi=DPI)
    plt.close(ax.figure)

    event = grid.load_loss(net, bus=bus, p_mw=float(load_kw.max() / 1e3), power_factor=0.95)
    print(f"load loss of {event.p_mw:.1f} MW: largest rise {event.largest_rise_pu:.4f} pu at "
          f"bus {event.largest_rise_bus}; dV/dP at bus {bus}: "
          f"{event.sensitivity_pu_per_mw[bus]:.2e} pu/MW; lines relieved: "
          f"{len(event.lines_relieved)}")
    print(event.lines_relieved.head(3).to_string())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
