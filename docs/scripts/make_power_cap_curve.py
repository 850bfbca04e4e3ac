"""Build ``aiload/facility/data/power_caps.json``: power-cap curves from measurements and papers.

Run from the project root: ``python docs/scripts/make_power_cap_curve.py [--data ../shared/data]``.

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

The GPU curves (``gpu-llm-training``, ``gpu-llm-inference``) are built from published
measurements of GPU power caps (energy and time ratios -> ``r = (E_c/E_u) * s``,
``s = T_u/T_c``); each point names its source and whether it was read from a stored copy of
the paper, from a stored secondary report of it, or transcribed from memory (to be checked).
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
HLRS = Path("llnl-last-power-provisioning") / "hlrs_hpl_hpcg_data"
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
            "source": f"HLRS Hawk 64-node HPL, {name} against hpl_uc ({what}); {LAST}",
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
        "points": sorted(points, key=lambda p: p["r"]),
        "runs": runs,
        "notes": [("HPCG gives no point: each HPCG run lasts ~32 min whatever the cap (a "
                   "set-time benchmark) and its GFLOP/s are not in the data. Power ratios to "
                   f"hpcg_uc: {hpcg}."),
                  ("hpl_uc and hpl_spc ran on the same 64 nodes (r14c3...), back to back; "
                   "hpl_dpc ran on another 64 (r10c1...).")],
    }


#: dimensionless relative throughput and power fraction from a published energy and time change
def from_energy_time(energy_change: float, time_change: float) -> tuple[float, float]:
    """``(r, s)`` from relative changes of energy and time to solution (e.g. -0.137, +0.068)."""
    s = 1.0 / (1.0 + time_change)
    return round((1.0 + energy_change) * s, 4), round(s, 4)


MCDONALD = ("McDonald, Li, Frey, Tiwari, Gadepally, Samsi, \"Great Power, Great Responsibility: "
            "Recommendations for Reducing Energy for Training Language Models\", Findings of "
            "NAACL 2022, arXiv:2205.09646")
SAMSI = ("Samsi, Zhao, McDonald, Li, Michaleas, Jones, Bergeron, Kepner, Tiwari, Gadepally, "
         "\"From Words to Watts: Benchmarking the Energy Costs of Large Language Model "
         "Inference\", IEEE HPEC 2023, arXiv:2310.03003")


def gpu_curves() -> dict:
    r_train, s_train = from_energy_time(-0.137, +0.068)
    r_inf, s_inf = from_energy_time(-0.23, +0.065)
    return {
        "gpu-llm-training": {
            "description": ("Transformer language-model training on NVIDIA GPUs (MIT "
                            "Supercloud) under a 150 W board power limit (default 250 W). r is "
                            "the GPU's power fraction, not the node's (CPUs, memory and fans "
                            "are not capped)."),
            "source": MCDONALD,
            "method": ("r = (1 + energy change) * s, s = 1 / (1 + training-time change), from "
                       "the published averages: energy -13.7 %, time +6.8 % at 150 W"),
            "points": [
                {"r": r_train, "s": s_train, "status": "secondary report, to be checked",
                 "source": (f"{MCDONALD}: 150 W cap, average over their larger NLP training "
                            "runs, energy -13.7 % and training time +6.8 % against 250 W, as "
                            "reported by dataconomy.ru (2022-06, 'Power capping can "
                            "significantly reduce energy usage when training ML'); the paper "
                            "itself was not read (its abstract: '15% decrease in energy usage "
                            "with marginal increase in overall computation time')")},
                {"r": 1.0, "s": 1.0, "status": "definition", "source": "uncapped"},
            ],
            "notes": ["One published point: the curve covers r >= "
                      f"{r_train}; deeper reductions need another lever (deferral)."],
        },
        "gpu-llm-inference": {
            "description": ("LLaMA inference on NVIDIA GPUs (the paper measures V100 and A100) "
                            "under a 175 W board power limit (default 250 W); GPU power "
                            "fraction."),
            "source": SAMSI,
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
            "notes": ["Memory-bound decode often draws less than a cap (Ma et al., "
                      "arXiv:2605.11999, H200: 137-300 W of 700 W in decode), so a cap above "
                      "the draw costs nothing and saves nothing; this curve is for a serving "
                      "load that draws near its limit."],
        },
    }


def build(data: Path) -> dict:
    curves = {"hpc-hpl": hlrs_curve(data)}
    curves.update(gpu_curves())
    return {
        "about": ("Power-cap curves: relative throughput s at power fraction r (mean capped / "
                  "uncapped power of the same work), points with their sources. status: "
                  "'measured' (computed here from bundled-source data), 'secondary report, to "
                  "be checked' (a published number read in a stored secondary report, not in "
                  "the paper), 'transcribed from memory, to be checked', 'definition' (1, 1). "
                  "Built by docs/scripts/make_power_cap_curve.py; see docs/flexibility.md."),
        "curves": curves,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the full shared data folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    table = build(args.data)
    args.out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, curve in table["curves"].items():
        pts = ", ".join(f"({p['r']:.3f}, {p['s']:.3f})" for p in curve["points"])
        print(f"{name:18s} {pts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
