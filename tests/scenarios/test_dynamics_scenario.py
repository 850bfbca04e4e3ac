"""``[grid.dynamics]`` in a scenario: clear errors, the bundled IEEE 39 scenario end to end in a
real ANDES, its figures equal to ``grid.dynamics.simulate`` called directly, the report section.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from aiload.errors import InputError
from scenarios import studies
from scenarios.loader import ScenarioError, load_scenario
from scenarios.runner import run_scenario

BUNDLED = "campus-ieee39-dynamics"


@pytest.fixture(scope="module", autouse=True)
def andes_prepared():
    """ANDES's one-time code generation, as tests/grid/dynamics does at its session start (a
    no-op once cached), so that these tests also run on their own in a fresh environment."""
    from grid.dynamics import prepare

    prepare()


def _scenario(**over):
    return load_scenario(BUNDLED, overrides=over)


def test_bundled_case_names_are_grid_dynamics_own():
    from grid.dynamics.cases import BUNDLED as CASES
    from scenarios.schema_dynamics import BUNDLED_CASES

    assert set(BUNDLED_CASES) == set(CASES)


def test_bad_case_name_is_named_with_the_nearest_and_the_list():
    with pytest.raises(ScenarioError) as err:
        _scenario(**{"grid.dynamics.case": "ieee38"})
    text = str(err.value)
    assert "grid.dynamics.case" in text
    assert "'ieee38' is neither a bundled ANDES case nor a file" in text
    assert "Did you mean 'ieee39'?" in text and "kundur" in text


def test_negative_clearing_time_is_refused_with_the_unit():
    with pytest.raises(ScenarioError) as err:
        _scenario(**{"grid.dynamics.events.0.cycles": -2.0})
    text = str(err.value)
    assert "grid.dynamics.events" in text
    assert "cycles = -2.0: the clearing time must be > 0 cycles" in text


def test_a_key_of_another_kind_of_event_is_refused():
    with pytest.raises(ScenarioError, match=r"kind = 'trip' does not take bus \(a key of a "
                                            r"'fault' event\)"):
        _scenario(**{"grid.dynamics.events.1.bus": 3})


def test_no_event_is_refused():
    with pytest.raises(ScenarioError, match=r"no event: add a \[\[grid.dynamics.events\]\]"):
        _scenario(**{"grid.dynamics.events": []})


def test_event_after_the_end_is_refused():
    with pytest.raises(ScenarioError, match=r"t_s = 25.0 s is not before the end of the run"):
        _scenario(**{"grid.dynamics.events.1.t_s": 25.0})


def test_bad_facility_bus_is_named_before_anything_runs():
    s = _scenario(**{"grid.dynamics.bus": 40})
    with pytest.raises(InputError) as err:
        studies.prepare_grid(s.grid)
    assert str(err.value).startswith(
        "grid.dynamics.bus = 40: case 'ieee39' has no such bus; its 39 buses are numbered 1 "
        "to 39")


def test_bad_fault_bus_is_named_with_its_event():
    s = _scenario(**{"grid.dynamics.events.0.bus": 0})
    with pytest.raises(InputError, match=r"grid.dynamics.events\[0\].bus = 0: case 'ieee39' "
                                         r"has no such bus"):
        studies.prepare_grid(s.grid)


def test_section_builds_the_grid_dynamics_objects():
    from grid.dynamics import BusFault, FacilityTrip, RideThrough

    dyn = _scenario().grid.dynamics
    assert [e.to_event() for e in dyn.events] == [BusFault(bus=17, t_s=1.0, cycles=5.0),
                                                  FacilityTrip(t_s=10.0, share=1.0)]
    assert dyn.ride_through.to_rule() == RideThrough(share=0.6)
    off = load_scenario(BUNDLED, overrides={"grid.dynamics.ride_through.enabled": False})
    assert off.grid.dynamics.ride_through.to_rule() is None


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_scenario(BUNDLED, tmp_path_factory.mktemp("dyn") / "out", progress=False)


def test_bundled_scenario_equals_simulate_called_directly(run):
    from grid.dynamics import BusFault, FacilityTrip, RideThrough, simulate

    dyn = run.summary["grid"]["dynamics"]
    # the facility at its hourly peak, computed here from the facility series
    peak_mw = float(run.facility.power["facility_kw"].resample("1h").mean().max()) / 1e3
    assert dyn["facility_mw"] == pytest.approx(peak_mw, rel=1e-12)
    direct = simulate("ieee39", facility_bus=16, load_kw=peak_mw * 1e3,
                      event=[BusFault(bus=17, t_s=1.0, cycles=5), FacilityTrip(t_s=10.0)],
                      ride_through=RideThrough(share=0.6), t_end_s=20.0, dt_s=1 / 60,
                      power_factor=0.99)
    assert dyn["mw_lost"] == pytest.approx(direct.mw_lost(), rel=1e-12)
    # hand count: 60 % transfers on the fault (the dip is far below 0.7 pu for longer than
    # 20 ms), the trip at 10 s takes the other 40 %: the whole campus is lost, none returns
    assert dyn["mw_lost"] == pytest.approx(peak_mw, rel=1e-9)
    assert dyn["mw_restored"] == 0.0
    assert dyn["frequency_zenith_hz"] == pytest.approx(direct.frequency_zenith_hz(), abs=1e-9)
    assert dyn["voltage_min_pu"] == pytest.approx(direct.voltage_dip_pu()["facility@16"],
                                                  abs=1e-9)
    assert [t["what"] for t in dyn["transfers"]] == ["transfer"]
    assert 1.0 < dyn["transfers"][0]["t_s"] < 1.0 + 5 / 60
    assert dyn["verdict_passed"] is False
    assert any("below 0.7 pu" in r for r in dyn["verdict_reasons"])


def test_bundled_fault_scan_follows_the_rule(run):
    """The scan of buses 15, 17, 26, 29: a bolted fault holds the voltage near its minimum for
    its whole 83 ms (> the ITIC's 20 ms below 0.7 pu), so the campus leaves exactly where the
    minimum is below 0.7 pu, and then loses its voltage-sensitive 60 %; the two buses near it
    trip it, the two far ones do not."""
    dyn = run.summary["grid"]["dynamics"]
    scan = {row["fault_bus"]: row for row in dyn["fault_scan"]}
    assert list(scan) == [15, 17, 26, 29]
    for row in scan.values():
        assert row["completed"]
        assert row["tripped"] is (row["voltage_min_pu"] < 0.7)
        assert row["mw_lost"] == pytest.approx(0.6 * dyn["facility_mw"] if row["tripped"]
                                               else 0.0, rel=1e-9)
    assert [b for b, row in scan.items() if row["tripped"]] == [15, 17]
    # the scan's fault at 17 is the main run's event (dt 1/120 s there, 1/60 s here)
    assert scan[17]["voltage_min_pu"] == pytest.approx(dyn["voltage_min_pu"], abs=0.01)


def test_trajectories_are_written_and_hold_the_run(run):
    assert "grid_dynamics_trajectories.parquet" in run.files
    traj = pd.read_parquet(run.out_dir / "grid_dynamics_trajectories.parquet")
    dyn = json.loads((run.out_dir / "summary.json").read_text())["grid"]["dynamics"]
    assert traj.index.name == "t_s" and traj.index[-1] == pytest.approx(20.0)
    assert traj["frequency_coi_hz"].max() == pytest.approx(dyn["frequency_zenith_hz"])
    assert traj["voltage_facility_bus_pu"].min() == pytest.approx(dyn["voltage_min_pu"])
    share = traj["facility_online_share"]
    between = share[(share.index > 2) & (share.index < 9.9)]
    assert share.iloc[0] == 1.0 and share.iloc[-1] == 0.0
    assert between.min() == pytest.approx(0.4) and between.max() == pytest.approx(0.4)
    assert {"voltage_pu[bus 17]", "frequency_hz[machine GENROU_1]"} <= set(traj.columns)


def test_report_has_the_dynamics_section_in_words(run):
    html = (run.out_dir / "report.html").read_text(encoding="utf-8")
    start = html.index("<h3>dynamic study (ANDES)</h3>")
    section = html[start:html.index("<h2>", start)]
    assert "Verdict: fails, 1 breach." in section
    assert "facility@16: voltage below 0.7 pu for 0.083 s (curve allows 0.02 s)" in section
    assert "three-phase fault at bus 17, cleared after 5 cycles (83.33 ms)" in section
    assert "(America/New_York)" in section  # the simulated hour on the site's clock
    assert "<th>time [s]</th>" in section and "<th>unit</th>" in section
    assert section.count("<img ") == 1
    text = re.sub(r"<[^>]+>", " ", re.sub(r'src="[^"]+"', "", section))
    assert not re.search(r"[{}]|\[\[|'\w+':", text)  # no Python dicts or lists
    # the dynamics result is not shown a second time in the generic grid loop
    assert "<h3>dynamics</h3>" not in html
