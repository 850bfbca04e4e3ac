"""Short-circuit strength against pandapower's calc_sc used directly (IEC 60909)."""

from __future__ import annotations

import copy
import warnings

import pandapower.shortcircuit as sc
import pytest

import grid
from aiload.errors import InputError

DATA = grid.ShortCircuitData(ext_grid_sc_max_mva=10_000.0, ext_grid_sc_min_mva=8_000.0,
                             ext_grid_rx=0.1, gen_xdss_pu=0.2, gen_rx=0.07, gen_cos_phi=0.85,
                             line_end_temp_degree=80.0)


def calc_sc_direct(net, bus: int, case: str) -> float:
    """Sk'' [MVA] by pandapower itself, default options (full inverse of Ybus)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.calc_sc(net, bus=bus, case=case)
    return float(net.res_bus_sc.at[bus, "skss_mw"])


def test_cigre_mv_sk_and_scr_equal_calc_sc():
    net = grid.networks.load("cigre_mv")  # its ext_grid has short-circuit data
    s = grid.short_circuit_strength(net, bus=5, facility_mw=5.0,
                                    data=grid.ShortCircuitData(line_end_temp_degree=80.0),
                                    outages="lines")
    ref = copy.deepcopy(net)
    ref.line["endtemp_degree"] = 80.0
    assert s.skss_max_mva == pytest.approx(calc_sc_direct(ref, 5, "max"), rel=1e-9)
    assert s.skss_min_mva == pytest.approx(calc_sc_direct(ref, 5, "min"), rel=1e-9)
    assert s.scr_min == pytest.approx(s.skss_min_mva / 5.0)
    assert s.assumed == ("line.endtemp_degree = 80 for 15 element(s) (line_end_temp_degree)",)
    # an outage on the radial feeder cuts the bus off; one elsewhere leaves Sk'' as it is
    table = s.outages.set_index("element")
    assert bool(table.loc["line 0", "facility_islanded"])
    assert table.loc["line 0", "strength"] == "not supplied"
    other = copy.deepcopy(ref)
    other.line.loc[10, "in_service"] = False
    assert table.loc["line 10", "skss_min_mva"] == pytest.approx(calc_sc_direct(other, 5, "min"),
                                                                 rel=1e-9)
    # thresholds are inputs: the same Sk'' is weak for a facility large enough
    weak = grid.short_circuit_strength(net, bus=5, facility_mw=s.skss_min_mva / 2.5,
                                       data=grid.ShortCircuitData(line_end_temp_degree=80.0),
                                       outages=None)
    assert weak.strength == "weak" and weak.outages.empty
    assert grid.short_circuit_strength(
        net, bus=5, facility_mw=s.skss_min_mva / 2.5, scr_weak=2.4, scr_very_weak=2.0,
        data=grid.ShortCircuitData(line_end_temp_degree=80.0), outages=None).strength == "strong"


def test_case118_bus_49_intact_and_line_65_out_equal_calc_sc():
    net = grid.networks.load("case118")
    s = grid.short_circuit_strength(net, bus=49, facility_mw=88.5, data=DATA, outages=None)
    ref = copy.deepcopy(net)
    ref.ext_grid["s_sc_max_mva"], ref.ext_grid["s_sc_min_mva"] = 10_000.0, 8_000.0
    ref.ext_grid["rx_max"] = ref.ext_grid["rx_min"] = 0.1
    ref.gen["vn_kv"] = ref.bus.vn_kv.loc[ref.gen.bus].to_numpy()
    ref.gen["cos_phi"] = 0.85
    ref.gen["sn_mva"] = ref.gen[["p_mw", "max_p_mw"]].abs().max(axis=1).clip(lower=1.0) / 0.85
    ref.gen["xdss_pu"] = 0.2
    ref.gen["rdss_ohm"] = 0.07 * 0.2 * ref.gen.vn_kv**2 / ref.gen.sn_mva
    ref.line["endtemp_degree"] = 80.0
    assert s.skss_min_mva == pytest.approx(calc_sc_direct(ref, 49, "min"), rel=1e-9)
    assert s.skss_max_mva == pytest.approx(calc_sc_direct(ref, 49, "max"), rel=1e-9)
    assert len(s.assumed) == 9
    out = grid.short_circuit_strength(net, bus=49, facility_mw=88.5, data=DATA, outages="lines")
    ref.line.loc[65, "in_service"] = False
    first = out.outages.iloc[0]
    assert first.element == "line 65"  # the weakest case: one of the two lines into bus 49
    assert first.skss_min_mva == pytest.approx(calc_sc_direct(ref, 49, "min"), rel=1e-9)


def test_missing_short_circuit_data_is_named():
    with pytest.raises(InputError) as err:
        grid.short_circuit_strength(grid.networks.load("case118"), bus=49, facility_mw=88.5)
    text = str(err.value)
    assert text.startswith("short_circuit_strength: IEC 60909 needs data this network lacks: "
                           "net.ext_grid.s_sc_max_mva (1 missing; or "
                           "ShortCircuitData(ext_grid_sc_max_mva=...))")
    assert "net.gen.xdss_pu (53 missing" in text
    with pytest.raises(InputError, match="ShortCircuitData.gen_xdss_pu: expected a positive"):
        grid.ShortCircuitData(gen_xdss_pu=-0.2)
    with pytest.raises(InputError, match="need 0 < scr_very_weak <= scr_weak"):
        grid.short_circuit_strength(grid.networks.load("cigre_mv"), bus=5, facility_mw=1.0,
                                    scr_weak=1.0, scr_very_weak=2.0)
