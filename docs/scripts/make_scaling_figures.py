"""Make the figures of docs/scaling.md and docs/profiles.md: ``docs/figures/scaling_*.png``.

Run from the project root: ``python docs/scripts/make_scaling_figures.py``. Everything plotted
comes from the bundled data of :mod:`aiload.profiles` (built from ``../shared/data``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402
import numpy as np  # noqa: E402

from aiload import profiles  # noqa: E402
from aiload.profiles import scaling  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "figures"
DPI = 90
ORIGIN_STYLE = {"cited": ("o", "C0"), "derived": ("s", "C1"), "trace": ("D", "C2")}


def _fit_text(r2: float, max_res: float, unit: str) -> str:
    r2_text = "n/a" if np.isnan(r2) else f"{r2:.3f}"
    return f"R² = {r2_text}\nmax |res| = {max_res:,.3g} {unit}"


def _minor_label(value: float, _pos) -> str:
    mantissa = value / 10 ** np.floor(np.log10(value))
    return f"{value:g}" if round(mantissa) in (2, 5) else ""


def training_figure() -> Path:
    fits = [scaling.training(m, h) for m, h in scaling.TRAINING_FITS]
    quantities = (("duration_s", "job duration [h]", 1 / 3600, "h"),
                  ("power_w_per_node", "per-node mean power [kW]", 1e-3, "kW"),
                  ("energy_kwh", "job energy [kWh]", 1.0, "kWh"))
    fig, axes = plt.subplots(3, len(fits), figsize=(13, 8.5), sharex="col")
    for j, fit in enumerate(fits):
        nodes = fit.points["nodes"].to_numpy()
        grid = np.geomspace(max(1, nodes.min() / 2), nodes.max() * 2, 100)
        for i, (q, label, k, unit) in enumerate(quantities):
            ax = axes[i, j]
            curve = {"duration_s": fit.duration_s, "power_w_per_node": fit.power_w_per_node,
                     "energy_kwh": fit.energy_kwh}[q](grid)
            ax.plot(grid, np.asarray(curve) * k, color="0.3", lw=1.5, label="fit")
            pts = fit.points[fit.points["quantity"] == q]
            for origin, g in pts.groupby("origin"):
                marker, color = ORIGIN_STYLE[origin]
                ax.plot(g["nodes"], g["value"] * k, marker, color=color, ms=7, label=origin)
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            if q == "duration_s":
                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
                ax.yaxis.set_minor_formatter(ticker.FuncFormatter(_minor_label))
            elif q == "energy_kwh":
                top = max(float(np.max(np.asarray(curve) * k)), float(pts["value"].max() * k))
                ax.set_ylim(0, top * 1.15)
            res = fit.residuals[fit.residuals["quantity"] == q]
            y_text = 0.05 if q == "energy_kwh" else 0.95  # energy curves rise to the right
            ax.text(0.97, y_text, _fit_text(fit.r2[q], res["residual"].abs().max() * k, unit),
                    transform=ax.transAxes, ha="right", va="bottom" if y_text < 0.5 else "top", fontsize=8,
                    bbox=dict(boxstyle="round", fc="white", ec="0.8"))
            if j == 0:
                ax.set_ylabel(label)
            if i == 0:
                ax.set_title(f"{fit.model}\n{fit.hardware}", fontsize=10)
            if i == 2:
                ax.set_xlabel("nodes")
            ax.grid(alpha=0.3, which="both")
    handles = {h.get_label(): h for ax in axes.flat for h in ax.get_lines()}
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, frameon=False)
    fig.suptitle("Training scaling fits: d(n) = d₁·n^(−α), P(n) = p₁ + s·log₂n, E = P·n·d", fontsize=11)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    path = OUT / "scaling_training.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def online_figure() -> Path:
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    for color, dataset in zip(("C0", "C3"), scaling.ONLINE_DATASETS, strict=True):
        fit = scaling.online_inference("4xH100", dataset)
        pts = fit.points
        ax.plot(pts["request_rate_per_s"], pts["mean_power_w"] / 1e3, ".", color=color, alpha=0.6,
                label=f"{dataset} runs")
        rate = np.linspace(0, 100, 400)
        ax.plot(rate, fit.power_w(rate) / 1e3, color=color, lw=1.8,
                label=(f"fit: {fit.p0_w:,.0f} W + {fit.slope_w_per_rps:.1f}·λ, plateau "
                       f"{fit.p_sat_w / 1e3:.2f} kW (R² {fit.r2:.3f}, max |res| {fit.max_abs_residual:.0f} W)"))
        for ls, tokens in zip(("-", "--", ":"), (256, 512, 1024), strict=True):
            cap = scaling.online_inference("4xH100", dataset, output_tokens=tokens).capacity
            ax2.plot(cap["request_rate_per_s"], cap["request_throughput_per_s"], ls, marker=".",
                     color=color, label=f"{dataset}, {tokens} output tokens")
    ax.axhline(profiles.idle_power_w("4xH100") / 1e3, color="0.5", lw=1, ls="--")
    ax.text(1, profiles.idle_power_w("4xH100") / 1e3 + 0.04, "idle (WattAMeter example log)",
            ha="left", fontsize=8, color="0.4")
    ax.set_xlabel("request rate λ [requests/s]")
    ax.set_ylabel("mean node power [kW] (GPU+CPU)")
    ax.set_ylim(0, 3.2)
    ax.set_title("NLR Llama-3.1-70B on 4xH100: node power vs sustained rate", fontsize=10)
    ax.legend(fontsize=7.5, loc="center right")
    ax.grid(alpha=0.3)
    ax2.set_xscale("log")
    ax2.set_xlabel("offered request rate [requests/s] (1,000-prompt pool)")
    ax2.set_ylabel("achieved throughput [requests/s]")
    ax2.set_title("Node capacity: throughput saturates", fontsize=10)
    ax2.legend(fontsize=7, ncol=2)
    ax2.grid(alpha=0.3, which="both")
    fig.tight_layout()
    path = OUT / "scaling_online.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def offline_figure() -> Path:
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for color, tokens in zip(("C0", "C3"), (512, 1024), strict=True):
        fit = scaling.offline_energy_per_prompt(tokens)
        pts = fit.points
        ax.plot(pts["batch_size"], pts["energy_per_prompt_j"], ".", color=color, alpha=0.35,
                ms=4, label=f"runs, max {tokens} output tokens")
        b = np.linspace(25, 1000, 300)
        ax.plot(b, fit.energy_j(b), color=color, lw=1.8,
                label=(f"fit {fit.e_inf_j:.0f} + {fit.a_j:,.0f}·b^−{fit.c:.2f} J "
                       f"(R² {fit.r2:.3f}, max |res| {fit.max_abs_residual:.0f} J)"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(ticker.FuncFormatter(_minor_label))
    ax.set_xlabel("batch size b [prompts submitted at once]")
    ax.set_ylabel("energy per prompt [J] (GPU+CPU, one node)")
    ax.set_title("NLR offline Llama-3-70B on 4xH100: energy per prompt", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    path = OUT / "scaling_offline.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def library_figure() -> Path:
    names = ("mlperf-gpt3-175b-8xh100-64n", "mlperf-llama2-70b-lora-8xh100-8n",
             "mlperf-llama2-70b-server-8xh200", "nlr-llama2-70b-lora-4xh100-16n",
             "nlr-stable-diffusion-v2-4xh100-16n", "nlr-llama3-70b-offline-4xh100-b500-512tok")
    fig, axes = plt.subplots(3, 2, figsize=(12, 8))
    for ax, name in zip(axes.flat, names, strict=True):
        p = profiles.get(name)
        t_min = p.power_w.index.total_seconds() / 60
        ax.plot(t_min, p.power_w.iloc[:, 0] / 1e3, lw=0.6, color="C2" if p.measured else "C0")
        kind = "measured" if p.measured else "synthesised"
        ax.set_title(f"{name} ({kind}, {p.step_s:g} s)", fontsize=9)
        ax.set_ylabel("kW per node")
        ax.set_ylim(0, None)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("elapsed [min]")
    fig.tight_layout()
    path = OUT / "scaling_library_examples.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def job_profile_figure() -> Path:
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for n, color in ((1, "C0"), (8, "C1"), (64, "C2"), (256, "C3")):
        p = profiles.job_profile("llama2-70b-lora", "8xH100-SXM", n)
        ax.plot(p.power_w.index.total_seconds() / 60, p.power_w["r0"] / 1e3, lw=0.9, color=color,
                label=f"{n} nodes: {p.duration_s / 60:.1f} min, {p.mean_power_w / 1e3:.2f} kW mean "
                      f"(base {p.extra['base'].split('-')[-1]})")
    ax.set_xlabel("elapsed [min]")
    ax.set_ylabel("kW per node (AC)")
    ax.set_title("job_profile: Llama-2-70B LoRA on 8xH100-SXM, any node count", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = OUT / "scaling_job_profiles.png"
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for make in (training_figure, online_figure, offline_figure, library_figure, job_profile_figure):
        path = make()
        print(f"{path} ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
