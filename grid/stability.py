"""Voltage stability: the P-V curve of the facility bus up to the nose.

The facility's power is raised at constant power factor, each step warm-started from the
last solved one; the step doubles while every step solves, and once one does not, it is
halved until narrower than the tolerance. The last solved point is the *nose* (the largest facility power the network can
carry at all, voltage collapse beyond it): a lower bound within ``tolerance_mw``. Newton is
given :data:`NOSE_MAX_ITERATION` iterations so that it does not give up early near the
nose, where its Jacobian becomes singular.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError
from grid import engines
from grid.attach import attach, check_bus, check_power_factor, is_number, q_mvar

__all__ = ["PVCurve", "pv_curve", "nose", "NOSE_MAX_ITERATION"]

NOSE_MAX_ITERATION = 30


@dataclass(frozen=True)
class PVCurve:
    """Result of :func:`pv_curve`.

    Attributes
    ----------
    bus : int
        The facility's bus.
    nose_p_mw : float
        Largest facility active power with a power-flow solution [MW] (within
        ``tolerance_mw`` below the nose).
    nose_vm_pu : float
        Facility bus voltage at ``nose_p_mw`` [pu].
    curve : pandas.DataFrame
        Every solved point in order: ``p_mw`` [MW], ``vm_pu`` (facility bus) [pu],
        ``min_vm_pu`` (lowest bus voltage) [pu].
    tolerance_mw : float
        The last step tried above ``nose_p_mw`` was narrower than this [MW].
    power_factor : float
        Lagging power factor of the facility [-].
    outage : str or None
        The element taken out (``"line 65"``), or None for the intact network.
    enforce_q_lims : bool
        Whether generator Q limits were enforced.
    """

    bus: int
    nose_p_mw: float
    nose_vm_pu: float
    curve: pd.DataFrame
    tolerance_mw: float
    power_factor: float
    outage: str | None
    enforce_q_lims: bool


def _solve_at(model: engines.Model, solver, p_mw: float, power_factor: float,
              v_start: np.ndarray, scale: float,
              direction: np.ndarray | None = None,
              offset: np.ndarray | None = None) -> np.ndarray | None:
    # a queue's facilities move together: each its share of p_mw, on top of ``offset``
    p = np.array([p_mw]) if direction is None else (p_mw * direction)[None, :]
    if offset is not None:
        p = p + offset[None, :]
    q = q_mvar(p, power_factor)
    if model.fast_reason:  # no warm start through runpp; exact, slower
        v, ok = engines.solve_runpp(model, p, q, np.array([scale]))
        return v[0] if ok[0] else None
    sbus = engines.injections(model, p, q, np.array([scale]))[0]
    weights = np.zeros(len(model.v0))
    if model.enforce_q_lims and model.pv.size:
        from grid.qlims import newton_q_limited

        return newton_q_limited(solver, model, v_start, sbus, weights, NOSE_MAX_ITERATION)
    solver.solve(model.ybus, v_start, sbus, model.ref, weights, model.pv, model.pq,
                 NOSE_MAX_ITERATION, engines.TOLERANCE_MVA)
    return np.array(solver.get_V(), copy=True) if solver.converged() else None


def nose(model: engines.Model, power_factor: float, *, p_start_mw: float, step_mw: float,
         tolerance_mw: float, p_max_mw: float, scale: float = 1.0,
         direction: np.ndarray | None = None, offset: np.ndarray | None = None
         ) -> tuple[float, np.ndarray, list[tuple[float, np.ndarray]]] | None:
    """Step the facility power up from ``p_start_mw`` to the nose; None if the start fails.

    ``direction``: for a model of several facilities (a queue), each one's share [-] of the
    total power stepped up (summing to 1); the powers are then totals [MW]. ``offset``:
    each facility's power [MW] held under the stepped part (a queue's earlier facilities).

    Returns (nose power [MW], voltages there [pu, ppci order], solved points).
    """
    solver = None
    if not model.fast_reason:
        from lightsim2grid.algorithm import NRSing_KLU

        solver = NRSing_KLU()
    v = _solve_at(model, solver, p_start_mw, power_factor, model.v0, scale, direction,
                  offset)
    if v is None:
        return None
    p, step = float(p_start_mw), float(step_mw)
    points = [(p, v)]
    bracketed = False  # until the first failure the step doubles after each success
    while step >= tolerance_mw:
        trial = p + step
        if trial > p_max_mw:
            raise InputError(
                f"the P-V curve at the facility bus has no nose below p_max_mw={p_max_mw} MW; "
                "raise p_max_mw."
            )
        found = _solve_at(model, solver, trial, power_factor, v, scale, direction, offset)
        if found is None:
            bracketed = True
            step *= 0.5
            continue
        p, v = trial, found
        points.append((p, v))
        if not bracketed:
            step *= 2.0
    return p, v, points


def _outage(net: pp.pandapowerNet, outage: str | None) -> tuple[pp.pandapowerNet, str | None]:
    if outage is None:
        return net, None
    import re

    from grid.circuits import one_circuit_out, outage_label

    # grid.contingency's labels: "line 3", "trafo3w 0", "trafo 1 (1 of 2 circuits)"
    found = re.fullmatch(r"(line|trafo|trafo3w) (-?\d+)( \(1 of \d+ circuits\))?",
                         str(outage).strip())
    if found is None:
        raise InputError(f"outage: expected 'line N' or 'trafo N', got {outage!r} ('trafo3w N' "
                         "and grid.contingency's labels, e.g. 'line 0 (1 of 2 circuits)', "
                         "are taken too).")
    kind, idx = found.group(1), int(found.group(2))
    if idx not in net[kind].index or not bool(net[kind].at[idx, "in_service"]):
        raise InputError(f"outage: {kind} {idx} is not an in-service {kind} of this network.")
    out = copy.deepcopy(net)
    label = outage_label(out[kind], kind, idx)
    one_circuit_out(out, kind, idx)  # one circuit of a parallel=k row, as grid.contingency
    return out, label


def pv_curve(
    net: pp.pandapowerNet,
    *,
    bus: int,
    power_factor: float = 0.99,
    outage: str | None = None,
    step_mw: float | None = None,
    tolerance_mw: float = 0.01,
    p_max_mw: float = 100_000.0,
    enforce_q_lims: bool | None = None,
) -> PVCurve:
    """The P-V curve of a facility at ``bus`` up to the nose (voltage collapse).

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    bus : int
        Index of the connection bus in ``net.bus``.
    power_factor : float
        Lagging power factor of the facility [-], in (0, 1]; held along the curve.
    outage : str, optional
        ``"line N"``, ``"trafo N"`` or ``"trafo3w N"`` taken out first (an N-1 case; one
        circuit of a row with ``parallel=k``, as :func:`grid.contingency`, whose element
        labels are accepted).
    step_mw : float, optional
        First step of the facility power [MW]; default 5 % of the network's in-service
        load (at least 1 MW).
    tolerance_mw : float
        Steps are halved until narrower than this [MW]: the nose is found within it.
    p_max_mw : float
        Give up above this facility power [MW].
    enforce_q_lims : bool, optional
        Enforce generator Q limits; None: the network's default (:mod:`grid.qlims`).

    Returns
    -------
    PVCurve

    Examples
    --------
    >>> import grid
    >>> pv = grid.pv_curve(grid.networks.load("cigre_mv"), bus=5)
    >>> pv.nose_p_mw > pv.curve.p_mw.iloc[0]
    True
    """
    bus = check_bus(net, bus)
    pf = check_power_factor(power_factor)
    for name, value in (("tolerance_mw", tolerance_mw), ("p_max_mw", p_max_mw),
                        ("step_mw", 1.0 if step_mw is None else step_mw)):
        if not is_number(value):
            raise InputError(f"{name}: expected a number [MW], got {value!r} "
                             f"({type(value).__name__}).")
    if not (np.isfinite(tolerance_mw) and np.isfinite(p_max_mw)
            and tolerance_mw > 0 and p_max_mw > tolerance_mw):
        raise InputError(f"need finite 0 < tolerance_mw < p_max_mw [MW], got tolerance_mw="
                         f"{tolerance_mw!r}, p_max_mw={p_max_mw!r}; the search doubles up to "
                         "p_max_mw, so it must be a number, not inf.")
    case, name = _outage(net, outage)
    if name is not None:
        check_bus(case, bus)  # an outage that cuts the facility off has no curve
    if step_mw is None:
        loads = case.load[case.load.in_service.astype(bool)]
        step_mw = max(1.0, 0.05 * float((loads.p_mw * loads.scaling).sum()))
    if not (np.isfinite(step_mw) and step_mw > tolerance_mw):
        raise InputError(f"step_mw ({step_mw}) must exceed tolerance_mw ({tolerance_mw}).")
    work, load_index = attach(case, bus, power_factor=pf)
    model = engines.prepare(work, load_index, enforce_q_lims)
    found = nose(model, pf, p_start_mw=0.0, step_mw=step_mw, tolerance_mw=tolerance_mw,
                 p_max_mw=p_max_mw)
    if found is None:  # prepare() solved p = 0 already; only a Q-limit loop can fail here
        raise InputError(f"the network does not solve with 0 MW at bus {bus}.")
    p_nose, v_nose, points = found
    row = model.bus_row[net.bus.index.get_loc(bus)]
    ok = model.bus_row >= 0
    curve = pd.DataFrame({
        "p_mw": [p for p, _ in points],
        "vm_pu": [float(np.abs(v[row])) for _, v in points],
        "min_vm_pu": [float(np.abs(v[model.bus_row[ok]]).min()) for _, v in points],
    })
    return PVCurve(bus, float(p_nose), float(np.abs(v_nose[row])), curve, float(tolerance_mw),
                   pf, name, model.enforce_q_lims)
