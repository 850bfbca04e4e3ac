"""Solve a sizing model with HiGHS through Pyomo's APPSI interface.

``appsi_highs`` ignores ``config.time_limit`` when called through ``SolverFactory``; the
limit and gap are therefore passed as HiGHS options. Solutions are loaded only when the
solver has one, so a run that stops without a feasible point gives a status, not a crash.
"""

from __future__ import annotations

import difflib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo
from pyomo.common.gc_manager import PauseGC
from pyomo.contrib.appsi.base import TerminationCondition
from pyomo.contrib.appsi.solvers import Highs

from aiload.errors import AiloadError, InputError
from microgrid._highs import silence_banner

__all__ = ["SolveResult", "SizingInfeasibleError", "solve_model", "PRIMAL_SIMPLEX_MIN_STEPS",
           "HIGHS_OPTIONS", "check_highs_options", "solve_highs"]

_ON_OFF = ("off", "choose", "on")
#: the HiGHS options ``highs_options`` may set: only ones that change how the solve runs.
#: Each maps to its type and, for strings, the allowed values. Options that read or write
#: files (``log_file``, ``solution_file``, ``write_*``, ``read_*``) or change what HiGHS
#: prints are not among them: solver options come from scenario files, which may not be
#: trusted, and must not reach the file system.
HIGHS_OPTIONS: dict[str, tuple[type, tuple[str, ...] | None]] = {
    "solver": (str, ("choose", "simplex", "ipm", "ipx", "hipo", "pdlp", "hipdlp")),
    "run_crossover": (str, _ON_OFF),
    "presolve": (str, _ON_OFF),
    "parallel": (str, _ON_OFF),
    "time_limit": (float, None),
    "threads": (int, None),
    "random_seed": (int, None),
    "mip_rel_gap": (float, None),
    "mip_abs_gap": (float, None),
    "primal_feasibility_tolerance": (float, None),
    "dual_feasibility_tolerance": (float, None),
    "optimality_tolerance": (float, None),
    "ipm_optimality_tolerance": (float, None),
    "pdlp_optimality_tolerance": (float, None),
    "kkt_tolerance": (float, None),
    "primal_residual_tolerance": (float, None),
    "dual_residual_tolerance": (float, None),
    "mip_feasibility_tolerance": (float, None),
    "simplex_strategy": (int, None),
    "simplex_scale_strategy": (int, None),
    "simplex_crash_strategy": (int, None),
    "simplex_dual_edge_weight_strategy": (int, None),
    "simplex_primal_edge_weight_strategy": (int, None),
    "simplex_iteration_limit": (int, None),
    "simplex_max_concurrency": (int, None),
    "ipm_iteration_limit": (int, None),
    "pdlp_iteration_limit": (int, None),
    "mip_max_nodes": (int, None),
    "mip_max_leaves": (int, None),
    "mip_max_stall_nodes": (int, None),
    "mip_heuristic_effort": (float, None),
    "mip_detect_symmetry": (bool, None),
}


