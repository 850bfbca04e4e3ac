"""The bundled profile library: catalogue, lookup, measured levels, synthesis, job profiles."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aiload.profiles as profiles
from aiload.errors import InputError
from aiload.profiles import scaling, synth

SMC = "mlperf-training-v4.0-smc-power/smc-ac-power/results"
H200 = "mlperf-inference-v4.1-h200-power/closed/NVIDIA/results/H200-SXM-141GBx8_TRT_MaxQ"


def test_catalog_lists_every_profile_with_required_columns():
    cat = profiles.catalog()
    for col in ("name", "workload", "model", "hardware", "gpus_per_node", "nodes", "step_s",
                "duration_s", "replicates", "mean_power_w", "measured", "source", "license", "boundary"):
        assert col in cat.columns
    assert cat["name"].is_unique
    assert set(cat["workload"]) == set(profiles.WORKLOADS)
    assert set(cat["hardware"]) == {"4xH100", "8xH100-SXM", "8xH200-SXM"}
    # NLR per-node time series are not available: everything from it is labelled synthesised
    assert not cat.loc[cat["name"].str.startswith("nlr-"), "measured"].any()
    assert cat.loc[cat["name"].str.startswith("mlperf-"), "measured"].all()
    assert (cat["license"] != "").all() and (cat["source"] != "").all()


def test_get_agrees_with_catalog_and_returns_fresh_objects():
    cat = profiles.catalog().set_index("name")
    for name in cat.index:
        p = profiles.get(name)
        row = cat.loc[name]
        assert p.mean_power_w == pytest.approx(row["mean_power_w"], rel=1e-6)
        assert p.duration_s == pytest.approx(row["duration_s"], rel=1e-9)
        assert p.replicates == row["replicates"]
        assert p.power_w.index.name == "elapsed"
    a = profiles.get("nlr-llama2-70b-lora-4xh100-8n")
    a.power_w.iloc[:, 0] = 0.0
    assert profiles.get("nlr-llama2-70b-lora-4xh100-8n").mean_power_w == pytest.approx(2469)


def _mllog_readings(path):
    t, v = [], []
    for line in path.read_text().splitlines():
        rec = json.loads(line.split(":::MLLOG", 1)[1])
        if rec["key"] == "power_reading":
            t.append(rec["time_ms"])
            v.append(rec["value"])
    return np.array(t), np.array(v, float)


def test_mlperf_lora_8_node_profile_against_its_files(data_dir):
    p = profiles.get("mlperf-llama2-70b-lora-8xh100-8n")
    # SOURCE.md: per-node mean 5.74-5.86 kW over the nodes; run_start -> run_stop 318.7 s
    assert 5740 <= p.mean_power_w <= 5860
    assert p.duration_s == pytest.approx(318.7, abs=2 * p.step_s)
    # second method: plain mean of every node's readings inside the run window
    start, stop = 1715902390267, 1715902708962
    folder = data_dir / SMC / "8xSMC-H100-SXM-80GB/llama2_70b_lora/power/result_5742-240517053836692164828_10"
    means = []
    for f in sorted(folder.glob("node_*.txt")):
        t, v = _mllog_readings(f)
        means.append(v[(t >= start) & (t <= stop)].mean())
    assert p.mean_power_w == pytest.approx(np.mean(means), rel=0.01)


def test_gpt3_profile_energy_matches_total_power_file(data_dir):
    p = profiles.get("mlperf-gpt3-175b-8xh100-64n")
    assert p.mean_power_w == pytest.approx(438.3e3 / 64, rel=0.005)  # SOURCE.md Σ node means
    folder = data_dir / SMC / "64xSMC-H100-SXM-80GB/gpt3/power/result_5848-240517221859825376616_2"
    total_kwh = float((folder / "total_power.txt").read_text().split(":")[1].split()[0])
    # the profile drops < 2 s at each end of the run window: 0.2 % tolerance on 3,412 s, plus
    # the file's own measurement window
    assert p.energy_wh * 64 / 1e3 == pytest.approx(total_kwh, rel=0.01)


def test_h200_server_profile_against_source(data_dir):
    p = profiles.get("mlperf-llama2-70b-server-8xh200")
    assert p.mean_power_w == pytest.approx(6280, rel=0.002)  # SOURCE.md table
    assert p.duration_s == pytest.approx(41 * 60 + 40.05, abs=2)  # power_begin -> power_end
    spl = data_dir / H200 / "llama2-70b-99/Server/performance/run_1/spl.txt"
    raw = pd.read_csv(spl, header=None)
    t = pd.to_datetime(raw[1], format="%m-%d-%Y %H:%M:%S.%f")
    win = raw[(t >= "2024-07-17 20:58:36.235") & (t <= "2024-07-17 21:40:16.287")][3]
    assert p.energy_wh == pytest.approx(win.sum() / 3600, rel=1e-6)


def test_idle_power_levels():
    # BACKGROUND 3.1: WattAMeter example log idle 0.41-0.60 kW (component sum); the NLR
    # facility statistics imply ≈ 423-429 W (test_profiles_node_power)
    assert 410 <= profiles.idle_power_w("4xH100") <= 450
    # SOURCE.md (H200): pre-run first samples 2,374-2,511 W at the wall
    assert 2374 <= profiles.idle_power_w("8xH200-SXM") <= 2520
    # the 1-node LoRA log ends at 2,387 W (SOURCE.md): the node settles there after the run
    assert profiles.idle_power_w("8xH100-SXM") == pytest.approx(2387, rel=0.01)
    with pytest.raises(InputError, match="Did you mean '8xH100-SXM'"):
        profiles.idle_power_w("8xH100-sxm")


def test_get_unknown_name_suggests():
    with pytest.raises(InputError, match="Did you mean 'mlperf-gpt3-175b-8xh100-64n'"):
        profiles.get("gpt3")
    with pytest.raises(InputError, match="Did you mean 'nlr-llama2-70b-lora-4xh100-8n'"):
        profiles.get("nlr-llama2-70b-lora-4xh100-8")


def test_find_nearest_node_count_and_errors():
    assert profiles.find("training", hardware="4xH100", nodes=6).nodes == 8  # log-nearest
    assert profiles.find("training", hardware="4xH100", nodes=3).nodes == 4  # |log 4/3| < |log 2/3|
    assert profiles.find("fine-tuning", hardware="8xH100-SXM", nodes=1000).nodes == 64
    assert profiles.find("idle", hardware="8xH200-SXM").workload == "idle"
    # measured before synthesised
    assert profiles.find("online-inference").measured
    with pytest.raises(InputError, match=r"hardware='8xH200'.*The nearest is '8xH200-SXM'"):
        profiles.find("online-inference", hardware="8xH200")
    with pytest.raises(InputError, match="Did you mean 'training'"):
        profiles.find("trainng")
    with pytest.raises(InputError, match=r"available models.*'gpt3-175b'"):
        profiles.find("training", hardware="8xH100-SXM", model="gpt4")


def test_synthesised_lora_has_cited_features():
    p = profiles.get("nlr-llama2-70b-lora-4xh100-16n")
    assert p.replicates == 5 and not p.measured and "SYNTHESISED" in p.notes
    x = p.power_w["r0"].to_numpy()
    core = x[int(60 / p.step_s): -int(60 / p.step_s)]
    # dominant period from the spectrum: ≈ 12.8 s (BACKGROUND 3.2)
    f = np.fft.rfftfreq(core.size, p.step_s)
    spec = np.abs(np.fft.rfft(core - core.mean()))
    assert 1 / f[np.argmax(spec[1:]) + 1] == pytest.approx(12.8, rel=0.03)
    # dip depth ≈ 16 %: ratio of the low and high clusters
    lo, hi = np.percentile(core, [20, 80])
    assert 1 - lo / hi == pytest.approx(0.16, abs=0.04)
    # the 16-node job's max 48.4 kW over 16 nodes = 3.03 kW per node (BACKGROUND 3.2)
    assert x.max() == pytest.approx(48.4e3 / 16, rel=0.05)
    # replicates differ; the same seed gives the same output bit for bit
    assert not np.array_equal(p.power_w["r0"], p.power_w["r1"])
    a = synth.synth_training(synth.LORA_SHAPE, duration_s=600, mean_w=2500, idle_w=500, seed=3)
    b = synth.synth_training(synth.LORA_SHAPE, duration_s=600, mean_w=2500, idle_w=500, seed=3)
    pd.testing.assert_frame_equal(a, b)
    np.testing.assert_allclose(a.mean(), 2500, rtol=1e-12)


def test_synthesised_sd_has_deep_dips():
    p = profiles.get("nlr-stable-diffusion-v2-4xh100-16n")
    x = p.power_w["r0"].to_numpy()
    deep = x < 0.5 * np.median(x)
    starts = np.flatnonzero(deep[1:] & ~deep[:-1])
    # cited: ~40 s dips, 64-67 % deep, every ≈ 344 s -> 1,602 s / 344 s ≈ 4-5 dips (+ the ramps)
    long_runs = [s for s in starts if deep[s + 1: s + 1 + int(30 / p.step_s)].mean() > 0.8]
    assert 4 <= len(long_runs) <= 5
    # the 16-node job's max 47.6 kW over 16 nodes = 2.98 kW per node (BACKGROUND 3.2)
    assert x.max() == pytest.approx(47.6e3 / 16, rel=0.05)


def test_synth_validation_messages():
    with pytest.raises(InputError, match=r"dip_depth must be in \[0, 1\)"):
        synth.TrainingShape(dip_depth=1.5)
    with pytest.raises(InputError, match="shorter than two steps"):
        synth.synth_training(synth.SD_SHAPE, duration_s=0.2, mean_w=2000, idle_w=500)


@pytest.mark.parametrize(("model", "hardware", "nodes"),
                         [("llama2-70b-lora", "4xH100", 32), ("stable-diffusion-v2", "4xH100", 3),
                          ("llama2-70b-lora", "8xH100-SXM", 16), ("gpt3-175b", "8xH100-SXM", 128)])
def test_job_profile_sits_on_the_fit(model, hardware, nodes):
    fit = scaling.training(model, hardware)
    p = profiles.job_profile(model, hardware, nodes, replicate=0, extrapolate=True)
    assert p.nodes == nodes
    assert p.duration_s == pytest.approx(fit.duration_s(nodes), rel=1e-9)
    assert p.mean_power_w == pytest.approx(fit.power_w_per_node(nodes), rel=1e-9)
    assert p.energy_wh * nodes / 1e3 == pytest.approx(fit.energy_kwh(nodes), rel=1e-9)
    assert p.extra["base"] in set(profiles.catalog()["name"])


def test_job_profile_errors():
    with pytest.raises(InputError, match=r"replicate=7 out of range.*0\.\.4"):
        profiles.job_profile("llama2-70b-lora", "4xH100", 4, replicate=7)
    with pytest.raises(InputError, match="nodes must be an integer >= 1"):
        profiles.job_profile("llama2-70b-lora", "4xH100", 0)


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(1, 4096), pick=st.sampled_from(scaling.TRAINING_FITS))
def test_job_profile_any_size_property(nodes, pick):
    model, hardware = pick
    fit = scaling.training(model, hardware)
    p = profiles.job_profile(model, hardware, nodes, extrapolate=True)
    assert p.duration_s == pytest.approx(fit.duration_s(nodes), rel=1e-9)
    assert p.mean_power_w == pytest.approx(fit.power_w_per_node(nodes), rel=1e-9)
    assert (p.power_w.to_numpy() >= 0).all()


@settings(max_examples=25, deadline=None)
@given(duration_s=st.floats(30, 2000), mean_w=st.floats(800, 6000), seed=st.integers(0, 2**32 - 1),
       deep=st.booleans())
def test_synth_training_mean_is_exact_property(duration_s, mean_w, seed, deep):
    shape = synth.SD_SHAPE if deep else synth.LORA_SHAPE
    frame = synth.synth_training(shape, duration_s=duration_s, mean_w=mean_w, idle_w=500,
                                 replicates=2, seed=seed)
    np.testing.assert_allclose(frame.mean().to_numpy(), mean_w, rtol=1e-9)
    assert (frame.to_numpy() >= 0).all()


def test_find_refuses_a_bool_node_count():
    with pytest.raises(InputError, match=r"nodes must be an integer >= 1, got True"):
        profiles.find("fine-tuning", hardware="4xH100", nodes=True)


def _profile(step_s, power_w):
    return profiles.Profile(name="x", workload="training", model="m", hardware="h",
                            gpus_per_node=4, nodes=1, step_s=step_s, power_w=power_w,
                            measured=True, source="s", license="l", citation="c", boundary="b")


def test_profile_step_must_be_the_labels_spacing():
    # labels 0.1 s apart with step_s = 1: duration and energy were 10 x too large, silently
    idx = pd.timedelta_range(0, periods=10, freq="100ms", name="elapsed")
    frame = pd.DataFrame({"r0": np.full(10, 500.0)}, index=idx)
    with pytest.raises(InputError, match=r"Profile 'x': label 1 is 0 days 00:00:00.100000, but "
                                         r"step_s = 1 s puts it at 0 days 00:00:01"):
        _profile(1.0, frame)
    good = _profile(0.1, frame)
    assert good.duration_s == pytest.approx(1.0) and good.energy_wh == pytest.approx(500.0 / 3600)


@pytest.mark.parametrize(("step_s", "values", "match"), [
    (float("nan"), np.ones(10), r"step_s: expected a finite number > 0 \[s\], got nan"),
    (0.1, np.r_[np.inf, np.ones(9)], r"power_w holds an infinite value at 0 days 00:00:00"),
])
def test_profile_refuses_a_nan_step_and_infinite_power(step_s, values, match):
    idx = pd.timedelta_range(0, periods=10, freq="100ms", name="elapsed")
    with pytest.raises(InputError, match=rf"Profile 'x': {match}"):
        _profile(step_s, pd.DataFrame({"r0": values}, index=idx))


def test_profile_needs_a_frame_not_a_series():
    idx = pd.timedelta_range(0, periods=10, freq="100ms", name="elapsed")
    with pytest.raises(InputError, match=r"power_w must be a DataFrame .*got Series.*to_frame"):
        _profile(0.1, pd.Series(np.ones(10), index=idx))
