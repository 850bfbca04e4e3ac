"""Cases: bundled and user files, and ANDES's initial power flow against pandapower's."""

from __future__ import annotations

import numpy as np
import pandapower as pp
import pytest

from grid.dynamics import load_case, simulate, to_pandapower
from grid.dynamics.cases import quiet_andes


@pytest.mark.parametrize("name", ["ieee14", "ieee39"])
def test_initial_power_flow_equals_pandapower(name):
    """ANDES's power flow and pandapower's runpp of the same network data agree to 1e-4 pu.

    ANDES's bundled IEEE 14 and 39 are not MATPOWER's case14/case39 (pandapower.networks):
    ANDES's have other generator set points and voltage targets (IEEE 14: 1.03 pu at bus 1,
    MATPOWER 1.06; IEEE 39: other dispatch, 5,856 MW of load vs 6,254 MW). So the pandapower
    net is built from the ANDES case's own data (to_pandapower), through pandapower's
    from_ppc, and solved with pandapower's Newton-Raphson.
    """
    case = load_case(name)
    ss = case.system()
    with quiet_andes():
        ss.PFlow.run()
    assert ss.PFlow.converged
    net = to_pandapower(case)
    # numba=False: compiling pandapower's numba kernels costs ~10 s, more than the cases
    pp.runpp(net, init="flat", tolerance_mva=1e-9, trafo_model="pi", calculate_voltage_angles=True,
             numba=False)
    vm_andes = np.asarray(ss.Bus.v.v)
    vm_pp = net.res_bus.vm_pu.to_numpy()
    assert np.max(np.abs(vm_andes - vm_pp)) < 1e-4
    va_andes = np.degrees(np.asarray(ss.Bus.a.v))
    va_pp = net.res_bus.va_degree.to_numpy()
    assert np.max(np.abs(va_andes - va_pp)) < 1e-3  # degrees
    # the same total generation (losses computed independently by both)
    p_gen_pp = net.res_gen.p_mw.sum() + net.res_ext_grid.p_mw.sum()
    p_gen_andes = (np.sum(ss.PV.p.v) + np.sum(ss.Slack.p.v)) * ss.config.mva
    assert abs(p_gen_pp - p_gen_andes) < 1e-2


def test_unknown_case_names_the_choices():
    with pytest.raises(ValueError, match="neither a bundled case.*ieee14"):
        load_case("ieee15")


def test_raw_without_dyr_says_to_pass_it(tmp_path):
    raw = tmp_path / "net.raw"
    raw.write_text("0, 100.0\n")
    with pytest.raises(ValueError, match="pass its dynamic data as dyr="):
        load_case(raw)


def test_psse_raw_and_dyr_are_read():
    """ANDES's own PSS/E files of IEEE 14 load as a case (the format utilities' cases use)."""
    import andes

    case = load_case(andes.get_case("ieee14/ieee14.raw"), dyr=andes.get_case("ieee14/ieee14.dyr"))
    assert len(case.buses) == 14
    assert "GENROU" in case.models()


def test_unknown_facility_bus_names_the_buses():
    with pytest.raises(ValueError, match="facility bus 99 is not in case 'ieee14'"):
        simulate("ieee14", facility_bus=99, load_kw=1000.0, t_end_s=0.1)
