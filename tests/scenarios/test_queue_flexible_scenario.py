"""Flexibility in queue scenarios (issue 30): ``flexible_interconnection`` and ``cosimulate``
with ``[[facility]]`` tables.

The scenario's results must be what ``grid.flexible_interconnection`` and
``grid.cosimulate`` give when called directly with the same mapping (series read back from
``facility_queue.parquet``; specs from the presets; seeds from numpy's SeedSequence), bit for
bit; what has no queue form is refused before anything runs, with the reason.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError

START = pd.Timestamp("2024-07-01", tz="UTC")
SITE = """
[[facility]]
name = "{name}"
bus = {bus}
preset = "{preset}"
timezone = "{tz}"
start = 2024-07-01T00:00:00Z
end = 2024-07-02T00:00:00Z
freq = "1h"
{extra}"""
GRID = """
[grid]
network = "case118"
freq = "1h"
power_factor = 0.95
studies = ["flexible_interconnection", "cosimulate"]
[grid.limits]
vm_min_pu = 0.94
vm_max_pu = 1.06      # case118 has buses at 1.05 pu without any facility
[grid.flexible]
curtailment_cost = false
cosim_end = 2024-07-01T12:00:00Z
cosim_freq = "15min"
control_period = "15min"
{flex}
[outputs]
report = {report}
"""
LIMITS = dict(vm_min_pu=0.94, vm_max_pu=1.06)


def scenario_text(flex: str = "", tz1: str = "America/Chicago", report: str = "false") -> str:
    # the docs' queue (docs/grid.md): a campus at bus 49, then an inference fleet at bus 50
    # that bus 52's voltage curtails
    return ('name = "queue-flex"\n[queue]\nseed = 0\n'
            + SITE.format(name="campus A", bus=49, preset="campus-100mw",
                          tz="America/Chicago", extra="")
            + SITE.format(name="inference B", bus=50, preset="inference-1mw", tz=tz1,
                          extra="overrides = { nodes = 12000 }\n")
            + GRID.format(flex=flex, report=report))


def write(folder: Path, text: str) -> Path:
    path = folder / "q.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def seed_of(position: int) -> int:
    """[queue] seed 0's k-th facility seed, from numpy directly."""
    return int(np.random.SeedSequence([0, position]).generate_state(1, np.uint32)[0])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    pytest.importorskip("grid")
    from scenarios.runner import run_scenario

    folder = tmp_path_factory.mktemp("queue_flex")
    return run_scenario(write(folder, scenario_text(report="true")), folder / "out",
                        progress=False)


def test_flexible_result_equals_grid_called_directly(run):
    import grid

    frame = pd.read_parquet(run.out_dir / "facility_queue.parquet")  # kW, UTC, per bus
    mapping = {b: (frame[f"bus {b}"] / 1000.0).rename("facility_mw") for b in (49, 50)}
    direct = grid.flexible_interconnection(grid.networks.load("case118"), mapping,
                                           limits=grid.Limits(**LIMITS), power_factor=0.95)
    mine = run.grid["flexible_interconnection"]
    for name in ("requested_mw", "hosting_mw", "allocated_mw", "curtailed_mw"):
        np.testing.assert_array_equal(mine.allocation[name].to_numpy(),
                                      direct.allocation[name].to_numpy())
    assert mine.allocation["element"].tolist() == direct.allocation["element"].tolist()
    pd.testing.assert_frame_equal(mine.table, direct.table, check_exact=True)
    # the queue is curtailed (so the comparison means something): the second facility only
    assert direct.table.at[49, "curtailed_mwh"] == 0.0
    assert direct.table.at[50, "curtailed_h"] > 0
    # summary.json says the same, per facility in queue order
    rows = json.loads((run.out_dir / "summary.json").read_text())["queue"]["facilities"]
    assert [r["bus"] for r in rows] == [49, 50]
    for r in rows:
        t = direct.table.loc[r["bus"]]
        assert r["flexible"]["firm_mw"] == float(t["firm_mw"])
        assert r["flexible"]["curtailed_mwh"] == float(t["curtailed_mwh"])
        assert r["flexible"]["curtailed_h"] == float(t["curtailed_h"])
        assert r["flexible"]["events"] == int(t["events"])
        assert r["flexible"]["binding_element"] == t["binding_element"]
    # curtailment by hand: what the second facility asked for above its headroom, hourly
    b = mapping[50].to_numpy()
    head = direct.headroom_mw[50].to_numpy()
    assert rows[1]["flexible"]["curtailed_mwh"] == pytest.approx(
        np.maximum(b - head, 0.0).sum(), rel=1e-12)


def test_closed_loop_equals_grid_cosimulate_called_directly(run):
    import grid
    from aiload.facility.presets import PRESETS

    start = START.tz_convert("America/Chicago")  # the facilities' site clock
    direct = grid.cosimulate(
        grid.networks.load("case118"),
        {49: "campus-100mw", 50: PRESETS["inference-1mw"](nodes=12000)},
        start=start, end=start + pd.Timedelta("12h"), freq="15min", control_period="15min",
        controller="voltage", limits=grid.Limits(**LIMITS), power_factor=0.95,
        seed={49: seed_of(0), 50: seed_of(1)})
    mine = run.grid["cosimulate"]
    assert mine.seeds == direct.seeds == {49: seed_of(0), 50: seed_of(1)}
    pd.testing.assert_frame_equal(mine.facility_kw, direct.facility_kw, check_exact=True)
    pd.testing.assert_frame_equal(mine.grid.vm_pu, direct.grid.vm_pu, check_exact=True)
    pd.testing.assert_frame_equal(mine.open_loop.vm_pu, direct.open_loop.vm_pu,
                                  check_exact=True)
    summary = json.loads((run.out_dir / "summary.json").read_text())["queue"]
    assert summary["cosimulate"]["violation_steps"] == direct.violation_steps
    assert summary["cosimulate"]["open_loop_violation_steps"] == \
        direct.open_loop_violation_steps
    assert summary["cosimulate"]["steps"] == 48
    # each facility's closed-loop energy: its 15-min means x 0.25 h
    for r in summary["facilities"]:
        kw = direct.facility_kw[r["bus"]]
        assert r["cosimulate"]["energy_mwh"] == pytest.approx(kw.sum() * 0.25 / 1e3, rel=1e-12)


