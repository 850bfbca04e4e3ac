"""Generator reactive-power limits: the PV -> PQ switching loop and the default per network.

pandapower enforces Q limits in ``runpp(enforce_q_lims=True)`` by solving, turning every
generator beyond a limit into a fixed-Q injection at that limit (its bus becomes PQ) and
solving again until none is beyond; a bus never switches back. :func:`newton_q_limited`
does the same on pandapower's own matrices with lightsim2grid's Newton solver, per bus: a
bus's generators share their Q in proportion to their ranges in pandapower, so one of them
is beyond its limit exactly when the bus total is beyond the summed limits. The batch engine
(``TimeSeriesCPP``) cannot switch bus types, so a Q-limited study never uses it.

Default (:func:`default_enforce_q_lims`): on for a network with in-service, non-slack,
voltage-controlling generators that have a finite Q limit (case118, case300 and MATPOWER
cases); off for networks without them (CIGRE MV, case33bw; CIGRE HV's generators have none).
"""

from __future__ import annotations

import numpy as np
import pandapower as pp

from aiload.errors import InputError
from grid.solver_settings import MAX_ITERATION, TOLERANCE_MVA

__all__ = ["default_enforce_q_lims", "resolve_enforce_q_lims", "bus_q_limits",
           "newton_q_limited"]

# pandapower's ppc column numbers (pandapower.pypower.idx_gen / idx_bus)
_GEN_BUS, _QMAX, _QMIN, _GEN_STATUS = 0, 3, 4, 7
_QD = 3


def default_enforce_q_lims(net: pp.pandapowerNet) -> bool:
    """True when ``net`` has in-service non-slack generators with a finite Q limit."""
    gen = net.gen
    if not len(gen):
        return False
    live = gen.in_service.astype(bool)
    if "slack" in gen:
        live &= ~gen.slack.fillna(False).astype(bool)
    limits = gen.loc[live, [c for c in ("min_q_mvar", "max_q_mvar") if c in gen]]
    return bool(np.isfinite(limits.to_numpy(dtype=float)).any())


def resolve_enforce_q_lims(net: pp.pandapowerNet, enforce_q_lims: bool | None) -> bool:
    """``enforce_q_lims`` as given, or the network's default when None."""
    if enforce_q_lims is None:
        return default_enforce_q_lims(net)
    if not isinstance(enforce_q_lims, (bool, np.bool_)):
        raise InputError(
            f"enforce_q_lims: expected True, False or None (the network's default: on where "
            f"generators have Q limits), got {enforce_q_lims!r}."
        )
    return bool(enforce_q_lims)


def bus_q_limits(internal: dict, base_mva: float, sbus0: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per ppci bus: summed Q limits of in-service generators and their scheduled Q [pu].

    The scheduled generator Q of a bus is ``Im(Sbus) + Qd`` (``Sbus = Sg - Sd``); with it a
    step's load Q at the bus is ``Qg_sched - Im(S_step)``.
    """
    gen = np.real(internal["gen"])
    n = len(sbus0)
    on = gen[:, _GEN_STATUS] > 0
    rows = gen[on, _GEN_BUS].astype(np.int64)
    q_max = np.zeros(n)
    q_min = np.zeros(n)
    np.add.at(q_max, rows, gen[on, _QMAX] / base_mva)
    np.add.at(q_min, rows, gen[on, _QMIN] / base_mva)
    q_sched = sbus0.imag + np.real(internal["bus"][:, _QD]) / base_mva
    return q_max, q_min, q_sched


def newton_q_limited(solver, model, v_start: np.ndarray, sbus: np.ndarray,
                     weights: np.ndarray, max_iteration: int | None = None
                     ) -> np.ndarray | None:
    """One step with Q limits enforced by PV -> PQ switching; voltages [pu] or None.

    Parameters
    ----------
    solver : lightsim2grid.algorithm.NRSing_KLU
        The Newton solver (reused across steps).
    model : grid.engines.Model
        Prepared with ``enforce_q_lims=True``.
    v_start : numpy.ndarray
        Warm start [pu] (ppci bus order).
    sbus : numpy.ndarray
        The step's bus injections [pu].
    weights : numpy.ndarray
        Slack weights (zeros: a single slack).
    max_iteration : int, optional
        Newton iterations per solve; default :data:`grid.solver_settings.MAX_ITERATION`.
    """
    iterations = MAX_ITERATION if max_iteration is None else int(max_iteration)

    s = sbus.copy()
    q_load = model.q_sched_bus - sbus.imag  # the step's load Q per bus [pu]
    pv, pq = model.pv.copy(), model.pq.copy()
    # Newton holds a PV bus at the magnitude it starts from: a warm start from a step where
    # the bus was switched to PQ must get its set-point back (model.v0 holds them)
    v = v_start.copy()
    held = np.r_[pv, model.ref]
    v[held] = np.abs(model.v0[held]) * np.exp(1j * np.angle(v_start[held]))
    ybus = getattr(model, "_ybus_csr", None)
    if ybus is None or ybus.shape != model.ybus.shape:
        ybus = model.ybus.tocsr()
        model._ybus_csr = ybus  # a cache on this model object only (replace() drops it)
    for _ in range(len(pv) + 1):
        solver.solve(model.ybus, v, s, model.ref, weights, pv, pq, iterations, TOLERANCE_MVA)
        if not solver.converged():
            return None
        v = np.array(solver.get_V(), copy=True)  # the solver reuses its buffer
        if not pv.size:
            return v
        # a whole matvec, then the rows: much cheaper than slicing the sparse rows each time
        q_gen = (v[pv] * np.conj((ybus @ v)[pv])).imag + q_load[pv]
        high = q_gen > model.q_max_bus[pv]
        low = q_gen < model.q_min_bus[pv]
        if not (high.any() or low.any()):
            return v
        for mask, limit in ((high, model.q_max_bus), (low, model.q_min_bus)):
            b = pv[mask]
            s[b] = s[b].real + 1j * (limit[b] - q_load[b])
        pq = np.sort(np.r_[pq, pv[high | low]])
        pv = pv[~(high | low)]
    return v
