"""`aiload run campus-100mw-flexible` at a short horizon, checked against the library calls."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from scenarios.loader import ScenarioError, load_scenario
from scenarios.runner import run_scenario

NAME = "campus-100mw-flexible"
# two days of the seasonal-peak week instead of the year; one day of closed loop
SHORT = {"facility.start": "2025-07-14T00:00:00Z", "facility.end": "2025-07-16T00:00:00Z",
         "grid.flexible.cosim_start": "2025-07-14T12:00:00Z",
         "grid.flexible.cosim_end": "2025-07-15T12:00:00Z"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("flex") / "out"
    return out, run_scenario(NAME, out, progress=False, overrides=SHORT)


def test_flexible_study_equals_the_grid_call(run):
    import grid
    from grid.flexible_run import cosine_background

    out, result = run
    sc = result.scenario
    load_mw = result.grid["load_mw"]
    net = grid.networks.load("case118")
    limits = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)
    direct = grid.flexible_interconnection(net, load_mw, bus=12, limits=limits,
                                           background=cosine_background(load_mw.index))
    study = result.grid["flexible_interconnection"]
    assert study.firm_mw == pytest.approx(direct.firm_mw, abs=1e-12)
    written = pd.read_parquet(out / "grid_flexible_interconnection_table.parquet")
    np.testing.assert_allclose(written["curtailed_share_percent"],
                               direct.table["curtailed_share_percent"], atol=1e-12)
    assert sc.grid.bus == 12 and study.firm_mw < load_mw.max()  # the premise of the scenario
    summary = json.loads((out / "summary.json").read_text())
    assert summary["grid"]["flexible_interconnection"]["firm_mw"] == pytest.approx(study.firm_mw)


def test_cost_and_closed_loop_are_reported(run):
    out, result = run
    cost = result.grid["curtailment_cost"]
    assert cost.size_mw == pytest.approx(float(result.grid["load_mw"].max()))
    assert cost.factor == pytest.approx(1.0)
    co = result.grid["cosimulate"]
    assert len(co.vm_pu) == 288 and co.control_period_s == 300.0
    assert co.violation_steps < co.open_loop_violation_steps
    vm = pd.read_parquet(out / "grid_cosimulate_vm_pu.parquet")
    np.testing.assert_allclose(vm["closed_loop"], co.grid.vm_pu[12])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["grid"]["cosimulate"]["violation_steps"] == co.violation_steps
    html = (out / "report.html").read_text(encoding="utf-8")
    for text in ("flexible interconnection", "curtailment cost", "cosimulate",
                 "Voltage at the facility bus with and without the closed loop",
                 "What each lever delivered", "events of the facility under the limit"):
        assert text in html


def test_bad_flexible_settings_are_named():
    with pytest.raises(ScenarioError, match="controller"):
        load_scenario(NAME, overrides={"grid.flexible.controller": "frequency"})
    with pytest.raises(ScenarioError, match="cosim_start has no time zone"):
        load_scenario(NAME, overrides={"grid.flexible.cosim_start": "2025-07-14T00:00:00"})
    with pytest.raises(ScenarioError, match="goes below 0"):
        load_scenario(NAME, overrides={"grid.flexible.background.mean": 0.1})
