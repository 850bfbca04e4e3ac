"""The lightsim2grid batch engine: a whole series in one C++ call, checked before use.

``TimeSeriesCPP`` runs on a grid converted by ``lightsim2grid.network.init_from_pandapower``.
Two converter traps are handled here (see :mod:`grid.engines`); whatever else differs is
caught by comparing sampled steps with :func:`grid.engines.solve_newton` (pandapower's own
matrices), and the batch result is then refused with a reason.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.sparse import linalg as splinalg

from grid.engines import (AGREEMENT_PU, MAX_ITERATION, TOLERANCE_MVA, Model, per_facility,
                          solve_newton)

__all__ = ["solve_lightsim2grid", "MAX_RESTARTS"]

MAX_RESTARTS = 20


def solve_lightsim2grid(
    model: Model, p_mw: np.ndarray, q_mvar: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | str:
    """Solve all steps in one lightsim2grid ``TimeSeriesCPP`` call.

    Returns (voltages, converged) like :func:`solve_newton`, or a string saying why the
    batch result cannot be trusted on this network (the caller falls back).
    """
    from lightsim2grid.network import init_from_pandapower

    # model.net is already this call's private copy (grid.attach.attach) and the converter
    # only reads it (checked: the net's JSON is unchanged), so no second deepcopy
    net = model.net
    if not net.bus.index.equals(net.bus.index.__class__(range(len(net.bus)))):
        return "bus index is not 0..n-1 (needed to map lightsim2grid buses)"
    try:
        with warnings.catch_warnings():
            # the converter warns about NaN tap columns it fills and the slack it adds
            warnings.simplefilter("ignore", UserWarning)
            # "pandapower_v3": the default (v2) transformer formulas get the sign of a
            # negative i0_percent wrong (MATPOWER line charging on case118's transformer
            # branches): 0.014 pu off; with v3 it agrees to 1e-10 pu
            lsgrid = init_from_pandapower(net, pp_orig_file="pandapower_v3")
    except Exception as exc:  # any converter failure means: use the exact engine
        return f"lightsim2grid converter failed: {exc}"
    # the converter ignores switches; pandapower keeps a line with an open switch energised
    # from its other end (charging current), i.e. disconnected on one side only
    open_l = net.switch[(net.switch.et == "l") & ~net.switch.closed.astype(bool)]
    for bus_id, line_id in zip(open_l.bus, open_l.element, strict=True):
        pos = net.line.index.get_loc(line_id)
        if net.line.at[line_id, "from_bus"] == bus_id:
            lsgrid.deactivate_powerline_side1(pos)
        else:
            lsgrid.deactivate_powerline_side2(pos)
    open_other = net.switch.et.isin(["b", "t", "t3"]) & ~net.switch.closed.astype(bool)
    if len(net.switch) and open_other.any():
        return "open bus-bus or transformer switches are present"
    p_mw, q_mvar = per_facility(model, p_mw), per_facility(model, q_mvar)
    n = len(p_mw)
    load_p = np.tile((net.load.p_mw * net.load.scaling).to_numpy(), (n, 1))
    load_q = np.tile((net.load.q_mvar * net.load.scaling).to_numpy(), (n, 1))
    others = np.flatnonzero(~net.load.index.isin(model.load_indices))
    load_p[:, others] *= scale[:, None]
    load_q[:, others] *= scale[:, None]
    for j, index in enumerate(model.load_indices):
        pos = net.load.index.get_loc(index)
        load_p[:, pos] = p_mw[:, j]
        load_q[:, pos] = q_mvar[:, j]
    gen_p = np.tile(
        np.r_[(net.gen.p_mw * net.gen.scaling).to_numpy(), net.res_ext_grid.p_mw.to_numpy()],
        (n, 1),
    )
    sgen_p = np.tile((net.sgen.p_mw * net.sgen.scaling).to_numpy(), (n, 1))
    vinit = np.ones(lsgrid.total_bus(), dtype=complex)
    vinit[: len(net.bus)] = net.res_bus.vm_pu.fillna(1.0).to_numpy() * np.exp(
        1j * np.deg2rad(net.res_bus.va_degree.fillna(0.0).to_numpy())
    )
    batches = _run_batches(lsgrid, gen_p, sgen_p, load_p, load_q, vinit)
    if isinstance(batches, str):
        return batches
    v_pos, converged = batches[0][:, : len(net.bus)], batches[1]
    out = np.full((n, len(model.v0)), np.nan + 0j)
    ok = model.bus_row >= 0
    out[np.ix_(converged, model.bus_row[ok])] = v_pos[np.ix_(converged, ok)]
    aux = np.setdiff1d(np.arange(len(model.v0)), model.bus_row[ok])
    if aux.size:
        # pandapower's auxiliary buses (the open end of a switched-off line) carry no
        # injection, so their voltage follows from Kirchhoff: Y_aa V_a = -Y_ak V_k
        if np.abs(model.sbus0[aux]).max() > 0:
            return "pandapower auxiliary buses carry injections"
        known = model.bus_row[ok]
        y = model.ybus.tocsr()
        y_aa = y[aux][:, aux].tocsc()
        y_ak = y[aux][:, known]
        rows = np.flatnonzero(converged)
        out[np.ix_(rows, aux)] = -splinalg.spsolve(
            y_aa, (y_ak @ out[np.ix_(rows, known)].T)).reshape(len(aux), len(rows)).T
    # trust the batch result only where it reproduces pandapower's own matrices
    good = np.flatnonzero(converged)
    if good.size == 0:
        return "no step converged in the lightsim2grid batch run"
    total_mw = p_mw.sum(axis=1)  # one facility: its own values, exactly
    sample = np.unique([good[0], good[np.argmax(total_mw[good])],
                        good[np.argmin(total_mw[good])], good[-1]])
    v_ref, conv = solve_newton(model, p_mw[sample], q_mvar[sample], scale[sample])
    if not conv.all():
        return "the exact engine did not converge at a sampled step"
    diff = float(np.nanmax(np.abs(np.abs(out[sample]) - np.abs(v_ref))))
    if not diff <= AGREEMENT_PU:
        return (f"lightsim2grid's converted grid differs from pandapower's by {diff:.2e} pu "
                f"(> {AGREEMENT_PU:g} pu) at sampled steps")
    return out, converged


def _run_batches(lsgrid, gen_p: np.ndarray, sgen_p: np.ndarray, load_p: np.ndarray,
                 load_q: np.ndarray, vinit: np.ndarray) -> tuple[np.ndarray, np.ndarray] | str:
    """``TimeSeriesCPP`` over all steps, resumed after each step that does not converge.

    ``TimeSeriesCPP`` stops at the first step that does not converge. The run resumes at the
    next step from ``vinit`` (the base solution), as :func:`grid.engines.solve_newton` does,
    so one bad hour does not send a whole year to a slower engine. Returns voltages of every
    lightsim2grid bus [pu] (steps x buses; rows of failed steps are 0) and per-step
    convergence, or a reason string after ``MAX_RESTARTS`` failed steps.
    """
    from lightsim2grid.lightsim2grid_cpp import TimeSeriesCPP

    n = gen_p.shape[0]
    v_all = np.zeros((n, len(vinit)), dtype=complex)
    converged = np.zeros(n, dtype=bool)
    start, failed = 0, 0
    while start < n:
        ts = TimeSeriesCPP(lsgrid)
        ts.compute_Vs(gen_p[start:], sgen_p[start:], load_p[start:], load_q[start:], vinit,
                      MAX_ITERATION, TOLERANCE_MVA)
        mask = np.asarray(ts.converged_mask(), dtype=bool)
        v_all[start:][mask] = np.asarray(ts.get_voltages())[mask]
        converged[start:] = mask
        if mask.all():
            break
        failed += 1
        if failed > MAX_RESTARTS:
            return (f"more than {MAX_RESTARTS} steps did not converge in the lightsim2grid "
                    "batch run")
        start += int(np.argmin(mask)) + 1  # the first failed step; those after it are unsolved
    return v_all, converged
