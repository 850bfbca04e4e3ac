"""Make the gallery of docs/metrics.md from real data in ../shared/data.

Run from the project root: ``.venv/bin/python docs/scripts/make_metrics_figures.py``.
Writes ``docs/figures/metrics_*.png`` and prints the summary figures quoted in the page.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from aiload import read_trace
from aiload.metrics import (
    plot_calendar_bands,
    plot_comparison,
    plot_load_duration,
    plot_percentile_bands,
    plot_psd,
    plot_ramp_histogram,
    summary,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("AILOAD_SHARED_DATA", ROOT.parent / "shared" / "data"))
OUT = ROOT / "docs" / "figures"
MLPERF = DATA / "mlperf-training-v4.0-smc-power" / "smc-ac-power" / "results"
GPT3 = MLPERF / "64xSMC-H100-SXM-80GB/gpt3/power/result_5848-240517221859825376616_2"
INFER = (
    DATA / "mlperf-inference-v4.1-h200-power/closed/NVIDIA/results/H200-SXM-141GBx8_TRT_MaxQ/"
    "llama2-70b-99/Server/performance/run_1/spl.txt"
)
LLNL = DATA / "llnl-last-power-provisioning"


def save(fig, name: str) -> None:
    path = OUT / name
    fd, tmp = tempfile.mkstemp(suffix=".png", dir=OUT)
    os.close(fd)
    fig.savefig(tmp, dpi=90)
    os.replace(tmp, path)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} kB)")


def llnl(name: str, label: str) -> pd.Series:
    frame = pd.read_csv(LLNL / name)
    frame.columns = [c.strip('"') for c in frame.columns]
    idx = pd.DatetimeIndex(pd.to_datetime(frame["timestamp_secs"], unit="s", utc=True))
    return pd.Series(frame["measured_kW"].to_numpy(float), index=idx, name=f"{label}_kw")


def longest_regular_stretch(s: pd.Series, step_s: float) -> pd.Series:
    breaks = np.flatnonzero(np.diff(s.index.asi8) != step_s * 1e9) + 1
    pieces = np.split(np.arange(len(s)), breaks)
    return s.iloc[max(pieces, key=len)]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    gpt3 = read_trace(GPT3)  # 64 nodes, interval means on a common 2-s grid
    total = gpt3.total_w().rename("gpt3_64_nodes_w")
    nodes = gpt3.power_w.copy()
    nodes.columns = [f"{c}_w" for c in nodes.columns]
    nodes.index = (nodes.index - nodes.index[0]).rename("elapsed")
    # the first 6 minutes: start-up and the ~11-s training-step oscillation stay visible
    nodes = nodes[nodes.index < pd.Timedelta(minutes=6)]
    save(plot_percentile_bands(nodes, title="GPT-3 on 64 nodes (8×H100 each): spread across nodes"),
         "metrics_percentile_bands.png")
    save(plot_ramp_histogram(total, title="GPT-3, 64 nodes"), "metrics_ramps.png")
    save(plot_psd(total, title="GPT-3, 64 nodes: PSD of the summed node power"), "metrics_psd.png")

    hawk = llnl("Hawk_power_15_min.csv", "hawk")
    hawk = longest_regular_stretch(hawk[hawk > 0], 900.0).tz_convert("Europe/Berlin")
    save(plot_calendar_bands(hawk, title="HLRS Hawk, Mar–Dec 2023 (15-min means)"), "metrics_calendar.png")
    lumi = longest_regular_stretch(llnl("Lumi_power_10_min.csv", "lumi"), 600.0)
    save(plot_load_duration({"HLRS Hawk (15 min)": hawk, "LUMI (10 min)": lumi},
                            title="load-duration curves of two supercomputers"),
         "metrics_load_duration.png")

    infer = read_trace(INFER).total_w().rename("inference_w")
    node = read_trace(GPT3 / "node_1.txt").total_w().rename("training_w")
    save(plot_comparison({"training: GPT-3, one 8×H100 node": node,
                          "inference: Llama-2-70B Server, 8×H200": infer},
                         title="training vs inference, one node each (MLPerf)"),
         "metrics_comparison.png")

    with pd.option_context("display.width", 160, "display.max_rows", 200):
        for name, s, kind in (("GPT-3 64 nodes", total, "intervals"), ("Hawk", hawk, "intervals")):
            table = summary(s, kind=kind)
            print(f"\n## {name}\n", table[["metric", "window", "value", "unit", "available"]].to_string())


if __name__ == "__main__":
    main()
