"""N-1 screening of a network with the facility (or a queue of them) at its peak hours."""

from __future__ import annotations

import copy
import logging

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError
from grid import engines
from grid.attach import attach_all, check_power_factor, q_mvar
from grid.circuits import circuits, one_circuit_out, outage_label
from grid.queue import facilities

__all__ = ["contingency", "peak_steps"]

log = logging.getLogger(__name__)

_OUTAGES = {"lines": ("line",), "trafos": ("trafo", "trafo3w"),
            "lines+trafos": ("line", "trafo", "trafo3w")}


def peak_steps(load_mw: pd.Series, n: int) -> pd.DatetimeIndex:
    """Labels of the ``n`` steps with the highest facility power, in time order."""
    order = np.argsort(-load_mw.to_numpy(), kind="stable")[:n]
    return load_mw.index[np.sort(order)]


def contingency(
    net: pp.pandapowerNet,
    load_mw: pd.Series | object,
    *,
    bus: int | None = None,
    outages: str = "lines+trafos",
    power_factor: float = 0.99,
    n_peak: int = 24,
    enforce_q_lims: bool | None = None,
    margins: bool = True,
    min_margin_fraction: float = 0.05,
) -> pd.DataFrame:
    """N-1: each line and/or transformer out in turn, at the facility's peak steps.

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    load_mw : pandas.Series, FacilityLoad or Mapping
        Facility power [MW] (or [kW] when named ``*_kw``) on a tz-aware fixed-step index;
        or a mapping bus -> such a series, the interconnection queue (``bus`` omitted; the
        series aligned on one UTC axis, :func:`grid.queue.align`): every case is solved
        with all facilities attached, at the steps where their total is highest.
    bus : int, optional
        The facility's bus (one facility).
    outages : {"lines", "trafos", "lines+trafos"}
        Which in-service branches to take out, one circuit at a time (a row with
        ``parallel=k`` is k circuits: its case takes one out, leaving k-1, labelled
        ``"line 0 (1 of 2 circuits)"``) ("trafos": 2- and 3-winding
        transformers, ``net.trafo`` and ``net.trafo3w``).
    power_factor : float
        Lagging power factor of the facility [-], in (0, 1].
    n_peak : int
        Number of highest-power steps studied (24 = the peak day's worth of hours).
    margins : bool
        Find each case's voltage-collapse margin (``nose_mw``, ``collapse_margin_mw``).
        Where the fast engines do not apply (each P-V step a ``runpp``), only for the intact
        case and outages that fail a step or lower the lowest voltage by over 0.005 pu;
        NaN for the others.
    min_margin_fraction : float
        Flag (``low_margin``) a case whose collapse margin is below this share of the
        facility's peak [-]; default 0.05, the 5 % real-power margin WECC's
        voltage-stability criterion asks of N-1 cases.
    enforce_q_lims : bool, optional
        Enforce generators' reactive-power limits (PV -> PQ switching, as
        ``pandapower.runpp(enforce_q_lims=True)``); None (default): on for networks whose
        generators have Q limits (:mod:`grid.qlims`).

    Returns
    -------
    pandas.DataFrame
        One row per outage (plus ``"none"`` for the intact network first): ``element``,
        ``where`` (the buses it joins and its name, e.g. ``"bus 48-49 'L65'"``),
        ``islanded_buses`` (buses cut off from the slack), ``facility_islanded`` (bool),
        ``facility_unserved_mw`` (the facility's peak power over the studied steps that the
        outage leaves without supply [MW]: 0 unless ``facility_islanded``; an outage that
        islands the facility is an outcome of the study, not an error), ``converged_steps`` (of ``n_peak``), ``min_vm_pu`` and ``max_vm_pu`` [pu],
        ``max_line_loading_percent`` and ``max_trafo_loading_percent`` [%] over the peak
        steps (the latter over 2- and 3-winding transformers, a trafo3w's loading being its
        most loaded winding's, as ``res_trafo3w.loading_percent``), ``worst_time`` (the step with the lowest voltage), ``nose_mw`` (the largest
        facility power the case can carry at all: the nose of its P-V curve,
        :func:`grid.pv_curve`, within 0.1 % of the peak) [MW], ``collapse_margin_mw``
        (``nose_mw`` minus the facility's peak; negative: the peak is beyond collapse) [MW]
        and ``low_margin`` (margin below ``min_margin_fraction`` of the peak). For a queue
        the facility columns are about all facilities: ``facility_islanded`` when any is,
        ``facility_unserved_mw`` the islanded ones' largest total over the studied steps,
        ``nose_mw`` the total at the nose with every facility raised in proportion to its
        share at the peak step; and ``islanded_facility_buses`` lists which are cut off.
        Islanding is detected from the topology after the outage (connected components of
        the remaining branches; pandapower's own check on the reference path): buses left
        without a path to the slack are counted here and left out of the solution, never
        solved silently. ``table.attrs["enforce_q_lims"]`` says whether generator Q limits
        were enforced.

    Notes
    -----
    Where the fast engines apply, each outage subtracts the element's rows from
    pandapower's admittance matrix and solves the peak steps with Newton; otherwise each
    outage is a copy of the net solved by ``pandapower.runpp``.
    """
    queue = facilities(load_mw, bus, net=net)
    pf = check_power_factor(power_factor)
    if outages not in _OUTAGES:
        raise InputError(f"outages: expected one of {list(_OUTAGES)}, got {outages!r}.")
    if not (isinstance(n_peak, (int, np.integer)) and not isinstance(n_peak, bool)
            and n_peak > 0):
        raise InputError(f"n_peak: expected a positive int, got {n_peak!r}.")
    if not isinstance(margins, (bool, np.bool_)):
        raise InputError(f"margins: expected True or False, got {margins!r}.")
    if not (isinstance(min_margin_fraction, (int, float)) and 0 <= min_margin_fraction < 10):
        raise InputError(f"min_margin_fraction: expected a share in [0, 10), e.g. 0.05, got "
                         f"{min_margin_fraction!r}.")
    times = peak_steps(queue.total_mw, n_peak)
    p = queue.p_mw.loc[times].to_numpy()  # steps x facilities
    q = q_mvar(p, pf)
    total = p.sum(axis=1)  # one facility: its own values, exactly
    peak_row = p[int(np.argmax(total))]
    # the queue's direction of growth for the P-V nose: each facility's share at the peak
    share = peak_row / total.max() if total.max() > 0 else np.full(p.shape[1], 1 / p.shape[1])
    at_bus = [net.bus.index.get_loc(b) for b in queue.buses]
    work, load_index = attach_all(net, queue.buses, power_factor=pf)
    base = engines.prepare(work, load_index, enforce_q_lims)
    cases: list[tuple[str, str | None, int | None]] = [("none", None, None)]
    for kind in _OUTAGES[outages]:
        table = net[kind]
        cases += [(outage_label(table, kind, i), kind, int(i))
                  for i in table.index[table.in_service]]
    study = _fast_case if base.fast_reason is None else _runpp_case
    rows = []
    intact = None
    for name, kind, idx in cases:
        row = {"element": name, "where": _where(net, kind, idx), "islanded_buses": 0, "facility_islanded": False,
               "facility_unserved_mw": 0.0, "converged_steps": 0, "min_vm_pu": np.nan,
               "max_vm_pu": np.nan, "max_line_loading_percent": np.nan,
               "max_trafo_loading_percent": np.nan, "worst_time": pd.NaT,
               "nose_mw": np.nan, "collapse_margin_mw": np.nan, "low_margin": False}
        if not queue.single:
            row["islanded_facility_buses"] = []
        found = study(base, kind, idx, p, q)
        if found is None:
            log.info("grid.contingency: %s: the case does not converge", name)
            rows.append(row)
            continue
        out, conv, energised, model = found
        if intact is None:
            intact = energised
        row["islanded_buses"] = int((intact & ~energised).sum())
        cut = np.flatnonzero(~energised[at_bus])
        row["facility_islanded"] = bool(cut.size)
        if not queue.single:
            row["islanded_facility_buses"] = [queue.buses[j] for j in cut]
        if row["facility_islanded"]:
            row["facility_unserved_mw"] = float(p[:, cut].sum(axis=1).max())
            log.warning("grid.contingency: %s islands the facility bus %s: %.6g MW not served",
                        name, ", ".join(str(queue.buses[j]) for j in cut),
                        row["facility_unserved_mw"])
        row["converged_steps"] = int(conv.sum())
        if conv.any():
            vm = out["vm_pu"][conv]
            row["min_vm_pu"] = float(np.nanmin(vm))
            row["max_vm_pu"] = float(np.nanmax(vm))
            row["worst_time"] = times[conv][int(np.argmin(np.nanmin(vm, axis=1)))]
            for key in ("line_loading_percent", "trafo_loading_percent"):
                values = out[key][conv]
                if key == "trafo_loading_percent" and "trafo3w_loading_percent" in out:
                    values = np.hstack([values, out["trafo3w_loading_percent"][conv]])
                finite = values[np.isfinite(values)]
                row[f"max_{key}"] = float(finite.max()) if finite.size else np.nan
        if margins and not row["facility_islanded"] and (
                base.fast_reason is None or _weakened(row, rows, len(p))):
            _add_margin(row, model, pf, float(total.max()), bool(conv[int(np.argmax(total))]),
                        min_margin_fraction, share)
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs["buses"] = queue.buses
    table.attrs["enforce_q_lims"] = base.enforce_q_lims
    return table


