"""The cuts of the bundled profiles keep the runs' energy: warm offline runs, whole run windows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import aiload.profiles as profiles

OFFLINE = "nlr-genai-power-profiles/01_aggregated_datasets/inference_offline_llama3_70b/metadata.csv"
SMC = "mlperf-training-v4.0-smc-power/smc-ac-power/results"


@pytest.mark.parametrize("tokens", [512, 1024])
def test_offline_profiles_are_the_warm_runs(data_dir, tokens):
    meta = pd.read_csv(data_dir / OFFLINE)
    runs = meta[(meta["batch_size"] == 500) & (meta["max_output_tokens"] == tokens)]
    energy_j = runs["mean_power[W]"] * runs["elapsed"]
    warm, cold = energy_j[runs["repeat"] >= 1], energy_j[runs["repeat"] == 0]
    p = profiles.get(f"nlr-llama3-70b-offline-4xh100-b500-{tokens}tok")
    assert p.replicates == len(warm) == 10
    # each replicate has its run's mean power over the median warm elapsed time
    assert sorted(p.power_w.mean().round(6)) == sorted(
        runs.loc[runs["repeat"] >= 1, "mean_power[W]"].round(6))
    assert p.duration_s == pytest.approx(runs.loc[runs["repeat"] >= 1, "elapsed"].median(), abs=0.1)
    # energy per run: the warm runs' mean (the median elapsed stands for each run's: 2 %)
    assert p.energy_wh * 3600 == pytest.approx(warm.mean(), rel=0.02)
    # the cold first runs (left out) take 5-15 % more energy
    assert 1.04 < cold.mean() / warm.mean() < 1.16


def _raw_readings(path):
    rows = [json.loads(line.split(":::MLLOG", 1)[1]) for line in path.read_text().splitlines()
            if '"power_reading"' in line]
    return np.array([r["time_ms"] for r in rows], float), np.array([r["value"] for r in rows], float)


def test_lora_64_node_profile_keeps_the_whole_run(data_dir):
    p = profiles.get("mlperf-llama2-70b-lora-8xh100-64n")
    run_s = (1715993244618 - 1715993128586) / 1e3  # run_start -> run_stop (SOURCE.md)
    # whole 2 s steps plus the partial last one, kept at its weight
    assert p.duration_s == pytest.approx(2 * np.ceil(run_s / 2))
    # SOURCE.md: sum over nodes of each node's mean reading 326.9 kW over the run
    assert p.energy_wh * 64 / 1e3 == pytest.approx(326.9 * run_s / 3600, rel=0.005)
    # a second estimate: each node's readings inside the run, trapezoid, per covered second
    folder = data_dir / SMC / "64xSMC-H100-SXM-80GB/llama2_70b_lora/power/result_5864-240518083207394458159_1"
    means = []
    for i in range(1, 65):
        t, w = _raw_readings(folder / f"node_{i}.txt")
        inside = (t >= 1715993128586) & (t <= 1715993244618)
        means.append(np.trapezoid(w[inside], t[inside]) / (t[inside][-1] - t[inside][0]))
    assert p.mean_power_w * p.duration_s / run_s == pytest.approx(np.mean(means), rel=0.005)


def test_gpt3_profile_energy_is_the_total_power_file(data_dir):
    p = profiles.get("mlperf-gpt3-175b-8xh100-64n")
    # total_power.txt: 415.22 kWh of all nodes over the measurement window
    assert p.energy_wh * 64 / 1e3 == pytest.approx(415.22, rel=0.002)
