"""Power-flow engines behind :func:`grid.timeseries`.

Three engines solve the same steady-state AC power flow for every step of a series:

``"runpp"``
    pandapower's :func:`pandapower.runpp` once per step on a copy of the net: the reference.
``"newton"``
    pandapower's own admittance matrix and injections (``net._ppc["internal"]``: switches,
    transformer models, shunts exactly as ``runpp`` sees them), solved step by step with
    lightsim2grid's C++ Newton-Raphson (the solver ``runpp`` itself uses when
    ``lightsim2grid=True``), warm-started from the previous step. Only the facility
    injection and the background load scaling change between steps.
``"lightsim2grid"``
    lightsim2grid's batch ``TimeSeriesCPP`` on a grid converted with
    ``lightsim2grid.network.init_from_pandapower``: the whole series in one C++ call. Two
    converter traps are handled: it ignores switches (a line with an open switch is
    disconnected on that side only, as pandapower keeps it energised from the other end),
    and its default ``pp_orig_file="pandapower_v2"`` transformer formulas flip the sign of
    a negative ``i0_percent`` (case118: 0.014 pu off), so ``"pandapower_v3"`` is used. Its
    result is still checked against ``"newton"`` at sampled steps and dropped, with a
    logged reason, when they differ by more than 1e-6 pu.

The batch engine lives in :mod:`grid.batch`. Each engine returns complex bus voltages in
pandapower's internal (``ppci``) bus order;
:func:`flows` turns them into the quantities ``runpp`` reports.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass

import numpy as np
import pandapower as pp
from scipy import sparse

from aiload._notice import slow_without
from aiload.errors import InputError
from grid.solver_settings import AGREEMENT_PU, MAX_ITERATION, TOLERANCE_MVA

__all__ = ["Model", "per_facility", "prepare", "without_branches", "injections", "solve_newton",
           "solve_runpp", "flows", "AGREEMENT_PU", "MAX_ITERATION", "TOLERANCE_MVA"]

log = logging.getLogger(__name__)


@dataclass
class Model:
    """pandapower's internal power-flow data of a net with the facility attached (p = 0).

    Internal: per-unit quantities on ``base_mva`` [MVA]; bus order is pandapower's ppci.
    """

    net: pp.pandapowerNet
    load_indices: np.ndarray  # net.load rows of the facilities, in the caller's order
    base_mva: float
    ybus: sparse.csc_matrix
    yf: sparse.csr_matrix
    yt: sparse.csr_matrix
    sbus0: np.ndarray
    sload: np.ndarray
    facility_rows: np.ndarray  # ppci bus row of each facility; -1 when islanded
    ref: np.ndarray
    pv: np.ndarray
    pq: np.ndarray
    v0: np.ndarray
    bus_row: np.ndarray
    line_row: np.ndarray
    trafo_row: np.ndarray
    f_kv: np.ndarray
    t_kv: np.ndarray
    f_bus: np.ndarray
    t_bus: np.ndarray
    ext_grid_offset_mw: float
    fast_reason: str | None
    enforce_q_lims: bool = False
    q_max_bus: np.ndarray | None = None
    q_min_bus: np.ndarray | None = None
    q_sched_bus: np.ndarray | None = None
    q_lims_note: str = ""
    trafo3w_row: np.ndarray | None = None  # (3, n_trafo3w) ppci rows: hv, mv, lv windings

    @property
    def load_index(self) -> int:
        """The ``net.load`` row of the only facility (a model of one facility only)."""
        return int(self._only(self.load_indices))

    @property
    def facility_row(self) -> int:
        """The ppci bus row of the only facility, -1 when islanded (one facility only)."""
        return int(self._only(self.facility_rows))

    def _only(self, values: np.ndarray):
        if len(values) != 1:
            raise InputError(f"this study takes one facility; the model has {len(values)} "
                             "(an interconnection queue): pass one bus and one series.")
        return values[0]


def per_facility(model: Model, values: np.ndarray) -> np.ndarray:
    """Per-step facility values as (steps, facilities): a 1-D array is the only facility's.

    The one-facility call is the queue's special case: a column view of the same numbers,
    so that one facility gives the same bits through either form.
    """
    values = np.asarray(values)
    if values.ndim == 1:
        model._only(model.load_indices)
        return values[:, None]
    if values.ndim != 2 or values.shape[1] != len(model.load_indices):
        raise InputError(f"expected facility values as (steps, {len(model.load_indices)}) "
                         f"[MW], got shape {values.shape}.")
    return values


# numba=False in every runpp here: with numba installed, the first runpp of a process spends
# 2-9 s compiling (measured on the 2-core machine) for a solve that takes milliseconds; the
# fast engines need one runpp, and the runpp engine's cost per step is pandas, not the solve.


def _run_base(net: pp.pandapowerNet) -> None:
    try:
        pp.runpp(net, lightsim2grid=False, numba=False, tolerance_mva=TOLERANCE_MVA,
                 max_iteration=MAX_ITERATION)
    except pp.LoadflowNotConverged:
        raise InputError(
            "the network does not converge even without the facility (pandapower.runpp, "
            f"{MAX_ITERATION} iterations): fix the network first (check loads, generator "
            "set-points and the slack) before attaching a facility."
        ) from None
    except (FloatingPointError, ZeroDivisionError) as exc:
        from grid.attach import _ZERO_IMPEDANCE_FIX, zero_impedance_branches

        found = zero_impedance_branches(net)
        where = ("; ".join(found[:5]) if found else
                 "no line or transformer with zero reactance was found; check impedances "
                 "near zero (e.g. x_ohm_per_km or length_km of 1e-12) and shunt values")
        raise InputError(
            f"pandapower.runpp failed with {type(exc).__name__} ({exc}) on the network without "
            f"the facility: a branch with no (or almost no) impedance: {where}. "
            f"{_ZERO_IMPEDANCE_FIX}"
        ) from None


def _fast_reason(net: pp.pandapowerNet) -> str | None:
    """Why the fast engines cannot reproduce runpp on ``net`` (None when they can)."""
    try:
        import lightsim2grid  # noqa: F401
    except ImportError:
        slow_without("lightsim2grid", "grid studies solve every step with pandapower.runpp "
                     "(same results, up to ~400x slower)")
        return "lightsim2grid is not installed (pip install lightsim2grid)"
    loads = net.load[net.load.in_service]
    dep = [c for c in loads.columns if c.startswith("const_") and c.endswith("_percent")]
    if dep and (loads[dep].fillna(0.0).to_numpy() != 0).any():
        return "voltage-dependent (const_z/const_i) loads are present"
    if int(net.ext_grid.in_service.sum()) != 1:
        return f"{int(net.ext_grid.in_service.sum())} in-service ext_grids (need exactly 1)"
    if "slack" in net.gen and bool((net.gen.slack & net.gen.in_service).any()):
        return "a generator is a slack (only one ext_grid slack is supported)"
    return None


def prepare(net: pp.pandapowerNet, load_index: int | np.ndarray | list[int],
            enforce_q_lims: bool | None = False) -> Model:
    """Solve ``net`` once (facilities at 0 MW) and keep pandapower's internal matrices.

    ``net`` is a copy made by :func:`grid.attach.attach` (or :func:`grid.attach.attach_all`
    for a queue: ``load_index`` then lists the facilities' ``net.load`` rows in queue
    order); it is solved in place. With
    ``enforce_q_lims`` the generators' summed Q limits per bus are kept for the PV -> PQ
    switching of :func:`solve_newton` (see :mod:`grid.qlims`); None takes the network's
    default (:func:`grid.qlims.default_enforce_q_lims`), and falls back to no limits, with a
    warning and ``Model.q_lims_note``, when the network without the facility does not
    converge with them (case300 in pandapower 3.5). An explicit True then raises.
    """
    load_indices = np.atleast_1d(np.asarray(load_index, dtype=np.int64))
    for index in load_indices:
        net.load.at[index, "p_mw"] = 0.0
        net.load.at[index, "q_mvar"] = 0.0
    _run_base(net)
    ppc = net._ppc
    internal = ppc["internal"]
    base_mva = float(ppc["baseMVA"])
    lookup = net._pd2ppc_lookups["bus"]
    n_ppci = internal["Ybus"].shape[0]

    bus_row = lookup[net.bus.index.to_numpy()]
    bus_row = np.where((bus_row >= 0) & (bus_row < n_ppci), bus_row, -1)
    bus_row[~net.bus.in_service.to_numpy()] = -1

    # per-ppci-bus sum of the existing loads, the part the background profile scales
    loads = net.load.drop(index=load_indices)
    loads = loads[loads.in_service]
    s_load = (loads.p_mw * loads.scaling + 1j * loads.q_mvar * loads.scaling).to_numpy()
    rows = lookup[loads.bus.to_numpy()]
    sload = np.zeros(n_ppci, dtype=complex)
    ok = (rows >= 0) & (rows < n_ppci)
    np.add.at(sload, rows[ok], s_load[ok] / base_mva)

    # ppc branch rows -> ppci rows (out-of-service branches are dropped in ppci)
    branch_is = internal["branch_is"]
    ppci_of_ppc = np.full(len(branch_is), -1)
    ppci_of_ppc[branch_is] = np.arange(int(branch_is.sum()))
    brl = net._pd2ppc_lookups["branch"]
    line_row = ppci_of_ppc[slice(*brl["line"])] if "line" in brl else np.zeros(0, int)
    trafo_row = ppci_of_ppc[slice(*brl["trafo"])] if "trafo" in brl else np.zeros(0, int)
    # pandapower models a 3-winding transformer as three branches to a star bus: all hv
    # windings first, then all mv, then all lv (results_branch._get_trafo3w_lookups)
    trafo3w_row = (ppci_of_ppc[slice(*brl["trafo3w"])].reshape(3, -1) if "trafo3w" in brl
                   else np.zeros((3, 0), int))
    branch = internal["branch"]
    base_kv = internal["bus"][:, 9].real  # BASE_KV
    f_kv = base_kv[branch[:, 0].real.astype(int)]
    t_kv = base_kv[branch[:, 1].real.astype(int)]

    v0 = internal["V"].copy()
    sbus0 = internal["Sbus"].copy()
    ref = np.asarray(internal["ref"], dtype=np.int64)
    model = Model(
        net=net,
        load_indices=load_indices,
        base_mva=base_mva,
        ybus=sparse.csc_matrix(internal["Ybus"]),
        yf=sparse.csr_matrix(internal["Yf"]),
        yt=sparse.csr_matrix(internal["Yt"]),
        sbus0=sbus0,
        sload=sload,
        facility_rows=bus_row[net.bus.index.get_indexer(net.load.loc[load_indices, "bus"])],
        ref=ref,
        pv=np.asarray(internal["pv"], dtype=np.int64),
        pq=np.asarray(internal["pq"], dtype=np.int64),
        v0=v0,
        bus_row=bus_row,
        line_row=line_row,
        trafo_row=trafo_row,
        f_kv=f_kv,
        t_kv=t_kv,
        f_bus=branch[:, 0].real.astype(np.int64),
        t_bus=branch[:, 1].real.astype(np.int64),
        ext_grid_offset_mw=0.0,
        fast_reason=_fast_reason(net),
        trafo3w_row=trafo3w_row,
    )
    from grid.qlims import bus_q_limits, resolve_enforce_q_lims

    if resolve_enforce_q_lims(net, enforce_q_lims):
        model.q_max_bus, model.q_min_bus, model.q_sched_bus = bus_q_limits(internal, base_mva,
                                                                          sbus0)
        model.enforce_q_lims = True
        zero = np.zeros((1, len(load_indices)))
        base_ok = (solve_runpp if model.fast_reason else solve_newton)(model, zero, zero,
                                                                       np.ones(1))[1][0]
        if not base_ok:
            text = ("the network does not converge with generator Q limits enforced even "
                    "without the facility (pandapower.runpp(enforce_q_lims=True) agrees)")
            if enforce_q_lims:
                raise InputError(f"{text}; pass enforce_q_lims=False to study it without them.")
            model.enforce_q_lims = False
            model.q_lims_note = f"Q limits not enforced: {text}"
            log.warning("grid: %s; studied without them.", text)
    if len(ref) == 1 and len(net.ext_grid):
        p_calc = _slack_p_calc(model, v0[None, :], sbus0[None, :])[0]
        model.ext_grid_offset_mw = float(net.res_ext_grid.p_mw.sum()) - p_calc
    return model


def without_branches(model: Model, rows: np.ndarray) -> tuple[Model, np.ndarray]:
    """The model with ppci branches ``rows`` taken out, and the ppci buses it islands.

    ``Ybus = Cf' Yf + Ct' Yt``, so a branch leaves by subtracting its two rows. Buses with
    no path to the slack are dropped from the Newton equations (their voltage is NaN and
    the facility, if there, draws nothing), as pandapower does for isolated buses.
    """
    from dataclasses import replace

    from scipy.sparse.csgraph import connected_components

    nb = model.ybus.shape[0]
    rows = np.asarray(rows, dtype=np.int64)
    pick_f = sparse.csr_matrix((np.ones(len(rows)), (model.f_bus[rows], np.arange(len(rows)))),
                               shape=(nb, len(rows)))
    pick_t = sparse.csr_matrix((np.ones(len(rows)), (model.t_bus[rows], np.arange(len(rows)))),
                               shape=(nb, len(rows)))
    delta = pick_f @ model.yf[rows] + pick_t @ model.yt[rows]
    ybus = sparse.csc_matrix(model.ybus - delta)
    keep = np.ones(len(model.f_bus), dtype=bool)
    keep[rows] = False
    graph = sparse.csr_matrix((np.ones(int(keep.sum())),
                               (model.f_bus[keep], model.t_bus[keep])), shape=(nb, nb))
    _, label = connected_components(graph, directed=False)
    islanded = label != label[model.ref[0]]
    zero = sparse.diags((~np.isin(np.arange(len(model.f_bus)), rows)).astype(float))
    bus_row = np.where((model.bus_row >= 0) & ~islanded[np.maximum(model.bus_row, 0)],
                       model.bus_row, -1)
    rows_f = model.facility_rows
    facility_rows = np.where((rows_f >= 0) & ~islanded[np.maximum(rows_f, 0)], rows_f, -1)
    out = replace(
        model, ybus=ybus, yf=sparse.csr_matrix(zero @ model.yf),
        yt=sparse.csr_matrix(zero @ model.yt), bus_row=bus_row, facility_rows=facility_rows,
        pv=model.pv[~islanded[model.pv]], pq=model.pq[~islanded[model.pq]],
    )
    return out, islanded


def _slack_p_calc(model: Model, v: np.ndarray, sbus_ref: np.ndarray) -> np.ndarray:
    """Active power the slack bus must inject beyond its scheduled Sbus [MW], per step.

    ``sbus_ref`` is the slack bus' scheduled injection [pu] per step (steps,) or the full
    injections (steps, buses).
    """
    r = model.ref[0]
    if sbus_ref.ndim == 2:
        sbus_ref = sbus_ref[:, r]
    i_ref = (model.ybus[[r], :] @ v.T).ravel()
    p_inj = (v[:, r] * np.conj(i_ref)).real
    return (p_inj - sbus_ref.real) * model.base_mva


def _ref_injection(model: Model, p_mw: np.ndarray, q_mvar: np.ndarray,
                   scale: np.ndarray) -> np.ndarray:
    """The slack bus' column of :func:`injections` [pu], without building the whole matrix."""
    r = model.ref[0]
    s_ref = model.sbus0[r] - (scale - 1.0) * model.sload[r]
    p, q = per_facility(model, p_mw), per_facility(model, q_mvar)
    for j in np.flatnonzero(model.facility_rows == r):
        s_ref = s_ref - (p[:, j] + 1j * q[:, j]) / model.base_mva
    return np.asarray(s_ref, dtype=complex)