def _where(net: pp.pandapowerNet, kind: str | None, idx: int | None) -> str:
    """The buses an element joins and its name, for a reader: ``"bus 48-49 'L65'"``."""
    if kind is None:
        return ""
    table = net[kind]
    ends = {"line": ("from_bus", "to_bus"), "trafo3w": ("hv_bus", "mv_bus", "lv_bus")}.get(
        kind, ("hv_bus", "lv_bus"))
    text = "bus " + "-".join(str(table.at[idx, end]) for end in ends)
    name = table.at[idx, "name"] if "name" in table else None
    if isinstance(name, str) and name.strip():
        text += f" '{name.strip()}'"
    return text


def _weakened(row: dict, rows: list[dict], n_steps: int) -> bool:
    """On the runpp path (one runpp per P-V step) margins are found only for the intact
    case and outages that fail a step or lower the lowest voltage by over 0.005 pu."""
    if not rows or row["converged_steps"] < n_steps:
        return True
    return bool(row["min_vm_pu"] < rows[0]["min_vm_pu"] - 0.005)


def _add_margin(row: dict, model: engines.Model, pf: float, peak_mw: float, peak_solved: bool,
                min_margin_fraction: float, share: np.ndarray) -> None:
    """The case's nose and collapse margin, stepping up from its peak (or from 0); every
    facility moves with its ``share`` [-] of the total (one facility: all of it)."""
    from grid.stability import nose

    start = peak_mw if peak_solved else 0.0
    found = nose(model, pf, p_start_mw=start, step_mw=max(1.0, 0.1 * peak_mw),
                 tolerance_mw=max(1e-3 * peak_mw, 1e-3), p_max_mw=1e7,
                 direction=None if len(share) == 1 else share)
    if found is None:
        return
    row["nose_mw"] = found[0]
    row["collapse_margin_mw"] = found[0] - peak_mw
    row["low_margin"] = bool(row["collapse_margin_mw"] < min_margin_fraction * peak_mw)


