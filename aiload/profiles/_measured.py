"""Measured per-node profiles built from the real traces (used by :mod:`aiload.profiles.build`).

Every file is read with :func:`aiload.read_trace` (never re-parsed here); a run's node
files are put on a common 2 s grid of interval means (energy conserved, see
:mod:`aiload.traces.combine`), cut to the training log's ``run_start`` -> ``run_stop``
and divided by the node count: the per-node profile of a job whose nodes run in phase.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.profiles import _node_power
from aiload.resampling import integrate_samples
from aiload.traces import combine, read_trace

__all__ = ["MLPERF_TRAINING_RUNS", "H200_RUNS", "build_measured", "write_profiles"]

_SMC = Path("mlperf-training-v4.0-smc-power/smc-ac-power/results")
_H200 = Path("mlperf-inference-v4.1-h200-power/closed/NVIDIA/results/H200-SXM-141GBx8_TRT_MaxQ")
_MLPERF_TRAIN_SRC = ("MLPerf Training v4.0, Sustainable Metal Cloud (mlcommons/training_results_v4.0, "
                     "commit 6fe95437), smc-ac-power/results/{system}/{bench}/power/{run}")
_MLPERF_TRAIN_CITE = ("MLCommons, MLPerf Training v4.0 results, submitter Sustainable Metal Cloud, "
                      "https://github.com/mlcommons/training_results_v4.0. MLPerf is a trademark of MLCommons.")
_H200_SRC = ("MLPerf Inference v4.1, NVIDIA H200-SXM-141GBx8_TRT_MaxQ (mlcommons/inference_results_v4.1, "
             "commit 198fc467), {bench}/{scenario}/performance/run_1/spl.txt")
_H200_CITE = ("MLCommons, MLPerf Inference v4.1 results, submitter NVIDIA, "
              "https://github.com/mlcommons/inference_results_v4.1. MLPerf is a trademark of MLCommons.")
_WATT_CITE = ("WattAMeter example logs, NatLabRockies/WattAMeter commit 1060d909 (BSD-3-Clause, "
              "Copyright (c) 2025, Alliance for Energy Innovation, LLC).")

#: (name, model, workload, system folder, benchmark, run folder, nodes, run_start_ms, run_stop_ms)
#: run_start/run_stop: read from the result log when it is in shared/data; for the two 64-node
#: runs the logs were not copied and the values are those listed in the folder's SOURCE.md.
MLPERF_TRAINING_RUNS = (
    ("mlperf-gpt3-175b-8xh100-64n", "gpt3-175b", "training", "64xSMC-H100-SXM-80GB", "gpt3",
     "result_5848-240517221859825376616_2", 64, 1715960307022, 1715963719692),
    ("mlperf-llama2-70b-lora-8xh100-64n", "llama2-70b-lora", "fine-tuning", "64xSMC-H100-SXM-80GB",
     "llama2_70b_lora", "result_5864-240518083207394458159_1", 64, 1715993128586, 1715993244618),
    ("mlperf-llama2-70b-lora-8xh100-8n", "llama2-70b-lora", "fine-tuning", "8xSMC-H100-SXM-80GB",
     "llama2_70b_lora", "result_5742-240517053836692164828_10", 8, None, None),
    ("mlperf-llama2-70b-lora-8xh100-1n", "llama2-70b-lora", "fine-tuning", "1xSMC-H100-SXM-80GB",
     "llama2_70b_lora", "result_5027-240510020224961918558_1", 1, None, None),
)

#: (name, model, workload, benchmark folder, scenario)
H200_RUNS = (
    ("mlperf-llama2-70b-server-8xh200", "llama2-70b", "online-inference", "llama2-70b-99", "Server"),
    ("mlperf-llama2-70b-offline-8xh200", "llama2-70b", "offline-inference", "llama2-70b-99", "Offline"),
    ("mlperf-mixtral-8x7b-server-8xh200", "mixtral-8x7b", "online-inference", "mixtral-8x7b", "Server"),
    ("mlperf-mixtral-8x7b-offline-8xh200", "mixtral-8x7b", "offline-inference", "mixtral-8x7b", "Offline"),
)

_STEP_TRAIN_S = 2.0


def _run_window_ms(log: Path) -> tuple[int, int]:
    """``run_start`` and ``run_stop`` epoch ms of an MLPerf training result log."""
    found = {}
    with log.open(encoding="utf-8") as fh:
        for line in fh:
            if '"run_start"' in line or '"run_stop"' in line:
                rec = json.loads(line.split(":::MLLOG", 1)[1])
                found[rec["key"]] = int(rec["time_ms"])
    if set(found) != {"run_start", "run_stop"}:
        raise InputError(f"{log}: expected run_start and run_stop MLLOG lines, found {sorted(found)}.")
    return found["run_start"], found["run_stop"]


def _elapsed_frame(values: np.ndarray, step_s: float) -> pd.DataFrame:
    index = pd.timedelta_range(start=pd.Timedelta(0), periods=len(values),
                               freq=pd.Timedelta(seconds=step_s), name="elapsed")
    return pd.DataFrame({"r0": np.asarray(values, dtype=np.float64)}, index=index)


def _run_window_profile(folder: Path, nodes: int, start_ms: int,
                        stop_ms: int) -> tuple[np.ndarray, float, float, float]:
    """Per-node interval means of a run on a grid from ``run_start`` [W], the per-node energy
    of the run [J], the share of the run's node-seconds the logs cover [-] and the length of
    the last interval [s] (its value is kept at its partial weight: value x step = energy)."""
    files = sorted(folder.glob("node_*.txt"))
    if len(files) != nodes:
        raise InputError(f"{folder}: expected {nodes} node_*.txt files, found {len(files)}.")
    step_ns = int(round(_STEP_TRAIN_S * 1e9))
    start_ns, stop_ns = start_ms * 1_000_000, stop_ms * 1_000_000
    edges = np.arange(start_ns, stop_ns, step_ns, dtype=np.int64)
    edges = np.append(edges, stop_ns)
    energy = np.zeros(edges.size - 1)
    covered = np.zeros(edges.size - 1)
    for path in files:
        trace = read_trace(path)
        t_ns = trace.power_w.index.as_unit("ns").asi8
        clipped = np.clip(edges, t_ns[0], t_ns[-1])  # outside its log a node adds nothing
        values = trace.total_w().to_numpy(np.float64)[:, None]
        energy += integrate_samples(t_ns, values, clipped)[:, 0]
        covered += np.diff(clipped) / 1e9
    inside = np.flatnonzero(covered > 0)
    if inside.size == 0 or inside.size != inside[-1] - inside[0] + 1:
        raise InputError(f"{folder}: {int((covered <= 0).sum())} interval(s) of the run window are "
                         "covered by no node log; expected logs spanning run_start->run_stop.")
    length_s = np.diff(edges) / 1e9
    mean_w = np.empty_like(energy)
    mean_w[inside] = energy[inside] / covered[inside]
    # at the very ends (the last few ms of a run may follow every log's last reading) the
    # level of the nearest covered interval is held
    mean_w[:inside[0]] = mean_w[inside[0]]
    mean_w[inside[-1] + 1:] = mean_w[inside[-1]]
    per_node_j = float((mean_w * length_s).sum())
    return (mean_w * length_s / _STEP_TRAIN_S, per_node_j,
            float(covered.sum() / (nodes * length_s.sum())), float(length_s[-1]))


def _mlperf_training(data: Path) -> tuple[list[dict], list[dict], dict]:
    profiles, points, idle = [], [], {}
    for name, model, workload, system, bench, run, nodes, start_ms, stop_ms in MLPERF_TRAINING_RUNS:
        folder = data / _SMC / system / bench / "power" / run
        if start_ms is None:
            start_ms, stop_ms = _run_window_ms(data / _SMC / system / bench / f"{run}.txt")
        per_node, energy_j, covered, last_s = _run_window_profile(folder, nodes, start_ms, stop_ms)
        duration_s = (stop_ms - start_ms) / 1e3
        mean_w = energy_j / duration_s
        src = _MLPERF_TRAIN_SRC.format(system=system, bench=bench, run=run)
        profiles.append(dict(
            name=name, workload=workload, model=model, hardware="8xH100-SXM", gpus_per_node=8,
            nodes=nodes, step_s=_STEP_TRAIN_S, power_w=_elapsed_frame(per_node, _STEP_TRAIN_S),
            measured=True, extra={"measured_step_s": _STEP_TRAIN_S}, source=src,
            license="Apache-2.0", citation=_MLPERF_TRAIN_CITE,
            boundary="AC input power of the node (MLPerf power_reading, SMC-H100-AC-Power)",
            notes=(f"Each of the {nodes} node logs integrated exactly (linear between its readings) "
                   f"over a {_STEP_TRAIN_S:g} s grid from run_start to run_stop ({duration_s:.2f} s); "
                   "the per-node mean of an interval is the energy of the node logs that cover it over "
                   f"their covered seconds (the nodes run in phase; the logs cover {covered:.1%} of the "
                   f"run's node-seconds). The last interval covers {last_s:.3f} s of the run and holds "
                   "that energy at its partial weight (value x step = energy), so the profile's energy "
                   "is the run's."),
        ))
        for quantity, value in (("power_w_per_node", mean_w), ("duration_s", duration_s),
                                ("energy_kwh", mean_w * nodes * duration_s / 3.6e6)):
            points.append(dict(model=model, hardware="8xH100-SXM", nodes=nodes, quantity=quantity,
                               value=value, source=f"computed from {src} (run_start->run_stop)"))
        if nodes == 1:
            # the 1-node log runs ~1 min past run_stop: the node steps down from ~2.95 kW (job
            # processes still holding the GPUs) and settles ~40 s after run_stop
            total = combine([(None, read_trace(folder))], step_s=_STEP_TRAIN_S).total_w()
            after = total[total.index >= pd.Timestamp(stop_ms, unit="ms", tz="UTC")]
            level_w, count = _node_power.settled_level(after)
            idle["8xH100-SXM"] = dict(
                power_w=level_w, series=after.to_numpy(np.float64)[-count:], step_s=_STEP_TRAIN_S,
                source=src, citation=_MLPERF_TRAIN_CITE, license="Apache-2.0",
                boundary="AC input power of the node",
                notes=(f"Median of the last {count} interval means of 2 s of the log, after its last "
                       "step down of more than 100 W past run_stop: the level the node settles at "
                       "once the job has ended (not a dedicated idle measurement). The former 2,737 W "
                       "was the median from run_stop + 10 s, mostly before the node settled."))
    return profiles, points, idle


def _h200(data: Path) -> tuple[list[dict], dict]:
    profiles, pre = [], []
    for name, model, workload, bench, scenario in H200_RUNS:
        spl = data / _H200 / bench / scenario / "performance/run_1/spl.txt"
        trace = read_trace(spl)
        whole = read_trace(spl, window="all")
        power = trace.power_w["node"].to_numpy(np.float64)
        # 1 s analyzer samples on a 1 s grid: each sample is taken as that second's mean
        profiles.append(dict(
            name=name, workload=workload, model=model, hardware="8xH200-SXM", gpus_per_node=8,
            nodes=1, step_s=1.0, power_w=_elapsed_frame(power, 1.0), measured=True,
            extra={"measured_step_s": 1.0},
            source=_H200_SRC.format(bench=bench, scenario=scenario), license="Apache-2.0",
            citation=_H200_CITE, boundary="AC input power of the server (SPEC PTDaemon analyzer, 3 channels)",
            notes=("1 s analyzer samples inside LoadGen's power_begin->power_end window "
                   f"({len(power)} s), each taken as the mean of its second."),
        ))
        pre.append(whole.power_w["node"].iloc[:60].to_numpy(np.float64))
    series = pre[0]
    idle = {"8xH200-SXM": dict(
        power_w=float(np.median(np.concatenate(pre))), series=series, step_s=1.0,
        source=_H200_SRC.format(bench="<all four runs>", scenario="<scenario>"), citation=_H200_CITE,
        license="Apache-2.0", boundary="AC input power of the server",
        notes="Median of the first 60 s of the four spl.txt logs, before the benchmark starts.")}
    return profiles, idle


def _wattameter_idle(data: Path) -> dict:
    idle = _node_power.wattameter_idle(data)
    implied = _node_power.facility_implied_idle(data)
    solves = [v[c]["idle_w"] for v in implied.values() for c in ("util_mean", "avg_utilization")]
    return {"4xH100": dict(
        power_w=idle["power_w"], series=idle["series"], step_s=idle["step_s"], source=(
            "WattAMeter examples/post-process/{nvml,rapl}_wattameter.log (NatLabRockies/WattAMeter)"),
        citation=_WATT_CITE, license="BSD-3-Clause",
        boundary="GPU (NVML, 4 GPUs) + CPU (RAPL packages) components",
        notes=(f"GPU sum {idle['gpu_idle_w']:.1f} W (median of its first {idle['gpu_idle_window_s']:.1f} s, "
               f"all four GPUs idle) + CPU sum {idle['cpu_idle_w']:.1f} W (mean of its first "
               f"{idle['cpu_idle_window_s']:.1f} s, before the job's processes raise it to ~220 W) of "
               "the idle->load example log of one NLR Kestrel node. The former 521 W was the median "
               "of the first 6 s: GPUs idle but CPUs already busy. The NLR facility statistics "
               f"imply {min(solves):.0f}-{max(solves):.0f} W (two solves per facility, see "
               "facility_implied); the measurement is used."),
        gpu_idle_w=idle["gpu_idle_w"], cpu_idle_w=idle["cpu_idle_w"],
        gpu_idle_window_s=idle["gpu_idle_window_s"], cpu_idle_window_s=idle["cpu_idle_window_s"],
        former_w=idle["old_figure_w"], facility_implied=implied)}


def build_measured(data: Path) -> tuple[list[dict], pd.DataFrame, dict]:
    """Measured profiles (as dicts of :class:`~aiload.profiles.Profile` fields), the MLPerf
    training points [W, s, kWh] and the idle levels per hardware [W]."""
    train, points, idle = _mlperf_training(data)
    inf, idle_h200 = _h200(data)
    idle.update(idle_h200)
    idle.update(_wattameter_idle(data))
    idle_profiles = []
    for hardware, info in sorted(idle.items()):
        gpus = int(hardware.split("x")[0])
        idle_profiles.append(dict(
            name=f"idle-{hardware.lower()}", workload="idle", model="none", hardware=hardware,
            gpus_per_node=gpus, nodes=1, step_s=info["step_s"],
            power_w=_elapsed_frame(info["series"], info["step_s"]), measured=True,
            extra={"measured_step_s": info["step_s"]},
            source=info["source"], license=info["license"], citation=info["citation"],
            boundary=info["boundary"], notes=info["notes"]))
    idle_json = {h: {k: v for k, v in info.items() if k != "series"} for h, info in idle.items()}
    return train + inf + idle_profiles, pd.DataFrame(points), idle_json


def write_profiles(profiles: list[dict], out: Path, write_atomic) -> None:
    """Write the series (one Parquet, float32, long form) and the metadata (JSON)."""
    frames = []
    for p in profiles:
        s = p["power_w"]["r0"]
        frames.append(pd.DataFrame({"name": p["name"], "i": np.arange(len(s), dtype=np.int32),
                                    "power_w": s.to_numpy(np.float32)}))
    series = pd.concat(frames, ignore_index=True)
    meta = [{k: v for k, v in p.items() if k != "power_w"} for p in profiles]
    write_atomic(out / "measured_profiles.parquet", lambda tmp: series.to_parquet(tmp, index=False))
    write_atomic(out / "measured_profiles.json", lambda tmp: tmp.write_text(json.dumps(meta, indent=1)))