def _branch_loading(model: Model, v: np.ndarray, rows: np.ndarray, table, kind: str) -> np.ndarray:
    """Loading [%] of the lines or transformers whose ppci branch rows are ``rows``.

    Only the rows asked for are multiplied out (a whole ``Yf @ V`` of a year is most of the
    cost); an element out of service reads 0 %, as in ``runpp``'s results.
    """
    n = v.shape[0]
    out = np.full((n, len(rows)), np.nan)
    live = np.flatnonzero(rows >= 0)
    if live.size == 0:
        out[:, ~table.in_service.to_numpy()] = 0.0
        return out
    r = rows[live]
    vt = v.T
    i_f = np.abs(model.yf[r] @ vt) * (model.base_mva / (np.sqrt(3) * model.f_kv[r]))[:, None]
    i_t = np.abs(model.yt[r] @ vt) * (model.base_mva / (np.sqrt(3) * model.t_kv[r]))[:, None]
    if kind == "line":
        i_max = (table.max_i_ka * table.df * table.parallel).to_numpy()[live]
        loading = np.fmax(i_f, i_t) / i_max[:, None] * 100.0
    else:
        hv = table.vn_hv_kv.to_numpy()[live, None]
        lv = table.vn_lv_kv.to_numpy()[live, None]
        rating = (table.sn_mva * table.parallel * table.df).to_numpy()[live, None]
        loading = np.fmax(i_f * hv, i_t * lv) * np.sqrt(3) / rating * 100.0
    out[:, live] = loading.T
    out[:, ~table.in_service.to_numpy()] = 0.0
    return out


