"""Hosting capacity: the largest facility a bus can take within the limits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError
from aiload.timeseries import require_tz_aware
from grid import engines
from grid.attach import attach, check_bus, check_power_factor, is_number, q_mvar
from grid.bisection import bisect_capacity
from grid.collapse import COLLAPSE, NUMERICAL, NUMERICAL_FAILURE, Continuation, settle
from grid.limits import Limits
from grid.powerflow import background_values, solve

if TYPE_CHECKING:
    from grid.hosting_queue import QueueCapacity

__all__ = ["HostingCapacity", "hosting_capacity", "worst_violation", "base_violation_text",
           "refuse_slack_bus"]


@dataclass(frozen=True)
class HostingCapacity:
    """Result of :func:`hosting_capacity`.

    Attributes
    ----------
    p_mw : float
        Largest facility active power with no violation at any step [MW] (within
        ``tolerance_mw``).
    bus : int
        The facility's bus.
    element : str
        The binding element just above ``p_mw`` (``"bus 5"``, ``"line 3"``, ``"trafo 0"``,
        ``"power flow"`` for voltage collapse: no solution even when the power is walked up
        to by continuation, :mod:`grid.collapse`; ``"power flow (numerical failure)"`` when
        the network does not solve at that step's background at all).
    quantity : str
        ``vm_pu``, ``loading_percent`` or ``converged``.
    value : float
        The binding quantity just above ``p_mw`` [pu or %].
    limit : float
        Its limit [pu or %].
    time : pandas.Timestamp or None
        The step that binds (the worst hour) when a background series was given.
    tolerance_mw : float
        Width of the final bisection bracket [MW].
    enforce_q_lims : bool
        Whether generator Q limits were enforced.
    nose_p_mw : float
        The nose of the facility bus' P-V curve (voltage collapse) at the binding step
        [MW], within ``tolerance_mw`` (:func:`grid.pv_curve`).
    collapse_margin_mw : float
        ``nose_p_mw - p_mw``: how far beyond the hosting capacity the network would still
        solve at all [MW]; near 0 when voltage collapse is what binds.
    """

    p_mw: float
    bus: int
    element: str
    quantity: str
    value: float
    limit: float
    time: pd.Timestamp | None
    tolerance_mw: float
    enforce_q_lims: bool = False
    nose_p_mw: float = float("nan")
    collapse_margin_mw: float = float("nan")


def worst_violation(out: dict[str, np.ndarray], converged: np.ndarray, limits: Limits,
                    columns: dict[str, pd.Index]) -> tuple[int, str, str, float, float] | None:
    """The largest relative limit exceedance over all steps, or None when there is none.

    Returns (step, element, quantity, value, limit); a non-converged step outranks all.
    """
    if not converged.all():
        return int(np.flatnonzero(~converged)[0]), "power flow", "converged", 0.0, 1.0
    checks = [
        ("bus", "vm_pu", out["vm_pu"], limits.vm_min_pu, -1.0),
        ("bus", "vm_pu", out["vm_pu"], limits.vm_max_pu, 1.0),
        ("line", "loading_percent", out["line_loading_percent"], limits.loading_max_percent, 1.0),
        ("trafo", "loading_percent", out["trafo_loading_percent"], limits.loading_max_percent,
         1.0),
        ("trafo3w", "loading_percent", out.get("trafo3w_loading_percent", np.zeros((0, 0))),
         limits.loading_max_percent, 1.0),
    ]
    best = None
    for kind, quantity, values, limit, sign in checks:
        if values.size == 0:
            continue
        excess = np.nan_to_num(sign * (values - limit) / limit, nan=-np.inf)
        k, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
        if excess[k, j] > 0 and (best is None or excess[k, j] > best[0]):
            best = (excess[k, j], int(k), f"{kind} {columns[kind][j]}", quantity,
                    float(values[k, j]), float(limit))
    return None if best is None else best[1:]


def base_violation_text(out: dict[str, np.ndarray], converged: np.ndarray, limits: Limits,
                        columns: dict[str, pd.Index], times: pd.Index | None) -> str:
    """The error message for a network that breaks ``limits`` before the facility is added.

    Names the worst elements and by how much, and the limits the base network does meet.
    """
    if not converged.all():
        k = int(np.flatnonzero(~converged)[0])
        when = "" if times is None else f" at {times[k]}"
        return (f"the network does not converge without the facility{when} (background "
                "multiplier too high?): fix the network or the background series first.")
    found = []
    vm = out["vm_pu"]
    for j, b in enumerate(columns["bus"]):
        lo, hi = np.nanmin(vm[:, j], initial=np.inf), np.nanmax(vm[:, j], initial=-np.inf)
        if lo < limits.vm_min_pu:
            found.append((limits.vm_min_pu - lo, (f"bus {b} at {lo:.6g} pu < vm_min_pu "
                          f"{limits.vm_min_pu:g} (by {limits.vm_min_pu - lo:.3g} pu)")))
        if hi > limits.vm_max_pu:
            found.append((hi - limits.vm_max_pu, (f"bus {b} at {hi:.6g} pu > vm_max_pu "
                          f"{limits.vm_max_pu:g} (by {hi - limits.vm_max_pu:.3g} pu)")))
    top_loading = limits.loading_max_percent
    for kind in ("line", "trafo", "trafo3w"):
        values = out.get(f"{kind}_loading_percent", np.zeros((0, 0)))
        for j, e in enumerate(columns.get(kind, ())):
            worst = np.nanmax(values[:, j], initial=-np.inf)
            top_loading = max(top_loading, worst)
            if worst > limits.loading_max_percent:
                found.append(((worst - limits.loading_max_percent) / 100.0,
                              (f"{kind} {e} at {worst:.6g} % > loading_max_percent "
                               f"{limits.loading_max_percent:g} (by "
                               f"{worst - limits.loading_max_percent:.3g} %)")))
    found.sort(key=lambda item: -item[0])
    listed = "; ".join(text for _, text in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    band_lo = min(limits.vm_min_pu, float(np.nanmin(vm)))
    band_hi = max(limits.vm_max_pu, float(np.nanmax(vm)))
    return (
        f"the network already violates the limits without the facility: {listed}{more}. A "
        "hosting capacity against these limits does not exist (0 MW would blame the facility "
        "for the network's own state). Fix the network, or study against limits it meets, "
        f"e.g. grid.Limits(vm_min_pu={math.floor(band_lo * 1000) / 1000:g}, "
        f"vm_max_pu={math.ceil(band_hi * 1000) / 1000:g}, "
        f"loading_max_percent={math.ceil(top_loading):g})."
    )


def refuse_slack_bus(net: pp.pandapowerNet, bus: int) -> None:
    """Refuse the network's only slack bus: a load there is served by the external grid and
    changes no voltage or flow, so no size breaks a limit (the search ran to ``p_max_mw``)."""
    from grid.topology import slack_buses

    slacks = slack_buses(net)
    if slacks == {bus}:
        raise InputError(
            f"bus {bus} is the network's slack (external grid) bus: a facility there is "
            "served by the external grid directly and changes no voltage or branch flow in the "
            "network, so it has no hosting capacity to find. Pick a bus inside the network "
            "(e.g. the low-voltage side of the transformer it would connect through)."
        )


def hosting_capacity(
    net: pp.pandapowerNet,
    *,
    bus: int | None = None,
    queue=None,
    limits: Limits | None = None,
    power_factor: float = 0.99,
    background: pd.Series | None = None,
    p_max_mw: float = 10_000.0,
    tolerance_mw: float = 0.01,
    enforce_q_lims: bool | None = None,
) -> HostingCapacity | QueueCapacity:
    """Largest constant facility load at ``bus`` that violates no limit, by bisection.

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    bus : int
        Index of the connection bus in ``net.bus`` (one facility).
    queue : Mapping, optional
        Instead of ``bus``: the interconnection queue, a mapping bus -> requested size
        [MW] or facility series (sized by its peak), in queue order. Returns a
        :class:`grid.hosting_queue.QueueCapacity`: the largest common scaling of all
        requests, and the allocation in queue order with each facility's binding constraint.
    limits : Limits, optional
        Voltage band [pu] and loading limit [%]; default ``Limits()``.
    power_factor : float
        Lagging power factor of the facility [-], in (0, 1].
    background : pandas.Series, optional
        Multipliers [-] of the existing loads over time (e.g. hourly for a year). The
        capacity must hold at every step: the worst hour decides.
    p_max_mw : float
        Upper end of the search [MW]; the bracket grows from 1 MW by doubling.
    tolerance_mw : float
        Bisection stops when the bracket is narrower than this [MW].
    enforce_q_lims : bool, optional
        Enforce generators' reactive-power limits (PV -> PQ switching, as
        ``pandapower.runpp(enforce_q_lims=True)``); None (default): on for networks whose
        generators have Q limits (:mod:`grid.qlims`).

    Returns
    -------
    HostingCapacity
        Capacity [MW] and the binding constraint just above it. A step that does not
        converge is walked up to by continuation first (:mod:`grid.collapse`, the rule of
        :func:`grid.pv_curve` and :func:`grid.flexible_interconnection`); only one beyond
        the nose counts as voltage collapse.

    Raises
    ------
    aiload.errors.InputError
        Bad inputs; a facility bus not joined to a slack (the cut is named); or a network
        that already breaks ``limits`` at 0 MW (the elements and by how much are named,
        with limits the network does meet).

    Examples
    --------
    >>> import grid
    >>> limits = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)
    >>> hc = grid.hosting_capacity(grid.networks.load("case118"), bus=49, limits=limits,
    ...                            power_factor=0.95)
    >>> round(hc.p_mw), hc.element, hc.quantity
    (138, 'bus 49', 'vm_pu')
    """
    if queue is not None and bus is not None:
        raise InputError(f"got both bus={bus!r} and a queue; a queue names each facility's bus "
                         "as its key: omit bus=.")
    if queue is None:
        bus = check_bus(net, bus)
        refuse_slack_bus(net, bus)
    pf = check_power_factor(power_factor)
    limits = limits if limits is not None else Limits()
    if not isinstance(limits, Limits):
        raise InputError(f"limits: expected a grid.Limits (e.g. grid.Limits(vm_min_pu=0.94)) "
                         f"or None, got {type(limits).__name__}.")
    for name, value in (("tolerance_mw", tolerance_mw), ("p_max_mw", p_max_mw)):
        if not is_number(value):
            raise InputError(f"{name}: expected a number [MW], got {value!r} "
                             f"({type(value).__name__}).")
    if not (np.isfinite(tolerance_mw) and np.isfinite(p_max_mw)
            and tolerance_mw > 0 and p_max_mw > tolerance_mw):
        raise InputError(f"need finite 0 < tolerance_mw < p_max_mw [MW], got tolerance_mw="
                         f"{tolerance_mw!r}, p_max_mw={p_max_mw!r}; the search doubles up to "
                         "p_max_mw, so it must be a number, not inf.")
    if background is None:
        scale = np.ones(1)
        times = None
    else:
        if not isinstance(background, pd.Series) or len(background) == 0:
            got = ("an empty Series" if isinstance(background, pd.Series)
                   else type(background).__name__)
            raise InputError(f"background: expected a non-empty pandas Series of multipliers "
                             f"[-] on a tz-aware DatetimeIndex, got {got}.")
        # the binding step is reported by its label: a time, never a position or naive time
        require_tz_aware(background.index, "background")
        scale = background_values(background)
        times = background.index
    if queue is not None:
        from grid.hosting_queue import queue_capacity

        # this module's rules passed in: grid.hosting_queue does not import grid.hosting
        return queue_capacity(net, queue, limits=limits, power_factor=pf,
                              background=background, p_max_mw=float(p_max_mw),
                              tolerance_mw=float(tolerance_mw), enforce_q_lims=enforce_q_lims,
                              rules=(worst_violation, base_violation_text, refuse_slack_bus))
    work, load_index = attach(net, bus, power_factor=pf)
    model = engines.prepare(work, load_index, enforce_q_lims)
    # one step: Newton directly; a series: the batch engine where it is verified
    engine = "auto" if len(scale) > 1 else "newton"
    engine = "runpp" if model.fast_reason else engine
    columns = {"bus": net.bus.index, "line": net.line.index, "trafo": net.trafo.index,
               "trafo3w": net.trafo3w.index}

    # a step that does not converge is walked up to by continuation before it counts as
    # voltage collapse (grid.collapse): a cold Newton start gives up short of the nose
    cont = Continuation(model, pf, tolerance_mw)

    def check(p: float):
        p_arr = np.full(len(scale), p)
        out, conv, _, _ = solve(model, p_arr, q_mvar(p_arr, pf), scale, engine)
        if not conv.all():
            status = settle(cont, out, conv, p_arr, scale, stop_at_collapse=True)
            for kind, element in ((COLLAPSE, "power flow"), (NUMERICAL, NUMERICAL_FAILURE)):
                if (status == kind).any():
                    return int(np.flatnonzero(status == kind)[0]), element, "converged", 0.0, 1.0
        return worst_violation(out, conv, limits, columns)

    p0 = np.zeros(len(scale))
    out0, conv0, _, _ = solve(model, p0, p0, scale, engine)
    if worst_violation(out0, conv0, limits, columns) is not None:
        raise InputError(base_violation_text(out0, conv0, limits, columns, times))
    lo, worst = bisect_capacity(check, p_max=p_max_mw, tolerance=tolerance_mw,
                                too_much=f"bus {bus} hosts more than p_max_mw={p_max_mw} MW "
                                         "without a violation; raise p_max_mw.")
    k, element, quantity, value, limit = worst
    if quantity == "converged" and element == "power flow":
        # collapse binds: the nose is the one the search walked to (grid.collapse); a cold
        # start at lo may land on another branch of generator Q-limit switching (case39 bus
        # 0: 937.8 MW, while the load grown from 0 MW collapses at 925.7 MW, as pv_curve)
        p_nose = cont.nose_mw(float(scale[k]), 100.0 * p_max_mw)
    else:
        from grid.stability import nose

        # a limit binds: the nose as before (the queue's allocation computes it alike)
        found = nose(model, pf, p_start_mw=lo, step_mw=max(1.0, 0.1 * lo),
                     tolerance_mw=tolerance_mw, p_max_mw=100.0 * p_max_mw,
                     scale=float(scale[k]))
        p_nose = float("nan") if found is None else found[0]
    return HostingCapacity(lo, bus, element, quantity, value, limit,
                           None if times is None else times[k], tolerance_mw,
                           model.enforce_q_lims, p_nose, p_nose - lo)
