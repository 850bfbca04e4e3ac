"""Idle power and the layers from component power to the rack input, from the real data.

Each derived number is checked against a second computation from the raw files (parsed here
by hand, not with aiload's readers) or against published values.
"""

from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pandas as pd
import pytest

import aiload.profiles as profiles
from aiload.errors import InputError
from aiload.facility import FleetSpec
from aiload.profiles import _node_power

WATT = "wattameter-example-logs"


def _raw_wattameter(path) -> pd.DataFrame:
    """A WattAMeter log by hand: the header is the third comment line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = [ln for ln in lines if ln.startswith("# timestamp")][0].split()[1:]
    rows = [ln.split() for ln in lines if ln.strip() and not ln.startswith("#")]
    return pd.DataFrame(rows, columns=header)


def test_idle_4xh100_is_both_components_idle(data_dir):
    nvml = _raw_wattameter(data_dir / WATT / "nvml_wattameter.log")
    rapl = _raw_wattameter(data_dir / WATT / "rapl_wattameter.log")
    gpu = sum(nvml[f"gpu-{i}[mW]"].astype(float) for i in range(4)) / 1e3
    cpu = sum(rapl[c].astype(float) for c in ("cpu-0[W]", "cpu-0-core[W]", "cpu-1[W]", "cpu-1-core[W]"))
    # raw samples: GPUs flat for the first 5 s; CPU samples 1-6 before the processes start
    # (sample 0's dE/dt spans an interval before the log)
    hand_w = float(gpu[:50].median() + cpu[1:7].mean())
    idle = _node_power.wattameter_idle(data_dir)
    assert idle["power_w"] == pytest.approx(hand_w, rel=0.01)
    assert idle["gpu_idle_w"] == pytest.approx(4 * 74.7, rel=0.01)  # SOURCE.md: ≈ 74–76 W each
    # the former 521 W: GPUs idle, CPUs already busy (samples 12-60)
    assert idle["old_figure_w"] == pytest.approx(gpu[:50].median() + cpu[12:60].median(), rel=0.01)
    assert profiles.idle_power_w("4xH100") == pytest.approx(idle["power_w"], rel=1e-9)


def test_idle_implied_by_the_nlr_facility_statistics(data_dir):
    implied = _node_power.facility_implied_idle(data_dir)
    # by hand from the published table: P = P_i + u (P_b - P_i), two points
    for name, nodes, (u1, m1), (u2, m2) in (
            ("colocation_10mw", 2840, (0.4, 3.557), (0.8, 5.908)),
            ("inference_1mw", 283, (0.2, 0.2566), (0.8, 0.6633))):
        idle = (m1 * u2 - m2 * u1) / (u2 - u1) * 1e6 / nodes
        assert implied[name]["avg_utilization"]["idle_w"] == pytest.approx(idle, rel=1e-12)
    solves = [v[c]["idle_w"] for v in implied.values() for c in ("util_mean", "avg_utilization")]
    assert 420 < min(solves) and max(solves) < 432  # the brief: ≈ 425–430 W
    # the measurement agrees with the facility-implied figure within 3 %
    assert profiles.idle_power_w("4xH100") == pytest.approx(np.mean(solves), rel=0.03)
    info = json.loads((profiles._bundle.bundle_path("idle.json")).read_text())["4xH100"]
    assert info["facility_implied"]["colocation_10mw"]["util_mean"]["idle_w"] == pytest.approx(
        implied["colocation_10mw"]["util_mean"]["idle_w"])


def test_idle_8xh100_is_the_settled_level_after_the_run(data_dir):
    log = (data_dir / "mlperf-training-v4.0-smc-power/smc-ac-power/results/1xSMC-H100-SXM-80GB/"
           "llama2_70b_lora/power/result_5027-240510020224961918558_1/node_0.txt")
    values = [json.loads(ln.split(":::MLLOG", 1)[1])["value"] for ln in log.read_text().splitlines()
              if '"power_reading"' in ln]
    # SOURCE.md: the log ends at 2,387 W; the last 20 s are one level
    last = np.array(values[-10:], dtype=float)
    assert last.max() - last.min() < 50
    assert profiles.idle_power_w("8xH100-SXM") == pytest.approx(np.median(last), rel=0.01)
    # the level of the 8xH200 server before its runs (SOURCE.md: 2,374–2,511 W) is alike
    assert profiles.idle_power_w("8xH100-SXM") == pytest.approx(
        profiles.idle_power_w("8xH200-SXM"), rel=0.05)


def _ipmi_by_hand(data_dir) -> dict[str, dict[str, float]]:
    out = {}
    with tarfile.open(data_dir / "harvard-fasrc-ipmi-snapshot/2025-05-29.tar.gz") as tar:
        for m in tar.getmembers():
            if not m.isfile() or "holygpu8a" not in m.name:
                continue
            row = {}
            for line in io.TextIOWrapper(tar.extractfile(m), encoding="utf-8"):
                cells = [c.strip() for c in line.split("|")]
                if len(cells) > 1 and cells[1].endswith("Watts"):
                    row[cells[0]] = float(cells[1].split()[0])
            out[m.name.split("/")[-1][:14]] = row
    return out


def test_rest_of_node_from_the_harvard_snapshot(data_dir):
    rest = _node_power.harvard_rest_of_node(data_dir)
    nodes = _ipmi_by_hand(data_dir)
    # a second estimate: the median of Sys - CPU - GPU in the band 800-1200 W of CPU + GPU
    band = [r["Sys Power"] - r["CPU Power"] - r["GPU Board Power"] for r in nodes.values()
            if {"Sys Power", "CPU Power", "GPU Board Power"} <= set(r)
            and 800 <= r["CPU Power"] + r["GPU Board Power"] <= 1200]
    fitted = rest["rest_of_node_w"] + rest["rest_of_node_fraction"] * 1000
    assert fitted == pytest.approx(np.median(band), abs=15)
    assert 100 < rest["rest_of_node_w"] < 200 and 0 <= rest["rest_of_node_fraction"] < 0.05
    # one enclosure by hand (holygpu8a111NN: 1440 + 1140 + 1740 + 1680 W of nodes)
    encl = [r for k, r in nodes.items() if k.startswith("holygpu8a111")]
    assert sum(r["Sys Power"] for r in encl) == 6000
    assert 0.0 < rest["psu_loss_fraction"] < 0.08


def test_network_fraction_from_the_mlperf_estimate(data_dir):
    net = _node_power.mlperf_network(data_dir)
    assert net[64]["total_w"] == 59570 and net[8]["total_w"] == 16100  # SOURCE.md
    b = profiles.node_boundary("8xH100-SXM")
    # the 64-node fabric per node at the DGX H100 nameplate of the campus preset
    assert b.fleet_fields(10200.0)["network_w_per_node"] == pytest.approx(59570 / 64, rel=1e-12)


def test_boundaries_per_hardware():
    comp = profiles.node_boundary("4xH100")
    assert comp.measured_at == "component" and comp.rest_of_node_w > 0
    for hw in ("8xH100-SXM", "8xH200-SXM"):
        b = profiles.node_boundary(hw)
        # measured at the node's AC input: nothing of the node is added again
        assert b.measured_at == "node-ac"
        assert (b.rest_of_node_w, b.rest_of_node_fraction, b.psu_loss_fraction) == (0, 0, 0)
    with pytest.raises(InputError, match="Did you mean '8xH100-SXM'"):
        profiles.node_boundary("8xH100-sxm")


def test_fleet_it_kw_by_hand():
    fleet = FleetSpec(nodes=10, hardware="4xH100", idle_w=400.0, nameplate_w=3000.0,
                      other_it_w_per_busy_node=5.0, other_it_base_kw=2.0, measured_at="component",
                      rest_of_node_w=150.0, rest_of_node_fraction=0.01, psu_loss_fraction=0.04,
                      network_w_per_node=300.0, storage_w_per_node=60.0)
    comp_w = np.array([4000.0, 30000.0])
    busy = np.array([0.0, 10.0])
    hand = [((4000 * 1.01 + 10 * 150) * 1.04 + 0 + 10 * 360) / 1e3 + 2.0,
            ((30000 * 1.01 + 10 * 150) * 1.04 + 50 + 10 * 360) / 1e3 + 2.0]
    np.testing.assert_allclose(fleet.it_kw(comp_w, busy), hand, rtol=1e-13)
    assert fleet.it_rated_kw == pytest.approx((10 * (3000 * 1.01 + 150) * 1.04 + 3600) / 1e3 + 2.0)
    # the defaults add nothing: it_kw is the component power
    plain = FleetSpec(nodes=10, hardware="4xH100", idle_w=400.0)
    np.testing.assert_array_equal(plain.it_kw(comp_w, busy), comp_w / 1e3)


def test_node_ac_fleet_refuses_a_second_rest_of_node():
    with pytest.raises(InputError, match="already hold the rest of the node.*counted twice"):
        FleetSpec(nodes=4, hardware="8xH100-SXM", idle_w=2400.0, nameplate_w=10200.0,
                  measured_at="node-ac", rest_of_node_w=150.0)
    with pytest.raises(InputError, match="expected 'component' or 'node-ac', got 'ac'"):
        FleetSpec(nodes=4, measured_at="ac")
    # the default comes from the hardware's bundled profiles
    assert FleetSpec(nodes=4, hardware="8xH100-SXM", idle_w=2400.0,
                     nameplate_w=10200.0).measured_at == "node-ac"
    assert FleetSpec(nodes=4, hardware="4xH100").measured_at == "component"
    assert FleetSpec(nodes=4, hardware="my-own-node").measured_at == "component"


def test_facility_series_names_the_three_boundaries():
    import aiload
    from aiload.facility import FacilitySpec, JobStreamSpec

    b = profiles.node_boundary("4xH100")
    fleet = FleetSpec(nodes=32, hardware="4xH100", idle_w=434.0, nameplate_w=3520.0,
                      **b.fleet_fields(3520.0))
    spec = FacilitySpec(fleet=fleet, streams=(JobStreamSpec(
        name="lora", workloads={"llama2-70b-lora": 1.0}, node_counts={4: 1.0}, rate_per_h=4.0),))
    load = aiload.facility(spec, start="2025-01-06 00:00+00:00", end="6h", freq="15min", seed=3,
                           progress=False)
    p = load.power
    assert {"component_kw", "it_kw", "facility_kw"} <= set(p.columns)
    # rack input by hand from the component power, the busy nodes and the fleet's numbers
    comp_w = p["component_kw"].to_numpy() * 1e3
    hand = ((comp_w * (1 + b.rest_of_node_fraction) + 32 * b.rest_of_node_w)
            * (1 + b.psu_loss_fraction) + 32 * (b.network_fraction + b.storage_fraction) * 3520.0) / 1e3
    np.testing.assert_allclose(p["it_kw"], hand, rtol=1e-12)
    np.testing.assert_allclose(p["facility_kw"], p["it_kw"] + p["losses_kw"] + p["cooling_kw"],
                               rtol=1e-12)
    # an idle hour: every node at the measured idle power at the component boundary
    assert p["component_kw"].min() >= 32 * 0.434 - 1e-9


def test_node_ac_fleet_has_no_component_column():
    import aiload
    from aiload.facility import FacilitySpec, JobStreamSpec

    fleet = FleetSpec(nodes=16, hardware="8xH100-SXM", idle_w=2377.0, nameplate_w=10200.0,
                      **profiles.node_boundary("8xH100-SXM").fleet_fields(10200.0))
    spec = FacilitySpec(fleet=fleet, streams=(JobStreamSpec(
        name="lora", workloads={"llama2-70b-lora": 1.0}, node_counts={8: 1.0}, rate_per_h=2.0),))
    p = aiload.facility(spec, start="2025-01-06 00:00+00:00", end="2h", freq="15min", seed=1,
                        progress=False).power
    assert "component_kw" not in p.columns
    # idle nodes at their AC level, plus network and storage of every node: nothing else added
    assert p["it_kw"].min() >= 16 * (2.377 + fleet.network_w_per_node / 1e3
                                     + fleet.storage_w_per_node / 1e3) - 1e-9
