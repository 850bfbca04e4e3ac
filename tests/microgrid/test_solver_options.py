"""highs_options: only solve controls pass; nothing can reach the file system."""

from __future__ import annotations

import textwrap

import highspy
import pandas as pd
import pytest

import microgrid as mg
from aiload.errors import InputError
from microgrid.solve import HIGHS_OPTIONS, check_highs_options

FILE_OPTIONS = ["log_file", "solution_file", "write_solution_to_file", "write_model_file",
                "write_model_to_file", "write_basis_file", "read_basis_file",
                "read_solution_file", "write_presolved_model_file"]


def _load():
    idx = pd.date_range("2025-01-01", periods=24, freq="1h", tz="UTC")
    return pd.Series(1000.0, index=idx)


def _costs():
    return mg.Costs(60, 30, 20, 50, import_usd_per_kwh=0.05, fuel_usd_per_kwh=0.10)


def test_every_allowed_option_is_a_highs_option_of_that_type():
    # checked against HiGHS itself: a misspelt or retyped name in the allow-list fails here
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    kinds = {bool: highspy.HighsOptionType.kBool, int: highspy.HighsOptionType.kInt,
             float: highspy.HighsOptionType.kDouble, str: highspy.HighsOptionType.kString}
    for name, (kind, _) in HIGHS_OPTIONS.items():
        status, option_type = highs.getOptionType(name)
        assert status == highspy.HighsStatus.kOk, name
        assert option_type == kinds[kind], name
        assert not {"file", "write", "read"} & set(name.split("_")), name
    # the file options are real HiGHS options, so refusing them matters
    for name in FILE_OPTIONS:
        assert highs.getOptionType(name)[0] == highspy.HighsStatus.kOk, name


@pytest.mark.parametrize("name", FILE_OPTIONS)
def test_file_options_are_refused_before_anything_is_written(tmp_path, name):
    target = tmp_path / "written-by-highs.txt"
    with pytest.raises(InputError, match=rf"highs_options: option '{name}' is not allowed "
                                         r"\(it reads or writes files.*Allowed: .*time_limit"):
        mg.size(_load(), pv_availability=None, costs=_costs(), import_limit_kw=2000,
                highs_options={name: str(target)})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("options, message", [
    ({"timelimit": 5}, r"option 'timelimit' is not allowed.*Did you mean 'time_limit'\?"),
    ({"output_flag": True}, r"option 'output_flag' is not allowed \(it is not among"),
    ({"solver": "cplex"}, r"solver = 'cplex': expected one of choose, simplex, ipm"),
    ({"run_crossover": "maybe"}, r"run_crossover = 'maybe': expected one of off, choose, on"),
    ({"time_limit": float("inf")}, r"time_limit = inf: expected a finite number >= 0 "
                                   r"\(omit it for no limit\)"),
    ({"mip_rel_gap": float("nan")}, r"mip_rel_gap = nan: expected a finite number"),
    ({"threads": 1.5}, r"threads = 1.5: expected a whole number"),
    ({"threads": True}, r"threads = True: expected a number"),
    ({"mip_detect_symmetry": 1}, r"mip_detect_symmetry = 1: expected true or false"),
])
def test_bad_options_name_the_option(options, message):
    with pytest.raises(InputError, match=message):
        check_highs_options(options)


def test_allowed_options_reach_highs(monkeypatch):
    seen = {}
    real = highspy.Highs

    class Spy(real):  # the LP goes to HiGHS directly (microgrid.lp), options one by one
        def setOptionValue(self, name, value):
            seen[name] = value
            return super().setOptionValue(name, value)

    # a solve before: HiGHS' thread pool exists with its default size when threads=1 comes
    mg.size(_load(), pv_availability=None, costs=_costs(), import_limit_kw=2000)
    monkeypatch.setattr(highspy, "Highs", Spy)
    sizing = mg.size(_load(), pv_availability=None, costs=_costs(), import_limit_kw=2000,
                     highs_options={"time_limit": 30, "threads": 1, "solver": "ipm",
                                    "primal_feasibility_tolerance": 1e-8})
    assert seen["time_limit"] == 30.0 and seen["threads"] == 1 and seen["solver"] == "ipm"
    assert seen["primal_feasibility_tolerance"] == 1e-8
    # 1000 kW all year from the grid at 0.05 USD/kWh (the docstring's worked example)
    assert round(sizing.total_annual_cost_usd) == 438000


def test_hipo_outside_this_build_is_an_error(monkeypatch):
    probe = highspy.Highs()
    probe.setOptionValue("output_flag", False)
    if probe.setOptionValue("solver", "hipo") == highspy.HighsStatus.kOk:
        pytest.skip("this highspy has HiPO")
    with pytest.raises(InputError, match=r"solver = 'hipo' is not in this HiGHS build"):
        mg.size(_load(), pv_availability=None, costs=_costs(), import_limit_kw=2000,
                highs_options={"solver": "hipo"})


def test_scenario_highs_options_are_checked_when_the_file_is_read(tmp_path):
    from scenarios.loader import ScenarioError, load_scenario

    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent("""\
        name = "x"
        [facility]
        preset = "inference-1mw"
        start = 2025-01-01T00:00:00Z
        end = 2025-01-02T00:00:00Z
        [microgrid]
        import_limit_kw = 2000
        [microgrid.options]
        highs_options = { log_file = "/tmp/owned.txt" }
    """))
    with pytest.raises(ScenarioError, match=r"s\.toml'.*\n  line 9: microgrid\.options\."
                                            r"highs_options: option 'log_file' is not allowed"):
        load_scenario(path)
