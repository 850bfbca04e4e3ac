"""``[grid.dynamics]`` beyond the one event run, end to end in a real ANDES (issue 29): the
facility driven by its own series, the loss-of-load capacity and the fault scan, each checked
against ``grid.dynamics`` called directly and against the rule or the limit by hand; a case
file given relative to the scenario file, run from another folder; the closing summary line.

One scenario run (IEEE 14 from a case file, ~15 s on two cores) serves every test here.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from scenarios import studies
from scenarios.formatting import number
from scenarios.loader import ScenarioError, load_scenario
from scenarios.runner import digest, run_scenario

CASE = "cases/ieee14_full.xlsx"  # relative to the scenario file


@pytest.fixture(scope="module", autouse=True)
def andes_prepared():
    """ANDES's one-time code generation, as tests/grid/dynamics does at its session start (a
    no-op once cached), so that these tests also run on their own in a fresh environment."""
    from grid.dynamics import prepare

    prepare()
FACILITY_BUS = 9
LOL = dict(f_max_hz=60.3, max_mw=100.0, tolerance_mw=5.0, t_end_s=4.0)
SCAN = dict(buses=[9, 12], cycles=5.0, x_pu=0.1)

SCENARIO = f"""
name = "dynamics-study-test"
[facility]
preset = "inference-1mw"
start = 2025-01-01T12:00:00Z
end = 2025-01-01T12:05:00Z
freq = "1s"
seed = 0
overrides = {{ bursts = true }}   # its node count changes each minute: a step at 60 s

[grid]
network = "case33bw"
bus = 17
freq = "1min"
studies = ["timeseries"]

[grid.dynamics]
case = "{CASE}"
bus = {FACILITY_BUS}
series = true
t_end_s = 62.0
dt_s = 0.1

[grid.dynamics.loss_of_load]
f_max_hz = {LOL['f_max_hz']}
max_mw = {LOL['max_mw']}
tolerance_mw = {LOL['tolerance_mw']}
t_end_s = {LOL['t_end_s']}

[grid.dynamics.fault_scan]
buses = {SCAN['buses']}
cycles = {SCAN['cycles']}
x_pu = {SCAN['x_pu']}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A scenario folder holding the scenario file and, under cases/, ANDES's IEEE 14."""
    import andes

    root = tmp_path_factory.mktemp("dynsite")
    (root / "cases").mkdir()
    shutil.copy(andes.get_case("ieee14/ieee14_full.xlsx"), root / CASE)
    (root / "site.toml").write_text(SCENARIO, encoding="utf-8")
    (root / "elsewhere").mkdir()
    return root


@pytest.fixture(scope="module")
def run(folder):
    """The scenario run from another working folder (the case path must not depend on it)."""
    old = os.getcwd()
    os.chdir(folder / "elsewhere")
    try:
        return run_scenario(folder / "site.toml", folder / "out", progress=False)
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def dyn(run) -> dict:
    return json.loads((run.out_dir / "summary.json").read_text())["grid"]["dynamics"]


# -- paths ---------------------------------------------------------------------------------------

def test_case_path_is_relative_to_the_scenario_file(folder, run, dyn):
    expected = str((folder / CASE).resolve())
    assert run.scenario.grid.dynamics.case == expected
    assert dyn["source"] == expected