def _trafo3w_loading(model: Model, v: np.ndarray) -> np.ndarray:
    """Loading [%] of the 3-winding transformers, as ``res_trafo3w.loading_percent``.

    pandapower's definition (``trafo_loading="current"``): each winding's current times its
    rated voltage against its own rating (``sn_hv_mva``, ``sn_mv_mva``, ``sn_lv_mva``), the
    largest of the three; the hv winding's current at its hv end, the mv and lv windings' at
    their mv and lv ends. A winding pandapower left out reads 0 %, an element out of service
    0 %, as in ``runpp``'s results.
    """
    table = model.net.trafo3w
    rows = model.trafo3w_row if model.trafo3w_row is not None else np.zeros((3, 0), int)
    n = v.shape[0]
    if rows.shape[1] == 0:
        return np.zeros((n, 0))
    per_winding = []
    for w, (side, kv, sn) in enumerate((("f", "vn_hv_kv", "sn_hv_mva"),
                                         ("t", "vn_mv_kv", "sn_mv_mva"),
                                         ("t", "vn_lv_kv", "sn_lv_mva"))):
        out = np.zeros((n, rows.shape[1]))
        live = np.flatnonzero(rows[w] >= 0)
        if live.size:
            r = rows[w, live]
            y, base_kv = (model.yf, model.f_kv) if side == "f" else (model.yt, model.t_kv)
            i_ka = np.abs(y[r] @ v.T) * (model.base_mva / (np.sqrt(3) * base_kv[r]))[:, None]
            rated = (table[kv] * np.sqrt(3) / table[sn] * 100.0).to_numpy()[live, None]
            out[:, live] = (i_ka * rated).T
        per_winding.append(out)
    loading = np.maximum(np.maximum(per_winding[0], per_winding[1]), per_winding[2])
    loading[:, ~table.in_service.to_numpy()] = 0.0
    return loading


