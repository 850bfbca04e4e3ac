"""The scenario's grid and microgrid options reach the studies (issue 16): Q limits, the
contingency margin flag, the short-circuit study with its thresholds and IEC 60909 data, the
dump load and simultaneous charge/discharge; and the report shows SCR and margins.

Each expected value is computed here a second way: pandapower's runpp and calc_sc called
directly, the flag from the written table's own margins, the dump load by a forward recursion.
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import numpy as np
import pandapower as pp
import pandas as pd
import pytest
from pydantic import ValidationError

from aiload.errors import InputError
from scenarios import figures, studies
from scenarios.schema import GridSection, MicrogridSection, SiteSection

SC_DATA = {"ext_grid_sc_max_mva": 10_000.0, "ext_grid_sc_min_mva": 8_000.0, "ext_grid_rx": 0.1,
           "gen_xdss_pu": 0.2, "gen_rx": 0.07, "gen_cos_phi": 0.85, "line_end_temp_degree": 80.0}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from scenarios.runner import run_scenario

    out = tmp_path_factory.mktemp("grid_options") / "out"
    run_scenario("campus-100mw-interconnection", out, progress=False, overrides={
        "facility.end": "2025-01-02T00:00:00Z", "facility.freq": "1h",
        "grid.studies": ["hosting_capacity", "contingency", "short_circuit"],
        "grid.enforce_q_lims": False, "grid.contingency_hours": 1,
        "grid.min_margin_fraction": 4.0, "grid.short_circuit.outages": "none",
        "grid.short_circuit.facility_mw": 50.0, "grid.short_circuit.scr_weak": 40.0,
        "grid.short_circuit.scr_very_weak": 30.0})
    return out


def _bus15_vm(p_mw: float, enforce_q_lims: bool) -> float:
    import grid

    net = grid.networks.load("case118")
    q = p_mw * np.tan(np.arccos(0.99))
    pp.create_load(net, bus=15, p_mw=p_mw, q_mvar=q)
    pp.runpp(net, enforce_q_lims=enforce_q_lims, numba=False)
    return float(net.res_bus.vm_pu.min()), float(net.res_bus.vm_pu.at[15])


def test_q_limits_off_reach_the_hosting_capacity(run):
    hc = json.loads((run / "summary.json").read_text())["grid"]["hosting_capacity"]
    assert hc["enforce_q_lims"] is False
    p = hc["p_mw"]
    # pandapower without Q limits: within the band at p, bus 15 below 0.94 pu 0.02 MW above
    low, _ = _bus15_vm(p, enforce_q_lims=False)
    assert low >= 0.94 - 1e-9
    _, at_bus = _bus15_vm(p + 0.02, enforce_q_lims=False)
    assert at_bus < 0.94
    # with Q limits the same power is already too much: the option changed the study
    low_q, _ = _bus15_vm(p, enforce_q_lims=True)
    assert low_q < 0.94
    assert hc["collapse_margin_mw"] == pytest.approx(hc["nose_p_mw"] - p, abs=1e-9)


def test_min_margin_fraction_reaches_the_contingency_flag(run):
    n1 = pd.read_parquet(run / "grid_contingency.parquet")
    peak = float(pd.read_parquet(run / "grid_load_mw.parquet").iloc[:, 0].max())
    assert n1.attrs.get("enforce_q_lims") is False
    margin = n1["collapse_margin_mw"]
    assert margin.notna().all()
    expected = margin < 4.0 * peak  # the scenario's 4.0, not the default 0.05
    assert n1["low_margin"].astype(bool).tolist() == expected.tolist()
    assert 0 < expected.sum() < len(n1)


def test_short_circuit_study_takes_the_data_and_thresholds(run):
    import pandapower.shortcircuit as sc

    import grid

    s = json.loads((run / "summary.json").read_text())["grid"]["short_circuit"]
    # IEC 60909 by pandapower directly, case118 completed by hand with the scenario's data
    net = copy.deepcopy(grid.networks.load("case118"))
    net.ext_grid["s_sc_max_mva"], net.ext_grid["s_sc_min_mva"] = 10_000.0, 8_000.0
    net.ext_grid["rx_max"] = net.ext_grid["rx_min"] = 0.1
    g = net.gen
    g["vn_kv"] = net.bus.vn_kv.loc[g.bus].to_numpy()
    g["cos_phi"] = 0.85
    g["sn_mva"] = np.maximum(g.max_p_mw.abs(), g.p_mw.abs()).clip(lower=1.0) / 0.85
    g["xdss_pu"] = 0.2
    g["rdss_ohm"] = 0.07 * 0.2 * g.vn_kv**2 / g.sn_mva
    net.line["endtemp_degree"] = 80.0
    for case, key in (("max", "skss_max_mva"), ("min", "skss_min_mva")):
        sc.calc_sc(net, bus=15, case=case, fault="3ph")
        assert s[key] == pytest.approx(float(net.res_bus_sc.at[15, "skss_mw"]), rel=1e-9)
    assert s["facility_mw"] == 50.0
    assert s["scr_min"] == pytest.approx(s["skss_min_mva"] / 50.0, rel=1e-12)
    # SCR ~25.9 is below the scenario's very-weak threshold of 30
    assert s["scr_min"] < 30.0 and s["strength"] == "very weak"
    assert s["scr_weak"] == 40.0 and len(s["assumed"]) == 9
    assert pd.read_parquet(run / "grid_short_circuit_outages.parquet").empty  # outages = none
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "short-circuit ratio at bus 15, SCR = Sk&#x27;&#x27; / 50.0 MW" in page
    assert "margin to collapse [MW]" in page


def test_short_circuit_without_data_fails_before_the_facility_runs():
    section = GridSection(network="case118", bus=15, studies=["short_circuit"])
    with pytest.raises(InputError) as err:
        studies.prepare_grid(section)
    text = str(err.value)
    assert "grid.studies has 'short_circuit'" in text
    assert "ShortCircuitData(ext_grid_sc_max_mva=...)" in text
    assert "[grid.short_circuit] table" in text


def test_schema_refuses_crossed_thresholds_and_options_given_twice():
    with pytest.raises(ValidationError, match="scr_very_weak = 4.0 is above scr_weak = 3.0"):
        GridSection(network="case118", bus=15, short_circuit={"scr_very_weak": 4.0})
    with pytest.raises(ValidationError, match="options has max_dump_load_kw, which"):
        MicrogridSection(max_dump_load_kw=1.0, options={"max_dump_load_kw": 2.0})
    assert GridSection(network="case118", bus=15).enforce_q_lims is None
    assert "short_circuit" not in GridSection(network="case118", bus=15).studies


# --- microgrid ---------------------------------------------------------------------------

@pytest.fixture
def drop_load() -> pd.Series:
    """30 MW for 12 h, then 20 MW, while import may fall by only 2 MW per hour."""
    idx = pd.date_range("2025-03-03", periods=24, freq="1h", tz="UTC")
    return pd.Series(np.where(np.arange(24) < 12, 30_000.0, 20_000.0), index=idx,
                     name="facility_kw")


def _section(battery_price: float, **fields) -> MicrogridSection:
    costs = {"pv_usd_per_kwp_year": 70.0, "battery_usd_per_kwh_year": battery_price,
             "battery_usd_per_kw_year": 15.0, "generator_usd_per_kw_year": 60.0,
             "import_usd_per_kwh": 0.06, "fuel_usd_per_kwh": 0.12}
    return MicrogridSection(import_limit_kw=40_000.0, pv=None, costs=costs,
                            generator={"max_power_kw": 0.0},
                            options={"ramp_limit_kw_per_h": 2_000.0}, **fields)


def test_dump_load_option_reaches_the_sizing(drop_load):
    load = drop_load.to_numpy()
    imp = load.copy()
    for t in range(1, len(imp)):  # least import the ramp limit allows
        imp[t] = max(load[t], imp[t - 1] - 2_000.0)
    section = _section(25.0, max_dump_load_kw=8_000.0)
    section = section.model_copy(update={"battery": {"max_energy_kwh": 0.0}})
    sizing, _ = studies.run_microgrid(studies.prepare_microgrid(section, SiteSection()), drop_load)
    np.testing.assert_allclose(sizing.dispatch.dump_load_kw, imp - load, atol=1e-6)
    assert (imp - load).max() == 8_000.0


def test_simultaneous_charge_discharge_option_reaches_the_sizing(drop_load):
    import microgrid as mg

    plan = studies.prepare_microgrid(_section(10_000.0), SiteSection())
    with pytest.raises(mg.SizingInfeasibleError, match="allow_simultaneous_charge_discharge"):
        studies.run_microgrid(plan, drop_load)
    allowed = _section(10_000.0, allow_simultaneous_charge_discharge=True)
    sizing, _ = studies.run_microgrid(studies.prepare_microgrid(allowed, SiteSection()), drop_load)
    # the surplus forced by the ramp limit: 8 + 6 + 4 + 2 MWh, burned by cycling
    assert sizing.burned_by_cycling_kwh == pytest.approx(20_000.0, rel=1e-9)


# --- report tables ------------------------------------------------------------------------

def _strength() -> SimpleNamespace:
    outages = pd.DataFrame({
        "element": ["line 18", "line 20", "line 5"], "facility_islanded": [False] * 3,
        "skss_max_mva": [533.0, 964.0, 1423.0], "skss_min_mva": [468.0, 857.0, 1264.0],
        "scr_max": [5.33, 9.64, 14.23], "scr_min": [4.68, 8.57, 12.64],
        "strength": ["strong"] * 3})
    return SimpleNamespace(bus=15, facility_mw=100.0, skss_max_mva=1457.0, skss_min_mva=1295.0,
                           scr_max=14.57, scr_min=12.95, scr_weak=3.0, scr_very_weak=2.0,
                           strength="strong", outages=outages, assumed=("a", "b"))


def test_scr_table_has_the_intact_case_then_the_weakest_outages():
    caption, table = figures.short_circuit_table(_strength(), rows=2)
    assert list(table["case"]) == ["intact network", "line 18", "line 20"]
    assert list(table["SCR min"]) == [12.95, 4.68, 8.57]
    assert "2 weakest of 3 N-1 outages" in caption and "weak below 3" in caption


def test_contingency_ranking_shows_margin_and_scr_no_solution_first():
    t = pd.Timestamp("2025-07-09 18:00", tz="UTC")
    n1 = pd.DataFrame({
        "element": ["none", "line 5", "line 18", "line 20"], "min_vm_pu": [0.95, 0.94, np.nan, 0.90],
        "max_vm_pu": [1.05] * 4, "collapse_margin_mw": [300.0, np.nan, -5.0, 80.0],
        "low_margin": [False, False, True, False], "worst_time": [t] * 4})
    caption, table = figures.contingency_table(n1, short_circuit=_strength())
    # no solution (line 18) first, then the lowest voltage; the intact case on top
    assert list(table["outage"]) == ["intact network", "line 18", "line 20", "line 5"]
    assert list(table["SCR min"]) == [12.95, 4.68, 8.57, 12.64]
    assert table["margin to collapse [MW]"].tolist()[:3] == [300.0, -5.0, 80.0]
    assert "no solution first" in caption and "SCR min" in caption
