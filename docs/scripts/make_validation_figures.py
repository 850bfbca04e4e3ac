"""Figures and the table of docs/validation.md. Run from the project root:

    python docs/scripts/make_validation_figures.py

Writes ``docs/figures/validation_*.png`` (dpi 90) and prints the NLR comparison table in
Markdown. Simulated series are aiload's (one year 2018 at 1 min, seed 1, as in
``python -m benchmarks --only validation``); the cluster panels are the real Helios/Philly
occupancy series in ``../shared/data`` and the published queue times of the Acme summary.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks import bench_validation as bv  # noqa: E402

import aiload  # noqa: E402
from aiload.facility.arrivals import fitted, hour_of_week_factor  # noqa: E402
from aiload.facility.presets import colocation_10mw  # noqa: E402

FIG = ROOT / "docs" / "figures"
DPI = 90
FIT = ROOT / "aiload" / "facility" / "data" / "arrivals_helios_earth.json"


def arrivals_fit() -> None:
    fit = json.loads(FIT.read_text())
    raw, colo = fitted("helios-earth"), fitted("colocation")
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(14, 3.9))
    hours = np.arange(24)
    a.bar(hours, fit["fit"]["hour_of_day_raw"], color="0.8",
          label="Helios vc6YE: submissions per hour of day / mean (measured)")
    monday = pd.Timestamp("2018-01-01", tz="UTC")
    t = (hours + 0.5) * 3600.0 + 86400.0  # a Tuesday
    a.plot(hours, hour_of_week_factor(t, monday, raw), "k-", label="fit (3 harmonics), Tuesday")
    a.plot(hours, hour_of_week_factor(t, monday, colo), "C1--",
           label="colocation preset, a weekday (x 1.148)")
    a.plot(hours, hour_of_week_factor(t + 4 * 86400.0, monday, colo), "C1:",
           label="colocation preset, a weekend day (x 0.630)")
    a.set_xlabel("local hour of day")
    a.set_ylabel("relative submission rate [-]")
    a.legend(fontsize=7)
    lags = np.array(fit["fit"]["lags_h"])
    b.plot(lags, fit["fit"]["log_pair_correlation"], "o", color="0.4", ms=3,
           label="ln pair correlation of hourly counts (measured)")
    grid = np.linspace(0.5, lags.max(), 200)
    b.plot(grid, raw.sigma2 * np.exp(-grid * 3600.0 / raw.tau_s), "k-",
           label=f"σ² e$^{{-s/τ}}$: σ² = {raw.sigma2:.2f}, τ = {raw.tau_s / 3600:.1f} h")
    slow = fit["fit"]["slow_component_not_used"]
    b.plot(grid, raw.sigma2 * np.exp(-grid * 3600.0 / raw.tau_s)
           + slow["sigma2"] * np.exp(-grid / slow["tau_h"]), "k:",
           label=f"+ slow component (not used): σ² = {slow['sigma2']:.3f}, "
                 f"τ = {slow['tau_h']:.0f} h")
    b.axhline(0, color="0.7", lw=0.8)
    b.set_xlabel("lag [h]")
    b.set_title("hours (helios-earth)", fontsize=9)
    b.legend(fontsize=7)
    fine = fit["fit"]["minute_scale"]
    mlags = np.arange(1, len(fine["log_pair_correlation_1_360min"]) + 1)
    c.plot(mlags, fine["log_pair_correlation_1_360min"], "o", color="0.4", ms=2,
           label="ln pair correlation of minute counts (measured)")
    mgrid = np.linspace(1, mlags.max(), 300)
    c.plot(mgrid, fine["sigma2_minutes"] * np.exp(-mgrid / fine["tau_min"])
           + fine["sigma2_hours"] * np.exp(-mgrid / fine["tau_hours_min"]), "k-",
           label=f"fit: {fine['sigma2_minutes']:.2f} at τ = {fine['tau_min']:.1f} min "
                 f"+ {fine['sigma2_hours']:.2f} at {fine['tau_hours_min']:.0f} min")
    c.plot(mgrid, colo.sigma2 * np.exp(-mgrid * 60.0 / colo.tau_s), "C1--",
           label=f"colocation clusters: σ² = {colo.sigma2:.2f} (chosen), "
                 f"τ = {colo.tau_s / 60:.1f} min")
    c.axhline(0, color="0.7", lw=0.8)
    c.set_xlabel("lag [min]")
    c.set_title("minutes (sweeps submitted together)", fontsize=9)
    c.legend(fontsize=7)
    fig.suptitle("Job submissions of a real GPU cluster and the fitted log-Gaussian Cox process",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(FIG / "validation_arrivals_fit.png", dpi=DPI)
    plt.close(fig)


def utilisation_and_waits(loads: dict) -> None:
    colo = bv.nlr_table("colocation_10mw")
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for k, (u, load) in enumerate(loads.items()):
        busy = np.sort(load.power["busy_nodes"].to_numpy() / 2840)[::-1]
        share = np.linspace(0, 100, len(busy))
        a.plot(share, busy, color=f"C{k}", label=f"aiload u = {u} (simulated)")
        ref = colo.loc[u]
        a.plot([0, 10, 50], [ref["util_max"], ref["util_p90"], ref["util_median"]], "s",
               color=f"C{k}", mfc="none", ms=8, label=f"NLR u = {u}: max, P90, median")
        a.axhline(ref["util_mean"], color=f"C{k}", ls=":", lw=0.8)
    for k, (name, series) in enumerate(bv.cluster_occupancy().items()):
        a.plot(np.linspace(0, 100, len(series)), np.sort(series)[::-1], color=f"C{k + 2}",
               lw=1, label=f"{name} (measured)")
    a.set_xlabel("share of the minutes [%]")
    a.set_ylabel("busy fraction [-]")
    a.set_title("Occupancy duration curves", fontsize=9)
    a.legend(fontsize=6.5)
    for k, (u, load) in enumerate(loads.items()):
        wait = load.jobs["queue_wait_s"].dropna().to_numpy()
        wait = np.sort(np.maximum(wait, 1.0))
        b.plot(wait / 3600.0, np.linspace(0, 1, len(wait)), color=f"C{k}",
               label=f"aiload u = {u} (simulated)")
    marks = list(bv.PUBLISHED_WAITS_S.items())
    for k, (name, (mean_s, median_s)) in enumerate(marks):
        b.plot(mean_s / 3600.0, 0.97 - 0.04 * k, "v", color=f"C{k + 4}",
               label=f"{name}: mean (published)")
    b.set_xscale("log")
    b.set_xlim(1e-3, 100)
    b.set_xlabel("queue wait [h] (no wait drawn at 1 s)")
    b.set_ylabel("share of jobs [-]")
    b.set_title("Queue waits", fontsize=9)
    b.legend(fontsize=6.5, loc="lower right")
    fig.tight_layout()
    fig.savefig(FIG / "validation_occupancy_waits.png", dpi=DPI)
    plt.close(fig)


def steady_start() -> None:
    spec = colocation_10mw(0.8)

    cold = dataclasses.replace(spec, streams=(dataclasses.replace(spec.streams[0],
                                                                  burn_in_s=0.0),))
    fig, ax = plt.subplots(figsize=(10, 3.4))
    for label, s, style in (("burn-in of 4 days, typical start (default)", spec, "C0-"),
                            ("no burn-in (empty cluster at start)", cold, "C3-")):
        load = aiload.facility(s, start="2018-01-01 00:00+00:00", end="7D", freq="15min",
                               seed=1, progress=False)
        ax.plot(load.power.index, load.power["it_kw"] / 1e3, style, lw=1, label=label)
    ax.set_ylabel("IT power [MW] (simulated)")
    ax.set_title("colocation-10mw, u = 0.8, from Monday 2018-01-01 00:00 UTC, seed 1",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "validation_steady_start.png", dpi=DPI)
    plt.close(fig)


def steady_start_table() -> None:
    """Issue 13's start check over seeds: the first two hours' mean IT power over the week's
    mean, a week from Monday 2018-01-01 00:00 UTC at 15 min, u = 0.8."""
    spec = colocation_10mw(0.8)
    stream = spec.streams[0]

    def with_stream(**kw):
        return dataclasses.replace(spec, streams=(dataclasses.replace(stream, **kw),))

    free = dataclasses.replace(stream.arrival_process, typical_start=False)
    cases = (("burn-in 4 days, typical start (default)", spec, range(1, 33)),
             ("burn-in 4 days, free start (`typical_start=False`)",
              with_stream(arrival_process=free), range(1, 33)),
             ("burn-in 8 days, free start",
              with_stream(arrival_process=free, burn_in_s=8 * 86400.0), range(1, 33)),
             ("empty cluster at start (no burn-in, free start)",
              with_stream(arrival_process=free, burn_in_s=0.0), range(1, 9)))
    print("| start (u = 0.8, IT power, 15 min) | first 2 h / week's mean | more than 30 % off |")
    print("|---|---|---|")
    for label, s, seeds in cases:
        ratios = []
        for seed in seeds:
            it = aiload.facility(s, start="2018-01-01 00:00+00:00", end="7D", freq="15min",
                                 seed=seed, progress=False).power["it_kw"].to_numpy()
            ratios.append(it[:8].mean() / it.mean())
        r = np.array(ratios)
        print(f"| {label}, seeds {seeds[0]}-{seeds[-1]} | mean {r.mean():.2f}, sd {r.std():.2f}, "
              f"{r.min():.2f}-{r.max():.2f} | {int((np.abs(r - 1) > 0.3).sum())} of {len(r)} |")
    year = aiload.facility(spec, start="2018-01-01 00:00+00:00", end="2019-01-01 00:00+00:00",
                           freq="15min", seed=1, progress=False).power["it_kw"].to_numpy()
    weeks = year[:52 * 672].reshape(52, 672)
    r = weeks[:, :8].mean(axis=1) / weeks.mean(axis=1)
    q = np.percentile(r, [25, 50, 75])
    print(f"| every Monday of 2018 inside one run (seed 1) | quartiles {q[0]:.2f} / {q[1]:.2f} / "
          f"{q[2]:.2f}, min {r.min():.2f} | {int((np.abs(r - 1) > 0.3).sum())} of 52 |")


def campus_pue(pue: pd.Series) -> None:
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar(pue.index.strftime("%b"), pue.to_numpy(), color="C0")
    ax.set_ylim(1.0, max(1.5, float(pue.max()) + 0.05))
    ax.set_ylabel("meter / IT energy [-]")
    ax.set_title("campus-100mw, 2018 at 15 min: PUE by month (simulated; pvlib Greensboro TMY)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(FIG / "validation_campus_pue.png", dpi=DPI)
    plt.close(fig)


def markdown_table(stats: dict, table: pd.DataFrame, keys) -> str:
    lines = ["| statistic | " + " | ".join(f"aiload u={u} | NLR u={u}" for u in stats) + " |",
             "|---|" + "---|---|" * len(stats)]
    for key in keys:
        cells = []
        for u, s in stats.items():
            ref = float(table.loc[u, key])
            ratio = f" ({s[key] / ref - 1:+.1%})" if ref else ""
            cells += [f"{s[key]:.4g}{ratio}", f"{ref:.4g}"]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    FIG.mkdir(exist_ok=True)
    arrivals_fit()
    steady_start()
    steady_start_table()
    colo = bv.nlr_table("colocation_10mw")
    stats, loads = {}, {}
    for u in colo.index:
        stats[u], loads[u] = bv.colocation_case(float(u))
    utilisation_and_waits(loads)
    print(markdown_table(stats, colo, bv.COLOCATION_KEYS))
    infer = bv.nlr_table("inference_1mw")
    istats = {u: bv.inference_case(float(u))[0] for u in infer.index}
    print(markdown_table(istats, infer, bv.INFERENCE_KEYS))
    pue = bv.campus_pue_by_month()
    campus_pue(pue)
    print(pue.round(3).to_string())


if __name__ == "__main__":
    main()