def injections(model: Model, p_mw: np.ndarray, q_mvar: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Bus injections of every step [pu], shape (steps, buses).

    ``p_mw``, ``q_mvar``: (steps,) for a model of one facility, (steps, facilities) for a
    queue [MW], [MVAr].
    """
    p, q = per_facility(model, p_mw), per_facility(model, q_mvar)
    sbus = np.repeat(model.sbus0[None, :], len(p), axis=0)
    sbus -= (scale[:, None] - 1.0) * model.sload[None, :]
    for j, row in enumerate(model.facility_rows):
        if row >= 0:  # an islanded facility bus draws nothing from the grid
            sbus[:, row] -= (p[:, j] + 1j * q[:, j]) / model.base_mva
    return sbus


def solve_newton(
    model: Model, p_mw: np.ndarray, q_mvar: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Solve every step with pandapower's matrices and lightsim2grid's Newton solver.

    Returns complex voltages [pu] (steps x ppci buses; NaN where not converged) and the
    per-step convergence flags.
    """
    from lightsim2grid.algorithm import NRSing_KLU

    solver = NRSing_KLU()
    sbus = injections(model, p_mw, q_mvar, scale)
    n = len(p_mw)
    out = np.full((n, len(model.v0)), np.nan + 0j)
    converged = np.zeros(n, dtype=bool)
    weights = np.zeros(len(model.v0))
    v_start = model.v0
    q_limited = model.enforce_q_lims and model.pv.size > 0
    if q_limited:
        from grid.qlims import newton_q_limited
    def one(v0: np.ndarray, k: int) -> np.ndarray | None:
        if q_limited:
            return newton_q_limited(solver, model, v0, sbus[k], weights)
        solver.solve(model.ybus, v0, sbus[k], model.ref, weights, model.pv, model.pq,
                     MAX_ITERATION, TOLERANCE_MVA)
        return solver.get_V() if solver.converged() else None

    for k in range(n):
        v_k = one(v_start, k)
        if v_k is None and v_start is not model.v0:
            # a warm start from a low-voltage step can fail where the base case's start
            # solves (case118, line 65 out, a 95 % drop of a queue's load from 0.59 pu:
            # a solution at 0.917 pu, as runpp finds it from a flat start): start again
            v_k = one(model.v0, k)
        if v_k is not None:
            converged[k] = True
            out[k] = v_k
            v_start = out[k]
        else:
            # a failed step must not poison the warm start of the next one
            v_start = model.v0
    return out, converged


def solve_runpp(
    model: Model, p_mw: np.ndarray, q_mvar: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Reference: ``pandapower.runpp`` once per step on a copy of the net."""
    net = copy.deepcopy(model.net)
    others = ~net.load.index.isin(model.load_indices)
    p_mw, q_mvar = per_facility(model, p_mw), per_facility(model, q_mvar)
    base_p = net.load.p_mw.to_numpy().copy()
    base_q = net.load.q_mvar.to_numpy().copy()
    n = len(p_mw)
    out = np.full((n, len(model.v0)), np.nan + 0j)
    converged = np.zeros(n, dtype=bool)
    ok = model.bus_row >= 0
    aux = np.setdiff1d(np.arange(len(model.v0)), model.bus_row[ok])
    for k in range(n):
        p = np.where(others, base_p * scale[k], 0.0)
        q = np.where(others, base_q * scale[k], 0.0)
        net.load["p_mw"] = p
        net.load["q_mvar"] = q
        for j, index in enumerate(model.load_indices):
            net.load.at[index, "p_mw"] = p_mw[k, j]
            net.load.at[index, "q_mvar"] = q_mvar[k, j]
        try:
            pp.runpp(net, lightsim2grid=False, numba=False, tolerance_mva=TOLERANCE_MVA,
                     max_iteration=MAX_ITERATION, enforce_q_lims=model.enforce_q_lims)
        except pp.LoadflowNotConverged:
            continue
        converged[k] = True
        vm = net.res_bus.vm_pu.to_numpy()[ok]
        va = np.deg2rad(net.res_bus.va_degree.to_numpy()[ok])
        out[k, model.bus_row[ok]] = vm * np.exp(1j * va)
        v_int = net._ppc["internal"]["V"]
        if aux.size and len(v_int) == out.shape[1]:
            # pandapower's auxiliary buses (a trafo3w's star point) are in no res_ table;
            # the flows through them need their voltage: runpp's own, same ppci order
            out[k, aux] = v_int[aux]
    return out, converged


def flows(model: Model, v: np.ndarray, p_mw: np.ndarray, q_mvar: np.ndarray,
          scale: np.ndarray) -> dict[str, np.ndarray]:
    """Quantities ``runpp`` reports, computed from voltages as pandapower does.

    Returns arrays (steps x element): ``vm_pu`` [pu] per net.bus row, ``line_loading_percent``,
    ``trafo_loading_percent`` and ``trafo3w_loading_percent`` [%] (net.trafo3w rows), and
    ``ext_grid_p_mw`` [MW] (steps,).
    """
    net = model.net
    n = v.shape[0]
    vm = np.full((n, len(net.bus)), np.nan)
    ok = model.bus_row >= 0
    vm[:, ok] = np.abs(v[:, model.bus_row[ok]])
    line_loading = _branch_loading(model, v, model.line_row, net.line, "line")
    trafo_loading = _branch_loading(model, v, model.trafo_row, net.trafo, "trafo")
    trafo3w_loading = _trafo3w_loading(model, v)
    if len(model.ref) == 1:
        ext = _slack_p_calc(model, v, _ref_injection(model, p_mw, q_mvar, scale)) \
            + model.ext_grid_offset_mw
    else:
        ext = np.full(n, np.nan)
    return {
        "vm_pu": vm,
        "line_loading_percent": line_loading,
        "trafo_loading_percent": trafo_loading,
        "trafo3w_loading_percent": trafo3w_loading,
        "ext_grid_p_mw": ext,
    }
