"""Figures of docs/facility.md. Run from the project root:

    python docs/scripts/make_facility_figures.py

Writes ``docs/figures/facility_*.png`` (dpi 90). Simulated series are labelled as simulated;
the Helios/Philly panels are the real occupancy series in ``../shared/data``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

import aiload.facility as fac  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIG = ROOT / "docs" / "figures"
DATA = ROOT.parent / "shared" / "data" / "helios-philly-cluster-occupancy"
START = pd.Timestamp("2025-01-06 00:00", tz="America/New_York")  # a Monday
PRESETS = {
    "colocation-10mw": {"utilization": 0.6},
    "inference-1mw": {"utilization": 0.5},
    "campus-100mw": {},
}
PCTS = (0, 10, 25, 50, 75, 90, 100)
DPI = 90


def event_flow() -> None:
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.2)
    ax.axis("off")
    boxes = {
        "spec": (0.1, 3.0, "FacilitySpec\nfleet · streams ·\ninference · overheads"),
        "arr": (2.6, 3.0, "arrivals (numpy)\nPoisson + thinning\nor replay"),
        "simpy": (5.1, 3.0, "SimPy engine\nqueue · FIFO/EASY ·\nstart · end · autoscale"),
        "log": (7.6, 3.0, "event log\nstart/end times,\nreplica changes"),
        "prof": (0.1, 0.9, "workload catalogue\nper-node profiles,\nP(λ) curve"),
        "sum": (2.6, 0.9, "numpy summation\ncumulative energy at\nbin edges (exact)"),
        "over": (5.1, 0.9, "overheads\nUPS/distribution loss,\ncooling (PUE / dry-bulb)"),
        "out": (7.6, 0.9, "FacilityLoad\nit/losses/cooling/\nfacility_kw, jobs"),
    }
    for key, (x, y, text) in boxes.items():
        colour = "#fde2c4" if key == "simpy" else "#dbe9f6"
        ax.add_patch(FancyBboxPatch((x, y), 2.2, 1.0, boxstyle="round,pad=0.05",
                                    fc=colour, ec="#34495e"))
        ax.text(x + 1.1, y + 0.5, text, ha="center", va="center", fontsize=9)
    arrows = [("spec", "arr"), ("arr", "simpy"), ("simpy", "log"), ("prof", "sum"),
              ("sum", "over"), ("over", "out")]
    for a, b in arrows:
        xa, ya, _ = boxes[a]
        xb, yb, _ = boxes[b]
        ax.annotate("", (xb - 0.05, yb + 0.5), (xa + 2.25, ya + 0.5),
                    arrowprops=dict(arrowstyle="->", lw=1.5))
    ax.annotate("", (3.7, 1.95), (8.7, 2.95), arrowprops=dict(arrowstyle="->", lw=1.5,
                                                                connectionstyle="arc3,rad=0.15"))
    ax.text(6.6, 2.2, "when: start times, replicas", fontsize=9, style="italic")
    ax.set_title("Facility model: SimPy decides when, numpy sums how much", fontsize=11)
    fig.savefig(FIG / "facility_event_flow.png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)


def weeks_and_bands() -> None:
    fig_w, axes_w = plt.subplots(3, 1, figsize=(10, 7.5), sharex=False)
    fig_b, axes_b = plt.subplots(3, 2, figsize=(10, 9))
    for i, (name, kw) in enumerate(PRESETS.items()):
        year = fac.facility(name, start=START, end=START + pd.Timedelta(days=364), freq="15min",
                            seed=1, progress=False, **kw)
        p = year.power["facility_kw"] / 1e3
        week = p[: 7 * 96]
        ax = axes_w[i]
        ax.plot(week.index, week.to_numpy(), lw=0.8, color="#1f77b4")
        ax.set_ylabel("facility [MW]")
        ax.set_title(f"{name} {kw or ''} — one simulated week (15-min means)", fontsize=10)
        ax.grid(alpha=0.3)
        local = p.tz_convert(START.tz)
        for j, (key, labels) in enumerate([(local.index.hour, range(24)),
                                           (local.index.dayofweek, range(7))]):
            groups = pd.Series(local.to_numpy()).groupby(np.asarray(key))
            q = groups.quantile([pc / 100 for pc in PCTS]).unstack()
            axb = axes_b[i, j]
            x = np.asarray(list(labels))
            axb.fill_between(x, q[0.0], q[1.0], color="#c6dbef", label="0–100 %")
            axb.fill_between(x, q[0.1], q[0.9], color="#9ecae1", label="10–90 %")
            axb.fill_between(x, q[0.25], q[0.75], color="#6baed6", label="25–75 %")
            axb.plot(x, q[0.5], color="#08306b", label="median")
            axb.set_ylabel("facility [MW]")
            axb.set_xlabel("hour of day (local)" if j == 0 else "day of week (0 = Monday)")
            axb.set_title(f"{name}: simulated year", fontsize=9)
            axb.grid(alpha=0.3)
        if i == 0:
            axes_b[0, 0].legend(fontsize=7, loc="lower right")
    fig_w.tight_layout()
    fig_w.savefig(FIG / "facility_week.png", dpi=DPI)
    fig_b.tight_layout()
    fig_b.savefig(FIG / "facility_bands.png", dpi=DPI)
    plt.close("all")


def occupancy() -> None:
    philly = pd.read_csv(DATA / "philly_node_sequence.csv", parse_dates=["time"])
    helios = pd.read_csv(DATA / "Earth_vcs/vc6YE/cluster_sequence_vc.csv", parse_dates=["time"])
    sim = fac.facility("colocation-10mw", start=START, end=START + pd.Timedelta(days=28),
                       freq="1min", seed=2, progress=False, utilization=0.8)
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
    ax = axes[0, 0]
    days = lambda t: (t - t.iloc[0]).dt.total_seconds() / 86400  # noqa: E731
    ph = philly[philly["time"] < philly["time"].iloc[0] + pd.Timedelta(days=28)]
    ax.plot(days(ph["time"]), ph["active"] / ph["total"], lw=0.5, label="Philly (real)")
    he = helios[helios["time"] < helios["time"].iloc[0] + pd.Timedelta(days=28)]
    ax.plot(days(he["time"]), he["gpu_utilization"], lw=0.5, label="Helios Earth vc6YE (real)")
    ax.set_ylabel("occupied share")
    ax.set_xlabel("day")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    ax.set_title("Real clusters: busy nodes/GPUs, first 28 days", fontsize=9)
    ax = axes[0, 1]
    busy = sim.power["busy_nodes"] / 2840
    ax.plot(np.arange(len(busy)) / 1440, busy.to_numpy(), lw=0.5, color="#d62728",
            label="colocation-10mw u=0.8 (simulated)")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("day")
    ax.legend(fontsize=8)
    ax.set_title("Model: busy nodes / fleet", fontsize=9)
    ax = axes[1, 0]
    bins = np.linspace(0, 1, 41)
    ax.hist(ph["active"] / ph["total"], bins=bins, density=True, alpha=0.5, label="Philly")
    ax.hist(he["gpu_utilization"], bins=bins, density=True, alpha=0.5, label="Helios vc6YE")
    ax.hist(busy, bins=bins, density=True, alpha=0.5, label="model u=0.8")
    ax.set_xlabel("occupied share (1-min)")
    ax.legend(fontsize=8)
    ax.set_title("Occupancy distribution", fontsize=9)
    ax = axes[1, 1]
    wait = sim.jobs["queue_wait_s"].dropna() / 60
    ax.hist(np.clip(wait, 0, 120), bins=60, color="#d62728", alpha=0.7, label="model jobs")
    ax.set_yscale("log")
    ax.set_xlabel("queue wait [min] (clipped at 120)")
    ax.set_title(f"Model queue waits: {100 * (wait > 0).mean():.0f} % of jobs wait, "
                 f"mean {wait.mean():.1f} min\n(Helios GPU jobs: mean 862 s, median 0 s)",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "facility_occupancy.png", dpi=DPI)
    plt.close(fig)


def main() -> None:
    FIG.mkdir(parents=True, exist_ok=True)
    event_flow()
    occupancy()
    weeks_and_bands()


if __name__ == "__main__":
    main()
