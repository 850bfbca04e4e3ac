"""`aiload run campus-100mw-flexible` at a short horizon, checked against the library calls."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
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
    # the size table with its units, written at one precision per column
    for header in ("size [MW]", "curtailed [h/yr]", "curtailed [% of energy]", "events [1/yr]"):
        assert f"<th>{header}</th>" in html
    firm = result.grid["flexible_interconnection"].firm_mw
    assert f"<td>{firm:,.2f}</td><td>0.00</td>" in html  # the first row: the firm size


def test_bad_flexible_settings_are_named():
    with pytest.raises(ScenarioError, match="controller"):
        load_scenario(NAME, overrides={"grid.flexible.controller": "frequency"})
    with pytest.raises(ScenarioError, match="cosim_start has no time zone"):
        load_scenario(NAME, overrides={"grid.flexible.cosim_start": "2025-07-14T00:00:00"})
    with pytest.raises(ScenarioError, match="goes below 0"):
        load_scenario(NAME, overrides={"grid.flexible.background.mean": 0.1})
    with pytest.raises(ScenarioError, match=r"peak_day = '02-29' is not a date of every year"):
        load_scenario(NAME, overrides={"grid.flexible.background.peak_day": "02-29"})
    with pytest.raises(ScenarioError, match=r"sizes_mw: expected one or more facility peaks > 0"):
        load_scenario(NAME, overrides={"grid.flexible.sizes_mw": [-5.0]})
    with pytest.raises(ScenarioError, match=r"are watched only by controller = 'loading', got "
                                            r"controller = 'voltage'"):
        load_scenario(NAME, overrides={"grid.flexible.branches": ["line 3"]})


@pytest.mark.parametrize(("over", "message"), [
    ({"grid.flexible.control_period": "7min"},
     (r"the control period '7min' \(420 s\) is neither a whole multiple nor a whole divisor "
      r"of grid.freq = '1h'")),
    ({"grid.flexible.cosim_freq": "7min"}, r"of grid.flexible.cosim_freq = '7min' \(420 s\)"),
    ({"grid.flexible.cosim_end": "2025-07-13T00:00:00Z"},
     r"cosim_end = 2025-07-13 00:00:00\+00:00 is not after cosim_start = 2025-07-14"),
    ({"facility.flexibility.deferrable_streams": ["trainin"]},
     r"deferrable_streams: unknown stream\(s\) \['trainin'\]; the spec has"),
    ({"facility.flexibility.power_cap.min_power_fraction": 0.1},
     r"min_power_fraction = 0.1 is below the lowest cap"),
])
def test_flexible_steps_are_checked_before_anything_runs(tmp_path, monkeypatch, over, message):
    from scenarios import studies

    monkeypatch.setattr(studies, "facility", lambda *a, **k: pytest.fail("the facility ran"))
    with pytest.raises(InputError, match=message):
        run_scenario(NAME, tmp_path / "out", progress=False, overrides=over)


def test_facility_flexibility_table_reaches_the_limited_run():
    """[facility.flexibility] becomes the FlexibilitySpec of the facility runs with a limit."""
    from aiload.facility import DeferralLever, FlexibilitySpec, facility
    from scenarios.flexible_study import facility_call

    sc = load_scenario(NAME)
    spec, kwargs = facility_call(sc.facility)
    assert kwargs["flexibility"] == FlexibilitySpec()  # the file states the default order
    sc = load_scenario(NAME, overrides={"facility.flexibility.merit_order": ["deferral"],
                                        "facility.flexibility.deferral.checkpoint_s": 60.0,
                                        "facility.flexibility.release_margin": 0.05})
    spec, kwargs = facility_call(sc.facility)
    assert kwargs["flexibility"] == FlexibilitySpec(
        merit_order=("deferral",), deferral=DeferralLever(checkpoint_s=60.0), release_margin=0.05)
    run_kw = {"start": pd.Timestamp("2025-07-14", tz="UTC"), "end": "1D", "freq": "5min",
              "seed": 0, "progress": False}
    peak = float(facility(spec, **run_kw).power["facility_kw"].max())
    got = facility(spec, power_limit_kw=0.95 * peak, **run_kw, **kwargs)
    assert got.meta["flexibility"]["merit_order"] == ["deferral"]
    ev = got.flexibility
    assert (ev["deferral_kw"] > 0).any() and (ev["power_cap_kw"] == 0).all()
    assert got.meta["flexibility"]["checkpoint_overhead_node_h"] > 0


def test_control_period_from_either_table(tmp_path):
    from scenarios.flexible_study import control_period_of

    def period(**over):
        sc = load_scenario(NAME, overrides=over)
        return control_period_of(sc.grid.flexible, sc.facility)

    assert period() == "5min"  # the file's [grid.flexible] control_period
    assert period(**{"facility.flexibility.control_period_s": 300.0}) == "5min"  # the same
    with pytest.raises(InputError, match=r"control_period = '5min' \(300 s\) and "
                                         r"\[facility.flexibility\] control_period_s = 60 "
                                         r"disagree"):
        period(**{"facility.flexibility.control_period_s": 60.0})
    # checked before anything runs: the facility year is not simulated, no file written
    out = tmp_path / "out"
    with pytest.raises(InputError, match="control_period_s = 60 disagree"):
        run_scenario(NAME, out, progress=False,
                     overrides={"facility.flexibility.control_period_s": 60.0})
    assert not any(out.glob("*.parquet"))


def test_bad_facility_flexibility_is_named():
    cases = [
        ({"facility.flexibility.merit_order": ["battery", "powercap"]},
         (r"facility.flexibility.merit_order.*unknown lever 'powercap'; expected names from "
          r"\['battery', 'inference', 'power_cap', 'deferral'\]. Did you mean 'power_cap'")),
        ({"facility.flexibility.power_cap.curve": "gpu-llm-trainin"},
         r"facility.flexibility.power_cap.curve.*unknown power-cap curve 'gpu-llm-trainin'"),
        ({"facility.flexibility.battery.power_kw": 5.0},
         r"'facility.flexibility.battery.energy_kwh' is required but missing"),
        ({"facility.flexibility.battery.power_kw": 5.0,
          "facility.flexibility.battery.energy_kwh": 5.0,
          "facility.flexibility.battery.soc_min": 0.95},
         r"\[facility.flexibility.battery\]: BatteryLever: expected soc_min < soc_max"),
        ({"facility.flexibility.deferral.checkpoint": 3.0},
         r"unknown key 'facility.flexibility.deferral.checkpoint'. Did you mean 'checkpoint_s'"),
        ({"facility.flexibility.release_margin": 0.6},
         r"facility.flexibility.release_margin.*less than 0.5"),
    ]
    for over, message in cases:
        with pytest.raises(ScenarioError, match=message):
            load_scenario(NAME, overrides=over)


@pytest.mark.parametrize("section, spec_name", [
    ("FlexibilitySection", "FlexibilitySpec"), ("BatteryLeverSection", "BatteryLever"),
    ("InferenceLeverSection", "InferenceLever"), ("PowerCapLeverSection", "PowerCapLever"),
    ("DeferralLeverSection", "DeferralLever"),
])
def test_flexibility_keys_and_defaults_are_those_of_the_dataclass(section, spec_name):
    import dataclasses

    from aiload.facility import flexspec
    from scenarios import schema_flexibility as schema

    model = getattr(schema, section)
    fields = {f.name: f for f in dataclasses.fields(getattr(flexspec, spec_name))}
    assert set(model.model_fields) == set(fields)
    for name, field in model.model_fields.items():
        default = fields[name].default
        if name == "source" or fields[name].default_factory is not dataclasses.MISSING:
            assert field.default is None, name  # None: the dataclass's own
        elif name == "merit_order":
            assert tuple(field.default) == default
        elif default is dataclasses.MISSING:
            assert field.is_required(), name
        else:
            assert field.default == default, name


def test_the_size_table_is_written_at_one_precision_per_column():
    import grid
    from grid.flexible import TABLE_COLUMNS, FlexibleInterconnection
    from scenarios import figures, report_parts

    index = pd.date_range("2025-01-01", periods=2, freq="1h", tz="UTC")
    one = pd.Series([1.0, 1.0], index=index)
    rows = [(84.5812, 0.0, 596859.4, 0.0, 0.0, 0.0, 0.0, np.nan, np.nan, ""),
            (88.8141, 4.2329, 626702.3, 10.0, 21.2249, 0.003386, 3.0, 10 / 3, 6.0, "bus 12"),
            (97.2705, 12.6893, 686388.0, 147.0, 495.12, 0.072138, 32.0, 4.59375, 10.0,
             "bus 12"),
            (118.4, 33.83, 835602.0, 3434.0, 22588.4, 2.703, 223.0, 15.4, 501.0, "line 3"),
            (90.0, 5.4188, 1e5, 182.6, 7.0, 0.0070, 547.5, 1.0, 1.0, "bus 12")]
    study = FlexibleInterconnection(
        table=pd.DataFrame(rows, columns=list(TABLE_COLUMNS)), headroom_mw=one, binding=one,
        firm_mw=84.5812, load_mw=one, bus=12, limits=grid.Limits(), power_factor=0.99,
        tolerance_mw=0.01, levels=1, engine="newton")
    ((caption, shown),) = figures.grid_tables(study).items()
    assert caption.startswith("candidate sizes above the firm capacity of 84.58 MW")
    assert list(shown.columns) == [
        "size [MW]", "above firm [MW]", "energy [MWh/yr]", "curtailed [h/yr]",
        "curtailed [MWh/yr]", "curtailed [% of energy]", "events [1/yr]", "mean event [h]",
        "longest event [h]", "binding element"]
    # by hand: MW to 2 decimals; %, MWh and fractional figures to 3 significant figures;
    # counts and whole hours as integers; NaN (no events) as n/a
    assert shown.values.tolist() == [
        ["84.58", "0.00", "596,859", "0", "0", "0", "0", "n/a", "n/a", ""],
        ["88.81", "4.23", "626,702", "10", "21.2", "0.00339", "3", "3.33", "6", "bus 12"],
        ["97.27", "12.69", "686,388", "147", "495", "0.0721", "32", "4.59", "10", "bus 12"],
        ["118.40", "33.83", "835,602", "3,434", "22,588", "2.70", "223", "15.4", "501",
         "line 3"],
        ["90.00", "5.42", "100,000", "183", "7.00", "0.00700", "548", "1", "1", "bus 12"]]
    html = report_parts.table(shown)
    assert "<th>curtailed [% of energy]</th>" in html and "<td>0.00339</td>" in html
    assert "147.0" not in html and "0.003386" not in html