def test_digest_and_report_say_the_queue_flexibility(run):
    from scenarios.runner import digest

    lines = digest(run.summary)
    flex = run.grid["flexible_interconnection"].table
    line = next(x for x in lines if x.startswith("queue flexible interconnection"))
    assert "campus A firm" in line and "inference B firm" in line
    assert f"in {flex.at[50, 'curtailed_h']:g} h ({flex.at[50, 'binding_element']})" in line
    co = run.grid["cosimulate"]
    assert (f"queue closed loop: {co.violation_steps} of 48 steps with a violation (open loop "
            f"{co.open_loop_violation_steps})") in lines
    html = (run.out_dir / "report.html").read_text()
    assert "Flexibility of the queue" in html
    assert "Curtailed share of each facility" in html


def test_what_has_no_queue_form_is_refused_with_the_reason(tmp_path):
    from scenarios.runner import run_scenario

    flex = "sizes_mw = [40.0, 50.0]\nsize_mw = 50.0\n"
    text = scenario_text(flex=flex, tz1="America/New_York").replace(
        "curtailment_cost = false", "curtailment_cost = true")
    out = tmp_path / "out"
    with pytest.raises(InputError) as info:
        run_scenario(write(tmp_path, text), out, progress=False)
    message = str(info.value)
    assert "grid.flexible.sizes_mw = [40.0, 50.0]: a queue's flexible interconnection shares " \
           "each step's headroom" in message
    assert "(grid.flexible_interconnection takes no sizes_mw with a mapping)" in message
    assert "grid.flexible.size_mw = 50: it picks one facility's size" in message
    assert "grid.flexible.curtailment_cost = true: grid.curtailment_cost runs one facility " \
           "under one size's implied limit and has no queue form; set it to false" in message
    assert ("cosimulate: the queued facilities are on different site clocks (facility[0] "
            "(bus 49) America/Chicago, facility[1] (bus 50) America/New_York)") in message
    assert not (out / "summary.json").exists()


def test_control_periods_that_differ_are_refused(tmp_path):
    from scenarios.runner import run_scenario

    text = scenario_text().replace('control_period = "15min"\n', "")
    text = text.replace('overrides = { nodes = 12000 }\n', 'overrides = { nodes = 12000 }\n'
                        '[facility.flexibility]\ncontrol_period_s = 60.0\n')
    with pytest.raises(InputError, match=r"cosimulate: the queued facilities' control periods "
                       r"differ \(facility\[0\] 5min, facility\[1\] 60s\)"):
        run_scenario(write(tmp_path, text), tmp_path / "out", progress=False)


def test_every_facility_levers_checked_before_running(tmp_path):
    from scenarios.runner import run_scenario

    # the second facility's: the first facility's are checked by the lead view already
    text = scenario_text().replace('overrides = { nodes = 12000 }\n', 'overrides = { nodes = '
                                   '12000 }\n[facility.flexibility]\ndeferrable_streams = '
                                   '["nightly"]\n')
    with pytest.raises(InputError, match=r"facility\[1\] \(bus 50\): FlexibilitySpec\."
                       r"deferrable_streams: unknown stream\(s\) \['nightly'\]"):
        run_scenario(write(tmp_path, text), tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_sweep_varies_the_queue_flexibility(tmp_path):
    pytest.importorskip("grid")
    import grid

    from scenarios.sweep_queue import run_queue_sweep

    path = write(tmp_path, scenario_text())
    result = run_queue_sweep(path, tmp_path / "sweep", workers=0, progress=False,
                             overrides={"grid.studies": ["flexible_interconnection"]},
                             sets={"grid.flexible.tolerance_mw": [0.01, 2.0]})
    table = result.comparison
    assert len(result.cases) == 2 and len(table) == 4
    net = grid.networks.load("case118")
    firm = {}
    for case in result.cases:
        folder = tmp_path / "sweep" / "cases" / case.case_id
        frame = pd.read_parquet(folder / "facility_queue.parquet")
        mapping = {b: (frame[f"bus {b}"] / 1000.0).rename("facility_mw") for b in (49, 50)}
        tol = case.overrides["grid.flexible.tolerance_mw"]
        direct = grid.flexible_interconnection(net, mapping, limits=grid.Limits(**LIMITS),
                                               power_factor=0.95, tolerance_mw=tol)
        mine = table[table.case_id == case.case_id]
        np.testing.assert_array_equal(mine["firm_mw"].to_numpy(),
                                      direct.table["firm_mw"].to_numpy())
        np.testing.assert_array_equal(mine["curtailed_mwh"].to_numpy(),
                                      direct.table["curtailed_mwh"].to_numpy())
        firm[tol] = mine["firm_mw"].to_numpy()
    # a coarser bisection finds each headroom at most its tolerance lower
    assert np.all(firm[2.0] <= firm[0.01] + 1e-9) and np.all(firm[0.01] - firm[2.0] <= 2.0)
