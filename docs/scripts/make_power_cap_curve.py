"""Build ``aiload/facility/data/power_caps.json``: power-cap curves from measurements and papers.

Run from the project root: ``python docs/scripts/make_power_cap_curve.py [--data ../shared/data]``
(a few seconds); it also draws ``docs/figures/power_cap_curves.png``.

A power-cap curve gives the relative throughput ``s`` of a job whose power is held to the
fraction ``r`` of what it draws uncapped: ``r = P_capped / P_uncapped`` (mean power over the
run), ``s = T_uncapped / T_capped`` for a fixed amount of work (time to solution), so the
energy per unit of work is ``r / s`` times the uncapped one. Each curve is a list of points
``(r, s)`` with ``(1, 1)``; aiload interpolates linearly between them and never below the lowest.

``hpc-hpl`` (measured here): HLRS Hawk, 64 CPU nodes (2x AMD EPYC 7742 each), HPL run
uncapped (``hpl_uc``), under a static socket power limit (``hpl_spc``) and under a dynamic one
(``hpl_dpc``); per-node power every 2 s, from the LLNL LAST power-provisioning data set
(Patki et al., ICS 2025; CC BY 4.0). For each file:

1. the 64-node mean power per row (mean over the nodes that report in that row) [W]; nodes
   that never exceed the threshold of step 3 are left out (two in ``hpl_dpc``);
2. idle = median of that mean over the first 10 s of the file (all six files start idle);
   plateau = its median over the file;
3. the run = the first to the last row above ``idle + 0.25 (plateau - idle)``; its length is
   the time to solution (HPL solves one fixed problem); its mean power the run's mean.
   ``hpl_dpc`` (and ``hpcg_spc``) end before the nodes fall back to idle: the file stops in
   HPL's closing phase, so that run's time is a lower bound (``end_observed: false``).

HPCG gives no point: the three HPCG files last 32 min each whatever the cap (HPCG runs for a
set time and reports GFLOP/s, which the data do not hold), so their time says nothing about
throughput; their power ratios are listed as a note.

The GPU curves: ``gpu-llm-training`` (A40) and ``gpu-training-v100`` from the Zeus power
trace (You et al., NSDI 2023; rows kept in ``tests/data/zeus-nsdi23-power-trace``): BERT-base
fine-tuning on SQuAD at each NVML power limit, per batch size ``r`` = average GPU power / that at
the default limit and ``s`` = epoch time at the default limit / epoch time, the median over the
batch sizes a point. ``gpu-llm-inference``: one published point (energy and latency change at a
175 W limit -> ``r = (E_c/E_u) * s``, ``s = T_u/T_c``) read in a secondary summary, marked to be
checked. Each point names its source and status.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "aiload" / "facility" / "data" / "power_caps.json"
FIGURE = ROOT / "docs" / "figures" / "power_cap_curves.png"
HLRS = Path("llnl-last-power-provisioning") / "hlrs_hpl_hpcg_data"
#: the Zeus power-trace rows (SQuAD) kept with the tests (see their SOURCE.md)
ZEUS_DIR = ROOT / "tests" / "data" / "zeus-nsdi23-power-trace"
#: the site clock of the HLRS files (Stuttgart; March 2024 is before the change to summer time)
SITE_TZ = "Europe/Berlin"
#: the run is where the 64-node mean is above idle + this share of (plateau - idle)
THRESHOLD_SHARE = 0.25
#: seconds at each end of a file taken as idle
IDLE_EDGE_S = 10.0

LAST = ("Patki, Rountree, Wilde, Simmendinger, Schneider, Brink, Shoga, Zhao, Rrapaj, Wright, "
        "Shin, Maiterth, Rogers, Heiskanen, Bartolini, Idgunji, \"A Global Perspective on "
        "Supercomputer Power Provisioning: Case Studies from United States and Europe\", ACM ICS "
        "2025; data: LLNL/LAST Power-Provisioning-Dataset (CC BY 4.0), hlrs_hpl_hpcg_data")


def read_hlrs(path: Path) -> pd.DataFrame:
    """One HLRS node-power file: tz-aware ``time`` index, one column per node [W], ``hsmp``.

    Handles the file's quirks (UTF-8 BOM; one timestamp written ``2024-03-09, 10:30:29``,
    whose comma splits the row into one field too many).
    """
    with open(path, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], []
    for row in rows[1:]:
        if len(row) == len(header) + 1:  # the comma inside the timestamp
            row = [row[0] + row[1]] + row[2:]
        if len(row) != len(header):
            raise ValueError(f"{path}: a row of {len(row)} fields, header has {len(header)}")
        body.append(row)
    frame = pd.DataFrame(body, columns=header)
    time = pd.to_datetime(frame.pop("Time").str.replace(",", ""), format="%Y-%m-%d %H:%M:%S")
    frame = frame.replace("", np.nan).astype(float)
    frame.index = pd.DatetimeIndex(time).tz_localize(SITE_TZ)
    frame.index.name = "time"
    return frame


def run_summary(frame: pd.DataFrame) -> dict:
    """Run window, time to solution [s] and mean power [W] of one HLRS file (see module doc)."""
    nodes = [c for c in frame.columns if c.startswith("Node")]
    mean_w = frame[nodes].mean(axis=1).dropna()
    t_s = (mean_w.index - mean_w.index[0]).total_seconds()
    idle_w = float(mean_w[t_s <= IDLE_EDGE_S].median())
    plateau_w = float(mean_w.median())
    threshold_w = idle_w + THRESHOLD_SHARE * (plateau_w - idle_w)
    # a node that never draws more than the threshold is not running the job (or its meter
    # is not reading it): hpl_dpc has two, whose highest readings are 314 W and 355 W
    idle_nodes = [c for c in nodes if not frame[c].max() > threshold_w]
    running = [c for c in nodes if c not in idle_nodes]
    mean_w = frame[running].mean(axis=1).dropna()
    t_s = (mean_w.index - mean_w.index[0]).total_seconds()
    on = mean_w > threshold_w
    start, end = mean_w.index[on][0], mean_w.index[on][-1]
    run = mean_w[start:end]
    # hsmp is written when it changes (once in the static files): the value in force is the last
    hsmp = frame["hsmp"].ffill().loc[start:end].dropna()
    return {
        "nodes": len(nodes),
        "nodes_not_running": [c.removeprefix("Node ") for c in idle_nodes],
        "start": start.isoformat(), "end": end.isoformat(),
        "time_to_solution_s": (end - start).total_seconds(),
        "end_observed": bool(mean_w[t_s >= t_s[-1] - IDLE_EDGE_S].median() < threshold_w),
        "idle_node_w": round(idle_w, 1),
        "mean_node_w": round(float(run.mean()), 2),
        "socket_limit_w_min": round(float(hsmp.min()) / 1000.0, 3),
        "socket_limit_w_max": round(float(hsmp.max()) / 1000.0, 3),
    }


def hlrs_curve(data: Path) -> dict:
    runs = {name: run_summary(read_hlrs(data / HLRS / f"{name}.csv"))
            for name in ("hpl_uc", "hpl_spc", "hpl_dpc", "hpcg_uc", "hpcg_spc", "hpcg_dpc")}
    base = runs["hpl_uc"]
    points = []
    for name, what in (("hpl_spc", "static socket limit 172.5 W"),
                       ("hpl_dpc", "dynamic socket limit 164-204 W, time-averaged")):
        run = runs[name]
        points.append({
            "r": round(run["mean_node_w"] / base["mean_node_w"], 4),
            "s": round(base["time_to_solution_s"] / run["time_to_solution_s"], 4),
            "status": "measured",
            "source": (f"HLRS Hawk 64-node HPL, {name} against hpl_uc ({what})"
                       + ("" if run["end_observed"] else "; the file ends before the run does, "
                          "so s is an upper bound") + f"; {LAST}"),
        })
    points.append({"r": 1.0, "s": 1.0, "status": "measured",
                   "source": f"HLRS Hawk 64-node HPL uncapped (hpl_uc); {LAST}"})
    hpcg = {name: round(runs[name]["mean_node_w"] / runs["hpcg_uc"]["mean_node_w"], 4)
            for name in ("hpcg_spc", "hpcg_dpc")}
    return {
        "description": ("HPL (dense linear algebra, compute bound) on 64 CPU-only nodes of HLRS "
                        "Hawk (2x AMD EPYC 7742 per node) under a socket power limit set through "
                        "AMD HSMP (the files' hsmp column, read as mW per socket: 240 W "
                        "uncapped, 172.5 W static); node power at the node's meter. A facility-"
                        "level analogue for GPU jobs, not a GPU measurement."),
        "source": LAST,
        "method": ("r = mean node power over the run / uncapped; s = uncapped time to solution "
                   "/ capped; the run is where the 64-node mean exceeds idle + "
                   f"{THRESHOLD_SHARE} (plateau - idle); built by "
                   "docs/scripts/make_power_cap_curve.py"),
        "power_scope": "node",
        "points": sorted(points, key=lambda p: p["r"]),
        "runs": runs,
        "notes": [("HPCG gives no point: each HPCG run lasts ~32 min whatever the cap (a "
                   "set-time benchmark) and its GFLOP/s are not in the data. Power ratios to "
                   f"hpcg_uc: {hpcg}."),
                  ("hpl_uc and hpl_spc ran on the same 64 nodes (r14c3...), back to back; "
                   "hpl_dpc ran on another 64 (r10c1...).")],
    }


def from_energy_time(energy_change: float, time_change: float) -> tuple[float, float]:
    """``(r, s)`` from relative changes of energy and time to solution (e.g. -0.137, +0.068)."""
    s = 1.0 / (1.0 + time_change)
    return round((1.0 + energy_change) * s, 4), round(s, 4)


ZEUS = ("You, Chung, Chowdhury, \"Zeus: Understanding and Optimizing GPU Energy Consumption of "
        "DNN Training\", USENIX NSDI 2023; data: ml-energy/zeus, "
        "examples/research_reproducibility/zeus_nsdi23/trace (Apache-2.0)")
MCDONALD = ("McDonald, Li, Frey, Tiwari, Gadepally, Samsi, \"Great Power, Great Responsibility: "
            "Recommendations for Reducing Energy for Training Language Models\", Findings of "
            "NAACL 2022, arXiv:2205.09646")
SAMSI = ("Samsi, Zhao, McDonald, Li, Michaleas, Jones, Bergeron, Kepner, Tiwari, Gadepally, "
         "\"From Words to Watts: Benchmarking the Energy Costs of Large Language Model "
         "Inference\", IEEE HPEC 2023, arXiv:2310.03003")
#: the GPUs' default (uncapped) power limits in the Zeus trace [W]
ZEUS_DEFAULT_W = {"a40": 300, "v100": 250}


def zeus_points(zeus: Path, gpu: str) -> list[dict]:
    """Median ``(r, s)`` over the SQuAD batch sizes at each power limit of the Zeus trace."""
    rows = pd.read_csv(zeus / f"summary_power_{gpu}_squad.csv")
    base = rows[rows.power_limit == ZEUS_DEFAULT_W[gpu]].set_index("batch_size")
    rows = rows.assign(
        r=rows.average_power / rows.batch_size.map(base.average_power),
        s=rows.batch_size.map(base.time_per_epoch) / rows.time_per_epoch)
    points = []
    for limit, group in rows.groupby("power_limit"):
        if limit == ZEUS_DEFAULT_W[gpu]:
            continue
        points.append({
            "r": round(float(group.r.median()), 4), "s": round(float(group.s.median()), 4),
            "status": "measured",
            "source": (f"{gpu.upper()} at a {limit} W limit (default "
                       f"{ZEUS_DEFAULT_W[gpu]} W), BERT-base fine-tuning on SQuAD, median of "
                       f"{len(group)} batch sizes (s from {group.s.min():.3f} to "
                       f"{group.s.max():.3f}); {ZEUS}"),
        })
    points.append({"r": 1.0, "s": 1.0, "status": "measured",
                   "source": f"{gpu.upper()} at its default {ZEUS_DEFAULT_W[gpu]} W; {ZEUS}"})
    return points


def interp(points: list[dict], r: float) -> float:
    return float(np.interp(r, [p["r"] for p in points], [p["s"] for p in points]))


def gpu_curves(zeus: Path) -> dict:
    a40, v100 = zeus_points(zeus, "a40"), zeus_points(zeus, "v100")
    r_mc, s_mc = from_energy_time(-0.137, +0.068)
    r_inf, s_inf = from_energy_time(-0.23, +0.065)
    zeus_method = ("per batch size r = average GPU power / that at the default limit, s = epoch "
                   "time at the default limit / epoch time; the point is the median over the "
                   "batch sizes at each limit; built by docs/scripts/make_power_cap_curve.py from "
                   "tests/data/zeus-nsdi23-power-trace")
    return {
        "gpu-llm-training": {
            "description": ("Transformer training on one NVIDIA A40 (Ampere, 300 W default) "
                            "under NVML power limits of 100-275 W: BERT-base fine-tuning on "
                            "SQuAD, the closest measured trace found (no LLM-scale training "
                            "under power limits was found in a readable source). r is the "
                            "GPU's power fraction, not the node's: CPUs, memory, network and "
                            "fans are not capped (see PowerCapCurve.for_node)."),
            "source": ZEUS, "power_scope": "gpu", "method": zeus_method,
            "points": a40,
            "notes": [("Below about r = 0.63 (150 W) the A40's throughput falls faster than "
                       "its power: energy per unit of work r/s rises above 1 (1.6 at 100 W); "
                       "the least energy per unit of work is at 200 W (r/s = "
                       f"{min(p['r'] / p['s'] for p in a40):.3f}).")],
        },
        "gpu-training-v100": {
            "description": ("The same BERT-base SQuAD fine-tuning on one NVIDIA V100 (250 W "
                            "default) under limits of 100-225 W; GPU power fraction."),
            "source": ZEUS, "power_scope": "gpu", "method": zeus_method,
            "points": v100,
            "notes": [(f"Cross-check: {MCDONALD} report (as read in a secondary report, "
                       "dataconomy.ru, 2022-06; the paper not read) energy -13.7 % and training "
                       "time +6.8 % for their larger language-model training runs at a 150 W "
                       f"limit of 250 W on MIT Supercloud GPUs: r = {r_mc}, s = {s_mc}; this "
                       f"curve at r = {r_mc} gives s = {interp(v100, r_mc):.3f}.")],
        },
        "gpu-llm-inference": {
            "description": ("LLaMA inference on NVIDIA GPUs (the paper measures V100 and A100) "
                            "under a 175 W board power limit (default 250 W); GPU power "
                            "fraction. One point, from a secondary summary."),
            "source": SAMSI, "power_scope": "gpu",
            "method": ("r = (1 + energy change) * s, s = 1 / (1 + latency change), from the "
                       "published change at 175 W: energy -23 %, latency +6.5 % (reported as "
                       "6-7 %)"),
            "points": [
                {"r": r_inf, "s": s_inf, "status": "secondary report, to be checked",
                 "source": (f"{SAMSI}: 250 -> 175 W cap, total energy about -23 % with "
                            "about +6-7 % latency, as summarised by app.argminai.com (an "
                            "automated summary of arXiv:2310.03003); the paper itself was not "
                            "read")},
                {"r": 1.0, "s": 1.0, "status": "definition", "source": "uncapped"},
            ],
            "notes": [("Memory-bound decode often draws less than a cap (Ma et al., "
                       "arXiv:2605.11999, H200: 137-300 W of 700 W in decode), so a cap above "
                       "the draw costs nothing and saves nothing; this curve is for a serving "
                       "load that draws near its limit."),
                      ("MLPerf Inference v4.1, Llama-2-70B Offline on 8x H200: the power-"
                       "limited MaxQ submission (in the shared data: 25,262 tokens/s at 6,153 W "
                       "mean wall power) gives 0.807 of the MaxP submission's 31,302.7 tokens/s "
                       "(mlcommons/inference_results_v4.1, closed/NVIDIA/results/"
                       "H200-SXM-141GBx8_TRT, commit a2f5d66, read from a stored copy); MaxP "
                       "power is not measured in any source here, so it gives no point.")],
        },
    }


def build(data: Path, zeus: Path = ZEUS_DIR) -> dict:
    curves = {"hpc-hpl": hlrs_curve(data)}
    curves.update(gpu_curves(zeus))
    return {
        "about": ("Power-cap curves: relative throughput s at power fraction r (mean capped / "
                  "uncapped power of the same work; power_scope says whose power: the node's "
                  "or the GPU's), points with their sources. status: 'measured' (computed here "
                  "from measured data: the shared HLRS files, the Zeus trace rows in "
                  "tests/data), 'secondary report, to be checked' (a published number read in "
                  "a stored secondary report, not in the paper), 'transcribed from memory, to "
                  "be checked', 'definition' (1, 1). Built by "
                  "docs/scripts/make_power_cap_curve.py; see docs/flexibility.md."),
        "curves": curves,
    }


def figure(table: dict, path: Path) -> None:
    """Relative throughput and energy per unit of work against power fraction, every curve."""
    from matplotlib.figure import Figure  # only for the figure

    fig = Figure(figsize=(9.0, 3.8), dpi=90)
    ax_s, ax_e = fig.subplots(1, 2)
    for name, curve in table["curves"].items():
        r = np.array([p["r"] for p in curve["points"]])
        s = np.array([p["s"] for p in curve["points"]])
        measured = np.array([p["status"] in ("measured", "definition") for p in curve["points"]])
        label = f"{name} ({curve['power_scope']} power)"
        line, = ax_s.plot(r, s, "-", label=label)
        ax_s.plot(r[~measured], s[~measured], "o", mfc="white", color=line.get_color())
        ax_s.plot(r[measured], s[measured], "o", color=line.get_color())
        ax_e.plot(r, r / s, "o-", color=line.get_color())
    ax_s.plot([0.4, 1], [0.4, 1], ":", color="grey", lw=0.8)
    ax_s.set(xlabel="power fraction r (capped / uncapped mean power) [-]",
             ylabel="relative throughput s [-]", title="throughput under a power cap")
    ax_e.axhline(1.0, ls=":", color="grey", lw=0.8)
    ax_e.set(xlabel="power fraction r [-]", ylabel="energy per unit of work r/s [-]",
             title="energy per unit of work (1 = uncapped)")
    ax_s.legend(fontsize=7, loc="lower right")
    fig.text(0.01, 0.01, "open marker: a published figure read in a secondary report, to be "
             "checked", fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the full shared data folder")
    parser.add_argument("--zeus", type=Path, default=ZEUS_DIR,
                        help="the Zeus power-trace rows (default: tests/data/zeus-nsdi23-...)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--figure", type=Path, default=FIGURE,
                        help="where to draw the curves (docs/figures/power_cap_curves.png)")
    args = parser.parse_args(argv)
    table = build(args.data, args.zeus)
    args.out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    figure(table, args.figure)
    for name, curve in table["curves"].items():
        pts = ", ".join(f"({p['r']:.3f}, {p['s']:.3f})" for p in curve["points"])
        print(f"{name:18s} {pts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
