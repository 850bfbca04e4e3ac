"""Load-loss events: the whole facility (or a chosen set of a queue's) dropping off at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError
from grid import engines
from grid.attach import attach_all, check_bus, check_power_factor, is_number, q_mvar

__all__ = ["LoadLoss", "load_loss", "RELIEF_PERCENT"]

RELIEF_PERCENT = 1e-3


@dataclass(frozen=True)
class LoadLoss:
    """Steady state before and after the facility trips.

    Attributes
    ----------
    p_mw : float
        Facility active power lost [MW] (a queue: the tripped facilities' together).
    vm_pre_pu, vm_post_pu : pandas.Series
        Bus voltages with and without the facility [pu] (index: ``net.bus``).
    dv_pu : pandas.Series
        ``vm_post_pu - vm_pre_pu`` [pu]: the voltage rise at every bus.
    largest_rise_bus : int
        Bus with the largest rise.
    largest_rise_pu : float
        That rise [pu].
    lines_relieved : pandas.DataFrame
        Lines whose loading falls by more than ``RELIEF_PERCENT`` (1e-3 %):
        ``loading_pre_percent``, ``loading_post_percent``,
        ``change_percent`` [%], largest relief first.
    branches_loaded : pandas.DataFrame
        Lines and 2- and 3-winding transformers whose loading *rises* after the trip by more
        than ``RELIEF_PERCENT`` (local generation that the facility absorbed now flows back
        through the network), index ``element`` (``"line 1"``, ``"trafo 0"``,
        ``"trafo3w 0"``): ``loading_pre_percent``, ``loading_post_percent``,
        ``change_percent`` [%] and ``over_limit_post`` (post-trip loading above
        ``loading_max_percent``), largest rise first.
    overloads_post : pandas.DataFrame
        Every branch above ``loading_max_percent`` after the trip (risen or not), same
        columns, most loaded first; empty when the trip leaves no overload.
    loading_max_percent : float
        The loading limit of ``over_limit_post`` and ``overloads_post`` [%].
    sensitivity_pu_per_mw : pandas.Series
        dV/dP of every bus voltage per MW of facility swing at ``p_mw`` [pu/MW]
        (central difference of two power flows, step ``dp_mw``; negative: more load,
        lower voltage).
    dp_mw : float
        Finite-difference step [MW].
    enforce_q_lims : bool
        Whether generator Q limits were enforced.
    buses : tuple of int
        Every facility's bus (connected before the event), in queue order.
    tripped_buses : tuple of int
        The buses of the facilities that trip.
    """

    p_mw: float
    vm_pre_pu: pd.Series
    vm_post_pu: pd.Series
    dv_pu: pd.Series
    largest_rise_bus: int
    largest_rise_pu: float
    lines_relieved: pd.DataFrame
    sensitivity_pu_per_mw: pd.Series
    dp_mw: float
    enforce_q_lims: bool = False
    branches_loaded: pd.DataFrame = field(default_factory=pd.DataFrame)
    overloads_post: pd.DataFrame = field(default_factory=pd.DataFrame)
    loading_max_percent: float = 100.0
    buses: tuple[int, ...] = ()
    tripped_buses: tuple[int, ...] = ()


def load_loss(net: pp.pandapowerNet, *, bus: int | None = None, p_mw: float | Mapping,
              trip=None, power_factor: float = 0.99, dp_mw: float | None = None,
              enforce_q_lims: bool | None = None,
              loading_max_percent: float = 100.0) -> LoadLoss:
    """Voltages and branch loadings before and after the facility at ``bus`` trips.

    With a queue (``p_mw`` a mapping bus -> MW), every facility is connected before the
    event and the ones in ``trip`` drop off together (the 2024 event: many data centres
    reacting to one fault).

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    bus : int
        The facility's bus.
    p_mw : float or Mapping
        Facility active power before the event [MW], >= 0; or a mapping bus -> MW, the
        queue's facilities (``bus`` omitted).
    trip : sequence of int, optional
        With a queue: the buses whose facilities trip together; default all of them.
    power_factor : float
        Lagging power factor of the facility [-], in (0, 1].
    dp_mw : float, optional
        Step of the dV/dP central difference [MW]; default ``max(0.01 * p_mw, 0.01)``. For
        a queue, ``p_mw`` is the tripped total, and the step is shared among the tripped
        facilities in proportion to their power (equally when all are at 0).
    enforce_q_lims : bool, optional
        Enforce generators' reactive-power limits (PV -> PQ switching, as
        ``pandapower.runpp(enforce_q_lims=True)``); None (default): on for networks whose
        generators have Q limits (:mod:`grid.qlims`).
    loading_max_percent : float
        Branch loading limit [%] after the trip (default 100, ``grid.Limits``' default):
        branches above it are listed in ``overloads_post`` and flagged in
        ``branches_loaded``.

    Returns
    -------
    LoadLoss

    Raises
    ------
    aiload.errors.InputError
        Bad bus/power factor/power, or a network that does not converge with the facility.

    Examples
    --------
    >>> import grid
    >>> ev = grid.load_loss(grid.networks.load("cigre_mv"), bus=5, p_mw=5.0)
    >>> ev.largest_rise_pu > 0
    True
    """
    buses, sizes, tripped = _facilities(net, bus, p_mw, trip)
    pf = check_power_factor(power_factor)
    if dp_mw is not None and not is_number(dp_mw):
        raise InputError(f"dp_mw: expected a finite positive step [MW], got {dp_mw!r}; omit it "
                         "for 1 % of p_mw.")
    if not (is_number(loading_max_percent) and np.isfinite(loading_max_percent)
            and loading_max_percent > 0):
        raise InputError(f"loading_max_percent: expected a positive finite loading limit [%], "
                         f"e.g. 100, got {loading_max_percent!r}.")
    lost_mw = float(sizes[tripped].sum())  # one facility: its own p_mw
    dp = float(dp_mw) if dp_mw is not None else max(0.01 * lost_mw, 0.01)
    if not (np.isfinite(dp) and dp > 0):
        raise InputError(f"dp_mw: expected a finite positive step [MW], got {dp_mw!r}; omit it for "
                         "1 % of p_mw.")
    work, load_index = attach_all(net, buses, power_factor=pf)
    model = engines.prepare(work, load_index, enforce_q_lims)
    # the dV/dP step shared among the tripped facilities by their power (one: all of it)
    share = np.zeros(len(buses))
    share[tripped] = (sizes[tripped] / lost_mw if lost_mw > 0
                      else np.full(len(tripped), 1.0 / len(tripped)))
    p = np.vstack([sizes, np.where(np.isin(np.arange(len(buses)), tripped), 0.0, sizes),
                   sizes + dp * share, np.maximum(sizes - dp * share, 0.0)])
    solver = engines.solve_runpp if model.fast_reason else engines.solve_newton
    v, conv = solver(model, p, q_mvar(p, pf), np.ones(len(p)))
    if not conv.all():
        where = (f"{sizes[0]} MW at bus {buses[0]}" if len(buses) == 1 else
                 "the queue (" + ", ".join(f"{m} MW at bus {b}" for b, m in
                                           zip(buses, sizes, strict=True)) + ")")
        raise InputError(
            f"the power flow with {where} does not converge; the network cannot "
            "carry this facility at all (see grid.hosting_capacity). p_mw is in MW: divide a "
            "power in kW by 1000."
        )
    out = engines.flows(model, v, p, q_mvar(p, pf), np.ones(len(p)))
    idx = net.bus.index
    pre = pd.Series(out["vm_pu"][0], idx, name="vm_pre_pu")
    post = pd.Series(out["vm_pu"][1], idx, name="vm_post_pu")
    dv = (post - pre).rename("dv_pu")
    swing_mw = p[2, tripped].sum() - p[3, tripped].sum()
    sens = pd.Series((out["vm_pu"][2] - out["vm_pu"][3]) / swing_mw, idx,
                     name="sensitivity_pu_per_mw")
    lines = pd.DataFrame({"loading_pre_percent": out["line_loading_percent"][0],
                          "loading_post_percent": out["line_loading_percent"][1]},
                         index=net.line.index)
    lines["change_percent"] = lines.loading_post_percent - lines.loading_pre_percent
    # a relief below 1e-3 % is solver noise on lines far from the facility, not an effect
    relieved = lines[lines.change_percent < -RELIEF_PERCENT].sort_values("change_percent")
    rise_bus = int(dv.idxmax())
    branches = _branches(net, out, float(loading_max_percent))
    loaded = branches[branches.change_percent > RELIEF_PERCENT].sort_values(
        "change_percent", ascending=False, kind="stable")
    overloads = branches[branches.over_limit_post].sort_values(
        "loading_post_percent", ascending=False, kind="stable")
    return LoadLoss(lost_mw, pre, post, dv, rise_bus, float(dv.max()), relieved, sens, dp,
                    model.enforce_q_lims, loaded, overloads, float(loading_max_percent),
                    tuple(buses), tuple(buses[j] for j in tripped))


def _facilities(net: pp.pandapowerNet, bus, p_mw, trip) -> tuple[list[int], np.ndarray,
                                                                   np.ndarray]:
    """Buses, powers [MW] and the positions of those that trip, from one facility or a
    queue."""
    def power(value, what: str) -> float:
        if not (is_number(value) and np.isfinite(value) and value >= 0):
            got = (repr(value) if isinstance(value, (int, float, str, np.number))
                   else type(value).__name__)
            raise InputError(f"{what}: expected a finite facility power >= 0 [MW] (one number; "
                             f"for a series, e.g. its peak: float(load_mw.max())), got {got}.")
        return float(value)

    if not isinstance(p_mw, Mapping):
        if trip is not None:
            raise InputError(f"trip={trip!r} needs a queue: pass p_mw as a mapping bus -> MW "
                             "(one facility always trips).")
        b = check_bus(net, bus)
        return [b], np.array([power(p_mw, "p_mw")]), np.array([0])
    if bus is not None:
        raise InputError(f"got p_mw as a mapping bus -> MW (a queue) and also bus={bus!r}; "
                         "with a mapping each facility's bus is its key: omit bus=.")
    if len(p_mw) == 0:
        raise InputError("p_mw: the mapping bus -> MW is empty; give at least one facility.")
    buses = [check_bus(net, b) for b in p_mw]
    sizes = np.array([power(v, f"p_mw[{b}]") for b, v in zip(buses, p_mw.values(),
                                                              strict=True)])
    chosen = list(buses) if trip is None else list(trip)
    unknown = [b for b in chosen if b not in buses]
    if not chosen or unknown:
        raise InputError(f"trip: expected some of the queue's buses {buses}, got {trip!r}"
                         + (f" ({unknown} not in the queue)." if unknown else "."))
    return buses, sizes, np.array(sorted({buses.index(b) for b in chosen}))


def _branches(net: pp.pandapowerNet, out: dict[str, np.ndarray],
              limit: float) -> pd.DataFrame:
    """Loading of every line, trafo and trafo3w with (step 0) and without (step 1) the
    facility [%], indexed by ``"line 1"``-style labels."""
    parts = []
    for kind in ("line", "trafo", "trafo3w"):
        values = out.get(f"{kind}_loading_percent")
        if values is None or values.shape[1] == 0:
            continue
        parts.append(pd.DataFrame(
            {"loading_pre_percent": values[0], "loading_post_percent": values[1]},
            index=pd.Index([f"{kind} {i}" for i in net[kind].index], name="element")))
    if not parts:
        frame = pd.DataFrame({"loading_pre_percent": pd.Series(dtype=float),
                              "loading_post_percent": pd.Series(dtype=float)},
                             index=pd.Index([], dtype=object, name="element"))
    else:
        frame = pd.concat(parts)
    frame["change_percent"] = frame.loading_post_percent - frame.loading_pre_percent
    frame["over_limit_post"] = frame.loading_post_percent > limit
    return frame