def test_missing_case_file_names_the_folder_it_was_looked_for_in(folder, monkeypatch):
    monkeypatch.chdir(folder / "elsewhere")
    (folder / "bad.toml").write_text(SCENARIO.replace(CASE, "cases/ieee15.xlsx"),
                                     encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        load_scenario(folder / "bad.toml")
    text = str(err.value)
    assert f"field 'grid.dynamics.case' = 'cases/ieee15.xlsx': no such file " \
           f"({(folder / 'cases' / 'ieee15.xlsx').resolve()})" in text
    assert "relative paths are relative to the scenario file" in text
    line = SCENARIO.splitlines().index('case = "cases/ieee15.xlsx"'.replace(
        "cases/ieee15.xlsx", CASE)) + 1
    assert f"line {line}: field 'grid.dynamics.case'" in text  # the case = ... line


def test_dyr_is_relative_to_the_scenario_file_too(folder, monkeypatch):
    monkeypatch.chdir(folder / "elsewhere")
    (folder / "cases" / "net.raw").write_text("0, 100.0\n")
    (folder / "raw.toml").write_text(
        SCENARIO.replace(f'case = "{CASE}"', 'case = "cases/net.raw"\ndyr = "cases/net.dyr"'),
        encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"field 'grid.dynamics.dyr' = 'cases/net.dyr': no "
                                            r"such file \(.*dynsite\d*/cases/net.dyr\)"):
        load_scenario(folder / "raw.toml")


def test_a_set_path_is_relative_to_the_current_folder(folder, monkeypatch):
    monkeypatch.chdir(folder)
    s = load_scenario(folder / "site.toml", overrides={"grid.dynamics.case": CASE})
    assert s.grid.dynamics.case == str((folder / CASE).resolve())
    monkeypatch.chdir(folder / "elsewhere")
    with pytest.raises(ScenarioError, match=r"--set grid.dynamics.case: .*no such file"):
        load_scenario(folder / "site.toml", overrides={"grid.dynamics.case": CASE})


# -- series = true -------------------------------------------------------------------------------

def test_series_drives_the_facility_at_the_sampled_instants(run):
    """ANDES's facility power is the aiload series (its 1 s interval means) at each step."""
    series_mw = run.facility.power["facility_kw"].to_numpy() / 1e3
    traj = pd.read_parquet(run.out_dir / "grid_dynamics_trajectories.parquet")
    t = traj.index.to_numpy()
    # the step ending at t integrates the interval that holds t - ε: interval ceil(t) - 1
    interval = np.maximum(np.ceil(t - 1e-6).astype(int) - 1, 0)
    expected = series_mw[interval]
    assert traj["facility_scheduled_mw"].to_numpy() == pytest.approx(expected, rel=1e-12)
    # the series steps at 60 s (the node count of the next minute): the run saw it
    assert series_mw[59] != series_mw[60]
    assert set(np.round(traj["facility_scheduled_mw"], 9)) == {round(series_mw[0], 9),
                                                               round(series_mw[60], 9)}
    # drawn power: constant power lagging the voltage by one step
    drawn = traj["facility_mw"].to_numpy()
    assert np.max(np.abs(drawn - expected) / expected) < 1e-3
    assert traj["facility_online_share"].eq(1.0).all()


# -- the loss-of-load capacity -------------------------------------------------------------------

@pytest.fixture(scope="module")
def direct_capacity(folder):
    from grid.dynamics import load_case, loss_of_load_capacity

    return loss_of_load_capacity(load_case(folder / CASE), FACILITY_BUS, dt_s=1 / 30, **LOL)


def test_loss_of_load_equals_the_study_called_directly(run, dyn, direct_capacity):
    lol = dyn["loss_of_load"]
    assert lol["facility_mw"] == pytest.approx(direct_capacity.facility_mw, rel=1e-12)
    assert lol["runs"] == len(direct_capacity.runs)
    runs = pd.read_parquet(run.out_dir / "grid_dynamics_loss_of_load_runs.parquet")
    assert runs["zenith_hz"].to_numpy() == pytest.approx(
        direct_capacity.runs["zenith_hz"].to_numpy(), abs=1e-9)


def test_frequency_at_the_found_size_is_within_the_limit_and_above_it_is_not(folder, dyn):
    """Two trips simulated here: the capacity keeps the zenith at or below 60.3 Hz, one
    tolerance more breaches it; and the capacity sits below the droop estimate of the settling
    frequency reaching the limit (the transient zenith overshoots it)."""
    from grid.dynamics import FacilityTrip, load_case, simulate

    case = load_case(folder / CASE)
    cap_mw = dyn["loss_of_load"]["facility_mw"]

    def zenith(p_mw: float) -> float:
        r = simulate(case, facility_bus=FACILITY_BUS, load_kw=p_mw * 1e3,
                     event=FacilityTrip(t_s=1.0), t_end_s=LOL["t_end_s"], dt_s=1 / 30)
        assert r.completed
        return r.frequency_zenith_hz()

    assert zenith(cap_mw) <= LOL["f_max_hz"]
    assert zenith(cap_mw + LOL["tolerance_mw"]) > LOL["f_max_hz"]
    # droop: 5 machines of 100 MVA with R = 0.05 -> 10,000 MW/pu; 0.3 Hz of 60 Hz -> 50 MW
    assert 0 < cap_mw < 0.3 / 60.0 * 10_000.0


# -- the fault scan ------------------------------------------------------------------------------

def test_fault_scan_equals_which_faults_trip_called_directly(run, dyn, folder):
    from grid.dynamics import RideThrough, load_case, which_faults_trip

    facility_mw = run.facility.power["facility_kw"].iloc[0] / 1e3
    direct = which_faults_trip(load_case(folder / CASE), FACILITY_BUS, facility_mw * 1e3,
                               ride_through=RideThrough(), fault_buses=SCAN["buses"],
                               cycles=SCAN["cycles"], x_pu=SCAN["x_pu"], power_factor=0.99)
    scan = {row["fault_bus"]: row for row in dyn["fault_scan"]}
    assert list(scan) == SCAN["buses"]
    for bus, row in direct.iterrows():
        assert scan[bus]["voltage_min_pu"] == pytest.approx(row["voltage_min_pu"], abs=1e-12)
        assert scan[bus]["tripped"] == bool(row["tripped"])
        assert scan[bus]["mw_lost"] == pytest.approx(row["mw_lost"], abs=1e-12)
    table = pd.read_parquet(run.out_dir / "grid_dynamics_fault_scan_runs.parquet")
    assert list(table.index) == SCAN["buses"]
    assert dyn["fault_scan_settings"]["tripping"] == sum(r["tripped"] for r in scan.values())


def test_fault_scan_trips_where_the_voltage_crossed_the_rule(run, dyn, folder):
    """Hand count on a trace simulated here: the facility leaves for a fault at a bus iff its
    bus voltage stayed below one of the ITIC levels for longer than that level's time; then
    all of it is lost. The two buses are chosen so that one trips and one does not."""
    from grid.dynamics import ITIC_VOLTAGE_TIME, BusFault, load_case, simulate
    from grid.dynamics.ridethrough import longest_below_s

    case = load_case(folder / CASE)
    facility_mw = run.facility.power["facility_kw"].iloc[0] / 1e3
    scan = {row["fault_bus"]: row for row in dyn["fault_scan"]}
    crossed = {}
    for bus in SCAN["buses"]:
        r = simulate(case, facility_bus=FACILITY_BUS, load_kw=facility_mw * 1e3,
                     event=BusFault(bus=bus, t_s=0.5, cycles=SCAN["cycles"], x_pu=SCAN["x_pu"]),
                     t_end_s=2.0, dt_s=1 / 120)  # no rule: the voltage the facility would see
        v = r.voltage_pu[FACILITY_BUS]
        crossed[bus] = any(longest_below_s(v.index.to_numpy(), v.to_numpy(), vp) > d
                           for vp, d in ITIC_VOLTAGE_TIME)
    assert crossed == {9: True, 12: False}
    for bus, yes in crossed.items():
        assert scan[bus]["tripped"] is yes
        assert scan[bus]["mw_lost"] == pytest.approx(facility_mw if yes else 0.0, rel=1e-9)


def test_report_has_the_fault_scan(run):
    html = (run.out_dir / "report.html").read_text(encoding="utf-8")
    start = html.index("<h3>dynamic study (ANDES)</h3>")
    section = html[start:html.index("<h2>", start)]
    assert "Fault scan:</b> faults at 1 of 2 buses make it leave the grid (bus 9)." in section
    assert "cleared after 5 cycles (83.33 ms)" in section
    assert "<th>faulted bus</th>" in section and "<th>power lost [MW]</th>" in section
    assert "driven by its own series from 2025-01-01T12:00:00+00:00" in section
    assert "Loss-of-load capacity at bus 9" in section


# -- the closing summary -------------------------------------------------------------------------

def test_closing_summary_has_the_dynamics_line(dyn, run):
    lines = [line for line in digest(run.summary) if line.startswith("dynamics")]
    assert len(lines) == 1
    line = lines[0]
    assert f"nadir {dyn['frequency_nadir_hz']:.3f} Hz" in line
    assert "0 MW lost; verdict passes" in line  # no event, the rule never acts
    assert f"loss-of-load capacity {number(dyn['loss_of_load']['facility_mw'])} MW" in line
    assert line.endswith("faults at 1 of 2 buses trip it (9)")


# -- errors --------------------------------------------------------------------------------------

def _load(folder, **over):
    return load_scenario(folder / "site.toml", overrides=over)


def test_fault_scan_without_a_rule_is_skipped_with_the_reason(folder):
    """No rule: no fault can take the facility off, so nothing is simulated; the report and
    the closing summary say why (the summary record is what summary.json holds)."""
    from types import SimpleNamespace

    from grid.dynamics import load_case
    from scenarios.dynamics_study import _fault_scan, digest_line
    from scenarios.report_dynamics import fault_scan_html

    dyn = _load(folder, **{"grid.dynamics.ride_through.enabled": False}).grid.dynamics
    table, settings = _fault_scan(load_case(folder / CASE), dyn, 0.99, 1.0)
    assert table is None
    assert settings == {"skipped": "no ride-through rule (ride_through.enabled = false): no "
                                   "fault takes the facility off the grid"}
    html = fault_scan_html(SimpleNamespace(fault_scan=[], fault_scan_settings=settings))
    assert html == ("<p><b>Fault scan:</b> not run: no ride-through rule "
                    "(ride_through.enabled = false): no fault takes the facility off the "
                    "grid.</p>")
    line = digest_line({"case": "ieee14", "bus": 9, "facility_mw": 1.0,
                        "frequency_nadir_hz": 59.99, "frequency_zenith_hz": 60.0,
                        "mw_lost": 0.0, "verdict_passed": True, "verdict_reasons": [],
                        "fault_scan": [], "fault_scan_settings": settings})
    assert line.endswith("; fault scan skipped (no ride-through rule)")


def test_fault_scan_with_no_bus_is_refused(folder):
    with pytest.raises(ScenarioError, match=r'buses = \[\]: list the ANDES bus ids to fault, '
                                            r'e.g. \[15, 17\], or write "all"'):
        _load(folder, **{"grid.dynamics.fault_scan.buses": []})


def test_fault_scan_bus_not_in_the_case_is_named_before_anything_runs(folder):
    s = _load(folder, **{"grid.dynamics.fault_scan.buses": [9, 40]})
    with pytest.raises(InputError) as err:
        studies.prepare_grid(s.grid)
    assert str(err.value).startswith(
        "grid.dynamics.fault_scan.buses has 40: case '" + str((folder / CASE).resolve())
        + "' has no such bus; its 14 buses are numbered 1 to 14")