def _fast_case(base: engines.Model, kind: str | None, idx: int | None, p: np.ndarray,
               q: np.ndarray):
    """One outage by editing pandapower's admittance matrix; Newton at every peak step."""
    scale = np.ones(len(p))
    partial = kind is not None and circuits(base.net[kind], idx) > 1
    if kind is None:
        model, islanded = base, np.zeros(base.ybus.shape[0], dtype=bool)
    elif partial:
        # one of k parallel circuits out: pandapower's own matrices of the net with k-1
        case = copy.deepcopy(base.net)
        one_circuit_out(case, kind, idx)
        try:
            model = engines.prepare(case, base.load_indices, base.enforce_q_lims)
        except InputError:
            return None
        islanded = np.zeros(model.ybus.shape[0], dtype=bool)
    else:
        pos = base.net[kind].index.get_loc(idx)
        if kind == "trafo3w":  # its three windings (branches to the star bus) at once
            rows = base.trafo3w_row[:, pos]
        else:
            rows = (base.line_row if kind == "line" else base.trafo_row)[[pos]]
        rows = rows[rows >= 0]
        if rows.size == 0:  # pandapower already left it out (e.g. a bus of it is out of service)
            model, islanded = base, np.zeros(base.ybus.shape[0], dtype=bool)
        else:
            model, islanded = engines.without_branches(base, rows)
    v, conv = engines.solve_newton(model, p, q, scale)
    v[:, islanded] = np.nan
    out = engines.flows(model, v, p, q, scale)
    energised = model.bus_row >= 0
    if kind is not None and not partial:
        # the element itself carries nothing once out, as pandapower reports it
        out[f"{kind}_loading_percent"][:, base.net[kind].index.get_loc(idx)] = 0.0
    return out, conv, energised, model


def _runpp_case(base: engines.Model, kind: str | None, idx: int | None, p: np.ndarray,
                q: np.ndarray):
    """One outage on a copy of the net, solved by pandapower itself (the reference path)."""
    case = copy.deepcopy(base.net)
    if kind is not None:
        one_circuit_out(case, kind, idx)
    try:
        model = engines.prepare(case, base.load_indices, base.enforce_q_lims)
    except InputError:
        return None
    scale = np.ones(len(p))
    v, conv = engines.solve_runpp(model, p, q, scale)
    out = engines.flows(model, v, p, q, scale)
    return out, conv, case.res_bus.vm_pu.notna().to_numpy(), model
