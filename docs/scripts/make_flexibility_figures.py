"""Make the figures of docs/flexibility.md: the flexible-interconnection study on case118.

Run from the project root::

    .venv/bin/python docs/scripts/make_flexibility_figures.py [--cache campus.parquet]
    .venv/bin/python docs/scripts/make_flexibility_figures.py --scenario [OUT_DIR]
    .venv/bin/python docs/scripts/make_flexibility_figures.py --reference

The facility shape is ``aiload.facility("campus-100mw", ...)`` (one simulated year at hourly
steps, seed 0), connected as in the ``campus-100mw-interconnection`` scenario: bus 15 of
case118, limits 0.94-1.06 pu, power factor 0.99. case118 has no load profile of its own, so
its loads follow an ILLUSTRATIVE background cycle made here (seasonal and daily cosines,
rounded to 0.01): it is not measured and stands only to make the headroom move over the
year. Figures go to ``docs/figures/flexibility_*.png``; the numbers quoted in the page are
printed. About a minute on the 2-core machine (most of it the facility year).

``--scenario`` runs the bundled ``campus-100mw-flexible`` scenario instead (bus 12 of case118,
where the campus's peak is above the firm capacity: the study, the campus's own size run
through the facility model under its implied limit, one week in closed loop) and draws
``docs/figures/flexibility_cosim.png`` (voltage with and without the loop) and
``flexibility_levers.png`` (what each lever delivered under the implied limit); the numbers of
the page's closed-loop and cost sections are printed. About 1.5 minutes on the 2-core machine.

``--reference`` prints the rows of the page's reference-event table (colocation-10mw held at
75 % for 3 h; the default merit order and deferral first); no figure. A few seconds.

``--run-time`` times the page's run-time example: a year of colocation-10mw at u = 0.8 and
1-min steps, open loop and then under 20 three-hour events at 75 % of the open loop's mean
power (the default merit order); about 1.5 minutes.
"""

from __future__ import annotations

import copy
import logging
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandapower as pp
import pandas as pd
from matplotlib.figure import Figure

import aiload
import grid
from grid.flexible import summarize
from grid.plots import plot_flexible_interconnection

FIGURES = Path(__file__).resolve().parents[1] / "figures"
BUS = 15
LIMITS = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06, loading_max_percent=100.0)
PF = 0.99
DPI = 90


def illustrative_background(index: pd.DatetimeIndex) -> pd.Series:
    """Multipliers [-] of case118's loads: 0.62-0.98, summer and early-evening peaks.

    Made up for the example (not measured): 0.80 + 0.10 cos(season, peak mid-July)
    + 0.08 cos(day, peak 23:00 UTC ~ 17:00 US Central), rounded to 0.01.
    """
    day = (index - pd.Timestamp("2025-07-15", tz="UTC")) / pd.Timedelta(days=1)
    hour = index.hour.to_numpy() + index.minute.to_numpy() / 60
    m = 0.80 + 0.10 * np.cos(2 * np.pi * day / 365.0) + 0.08 * np.cos(
        2 * np.pi * (hour - 23) / 24)
    return pd.Series(np.round(np.asarray(m), 2), index=index, name="background")


def runpp_check(net, res, background: pd.Series, hours: list[int]) -> None:
    """Headroom against pandapower.runpp (Q limits on) at sampled hours."""
    q = math.tan(math.acos(PF))
    for k in hours:
        found = []
        for p in (res.headroom_mw.iloc[k], res.headroom_mw.iloc[k] + 2 * res.tolerance_mw):
            ref = copy.deepcopy(net)
            ref.load["p_mw"] *= background.iloc[k]
            ref.load["q_mvar"] *= background.iloc[k]
            pp.create_load(ref, BUS, p_mw=p, q_mvar=p * q)
            pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8,
                     enforce_q_lims=True)
            vm = ref.res_bus.vm_pu
            found.append(f"{p:.2f} MW -> min vm {vm.min():.5f} pu (bus {vm.idxmin()})")
        print(f"  runpp at {res.headroom_mw.index[k]} (background {background.iloc[k]:.2f}): "
              + "; ".join(found))