def check_highs_options(options: Mapping[str, Any] | None,
                        where: str = "highs_options") -> dict[str, Any]:
    """Check ``highs_options`` against :data:`HIGHS_OPTIONS`; returns a plain copy.

    Parameters
    ----------
    options : Mapping or None
        Option name -> value.
    where : str
        How the caller names the mapping in messages (a scenario field, a keyword).

    Raises
    ------
    aiload.errors.InputError
        An option that is not allowed (named, with the allowed ones), a value of the wrong
        type, a non-finite or negative number, or a string value that is not allowed.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InputError(f"{where}: expected a table of HiGHS options, got {options!r}.")
    out: dict[str, Any] = {}
    allowed = ", ".join(sorted(HIGHS_OPTIONS))
    for name, value in options.items():
        if name not in HIGHS_OPTIONS:
            near = difflib.get_close_matches(str(name), list(HIGHS_OPTIONS), n=1)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            words = str(name).split("_")
            why = ("it reads or writes files, which solver options may not do"
                   if {"file", "write", "read"} & set(words) else
                   "it is not among the options that change how the solve runs")
            raise InputError(
                f"{where}: option {name!r} is not allowed ({why}).{hint} Allowed: {allowed}."
            )
        kind, choices = HIGHS_OPTIONS[name]
        out[name] = _checked(name, value, kind, choices, where)
    return out


def _checked(name: str, value: Any, kind: type, choices: tuple[str, ...] | None,
             where: str) -> Any:
    field = f"{where}: {name} = {value!r}"
    if kind is str:
        if not isinstance(value, str) or value not in (choices or ()):
            raise InputError(f"{field}: expected one of {', '.join(choices or ())}.")
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise InputError(f"{field}: expected true or false.")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{field}: expected a number.")
    if kind is int and float(value) != int(value):
        raise InputError(f"{field}: expected a whole number.")
    if not math.isfinite(value) or value < 0:
        hint = " (omit it for no limit)" if name == "time_limit" else ""
        raise InputError(f"{field}: expected a finite number >= 0{hint}.")
    return int(value) if kind is int else float(value)


def _check_solver_built(options: Mapping[str, Any]) -> None:
    """An allowed ``solver`` that this HiGHS build lacks (``hipo`` without highspy[extras])."""
    solver = options.get("solver")
    if solver != "hipo":  # the others are in every highspy wheel
        return
    from importlib.metadata import version  # noqa: PLC0415

    import highspy  # noqa: PLC0415

    silence_banner()
    probe = highspy.Highs()
    probe.setOptionValue("output_flag", False)
    if probe.setOptionValue("solver", solver) != highspy.HighsStatus.kOk:
        raise InputError(
            f"highs_options: solver = {solver!r} is not in this HiGHS build (highspy "
            f"{version('highspy')}); install highspy[extras] for 'hipo', or use 'simplex', "
            "'ipm' or 'pdlp'."
        )

#: LPs with more time steps than this go to HiGHS' primal simplex: dual simplex solves the
#: hourly year (8,760 steps) fastest but found no feasible point of the 15-minute year
#: (35,040 steps) within 330 s, where primal simplex solved it in 331 s and the interior point
#: method (IPX) was at a gap of 0.6 after 120 s (docs/microgrid.md, "Long horizons").
PRIMAL_SIMPLEX_MIN_STEPS = 20_000


class SizingInfeasibleError(AiloadError):
    """No size of PV, battery and generator can serve the load under the given limits.

    The message names the binding inputs and the steps where the load cannot be met.
    """


@dataclass(frozen=True)
class SolveResult:
    """What HiGHS reported.

    Attributes
    ----------
    status : str
        ``"optimal"``, ``"time_limit"`` (a feasible, possibly sub-optimal point),
        ``"infeasible"``, ``"unbounded"`` or another APPSI termination name.
    objective_usd : float
        Objective of the loaded point [USD/year]; NaN without one.
    bound_usd : float
        Best proven lower bound [USD/year].
    mip_gap : float
        Relative gap between objective and bound [-]: the MIP gap, 0 for an LP solved by
        simplex, HiGHS' relative primal-dual objective error for an LP solved by an
        interior point method without crossover (``highs_options``).
    solve_time_s : float
        Wall-clock time of the solve call [s].
    has_solution : bool
        True when variable values were loaded into the model.
    """

    status: str
    objective_usd: float
    bound_usd: float
    mip_gap: float
    solve_time_s: float
    has_solution: bool


_NAMES = {
    TerminationCondition.optimal: "optimal",
    TerminationCondition.maxTimeLimit: "time_limit",
    TerminationCondition.infeasible: "infeasible",
    TerminationCondition.unbounded: "unbounded",
    TerminationCondition.infeasibleOrUnbounded: "infeasible_or_unbounded",
}


def solve_model(
    m: pyo.ConcreteModel,
    *,
    time_limit_s: float | None = None,
    mip_gap: float = 1e-4,
    highs_options: Mapping[str, Any] | None = None,
) -> SolveResult:
    """Solve ``m`` with HiGHS; load the solution when there is one.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        A model from :func:`microgrid.model.build_model`.
    time_limit_s : float, optional
        Wall-clock limit of HiGHS [s].
    mip_gap : float
        Relative MIP gap at which HiGHS stops [-] (ignored by LPs).
    highs_options : Mapping, optional
        Further HiGHS options, applied last (e.g. ``{"solver": "ipm"}``); only those of
        :data:`HIGHS_OPTIONS` (checked by :func:`check_highs_options`).

    Notes
    -----
    LPs of up to :data:`PRIMAL_SIMPLEX_MIN_STEPS` steps are solved by HiGHS' dual simplex
    (a vertex, hence a clean dispatch), which needs the model's per-unit scaling
    (:func:`microgrid.model.kw_per_pu`): on the campus-100mw hourly year in kW it had not
    finished after 5 min, in pu it takes ~12-20 s, where the interior point method takes
    50-70 s either way (docs/microgrid.md). Longer LPs are solved by primal simplex, the
    only method of the standard highspy wheel that solved the 15-minute year (~330 s on the
    2-core machine); with ``pip install "highspy[extras]"`` HiGHS' HiPO interior point
    method, ``highs_options={"solver": "hipo", "run_crossover": "off"}``, took ~200 s.
    """
    silence_banner()
    opt = Highs()
    opt.config.load_solution = False
    opt.config.stream_solver = False
    options = {"mip_rel_gap": float(mip_gap), "output_flag": False}
    if time_limit_s is not None:
        options["time_limit"] = float(time_limit_s)
    is_lp = not any(v.is_integer() for v in m.component_data_objects(pyo.Var, descend_into=True))
    if is_lp and len(getattr(m, "T", ())) > PRIMAL_SIMPLEX_MIN_STEPS:
        options.update(solver="simplex", simplex_strategy=4)
    elif is_lp:
        options["solver"] = "simplex"
    extra = _checked_options(highs_options)
    options.update(extra)
    opt.highs_options = options
    start = time.perf_counter()
    # APPSI creates a standard representation per row before HiGHS starts; without the
    # cyclic collector running over them, the hand-over of an hourly year is ~1 s shorter
    with PauseGC():
        res = opt.solve(m)
    elapsed = time.perf_counter() - start
    status = _NAMES.get(res.termination_condition, str(res.termination_condition.name))
    objective = res.best_feasible_objective
    has_solution = objective is not None and status in ("optimal", "time_limit")
    if has_solution:
        res.solution_loader.load_vars()
    # the model's objective is in USD per kw_per_pu (microgrid.model's scaling)
    usd = float(getattr(m, "kw_per_pu", 1.0))
    obj = float(objective) * usd if objective is not None else math.nan
    bound = res.best_objective_bound
    bound = float(bound) * usd if bound is not None else math.nan
    if has_solution and math.isfinite(bound):
        gap = abs(obj - bound) / max(abs(obj), 1e-9)
    else:
        gap = math.nan
    highs = getattr(opt, "_solver_model", None)
    # PDLP never crosses over; the interior point methods only when told not to
    no_vertex = options.get("solver") == "pdlp" or (
        options.get("solver") in ("ipm", "ipx", "hipo") and options.get("run_crossover") == "off")
    if has_solution and is_lp and no_vertex and highs is not None:
        # APPSI reports an LP's bound as its objective; without crossover the duality gap
        # left by the interior point method is the honest one
        gap = float(highs.getInfo().primal_dual_objective_error)
        bound = obj - gap * abs(obj)
    return SolveResult(status, obj, bound, gap, elapsed, has_solution)


_HIGHS_STATUS = {
    "kOptimal": "optimal",
    "kTimeLimit": "time_limit",
    "kInfeasible": "infeasible",
    "kUnbounded": "unbounded",
    "kUnboundedOrInfeasible": "infeasible_or_unbounded",
}


def solve_highs(h, n_steps: int, *, time_limit_s: float | None = None,
                highs_options: Mapping[str, Any] | None = None, kw_per_pu: float = 1.0,
                ) -> tuple[SolveResult, Any]:
    """Solve an LP held by a ``highspy.Highs`` (:func:`microgrid.lp.to_highs`) with the
    method rules of :func:`solve_model`; returns the result and the column values [pu]
    (None without a solution). The objective is unscaled with ``kw_per_pu``."""
    options: dict[str, Any] = {"solver": "simplex"}
    if n_steps > PRIMAL_SIMPLEX_MIN_STEPS:
        options["simplex_strategy"] = 4
    if time_limit_s is not None:
        options["time_limit"] = float(time_limit_s)
    extra = _checked_options(highs_options)
    options.update(extra)
    for name, value in options.items():
        h.setOptionValue(name, value)
    start = time.perf_counter()
    h.run()
    elapsed = time.perf_counter() - start
    model_status = h.getModelStatus()
    status = _HIGHS_STATUS.get(model_status.name, model_status.name)
    info = h.getInfo()
    has_solution = status in ("optimal", "time_limit") and info.primal_solution_status == 2
    x = np.asarray(h.getSolution().col_value) if has_solution else None
    obj = float(info.objective_function_value) * kw_per_pu if has_solution else math.nan
    gap = 0.0 if status == "optimal" else math.nan
    no_vertex = options.get("solver") == "pdlp" or (
        options.get("solver") in ("ipm", "ipx", "hipo") and options.get("run_crossover") == "off")
    if has_solution and no_vertex:
        gap = float(info.primal_dual_objective_error)
    bound = obj - gap * abs(obj) if math.isfinite(gap) else math.nan
    return SolveResult(status, obj, bound, gap, elapsed, has_solution), x


def _checked_options(highs_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's HiGHS options, checked against the allow-list and the solver build; asking
    for ``threads`` starts HiGHS' thread pool afresh (HiGHS keeps one pool per process, and a
    solve asking for another thread count than the pool has stops at once, status 'unknown')."""
    extra = check_highs_options(highs_options)
    _check_solver_built(extra)
    if "threads" in extra:
        import highspy  # noqa: PLC0415

        reset = getattr(highspy.Highs, "resetGlobalScheduler", None)
        if reset is not None:
            reset(True)
    return extra
