"""``[stabilise]`` and ``[facility.iteration]`` in a scenario (issue 28): the bundled
campus-100mw-stabilisation end to end over a short horizon equals ``aiload.facility`` and
``microgrid.stabilise`` called directly; summary.json, the series file and the report
section; bad limits and tables refused with what was received and how to fix it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from scenarios.loader import ScenarioError, load_scenario

BUNDLED = "campus-100mw-stabilisation"
START = pd.Timestamp("2025-01-06T00:00:00Z")
#: ten minutes at 0.1 s (6,000 steps): the 0.1 Hz band bottom is resolved (Welch: 0.01 Hz)
SHORT = {"facility.end": (START + pd.Timedelta(minutes=10)).isoformat()}
#: the campus preset's fleet: 9,800 nodes of 8 x H100-SXM (aiload/facility/presets.py)
CAMPUS_GPUS = 9800 * 8


def _scenario(**over):
    return load_scenario(BUNDLED, overrides={**SHORT, **over})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from scenarios.runner import run_scenario

    out = tmp_path_factory.mktemp("stab")
    return run_scenario(BUNDLED, out, progress=False, overrides=SHORT)


def test_end_to_end_equals_the_library_called_directly(run):
    import aiload
    import microgrid
    from aiload.facility import IterationDynamics
    from microgrid.stabilise import GpuSmoothing, Prices, PsuStorage, SiteBattery

    load = aiload.facility("campus-100mw", start=START, end=START + pd.Timedelta(minutes=10),
                           freq="100ms", seed=3, progress=False,
                           dynamics=IterationDynamics(step_time_s=2.0))
    kw = load.power["facility_kw"]
    np.testing.assert_array_equal(run.facility.power["facility_kw"].to_numpy(), kw.to_numpy())
    limits = microgrid.PoiLimits(ramp_up_mw_per_s=5.0, ramp_down_mw_per_s=5.0,
                                 ramp_window_s=1.0, band_hz=(0.1, 20.0), band_amplitude_mw=1.0)
    direct = microgrid.stabilise(
        kw, limits, options=[GpuSmoothing(gpus=CAMPUS_GPUS), PsuStorage(gpus=CAMPUS_GPUS),
                             SiteBattery()], prices=Prices.default())
    s = run.summary["stabilise"]
    assert s["gpus"] == CAMPUS_GPUS
    assert s["cheapest"] == direct.cheapest
    table = direct.options.set_index("option")
    assert [r["option"] for r in s["options"]] == list(table.index)
    for rec in s["options"]:
        row = table.loc[rec["option"]]
        assert rec["limits_met"] == bool(row["limits_met"])
        for col in ("kw", "kwh", "cost_usd_per_year", "energy_burned_kwh_per_year",
                    "losses_kwh_per_year", "band_amplitude_mw"):
            assert rec[col] == row[col], (rec["option"], col)
    # the series file holds the shown option's series, the same as the direct call's
    series = pd.read_parquet(run.out_dir / "microgrid_stabilise_series.parquet")
    shown = direct.series(s["shown"])
    np.testing.assert_array_equal(series["poi_kw"].to_numpy(), shown["poi_kw"].to_numpy())
    np.testing.assert_array_equal(series["soc_kwh"].to_numpy(), shown["soc_kwh"].to_numpy())


def test_summary_json_and_energy_balance_of_the_series(run):
    s = json.loads((run.out_dir / "summary.json").read_text())["stabilise"]
    assert s["limits"]["band_hz"] == [0.1, 20.0] and s["step_s"] == pytest.approx(0.1)
    assert s["span_s"] == pytest.approx(600.0)
    assert {r["option"] for r in s["options"]} >= {"none", "gpu smoothing", "psu storage",
                                                    "site battery"}
    # every kWh of the shown option, summed here from the file: POI = load + burned -
    # withheld + losses + change of the stored energy
    f = pd.read_parquet(run.out_dir / "microgrid_stabilise_series.parquet")
    h = 0.1 / 3600
    poi = f["poi_kw"].sum() * h
    rhs = (f["load_kw"].sum() + f["burned_kw"].sum() - f["withheld_kw"].sum()
           + f["losses_kw"].sum()) * h
    first = f["soc_kwh"].iloc[0] + (f["storage_kw"].iloc[0] + f["losses_kw"].iloc[0]) * h
    rhs += f["soc_kwh"].iloc[-1] - first
    assert poi == pytest.approx(rhs, rel=1e-9)


def test_report_section(run):
    html = (run.out_dir / "report.html").read_text(encoding="utf-8")
    part = html.split("Stabilisation at the point of interconnection")[1]
    for caption in ("The minute around the largest ramp", "Spectrum of the POI power",
                    "Ramp-rate duration curve", "Stored energy of each storage option"):
        assert caption in part
    assert "meets every limit" in part and "cost [USD/yr]" in part


def test_bad_limits_are_refused_with_the_fix():
    with pytest.raises(ScenarioError, match=r"stabilise.ramp_up_mw_per_s' = -1.0: Input "
                                            r"should be greater than or equal to 0"):
        _scenario(**{"stabilise.ramp_up_mw_per_s": -1.0})
    with pytest.raises(ScenarioError, match=r"band_hz = \[20.0, 0.1\]: expected \[low_hz, "
                                            r"high_hz\] with 0 <= low < high"):
        _scenario(**{"stabilise.band_hz": [20.0, 0.1]})
    with pytest.raises(ScenarioError, match=r"no limit given: set at least one of"):
        _scenario(**{"stabilise.ramp_up_mw_per_s": None, "stabilise.ramp_down_mw_per_s": None,
                     "stabilise.band_amplitude_mw": None})


def test_bad_option_tables_are_refused_with_the_fix():
    with pytest.raises(ScenarioError, match=r"\[stabilise.site_battery\]: SiteBattery."
                                            r"usable_fraction: got 80; expected a fraction"):
        _scenario(**{"stabilise.site_battery": {"usable_fraction": 80}})
    with pytest.raises(ScenarioError, match=r"unexpected keyword argument 'capacity'; the keys "
                                            r"are tau_s, charge_efficiency"):
        _scenario(**{"stabilise.site_battery": {"capacity": 3}})
    with pytest.raises(ScenarioError, match=r"\[stabilise.site_battery\] is given but options"
                                            r" = \['psu_storage'\] leaves site_battery out"):
        _scenario(**{"stabilise.options": ["psu_storage"],
                     "stabilise.site_battery": {"usable_fraction": 0.5}})
    with pytest.raises(ScenarioError, match=r"IterationDynamics.compute_share: got 1.2"):
        _scenario(**{"facility.iteration.compute_share": 1.2})


def test_ramp_window_not_a_whole_number_of_steps_is_named_before_running():
    from scenarios.stabilise_study import prepare_stabilise

    with pytest.raises(InputError, match=r"stabilise.ramp_window_s = 0.15 s is not a whole "
                                         r"number of facility.freq = '100ms'"):
        prepare_stabilise(_scenario(**{"stabilise.ramp_window_s": 0.15}))


def test_run_digest_names_the_cheapest(run):
    from scenarios.runner import digest

    s = run.summary["stabilise"]
    best = next(r for r in s["options"] if r["option"] == s["cheapest"])
    line = next(x for x in digest(run.summary) if x.startswith("stabilisation:"))
    assert line.startswith(f"stabilisation: cheapest that meets every limit {s['cheapest']}, ")
    assert f"{best['cost_usd_per_year']:,.0f} USD/yr" in line