def main(cache: str | None = None) -> None:
    logging.getLogger("pandapower").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    if cache and Path(cache).is_file():
        power = pd.read_parquet(cache)
    else:
        campus = aiload.facility("campus-100mw", start=pd.Timestamp("2025-01-01", tz="UTC"),
                                 end="365D", freq="1h", seed=0, progress=False)
        power = campus.power
        if cache:
            power.to_parquet(cache)
    load_kw = power["facility_kw"].asfreq("h")
    print(f"campus-100mw: mean {load_kw.mean() / 1e3:.1f} MW, peak {load_kw.max() / 1e3:.1f} MW"
          f" over {len(load_kw)} h ({time.perf_counter() - t0:.0f} s)")
    net = grid.networks.load("case118")
    background = illustrative_background(load_kw.index)
    print(f"background: {background.min():.2f}..{background.max():.2f}, "
          f"{background.nunique()} distinct levels")

    t1 = time.perf_counter()
    res = grid.flexible_interconnection(net, load_kw, bus=BUS, limits=LIMITS,
                                        background=background, power_factor=PF)
    print(f"flexible_interconnection: {time.perf_counter() - t1:.1f} s, {res.levels} levels, "
          f"engine {res.engine}; firm {res.firm_mw:.2f} MW, headroom "
          f"{res.headroom_mw.min():.1f}..{res.headroom_mw.max():.1f} MW, binding "
          f"{res.binding.value_counts().to_dict()}")
    # the worst hour decides hosting_capacity: its distinct levels give the same answer as
    # the whole year at a 37th of the power flows
    # (on a tz-aware hourly index of their own: hosting_capacity asks for one)
    values = np.unique(background.to_numpy())
    levels = pd.Series(values, index=pd.date_range("2025-01-01", periods=len(values),
                                                   freq="h", tz="UTC"))
    hc = grid.hosting_capacity(net, bus=BUS, limits=LIMITS, background=levels,
                               power_factor=PF)
    print(f"grid.hosting_capacity at the background's levels: {hc.p_mw:.2f} MW "
          f"(binding {hc.element}, background {levels[hc.time]:.2f})")
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(res.table.to_string(index=False))
    anchors = {s: res.size_at_share(s) for s in (0.25, 0.5, 1.0)}
    for share, size in anchors.items():
        print(f"at {share:g} % curtailment: size {size:.1f} MW (+{size - res.firm_mw:.1f} MW, "
              f"+{100 * (size / res.firm_mw - 1):.1f} %)")
    row = summarize(res.load_mw, res.headroom_mw.to_numpy(), res.binding.to_numpy(),
                    [anchors[1.0]], res.firm_mw).iloc[0]
    print(f"size at 1 %: {row.curtailed_h_per_yr:.0f} h/yr, {row.events_per_yr:.0f} events, "
          f"mean {row.mean_event_h:.2f} h, longest {row.longest_event_h:.0f} h, binding "
          f"{row.binding_element}")

    print("headroom against pandapower.runpp at sampled hours:")
    runpp_check(net, res, background, [0, 2000, 4700, 8000])
    size = anchors[1.0]
    full = grid.timeseries(net, res.scaled_load_mw(size), bus=BUS, limits=LIMITS,
                           background=background, power_factor=PF)
    capped = grid.timeseries(net, res.curtailed_load_mw(size), bus=BUS, limits=LIMITS,
                             background=background, power_factor=PF)
    print(f"timeseries at {size:.1f} MW: uncurtailed {full.violations().time.nunique()} hours "
          f"with violations, curtailed {capped.violations().time.nunique()}")

    ax = plot_flexible_interconnection(res)
    ax.figure.savefig(FIGURES / "flexibility_curve.png", dpi=DPI)
    _week_figure(res, size).savefig(FIGURES / "flexibility_week.png", dpi=DPI)
    print(f"total {time.perf_counter() - t0:.0f} s")


