"""Figures of grid studies (matplotlib; imported only when a plot is asked for).

Every function draws on ``ax`` (a new figure when omitted) and returns the Axes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.metrics.plots import date_axis
from grid.hosting import HostingCapacity
from grid.limits import Limits
from grid.powerflow import GridResult

__all__ = [
    "hosting_capacity_bars",
    "loading_duration",
    "n1_heatmap",
    "plot_cosimulation",
    "plot_flexible_interconnection",
    "plot_lever_contributions",
    "pv_curves",
    "voltage_envelope",
]


def _need(value: object, kind: type, what: str, hint: str) -> None:
    """Refuse ``value`` unless it is a ``kind``, naming the argument and where one comes from."""
    if not isinstance(value, kind):
        raise InputError(f"{what}: expected a grid {kind.__name__} ({hint}), got "
                         f"{type(value).__name__}.")


def _limits(limits: object, default: Limits) -> Limits:
    if limits is None:
        return default
    _need(limits, Limits, "limits", "e.g. grid.Limits(vm_min_pu=0.94), or None")
    return limits


def _top(top: object) -> int:
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise InputError(f"top: expected a positive int (how many to draw), got {top!r}.")
    return int(top)


def _axes(ax, figsize=(8, 4)):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize, constrained_layout=True)[1]


def _figure_axes(ax, figsize):
    """``ax``, or the axes of a new ``matplotlib.figure.Figure`` (no pyplot state)."""
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained").add_subplot()


def _on_clock(data, tz):
    """``data`` on the wall clock of ``tz`` (default its own zone) without the zone, which
    matplotlib would otherwise draw in UTC, and the axis label naming the zone."""
    local = data if tz is None else data.tz_convert(tz)
    zone = local.index.tz
    return local.tz_localize(None), f"time ({zone if zone is not None else 'UTC'})"


def voltage_envelope(result: GridResult, buses: Sequence[int] | None = None, *,
                     freq: str = "D", limits: Limits | None = None, ax=None, tz=None):
    """Daily (``freq``) min-max band of the voltage [pu] at chosen buses over time.

    Parameters
    ----------
    result : GridResult
    buses : sequence of int, optional
        Buses to draw; default the facility's bus (a queue: every facility's).
    freq : str
        Width of each envelope window (pandas offset, e.g. ``"D"``, ``"W"``).
    limits : Limits, optional
        Voltage band drawn as dashed lines; default ``result.limits``.
    tz : str or tzinfo, optional
        The clock of the time axis and of the ``freq`` windows (the site's time zone, e.g.
        ``"America/Chicago"``), named on the axis; default the result's own zone.
    """
    _need(result, GridResult, "result", "from grid.timeseries")
    limits = _limits(limits, result.limits)
    facility_buses = list(result.buses) if result.buses else [result.bus]  # a queue: all
    buses = list(buses) if buses is not None else facility_buses
    missing = [b for b in buses if b not in result.vm_pu.columns]
    if missing:
        raise InputError(f"buses: {missing} are not buses of the result (its buses: "
                         f"{list(result.vm_pu.columns)}); give indices of net.bus as ints.")
    try:
        pd.tseries.frequencies.to_offset(freq)
    except (TypeError, ValueError):
        raise InputError(f"freq: expected a pandas offset such as 'D' or 'W', got {freq!r}."
                         ) from None
    ax = _axes(ax)
    xlabel = "time"
    for b in buses:
        vm, xlabel = _on_clock(result.vm_pu[b], tz)
        lo, hi = vm.resample(freq).min(), vm.resample(freq).max()
        band = ax.fill_between(lo.index, lo.to_numpy(), hi.to_numpy(), alpha=0.35, step="post",
                               label=f"bus {b}" + (" (facility)" if b in facility_buses else ""))
        ax.plot(lo.index, vm.resample(freq).mean().to_numpy(), lw=0.8,
                color=band.get_facecolor()[0][:3], drawstyle="steps-post")
    for v in (limits.vm_min_pu, limits.vm_max_pu):
        ax.axhline(v, color="crimson", ls="--", lw=1)
    ax.set_ylabel("voltage [pu]")
    ax.set_xlabel(xlabel)
    date_axis(ax)
    ax.set_title(f"Voltage envelope ({freq} min-max band, line = mean)")
    ax.legend(loc="best", fontsize=8)
    return ax


def loading_duration(result: GridResult, *, top: int = 6, limits: Limits | None = None,
                     ax=None):
    """Loading duration curves [%] of the ``top`` most loaded lines and (2- and 3-winding)
    transformers."""
    _need(result, GridResult, "result", "from grid.timeseries")
    limits = _limits(limits, result.limits)
    top = _top(top)
    ax = _axes(ax)
    frames = [result.line_loading_percent.add_prefix("line "),
              result.trafo_loading_percent.add_prefix("trafo "),
              result.trafo3w_loading_percent.add_prefix("trafo3w ")]
    loading = pd.concat(frames, axis=1)
    loading.columns = [str(c) for c in loading.columns]
    order = loading.max().sort_values(ascending=False).index[:top]
    share = np.linspace(0, 100, len(loading), endpoint=False)
    for name in order:
        ax.plot(share, np.sort(loading[name].to_numpy())[::-1], label=name)
    ax.axhline(limits.loading_max_percent, color="crimson", ls="--", lw=1)
    ax.set_xlabel("share of time [%]")
    ax.set_ylabel("loading [%]")
    ax.set_title("Loading duration curves (most loaded branches)")
    ax.legend(fontsize=8)
    return ax


def hosting_capacity_bars(results: Mapping[str, HostingCapacity] | Sequence[HostingCapacity],
                          *, peak_mw: float | None = None, ax=None):
    """Hosting capacity [MW] per bus, each bar labelled with its binding constraint."""
    items = (list(results.items()) if isinstance(results, Mapping)
             else [(f"bus {getattr(r, 'bus', '?')}", r) for r in results])
    if not items:
        raise InputError("results: expected at least one HostingCapacity (from "
                         "grid.hosting_capacity), got none.")
    for name, r in items:
        _need(r, HostingCapacity, f"results[{name!r}]", "from grid.hosting_capacity")
    ax = _axes(ax)
    names = [k for k, _ in items]
    values = [r.p_mw for _, r in items]
    bars = ax.bar(names, values, color="steelblue")
    for bar, (_, r) in zip(bars, items, strict=True):
        what = ("no convergence" if r.quantity == "converged"
                else f"{r.element}\n{_QUANTITY_WORDS.get(r.quantity, r.quantity)} "
                     f"{r.value:.3g}{_QUANTITY_UNITS.get(r.quantity, '')}")
        ax.annotate(what, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                    textcoords="offset points")
    if peak_mw is not None:
        ax.axhline(peak_mw, color="darkorange", ls="--", lw=1.2,
                   label=f"facility peak {peak_mw:.0f} MW")
        ax.legend(fontsize=8, loc="upper left")
    ax.set_ylabel("hosting capacity [MW]")
    ax.set_ylim(0, max(values + [peak_mw or 0]) * 1.25)
    ax.set_title("Hosting capacity and binding constraint")
    return ax


def n1_heatmap(table: pd.DataFrame, *, limits: Limits | None = None, top: int = 15, ax=None):
    """The N-1 table as a heat map: worst outages x (voltage, line and trafo loading).

    Colours are each quantity's use of its limit [%] (100 = at the limit); cells show the
    values. Outages whose power flow fails at some peak hours (voltage collapse) come first,
    labelled with the hours without a solution, their unsolved cells at the top colour.
    """
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"table: expected the DataFrame of grid.contingency, got "
                         f"{type(table).__name__}.")
    need = ["element", "min_vm_pu", "max_vm_pu", "max_line_loading_percent",
            "max_trafo_loading_percent"]
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise InputError(f"table: lacks column(s) {missing} of grid.contingency's table; pass "
                         "that table as returned.")
    limits = _limits(limits, Limits())
    top = _top(top)
    ax = _axes(ax, figsize=(7, 0.35 * min(top, len(table)) + 1.5))
    t = table.set_index("element")
    use = pd.DataFrame({
        "min vm [pu]": (1 - t.min_vm_pu) / (1 - limits.vm_min_pu) * 100,
        "max vm [pu]": (t.max_vm_pu - 1) / (limits.vm_max_pu - 1) * 100,
        "line loading [%]": t.max_line_loading_percent / limits.loading_max_percent * 100,
        "trafo loading [%]": t.max_trafo_loading_percent / limits.loading_max_percent * 100,
    })
    values = pd.DataFrame({"min vm [pu]": t.min_vm_pu, "max vm [pu]": t.max_vm_pu,
                           "line loading [%]": t.max_line_loading_percent,
                           "trafo loading [%]": t.max_trafo_loading_percent})
    steps = t.converged_steps if "converged_steps" in t else pd.Series(0, index=t.index)
    failed = steps < steps.max()
    rank = use.max(axis=1).fillna(0.0).where(~failed, float("inf"))
    rank = rank.sort_values(ascending=False, kind="stable")
    rows = list(dict.fromkeys(["none", *rank.index[:top]]))[:top]
    shown = use.loc[rows].where(~failed.loc[rows].to_numpy()[:, None] | use.loc[rows].notna(),
                                120.0)
    image = ax.imshow(shown.to_numpy(dtype=float), cmap="RdYlGn_r", vmin=0, vmax=120,
                      aspect="auto")
    ax.set_xticks(range(shown.shape[1]), shown.columns, fontsize=8)
    labels = [r + (" (islands)" if t.at[r, "islanded_buses"] else "")
              + (f" (no solution {int(steps.max() - steps[r])} of {int(steps.max())} h)"
                 if failed[r] else "") for r in rows]
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    for i, r in enumerate(rows):
        for j, c in enumerate(shown.columns):
            v = values.at[r, c]
            ax.text(j, i, "-" if pd.isna(v) else f"{v:.3f}" if "vm" in c else f"{v:.0f}",
                    ha="center", va="center", fontsize=7)
    ax.figure.colorbar(image, ax=ax, label="use of limit [%]")
    ax.set_title("N-1 at the facility's peak hours (worst outages)")
    return ax


def pv_curves(curves: Mapping[str, object], *, peak_mw: float | None = None, ax=None):
    """P-V curves of the facility bus (``grid.pv_curve`` results) with their noses.

    Parameters
    ----------
    curves : Mapping[str, PVCurve]
        Label -> :class:`grid.stability.PVCurve`.
    peak_mw : float, optional
        The facility's peak [MW], drawn as a vertical line.
    """
    from grid.stability import PVCurve

    if not isinstance(curves, Mapping) or not curves:
        got = "an empty mapping" if isinstance(curves, Mapping) else type(curves).__name__
        raise InputError(f"curves: expected a non-empty mapping of label -> grid.pv_curve "
                         f"result, e.g. {{'intact': curve}}, got {got}.")
    for label, pv in curves.items():
        _need(pv, PVCurve, f"curves[{label!r}]", "from grid.pv_curve")
    ax = _axes(ax)
    for label, pv in curves.items():
        line, = ax.plot(pv.curve.p_mw, pv.curve.vm_pu, marker=".", lw=1.2,
                        label=f"{label}: nose {pv.nose_p_mw:,.1f} MW")
        ax.plot([pv.nose_p_mw], [pv.nose_vm_pu], marker="o", ms=8, mfc="none",
                color=line.get_color())
    if peak_mw is not None:
        ax.axvline(peak_mw, color="0.3", ls="--", lw=1, label=f"facility peak {peak_mw:,.1f} MW")
    ax.set_xlabel("facility power [MW]")
    ax.set_ylabel("facility bus voltage [pu]")
    ax.set_title("P-V curves of the facility bus, up to the nose (voltage collapse)")
    ax.legend(fontsize=8)
    return ax


# Norris, T. H., Profeta, T., Patino-Echeverri, D., Cowie-Haskell, A. (2025). Rethinking Load
# Growth: Assessing the Potential for Integration of Large Flexible Loads in US Power
# Systems. Nicholas Institute for Energy, Environment & Sustainability, Duke University,
# NI R 25-01: 76 / 98 / 126 GW of new US load at 0.25 / 0.5 / 1 % curtailment of its energy.
DUKE_2025_SHARES_PERCENT = (0.25, 0.5, 1.0)


def plot_flexible_interconnection(result, *, ax=None):
    """Extra facility MW above the firm capacity against its curtailment share [%].

    The sizes of ``result.table`` are drawn as points, the curve between them by
    :meth:`~grid.flexible.FlexibleInterconnection.size_at_share`; vertical lines mark the
    curtailment shares 0.25 / 0.5 / 1 % of the Duke University study (Norris et al. 2025,
    "Rethinking Load Growth"), each labelled with the extra MW this bus allows at it.

    Parameters
    ----------
    result : grid.flexible.FlexibleInterconnection
    ax : matplotlib.axes.Axes, optional
        Drawn on when given; else a new ``matplotlib.figure.Figure`` (no pyplot state).

    Returns
    -------
    matplotlib.axes.Axes
    """
    from grid.flexible import FlexibleInterconnection

    _need(result, FlexibleInterconnection, "result", "from grid.flexible_interconnection")
    ax = _figure_axes(ax, (7.5, 4.2))
    table = result.table
    # Duke's anchors lie at <= 1 %: beyond a few % the curve says little for this question
    x_max = min(max(float(table.curtailed_share_percent.max()), 1.2), 5.0)
    shares = np.unique(np.r_[np.linspace(0.0, x_max, 80), DUKE_2025_SHARES_PERCENT])
    extra = np.array([result.size_at_share(float(s)) - result.firm_mw for s in shares])
    shown = table[table.curtailed_share_percent <= x_max]
    ax.plot(shares, extra, color="steelblue", lw=1.5, label="largest size within the share")
    ax.plot(shown.curtailed_share_percent, shown.extra_mw, "o", color="steelblue", ms=4,
            label=f"sizes studied ({len(table) - len(shown)} beyond {x_max:g} % not shown)"
            if len(shown) < len(table) else "sizes studied")
    lines = ["Duke 2025 anchors (Norris et al.,", "Rethinking Load Growth):"]
    for k, share in enumerate(DUKE_2025_SHARES_PERCENT):
        mw = result.size_at_share(share) - result.firm_mw
        ax.axvline(share, color="darkorange", ls="--", lw=1,
                   label="Duke 2025 curtailment shares" if k == 0 else None)
        ax.plot([share], [mw], "D", color="darkorange", ms=5)
        lines.append(f"{share:g} % -> +{mw:,.1f} MW here")
    ax.text(0.98, 0.04, "\n".join(lines), transform=ax.transAxes, fontsize=8, ha="right",
            va="bottom", multialignment="left", bbox={"boxstyle": "round", "fc": "white", "ec": "0.7"})
    ax.set_xlim(0, x_max)
    ax.set_ylim(0, max(float(extra.max()), float(shown.extra_mw.max()), 1.0) * 1.15)
    ax.set_xlabel("curtailment [% of the facility's annual energy]")
    ax.set_ylabel(f"extra MW above firm {result.firm_mw:,.1f} MW")
    ax.set_title(f"Flexible interconnection at bus {result.bus}")
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_cosimulation(result, *, ax=None, tz=None):
    """Voltage at the facility bus with and without the closed loop [pu], and the floor.

    Parameters
    ----------
    result : grid.cosim.Cosimulation
    ax : matplotlib.axes.Axes, optional
        Drawn on when given; else a new ``matplotlib.figure.Figure`` (no pyplot state).
    tz : str or tzinfo, optional
        The clock of the time axis (the site's time zone), named on the axis; default the
        result's own zone.

    Returns
    -------
    matplotlib.axes.Axes
    """
    from grid.cosim import Cosimulation

    _need(result, Cosimulation, "result", "from grid.cosimulate")
    ax = _figure_axes(ax, (9, 3.8))
    vm, xlabel = _on_clock(result.vm_pu, tz)
    if vm["open_loop"].notna().any():
        ax.plot(vm.index, vm["open_loop"], color="0.55", lw=0.7, drawstyle="steps-post",
                label=f"open loop ({result.open_loop_violation_steps:,} steps with a violation)")
    ax.plot(vm.index, vm["closed_loop"], color="#c0392b", lw=0.8, drawstyle="steps-post",
            label=f"closed loop, '{result.controller}' controller "
                  f"({result.violation_steps:,} steps with a violation)")
    ax.axhline(result.limits.vm_min_pu, color="#52606d", ls="--", lw=0.8,
               label=f"floor {result.limits.vm_min_pu:g} pu")
    ax.set_ylabel(f"voltage at bus {result.bus} [pu]")
    ax.set_xlabel(xlabel)
    date_axis(ax)
    ax.set_title(f"Voltage at the facility bus, control period "
                 f"{result.control_period_s / 60:g} min")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    return ax


#: the levers of the facility's event table, in the default merit order
#: (``aiload.facility.flexspec.DEFAULT_MERIT_ORDER``): (column, label, colour)
LEVER_COLUMNS = (("battery_kw", "battery", "#2a9d8f"), ("power_cap_kw", "power caps", "#3e7cb1"),
                 ("deferral_kw", "deferral", "#c0392b"),
                 ("inference_kw", "inference throttling", "#e9c46a"))


#: a binding quantity in words on a figure, and its unit
_QUANTITY_WORDS = {"vm_pu": "voltage", "loading_percent": "loading"}
_QUANTITY_UNITS = {"vm_pu": " pu", "loading_percent": " %"}


def plot_lever_contributions(events: pd.DataFrame, *, ax=None, top: int = 30):
    """Energy each lever delivered per event [MWh], stacked (the ``top`` largest events).

    ``events`` is a ``FacilityLoad.flexibility`` table: each lever's mean reduction [kW]
    times the event's duration.
    """
    ax = _figure_axes(ax, (9, 3.8))
    if events is None or not len(events):
        ax.text(0.5, 0.5, "no event", ha="center", va="center", transform=ax.transAxes)
        return ax
    hours = ((events["end"] - events["start"]) / pd.Timedelta(hours=1)).to_numpy()
    mwh = pd.DataFrame({label: events[col].to_numpy() * hours / 1e3
                        for col, label, _ in LEVER_COLUMNS if col in events},
                       index=events["start"])
    mwh = mwh.loc[mwh.clip(lower=0).sum(axis=1).nlargest(top).index].sort_index()
    x = np.arange(len(mwh))
    bottom = np.zeros(len(mwh))
    colors = {label: color for _, label, color in LEVER_COLUMNS}
    for label, values in mwh.items():
        color = colors[label]
        v = np.clip(values.to_numpy(), 0.0, None)
        ax.bar(x, v, bottom=bottom, color=color, label=label, width=0.8)
        bottom += v
    ax.set_xticks(x, [t.strftime("%m-%d %H:%M") for t in mwh.index], rotation=60, fontsize=7,
                  ha="right")
    ax.set_ylabel("reduction delivered [MWh]")
    ax.set_title(f"What each lever delivered, per event ({len(mwh)} of {len(events)} events)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return ax
