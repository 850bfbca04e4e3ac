"""Scaling fits against independent values: BACKGROUND/SOURCE numbers, numpy/scipy refits."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from aiload.errors import InputError
from aiload import profiles
from aiload.profiles import scaling
from aiload.profiles.jobs import ExtrapolationWarning

NLR = "nlr-genai-power-profiles/01_aggregated_datasets"


def _r2_numpy(y, f):
    y, f = np.asarray(y, float), np.asarray(f, float)
    return 1 - np.sum((y - f) ** 2) / np.sum((y - y.mean()) ** 2)


# ----------------------------------------------------------------- online inference


@pytest.mark.parametrize(
    ("dataset", "path", "p0", "slope", "plateau"),
    [  # BACKGROUND 3.3: ≈ 1,985 + 28.6 λ / 1,992 + 21.5 λ W for λ <= 25; plateau ≈ 2.83 / 2.77 kW
        ("instructcoder", "likaixin/InstructCoder", 1985, 28.6, 2830),
        ("mlperf-llama2", "mgoin/mlperf-inference-llama2-data", 1992, 21.5, 2770),
    ],
)
def test_online_power_matches_background(data_dir, dataset, path, p0, slope, plateau):
    fit = scaling.online_inference("4xH100", dataset)
    # tolerances: the BACKGROUND line was fitted on λ <= 25 only, ours on all 100 rates
    assert fit.p0_w == pytest.approx(p0, abs=40)
    assert fit.slope_w_per_rps == pytest.approx(slope, rel=0.12)
    assert fit.p_sat_w == pytest.approx(plateau, abs=40)
    # second method: scipy curve_fit of the same model on the raw shared metadata
    raw = pd.read_csv(data_dir / NLR / "inference_online_rate_llama3_70b/metadata.csv")
    raw = raw[raw["dataset-path"] == path]
    x, y = raw["request_rate"].to_numpy(float), raw["mean_power[W]"].to_numpy(float)
    (a, k, knee), _ = optimize.curve_fit(lambda r, a, k, kn: a + k * np.minimum(r, kn), x, y,
                                          p0=(2000, 25, 30))
    assert fit.p_sat_w == pytest.approx(a + k * knee, rel=0.005)
    assert fit.slope_w_per_rps == pytest.approx(k, rel=0.05)
    assert fit.r2 == pytest.approx(_r2_numpy(y, fit.power_w(x)), abs=1e-8)
    assert fit.r2 > 0.95
    assert fit.max_abs_residual == pytest.approx(np.max(np.abs(y - fit.power_w(x))))


def test_online_power_is_vectorised_and_flat_after_knee():
    fit = scaling.online_inference()
    rates = np.array([0.0, 10.0, 60.0, 100.0])
    p = fit.power_w(rates)
    assert p.shape == (4,)
    assert p[2] == p[3] == pytest.approx(fit.p_sat_w)
    assert isinstance(fit.power_w(5.0), float)
    with pytest.raises(InputError, match="rate_per_s must be finite and >= 0"):
        fit.power_w(-1)


@pytest.mark.parametrize(
    ("dataset", "tokens", "saturation"),
    # BACKGROUND 3.3: ≈ 30/41/55 req/s (InstructCoder 1024/512/256), ≈ 26/34/43 (MLPerf data)
    [("instructcoder", 1024, 30), ("instructcoder", 512, 41), ("instructcoder", 256, 55),
     ("mlperf-llama2", 1024, 26), ("mlperf-llama2", 512, 34), ("mlperf-llama2", 256, 43)],
)
def test_capacity_saturation_matches_background(dataset, tokens, saturation):
    fit = scaling.online_inference("4xH100", dataset, output_tokens=tokens)
    assert fit.capacity_per_s() == pytest.approx(saturation, abs=1.5)


def test_capacity_at_latency_target(data_dir):
    fit = scaling.online_inference("4xH100", "instructcoder", output_tokens=512)
    caps = [fit.capacity_per_s(t) for t in (3.5, 5.0, 8.0, 13.0)]
    assert np.all(np.diff(caps) >= 0)
    assert caps[-1] <= fit.capacity_per_s() * 1.01
    # hand check: at a 4.082 s median E2E target (the 40 req/s runs' median) a node serves
    # about the 40 req/s runs' throughput (median 28.4 req/s in the raw metadata)
    raw = pd.read_csv(data_dir / NLR / "inference_online_finite_llama3_70b/metadata.csv")
    sel = raw[(raw["dataset-path"] == "likaixin/InstructCoder") & (raw["hf-output-len"] == 512)
              & (raw["request_rate_x"] == 40)]
    target = sel["median_e2el_ms"].median() / 1e3
    assert fit.capacity_per_s(target) == pytest.approx(sel["request_throughput"].median(), rel=0.01)
    with pytest.raises(InputError, match="below the lowest median E2E latency"):
        fit.capacity_per_s(0.5)


def test_online_errors_name_what_exists():
    with pytest.raises(InputError, match="only for hardware '4xH100'"):
        scaling.online_inference("8xH200-SXM")
    with pytest.raises(InputError, match="instructcoder"):
        scaling.online_inference("4xH100", "sharegpt")
    with pytest.raises(InputError, match=r"\[256, 512, 1024\]"):
        scaling.online_inference(output_tokens=300)


# ----------------------------------------------------------------- offline inference


@pytest.mark.parametrize(("tokens", "at25", "at1000"), [(512, 779, 148), (1024, 1575, 244)])
def test_offline_energy_per_prompt(data_dir, tokens, at25, at1000):
    # BACKGROUND 3.3: 512 tok 779 J @25 -> ≈ 142-154 J @500-1000; 1024 tok 1,575 J -> ≈ 244 J
    fit = scaling.offline_energy_per_prompt(tokens)
    assert fit.energy_j(25) == pytest.approx(at25, rel=0.05)
    assert fit.energy_j(1000) == pytest.approx(at1000, rel=0.08)
    raw = pd.read_csv(data_dir / NLR / "inference_offline_llama3_70b/metadata.csv")
    raw = raw[raw["max_output_tokens"] == tokens]
    e = raw["mean_power[W]"] * raw["elapsed"] / raw["batch_size"]
    assert len(fit.points) == len(raw) == 600
    assert fit.r2 == pytest.approx(_r2_numpy(e, fit.energy_j(raw["batch_size"])), abs=1e-8)
    assert fit.r2 > 0.95
    assert fit.max_abs_residual == pytest.approx(np.max(np.abs(e - fit.energy_j(raw["batch_size"]))))


def test_offline_errors():
    with pytest.raises(InputError, match=r"max_output_tokens=256 not measured; expected one of \[512, 1024\]"):
        scaling.offline_energy_per_prompt(256)
    with pytest.raises(InputError, match="batch_size must be finite and > 0"):
        scaling.offline_energy_per_prompt().energy_j(0)


# ----------------------------------------------------------------- training


def test_lora_4xh100_fit_against_cited_points():
    fit = scaling.training("llama2-70b-lora", "4xH100")
    # the audit's per-node means (BACKGROUND 3.2) fall by ≈ 80 W per doubling
    for n, p in ((2, 2631), (4, 2576), (8, 2469), (16, 2401)):
        assert fit.power_w_per_node(n) == pytest.approx(p, abs=20)
    pw = fit.points[fit.points["quantity"] == "power_w_per_node"]
    slope, intercept = np.polyfit(np.log2(pw["nodes"]), pw["value"], 1)
    assert fit.slope_w_per_doubling == pytest.approx(slope)
    assert fit.r2["power_w_per_node"] == pytest.approx(
        _r2_numpy(pw["value"], intercept + slope * np.log2(pw["nodes"])), abs=1e-12)
    assert set(fit.points["origin"]) == {"cited", "derived"}
    assert fit.points["source"].str.contains("BACKGROUND").any()
    assert set(fit.r2) == {"duration_s", "power_w_per_node", "energy_kwh"}


def test_sd_energy_flat_in_node_count():
    # BACKGROUND 3.2 [I]: energy per SD job ≈ 14-19 kWh, roughly flat in node count
    fit = scaling.training("stable-diffusion-v2", "4xH100")
    e = fit.energy_kwh(np.array([2, 4, 8, 16]))
    assert np.all((e > 13) & (e < 21))
    # duration scales nearly ideally (hours: 3.84 -> 0.445 from 2 to 16 nodes)
    assert fit.alpha == pytest.approx(np.log(3.84 / 0.445) / np.log(8), abs=0.05)


def test_energy_is_power_times_nodes_times_duration():
    fit = scaling.training("stable-diffusion-v2", "4xH100")
    n = np.array([1, 3, 32])
    expected = fit.power_w_per_node(n) * n * fit.duration_s(n) / 3.6e6
    np.testing.assert_allclose(fit.energy_kwh(n), expected, rtol=1e-12)
    res = fit.residuals
    assert np.allclose(res["observed"] - res["fitted"], res["residual"])
    for q, g in res.groupby("quantity"):
        assert fit.max_abs_residual[q] == pytest.approx(g["residual"].abs().max())


def test_power_never_below_idle():
    fit = scaling.training("stable-diffusion-v2", "4xH100")
    idle = profiles.idle_power_w("4xH100")
    assert fit.floor_w == idle
    # p1 + s log2 n reaches idle near 2^13 nodes; far beyond, the floor holds
    assert fit.power_w_per_node(2**20) == idle
    assert fit.power_w_per_node(16) > idle


def test_mlperf_points_from_traces(data_dir):
    # SOURCE.md: 8-node LoRA per-node mean 5.74-5.86 kW; GPT-3 Σ node mean 438.3 kW on 64 nodes;
    # GPT-3 total_power.txt 415.22 kWh; run_start -> run_stop 3,412.7 s
    lora = scaling.training("llama2-70b-lora", "8xH100-SXM")
    pts = lora.points.set_index(["quantity", "nodes"])["value"]
    assert 5740 <= pts[("power_w_per_node", 8)] <= 5860
    assert pts[("duration_s", 8)] == pytest.approx(318.7, abs=0.1)
    gpt = scaling.training("gpt3-175b", "8xH100-SXM")
    gp = gpt.points.set_index(["quantity", "nodes"])["value"]
    assert gp[("power_w_per_node", 64)] == pytest.approx(438.3e3 / 64, rel=0.005)
    assert gp[("energy_kwh", 64)] == pytest.approx(415.22, rel=0.01)
    assert gp[("duration_s", 64)] == pytest.approx(3412.7, abs=0.1)
    # one node count: the duration exponent is assumed, not fitted, and says so
    assert gpt.alpha == 1.0 and "ASSUMED" in gpt.notes
    assert np.isnan(gpt.r2["duration_s"])
    assert gpt.duration_s(32) == pytest.approx(2 * 3412.7, rel=1e-4)


def test_training_vectorised_and_errors():
    fit = scaling.training("llama2-70b-lora", "8xH100-SXM")
    d = fit.duration_s([1, 8, 64])
    assert d.shape == (3,) and np.all(np.diff(d) < 0)
    with pytest.raises(InputError, match=r"available \(model, hardware\).*'gpt3-175b'"):
        scaling.training("gpt4", "8xH100-SXM")
    with pytest.raises(InputError, match="nodes must be finite and > 0"):
        fit.power_w_per_node(0)


def test_r_squared_helper():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    assert scaling.r_squared(y, y) == 1.0
    assert scaling.r_squared(y, np.full(4, y.mean())) == pytest.approx(0.0)
    assert np.isnan(scaling.r_squared([1.0], [1.0]))


# --- job_profile beyond the data: no invented duration scaling unless asked for -------------

def test_job_profile_holds_the_measured_gpt3_run_beyond_its_single_node_count():
    # SOURCE.md: the GPT-3 MLPerf run is 64 nodes, run_start -> run_stop 3,412.7 s,
    # Σ node mean 438.3 kW -> 6,848 W per node
    held = profiles.job_profile("gpt3-175b", "8xH100-SXM", 8192, extrapolate=False)
    assert held.nodes == 8192
    assert held.duration_s == pytest.approx(3412.7, abs=0.1)
    assert held.mean_power_w == pytest.approx(438.3e3 / 64, rel=0.005)
    assert held.extra["held_at_nodes"] == 64 and held.extra["extrapolated"] is False
    assert held.extra["measured_nodes"] == (64, 64)
    assert "HELD" in held.notes and "64 nodes" in held.notes
    # the same shape as the measured 64-node job profile (only the node count differs)
    at64 = profiles.job_profile("gpt3-175b", "8xH100-SXM", 64)
    np.testing.assert_array_equal(held.power_w.to_numpy(), at64.power_w.to_numpy())


def test_job_profile_default_follows_the_fit_but_warns_and_says_so():
    with pytest.warns(ExtrapolationWarning, match=r"measured at 64 nodes only.*extrapolate=False"):
        p = profiles.job_profile("gpt3-175b", "8xH100-SXM", 8192)
    # by hand: ideal strong scaling assumed from one point: 3,412.67 s x 64 / 8192
    assert p.duration_s == pytest.approx(3412.67 * 64 / 8192, rel=1e-6)
    assert p.extra["extrapolated"] is True and "EXTRAPOLATED" in p.notes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opted = profiles.job_profile("gpt3-175b", "8xH100-SXM", 8192, extrapolate=True)
        inside = profiles.job_profile("llama2-70b-lora", "4xH100", 8)
        near = profiles.job_profile("llama2-70b-lora", "4xH100", 32)  # 2x the measured 16
    assert opted.duration_s == p.duration_s and opted.extra["extrapolated"] is True
    assert inside.extra["extrapolated"] is False and "EXTRAPOLATED" not in inside.notes
    assert near.extra["extrapolated"] is False


def test_job_profile_hold_within_and_beyond_a_multi_point_fit():
    fit = scaling.training("llama2-70b-lora", "4xH100")  # durations measured at 2..16 nodes
    inside = profiles.job_profile("llama2-70b-lora", "4xH100", 4, extrapolate=False)
    assert inside.duration_s == pytest.approx(fit.duration_s(4), rel=1e-9)
    assert inside.extra["held_at_nodes"] is None
    big = profiles.job_profile("llama2-70b-lora", "4xH100", 512, extrapolate=False)
    small = profiles.job_profile("llama2-70b-lora", "4xH100", 1, extrapolate=False)
    assert big.duration_s == pytest.approx(fit.duration_s(16), rel=1e-9)
    assert big.mean_power_w == pytest.approx(fit.power_w_per_node(16), rel=1e-9)
    assert small.duration_s == pytest.approx(fit.duration_s(2), rel=1e-9)
    assert (big.extra["held_at_nodes"], small.extra["held_at_nodes"]) == (16, 2)
    with pytest.warns(ExtrapolationWarning, match=r"512 nodes is more than 2x outside"):
        profiles.job_profile("llama2-70b-lora", "4xH100", 512)


def test_job_profile_extrapolate_must_be_a_bool_or_none():
    with pytest.raises(InputError, match="extrapolate must be None, True or False, got 'hold'"):
        profiles.job_profile("gpt3-175b", "8xH100-SXM", 128, extrapolate="hold")


@pytest.mark.parametrize(("kwargs", "match"), [
    # before: 0 raised ZeroDivisionError, a string a TypeError, -1 and NaN were ignored
    ({"step_s": 0}, r"job_profile\(step_s=\): expected a finite number > 0 \[s\], got 0"),
    ({"step_s": -1.0}, r"job_profile\(step_s=\): expected a finite number > 0 \[s\], got -1.0"),
    ({"step_s": float("nan")}, r"job_profile\(step_s=\): .*got nan; NaN"),
    ({"step_s": "1s"}, r"job_profile\(step_s=\): .*got '1s' \(str\)"),
    ({"replicate": 1.0}, r"job_profile\(replicate=\): expected a whole number >= 0, got 1.0"),
    ({"extrapolate": 1}, r"extrapolate must be None, True or False, got 1"),
])
def test_job_profile_bad_step_replicate_and_extrapolate_are_named(kwargs, match):
    with pytest.raises(InputError, match=match):
        profiles.job_profile("llama2-70b-lora", "4xH100", 4, **kwargs)


def test_job_profile_refuses_a_bool_node_count():
    with pytest.raises(InputError, match=r"nodes must be an integer >= 1, got True"):
        profiles.job_profile("llama2-70b-lora", "4xH100", True)