def _week_figure(res, size: float) -> Figure:
    """The week around the longest curtailment event at ``size``: load, headroom, cap."""
    load = res.scaled_load_mw(size)
    cut = load > res.headroom_mw
    runs = (cut != cut.shift()).cumsum()[cut]
    longest = runs.value_counts().idxmax()
    middle = runs.index[runs == longest][0]
    window = slice(middle - pd.Timedelta("3D"), middle + pd.Timedelta("4D"))
    fig = Figure(figsize=(8, 3.8), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(load[window].index, load[window], lw=1, color="0.4",
            label=f"facility scaled to {size:.1f} MW peak")
    ax.plot(res.headroom_mw[window].index, res.headroom_mw[window], lw=1.2,
            color="seagreen", label="headroom at bus 15")
    ax.fill_between(load[window].index, res.curtailed_load_mw(size)[window], load[window],
                    color="crimson", alpha=0.5, step=None, label="curtailed")
    ax.set_ylabel("power [MW]")
    ax.set_xlabel("time (UTC)")
    ax.set_title("The week of the longest event at the 1 % size (illustrative background)")
    ax.legend(fontsize=8, loc="upper center", ncols=3, bbox_to_anchor=(0.5, -0.16))
    return fig


def scenario_figures(out_dir: str | None = None) -> None:
    """Run ``campus-100mw-flexible``; draw the loop's and the levers' figures; print numbers."""
    import tempfile

    from grid.plots import plot_cosimulation, plot_lever_contributions
    from scenarios.runner import run_scenario

    logging.getLogger("pandapower").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    out = Path(out_dir) if out_dir else Path(tempfile.mkdtemp()) / "campus-100mw-flexible"
    t0 = time.perf_counter()
    result = run_scenario("campus-100mw-flexible", out, progress=True)
    print(f"scenario run: {time.perf_counter() - t0:.0f} s, timings {result.summary['timings']}")
    study = result.grid["flexible_interconnection"]
    cost = result.grid["curtailment_cost"]
    co = result.grid["cosimulate"]
    load_mw = result.grid["load_mw"]
    print(f"campus peak {load_mw.max():.1f} MW, mean {load_mw.mean():.1f} MW; firm "
          f"{study.firm_mw:.2f} MW; headroom {study.headroom_mw.min():.1f}.."
          f"{study.headroom_mw.max():.1f} MW")
    own = study.curtailed_share_percent(float(load_mw.max()))
    print(f"own size: {own:.3f} % of its energy curtailed (perfect cap); sizes at 0.25/0.5/1 %: "
          + ", ".join(f"{study.size_at_share(x):.1f}" for x in (0.25, 0.5, 1.0)))
    with pd.option_context("display.width", 200, "display.precision", 4):
        print(cost.costs.to_string(index=False))
        print(f"cross-check: {cost.violation_steps} hours with a violation")
        print(cost.violations.to_string(index=False))
        events = cost.events
        hours = (events["end"] - events["start"]) / pd.Timedelta(hours=1)
        print(f"{len(events)} events, mean {hours.mean():.2f} h, longest {hours.max():.2f} h; "
              f"response_s {events['response_s'].value_counts().to_dict()}")
        print(f"meta flexibility: {cost.load.meta.get('flexibility')}")
        print(f"closed loop: {co.violation_steps} steps with a violation against "
              f"{co.open_loop_violation_steps} open loop; loop {co.wall_s:.0f} s; "
              f"vm min {co.vm_pu.min().to_dict()}")
        print(co.events.to_string(index=False))
    ax = plot_cosimulation(co)
    ax.figure.savefig(FIGURES / "flexibility_cosim.png", dpi=DPI)
    ax = plot_lever_contributions(cost.events)
    ax.figure.savefig(FIGURES / "flexibility_levers.png", dpi=DPI)
    print(f"total {time.perf_counter() - t0:.0f} s")


def reference_event() -> None:
    """Print the rows of the page's reference-event table: ``colocation-10mw`` at u = 0.8,
    1-min steps, 4 days from Monday 2025-01-06 (seed 0), held for 3 h from day 1 12:00 at 75 %
    of its mean power over the hour before; the default merit order and deferral first."""
    from aiload.facility import FlexibilitySpec

    start = pd.Timestamp("2025-01-06", tz="UTC")
    kw = dict(start=start, end="4D", freq="1min", utilization=0.8, progress=False, seed=0)
    t0, minute = start + pd.Timedelta("1D12h"), pd.Timedelta("1min")
    open_loop = aiload.facility("colocation-10mw", **kw)
    pre = float(open_loop.power["facility_kw"][t0 - pd.Timedelta("1h"):t0 - minute].mean())
    print(f"pre-event mean {pre:,.1f} kW -> limit {0.75 * pre:,.1f} kW")
    limit = pd.Series([0.75 * pre, np.inf], index=[t0, t0 + pd.Timedelta("3h")])
    end = start + pd.Timedelta(kw["end"])
    for flex in (FlexibilitySpec(), FlexibilitySpec(merit_order=("deferral", "power_cap"))):
        got = aiload.facility("colocation-10mw", power_limit_kw=limit, flexibility=flex, **kw)
        ev, meta = got.flexibility, got.meta["flexibility"]
        (row,) = ev.itertuples()
        same = bool(((got.jobs["end"] <= end) == (open_loop.jobs["end"] <= end)).all())
        print(f"{', '.join(meta['merit_order'])}: events {len(ev)}, held after "
              f"{row.response_s:.0f} s, power cap {row.power_cap_kw:,.0f} kW, deferral "
              f"{row.deferral_kw:,.0f} kW, inference {row.inference_kw:,.0f} kW, job delay "
              f"{row.job_delay_h:,.0f} job-h, checkpoint overhead "
              f"{meta['checkpoint_overhead_node_h']:,.0f} node-h, energy curtailed / made up "
              f"{meta['energy_curtailed_mwh']:.1f} / {meta['energy_made_up_mwh']:.1f} MWh, "
              f"shortfall {row.shortfall_kw:.0f} kW; work {meta['work_node_h']:,.0f} of "
              f"{meta['work_open_loop_node_h']:,.0f} node-h (shifted "
              f"{meta['work_shifted_node_h']:.0f}); same jobs done: {same}")


def run_time() -> None:
    """Time the page's run-time example (see the module docstring) and print the figures."""
    import os

    start = pd.Timestamp("2025-01-06", tz="UTC")
    kw = dict(start=start, end="365D", freq="1min", utilization=0.8, progress=False, seed=0)
    aiload.facility("colocation-10mw", **{**kw, "end": "1D"})  # first-call costs outside
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    open_loop = aiload.facility("colocation-10mw", **kw)
    t_open = time.perf_counter() - t0
    level = 0.75 * float(open_loop.power["facility_kw"].mean())
    times = [start + pd.Timedelta(days=3 + 18 * k, hours=12) for k in range(20)]
    index = pd.DatetimeIndex([t for t0_ in times for t in (t0_, t0_ + pd.Timedelta("3h"))])
    limit = pd.Series([level, np.inf] * len(times), index=index)
    t0 = time.perf_counter()
    got = aiload.facility("colocation-10mw", power_limit_kw=limit, **kw)
    t_limited = time.perf_counter() - t0
    ev = got.flexibility

    def moved(column: str) -> pd.Series:  # NaT (not started by the end) equals NaT here
        a, b = got.jobs[column], open_loop.jobs[column]
        return (a != b) & ~(a.isna() & b.isna())

    changed = int((moved("start") | moved("end")).sum())
    print(f"limit {level:,.0f} kW in {len(times)} events of 3 h; {len(ev)} events recorded, "
          f"shortfall after the response max {ev['shortfall_kw'].max():.0f} kW; "
          f"{changed:,} of {len(got.jobs):,} jobs changed start or end")
    print(f"open loop {t_open:.1f} s, limited {t_limited:.1f} s ({t_limited / t_open:.2f}x); "
          f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--run-time":
        run_time()
    elif len(sys.argv) > 1 and sys.argv[1] == "--scenario":
        scenario_figures(sys.argv[2] if len(sys.argv) > 2 else None)
    elif len(sys.argv) > 1 and sys.argv[1] == "--reference":
        reference_event()
    else:
        main(sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--cache" else None)
