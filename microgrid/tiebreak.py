"""A physical choice among optimal dispatches: lexicographic passes at fixed sizes.

An LP's optimum is often a face, not a point: with a flat import price and a lossless
battery, charging from the grid at 03:00 or at 15:00 costs the same, and a simplex vertex
picks one arbitrarily (a flat-price week charged the battery from the grid at random hours,
cycled 230 MWh for nothing and took import above the load's peak; issue 31). After the
least-cost solve, the sizes are held and a second pass chooses among the optimal dispatches
(``docs/formulation.md``, "Tie-breaking"): the **least battery throughput**, minimising
sum(c_t + d_t) subject to the cost staying at its optimum (within :data:`REL_TOL` relative).
The battery then moves only the energy the cost needs (PV surplus it stores, peaks it shaves,
price spreads it earns), so import exceeds the load only where the cost needs it (charging for
a price spread or ahead of a demand-charge peak).

The pass starts from the optimal basis (the optimal point is feasible for the new row), so it
costs a fraction of the first solve. A pass HiGHS cannot finish leaves the optimal dispatch in
place. A further pass minimising the year's peak import at that throughput was measured and
left out: 27,000-46,000 simplex iterations (20-35 s) on an hourly year, more than the sizing.
"""

from __future__ import annotations

import numpy as np

from microgrid.lp import Lp

__all__ = ["tie_break", "REL_TOL"]

#: the relative slack a tie-break pass may spend on the previous pass's objective [-]
REL_TOL = 1e-9
#: primal simplex iterations of a pass before it turns to dual simplex
PRIMAL_ITERATIONS = 200


def _objective_row(h, cols: np.ndarray, coefs: np.ndarray, bound: float) -> None:
    """Add ``sum(coefs * x[cols]) <= bound``."""
    import highspy  # noqa: PLC0415

    keep = coefs != 0
    h.addRow(-highspy.kHighsInf, bound, int(keep.sum()), cols[keep].astype(np.int32),
             coefs[keep].astype(float))


def _bound(value: float, scale: float) -> float:
    return value + REL_TOL * max(abs(value), scale)


def _solve(h) -> np.ndarray | None:
    """Primal simplex from the last basis (it stays feasible) for up to ``PRIMAL_ITERATIONS``
    iterations, then dual simplex from where it stopped: measured on two hourly years, either
    one alone took 10-100x longer on one of them (issue 31)."""
    import highspy  # noqa: PLC0415

    h.setOptionValue("solver", "simplex")
    h.setOptionValue("simplex_strategy", 4)
    h.setOptionValue("simplex_iteration_limit", PRIMAL_ITERATIONS)
    h.run()
    if h.getModelStatus() == highspy.HighsModelStatus.kIterationLimit:
        h.setOptionValue("simplex_strategy", 1)
        h.setOptionValue("simplex_iteration_limit", 2**31 - 1)
        h.run()
    h.setOptionValue("simplex_iteration_limit", 2**31 - 1)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(h.getSolution().col_value)


def tie_break(h, lp: Lp, x: np.ndarray, *, size_cols: np.ndarray | None = None
              ) -> tuple[np.ndarray, list[str]]:
    """Re-solve the optimal LP ``h`` (holding ``lp``, solved to ``x``) for the least battery
    throughput at the same cost; returns the chosen solution and the passes that ran.

    ``size_cols``: the size columns of a sizing LP (``lp`` not ``fixed``); they are held at
    their values first. ``h`` is changed (a row, the costs): use it for nothing else.
    """
    n_col = lp.n_col
    cost = lp.arrays()["cost"]
    if size_cols is not None and len(size_cols):
        vals = x[size_cols]
        h.changeColsBounds(len(size_cols), size_cols.astype(np.int32), vals, vals)
    if "unserved" in lp.cols:
        # the decomposition's subproblem prices unserved energy at a value of lost load ~1e4x
        # the energy price; left free, that column dominates the held-cost row and the pass
        # took 20,000 iterations (25 s) instead of 26 (0.1 s) on an hourly year (issue 31)
        un = np.atleast_1d(lp.cols["unserved"]).astype(np.int32)
        h.changeColsBounds(len(un), un, x[un], x[un])
    all_cols = np.arange(n_col, dtype=np.int32)
    passes: list[str] = []
    best = x
    # the cost held at its optimum, the battery's throughput minimised
    flows = np.concatenate([np.atleast_1d(lp.cols["charge"]),
                            np.atleast_1d(lp.cols["discharge"])])
    scale = float(np.abs(cost).sum()) * 1e-12 + 1e-9
    _objective_row(h, all_cols, cost, _bound(float(cost @ x), scale))
    if float(np.max(lp.arrays()["upper"][flows], initial=0.0)) > 0:
        h.changeColsCost(n_col, all_cols, np.zeros(n_col))
        h.changeColsCost(len(flows), flows.astype(np.int32), np.ones(len(flows)))
        y = _solve(h)
        if y is None:
            return best, passes
        best = y
        passes.append("battery_throughput")
    return best, passes
