"""The choice of HiGHS method by horizon length, and the gap of a run without a vertex."""

from __future__ import annotations

import pytest

import microgrid as mg
import microgrid.solve as mg_solve
from microgrid.model import build_model
from microgrid.sizing import prepare_inputs
from microgrid.solve import solve_model

def _model(hawk_3d_kw, costs):
    data, _ = prepare_inputs(
        hawk_3d_kw, pv_availability=mg.pv_availability(index=hawk_3d_kw.index), costs=costs,
        battery=mg.Battery(), generator=mg.Generator(), import_limit_kw=3_000.0,
    )
    return build_model(data)


def test_long_lps_get_primal_simplex_with_the_same_optimum(hawk_3d_kw, hawk_costs, monkeypatch):
    # 3 days of measured Hawk power at 15 min = 288 steps: below the threshold dual simplex
    # runs; with the threshold lowered under 288 the same LP goes to primal simplex, which
    # must reach the same vertex objective (an LP's bound is its objective, gap 0).
    assert len(hawk_3d_kw) == 288 < mg_solve.PRIMAL_SIMPLEX_MIN_STEPS
    dual = solve_model(_model(hawk_3d_kw, hawk_costs))
    assert dual.status == "optimal" and dual.mip_gap == 0.0
    chosen = {}
    real_highs = mg_solve.Highs

    class Spy(real_highs):
        def solve(self, model):
            chosen.update(self.highs_options)
            return super().solve(model)

    monkeypatch.setattr(mg_solve, "Highs", Spy)
    monkeypatch.setattr(mg_solve, "PRIMAL_SIMPLEX_MIN_STEPS", 100)
    primal = solve_model(_model(hawk_3d_kw, hawk_costs))
    assert (chosen["solver"], chosen["simplex_strategy"]) == ("simplex", 4)
    assert primal.status == "optimal" and primal.mip_gap == 0.0
    assert primal.objective_usd == pytest.approx(dual.objective_usd, rel=1e-9)


def test_interior_point_without_crossover_reports_its_duality_gap(hawk_3d_kw, hawk_costs):
    # no vertex: the optimum within the interior point tolerance, and an honest gap
    simplex = solve_model(_model(hawk_3d_kw, hawk_costs))
    ipm = solve_model(_model(hawk_3d_kw, hawk_costs),
                      highs_options={"solver": "ipm", "run_crossover": "off"})
    assert ipm.status == "optimal"
    assert ipm.objective_usd == pytest.approx(simplex.objective_usd, rel=1e-6)
    assert 0.0 < ipm.mip_gap < 1e-6
    assert ipm.bound_usd <= ipm.objective_usd
    # the simplex optimum lies between the interior point's bound and its objective, up to
    # the feasibility tolerance
    assert ipm.bound_usd <= simplex.objective_usd * (1 + 1e-7)
