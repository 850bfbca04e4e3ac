"""Power-cap curves (aiload.facility.powercap): the bundled HLRS points recomputed from the raw
node columns by a second route, the curves' properties, and the error messages."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from aiload.facility.powercap import POWER_CAP_CURVES, PowerCapCurve, power_cap_curve

ROOT = Path(__file__).resolve().parents[2]
TABLE = json.loads((ROOT / "aiload/facility/data/power_caps.json").read_text(encoding="utf-8"))
HLRS = Path("llnl-last-power-provisioning/hlrs_hpl_hpcg_data")
ZEUS = ROOT / "tests/data/zeus-nsdi23-power-trace"
#: idle nodes sit at 320-335 W and loaded ones above 430 W in all six files (by eye, from the
#: files): a node is running while it draws more than this [W]
NODE_RUNNING_W = 380.0


def _node_columns(path: Path) -> pd.DataFrame:
    """The node columns [W] on a naive time index, read by pandas (not the script's reader)."""
    text = path.read_text(encoding="utf-8-sig").replace("2024-03-09, 10:30:29",
                                                        "2024-03-09 10:30:29")
    frame = pd.read_csv(io.StringIO(text), index_col="Time", parse_dates=["Time"])
    return frame.drop(columns="hsmp")


def _per_node_run(path: Path) -> tuple[float, float, int]:
    """Median over nodes of each node's own run length [s], the energy of all nodes over their
    own runs (trapezoid over each node's samples) [J], and how many nodes ran."""
    nodes = _node_columns(path)
    lengths, energy_j = [], 0.0
    for column in nodes:
        power = nodes[column].dropna()
        t_s = (power.index - power.index[0]).total_seconds().to_numpy()
        on = np.flatnonzero(power.to_numpy() > NODE_RUNNING_W)
        if on.size == 0:
            continue
        a, b = on[0], on[-1] + 1
        lengths.append(t_s[b - 1] - t_s[a])
        energy_j += np.trapezoid(power.to_numpy()[a:b], t_s[a:b])
    return float(np.median(lengths)), energy_j, len(lengths)


def test_hpl_points_match_a_second_route_through_the_node_columns(data_dir):
    """s = uncapped / capped time to solution and r/s = capped / uncapped energy to solution,
    recomputed per node (each node's own run, its own samples integrated) from the raw files."""
    t_uc, e_uc, n_uc = _per_node_run(data_dir / HLRS / "hpl_uc.csv")
    points = {p["source"].split(",")[1].split()[0]: p
              for p in TABLE["curves"]["hpc-hpl"]["points"] if p["r"] < 1}
    assert set(points) == {"hpl_spc", "hpl_dpc"}
    # in hpl_dpc two nodes never draw more than 355 W: not running (the table lists them)
    for run, tol, ran in (("hpl_spc", 0.01, 64), ("hpl_dpc", 0.02, 62)):
        t, e, n = _per_node_run(data_dir / HLRS / f"{run}.csv")
        assert (n_uc, n) == (64, ran)
        assert 64 - len(TABLE["curves"]["hpc-hpl"]["runs"][run]["nodes_not_running"]) == ran
        e *= n_uc / n  # energy of 64 running nodes
        s_second, energy_ratio = t_uc / t, e / e_uc
        point = points[run]
        assert point["s"] == pytest.approx(s_second, rel=tol)
        assert point["r"] / point["s"] == pytest.approx(energy_ratio, rel=tol)
    # the static cap: 24 % less power, 36 % slower, 20 % more energy per solution
    spc = points["hpl_spc"]
    assert 0.74 < spc["r"] < 0.79 and 0.61 < spc["s"] < 0.66
    assert 1.15 < spc["r"] / spc["s"] < 1.25


def test_the_files_quirks_and_flags_hold_in_the_raw_data(data_dir):
    runs = TABLE["curves"]["hpc-hpl"]["runs"]
    # hpl_dpc's file stops while most nodes still run: its time is a lower bound, flagged
    last = _node_columns(data_dir / HLRS / "hpl_dpc.csv").ffill().iloc[-1]
    assert (last > NODE_RUNNING_W).mean() > 0.9 and runs["hpl_dpc"]["end_observed"] is False
    last = _node_columns(data_dir / HLRS / "hpl_spc.csv").ffill().iloc[-1]
    assert (last < NODE_RUNNING_W).all() and runs["hpl_spc"]["end_observed"] is True
    # HPCG runs for a set time: the three runs last the same within 3 %, whatever the cap, so
    # their length is no throughput (no HPCG point)
    lengths = [_per_node_run(data_dir / HLRS / f"hpcg_{k}.csv")[0] for k in ("uc", "spc", "dpc")]
    assert max(lengths) / min(lengths) < 1.03
    # the socket limits in force: 240 W uncapped, 172.5 W static (hsmp in mW)
    assert runs["hpl_uc"]["socket_limit_w_max"] == 240.0
    assert runs["hpl_spc"]["socket_limit_w_min"] == runs["hpl_spc"]["socket_limit_w_max"] == 172.5


@pytest.mark.parametrize("gpu, curve_name, default_w",
                         [("a40", "gpu-llm-training", 300), ("v100", "gpu-training-v100", 250)])
def test_zeus_points_match_the_trace_rows_and_their_energy(gpu, curve_name, default_w):
    """Each GPU point: s is the median over batch sizes of epoch-time ratios, and r/s lies
    among the batch sizes' energy-per-epoch ratios (power x time, a second route)."""
    rows = np.genfromtxt(ZEUS / f"summary_power_{gpu}_squad.csv", delimiter=",", names=True,
                         dtype=None, encoding="utf-8")
    curve = power_cap_curve(curve_name)
    assert curve.power_scope == "gpu"
    limits = sorted(set(rows["power_limit"]))
    assert limits[-1] == default_w and len(curve.r_points) == len(limits)
    for limit, r, s in zip(limits, curve.r_points, curve.s_points):
        ratios_t, ratios_e = [], []
        for bs in sorted(set(rows["batch_size"])):
            at = rows[(rows["batch_size"] == bs) & (rows["power_limit"] == limit)][0]
            ref = rows[(rows["batch_size"] == bs) & (rows["power_limit"] == default_w)][0]
            ratios_t.append(ref["time_per_epoch"] / at["time_per_epoch"])
            ratios_e.append(at["average_power"] * at["time_per_epoch"]
                            / (ref["average_power"] * ref["time_per_epoch"]))
        assert s == pytest.approx(np.median(ratios_t), abs=1e-4)
        assert min(ratios_e) - 1e-3 <= r / s <= max(ratios_e) + 1e-3
        assert r / s == pytest.approx(np.median(ratios_e), rel=0.03)


def test_the_v100_curve_agrees_with_a_published_150_w_result():
    """McDonald et al. (2022), as reported: -13.7 % energy, +6.8 % time at 150 W of 250 W on
    GPUs of the same class: r = 0.863 / 1.068, s = 1 / 1.068."""
    curve = power_cap_curve("gpu-training-v100")
    r, s = 0.863 / 1.068, 1 / 1.068
    assert curve.throughput(r) == pytest.approx(s, rel=0.02)


def test_a_gpu_curve_seen_at_the_node():
    gpu = power_cap_curve("gpu-llm-training")
    node = gpu.for_node(0.75)
    assert node.power_scope == "node" and node.s_points == gpu.s_points
    # by hand: the GPUs at 0.6 of their power, three quarters of the node -> node at 0.7
    assert node.throughput(0.7) == pytest.approx(gpu.throughput(0.6), abs=1e-12)
    assert node.min_power_fraction == pytest.approx(1 - 0.75 * (1 - gpu.min_power_fraction))
    with pytest.raises(InputError, match=r"gpu_share 1.5 must be in \(0, 1\]"):
        gpu.for_node(1.5)
    with pytest.raises(InputError, match="already of node power"):
        power_cap_curve("hpc-hpl").for_node(0.5)
    for share in ("most", None, True):
        with pytest.raises(InputError, match=rf"gpu_share {share!r} must be in \(0, 1\]"):
            gpu.for_node(share)


def test_a_value_that_is_no_number_is_refused_with_the_range():
    curve = power_cap_curve("hpc-hpl")
    with pytest.raises(InputError, match=r"power fraction: expected numbers in \[0.\d+, 1\] "
                                         r"\(a float, an array or a Series\), got 'full'"):
        curve.throughput("full")
    with pytest.raises(InputError, match=r"throughput: expected numbers in .*got \{\}"):
        curve.power_fraction({})


TEXT = (r"\. Only real numbers are read \(not text, bytes or booleans\): pass floats, "
        r"e\.g\. 0\.8 \(float\('0\.8'\) for text\)\.")


@pytest.mark.parametrize("value, shown", [
    ("0.9", r"'0\.9'"), (b"0.9", r"b'0\.9'"), (True, "True"),
    (np.array(["0.9", "1"]), r"array\(\['0\.9', '1'\], dtype='<U3'\)"),
    (["0.9", 1.0], r"\['0\.9', 1\.0\]"),
    (np.array([0.9, "1"], dtype=object), r"array\(\[0\.9, '1'\], dtype=object\)"),
    (pd.Series(["0.9"]), r"0    0\.9\ndtype: object"),
])
def test_text_is_not_read_as_a_number(value, shown):
    # numpy alone turns '0.9' into 0.9 (and True into 1.0): each method must refuse instead
    curve = power_cap_curve("hpc-hpl")
    assert np.asarray(value, dtype=float).size >= 1  # what would have slipped through
    for method, what in ((curve.throughput, "power fraction"),
                         (curve.energy_per_work, "power fraction"),
                         (curve.power_fraction, "throughput")):
        with pytest.raises(InputError, match=rf"^{what}: expected numbers in \[0\.\d+, 1\] "
                                             rf"\(a float, an array or a Series\), got "
                                             rf"{shown}{TEXT}$"):
            method(value)


def test_numbers_in_any_numeric_form_are_still_read():
    curve = power_cap_curve("hpc-hpl")
    (r0, r1), (s0, s1) = curve.r_points[:2], curve.s_points[:2]  # the two lowest points
    mid = 0.5 * (r0 + r1)  # halfway between them: their mean throughput, by hand
    for value in (np.array([mid, 1], dtype=object), pd.Series([mid, 1.0], dtype="Float64"),
                  [mid, 1], (np.float32(1.0), 1)):
        want = [0.5 * (s0 + s1), 1.0] if len(value) == 2 and value[0] != 1 else [1.0, 1.0]
        np.testing.assert_allclose(np.asarray(curve.throughput(value), dtype=float), want,
                                   rtol=1e-12)
    assert curve.throughput(1) == 1.0 and curve.throughput(np.float64(r0)) == s0


def test_the_script_rebuilds_the_bundled_hpl_curve_from_the_subset(data_dir):
    spec = importlib.util.spec_from_file_location(
        "make_power_cap_curve", ROOT / "docs/scripts/make_power_cap_curve.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.build(data_dir) == TABLE


@pytest.mark.parametrize("name", POWER_CAP_CURVES)
def test_every_bundled_curve_is_monotone_ends_at_one_and_names_its_sources(name):
    curve = power_cap_curve(name)
    assert curve.name == name and curve.source
    pts = curve.points
    assert list(pts.columns) == ["r", "s", "status", "source"]
    assert (pts.r.diff().dropna() > 0).all() and (pts.s.diff().dropna() >= 0).all()
    assert (pts.r.iloc[-1], pts.s.iloc[-1]) == (1.0, 1.0)
    assert curve.throughput(1.0) == 1.0 and curve.power_fraction(1.0) == 1.0
    assert curve.min_power_fraction == pts.r.iloc[0] < 1.0
    for status, source in zip(pts.status, pts.source):
        assert source.strip()
        assert status in ("measured", "definition") or "to be checked" in status
    # s never above 1, and a cap never saves more power than it costs throughput... per unit
    # of time: r <= 1 and s <= 1 at every point
    assert (pts.s <= 1).all() and (pts.r <= 1).all()


def test_the_known_names_are_the_data_files_curves():
    assert tuple(TABLE["curves"]) == POWER_CAP_CURVES
    assert power_cap_curve("hpc-hpl").power_scope == "node"


def test_throughput_is_linear_between_points_and_the_inverse_round_trips():
    curve = power_cap_curve("hpc-hpl")
    (r0, r1, r2), (s0, s1, s2) = curve.r_points, curve.s_points
    assert curve.throughput(r0) == s0 and curve.throughput(r1) == s1
    assert curve.throughput((r1 + r2) / 2) == pytest.approx((s1 + s2) / 2, abs=1e-12)
    assert curve.throughput(r0 + 0.25 * (r1 - r0)) == pytest.approx(s0 + 0.25 * (s1 - s0))
    r = np.linspace(curve.min_power_fraction, 1.0, 101)
    s = curve.throughput(r)
    assert isinstance(s, np.ndarray) and s.shape == r.shape
    np.testing.assert_allclose(curve.power_fraction(s), r, rtol=0, atol=1e-12)
    assert isinstance(curve.throughput(0.9), float)
    series = pd.Series([0.8, 0.9], index=pd.date_range("2026-01-01", periods=2, tz="UTC"))
    out = curve.throughput(series)
    assert isinstance(out, pd.Series) and out.index.equals(series.index)
    assert out.iloc[1] == curve.throughput(0.9)
    np.testing.assert_allclose(curve.energy_per_work(r), r / s)


def test_a_flat_stretch_inverts_to_the_least_power():
    curve = PowerCapCurve("flat", (0.5, 0.7, 0.9, 1.0), (0.6, 0.8, 0.8, 1.0),
                          ("a", "b", "c", "d"), ("measured",) * 4, "hand-made")
    assert curve.power_fraction(0.8) == 0.7  # 0.7..0.9 all give 0.8: the least power
    assert curve.power_fraction(0.7) == pytest.approx(0.6)
    assert curve.power_fraction(0.9) == pytest.approx(0.95)
    assert curve.throughput(0.8) == 0.8


@pytest.mark.parametrize("value", [0.5, 1.2, float("nan")])
def test_values_outside_the_data_are_refused_with_the_range(value):
    curve = power_cap_curve("hpc-hpl")
    low = curve.min_power_fraction
    with pytest.raises(InputError, match=rf"power fraction {value} is outside the range the "
                                         rf"'hpc-hpl' power-cap data cover, \[{low:.4g}, 1\]"):
        curve.throughput(value)
    with pytest.raises(InputError, match=r"not extrapolated below its lowest measured cap"):
        curve.energy_per_work([0.9, value])
    with pytest.raises(InputError, match=rf"throughput {value} is outside.*"
                                         rf"\[{curve.min_throughput:.4g}, 1\]"):
        curve.power_fraction(value)


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(InputError, match=r"unknown power-cap curve 'gpu-training'; known: "
                                         r"hpc-hpl, gpu-llm-training, gpu-training-v100, "
                                         r"gpu-llm-inference\. "
                                         r"Did you mean 'gpu-llm-training'\?"):
        power_cap_curve("gpu-training")
    with pytest.raises(InputError, match="unknown power-cap curve"):
        power_cap_curve(["hpc-hpl"])


@pytest.mark.parametrize("r, s, message", [
    ((0.8, 1.0), (0.9, 0.95), r"the last point must be the uncapped run \(1, 1\)"),
    ((0.9, 0.8, 1.0), (0.9, 0.8, 1.0), "strictly increasing"),
    ((0.7, 0.8, 1.0), (0.9, 0.8, 1.0), "non-decreasing in r"),
    ((1.0,), (1.0,), "at least two points"),
])
def test_a_malformed_curve_is_refused(r, s, message):
    with pytest.raises(InputError, match=message):
        PowerCapCurve("bad", r, s, ("x",) * len(r), ("measured",) * len(r), "hand-made")
