"""Inference scaling fits: online power vs request rate and capacity; offline energy per prompt.

Public through :mod:`aiload.profiles.scaling` (see its docstring and ``docs/scaling.md``).
Data: the NLR GenAI power dataset (Vercellino et al., arXiv:2604.07345, DOI 10.7799/3025227,
CC BY 4.0), one 4xH100 node, Llama-3(.1)-70B on vLLM.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize

from aiload.errors import InputError
from aiload.profiles._bundle import read_bundled_csv
from aiload.profiles._fitting import positive_array, r_squared, residual_frame
from aiload.profiles.idle import idle_power_w

__all__ = ["InferenceScaling", "OfflineEnergyFit", "online_inference", "offline_energy_per_prompt",
           "ONLINE_DATASETS"]

#: short dataset names of the NLR online runs -> the ``dataset-path`` in the metadata
ONLINE_DATASETS = {
    "instructcoder": "likaixin/InstructCoder",
    "mlperf-llama2": "mgoin/mlperf-inference-llama2-data",
}


# --------------------------------------------------------------------------- online inference


@dataclass(frozen=True)
class InferenceScaling:
    """Per-node power of online inference against request rate, and node capacity.

    Attributes
    ----------
    hardware, dataset : str
        What was fitted.
    output_tokens : int
        Output length of the capacity runs used by :meth:`capacity_per_s` [tokens].
    p0_w : float
        Fitted intercept [W].
    slope_w_per_rps : float
        Fitted slope [W per (request/s)].
    knee_rps : float
        Request rate where the power saturates [requests/s].
    idle_w : float
        Per-node idle power of the hardware [W].
    points : pandas.DataFrame
        ``request_rate_per_s, mean_power_w`` of the runs fitted.
    capacity : pandas.DataFrame
        Per request rate of the finite-pool runs: medians of ``request_throughput_per_s``
        and ``median_e2e_latency_s`` over the repeats.
    r2 : float
        R² of the power fit [-].
    residuals : pandas.DataFrame
        ``request_rate_per_s, quantity, observed, fitted, residual`` [W].
    max_abs_residual : float
        Largest absolute power residual [W].
    """

    hardware: str
    dataset: str
    output_tokens: int
    p0_w: float
    slope_w_per_rps: float
    knee_rps: float
    idle_w: float
    points: pd.DataFrame = field(repr=False)
    capacity: pd.DataFrame = field(repr=False)
    r2: float = float("nan")
    residuals: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    max_abs_residual: float = float("nan")

    @property
    def p_sat_w(self) -> float:
        """Saturation (plateau) per-node power [W]."""
        return self.p0_w + self.slope_w_per_rps * self.knee_rps

    def power_w(self, rate_per_s) -> np.ndarray | float:
        """Per-node mean power at a request rate [W] (vectorised; rate in requests/s >= 0)."""
        rate = np.asarray(rate_per_s, dtype=float)
        if np.any(~np.isfinite(rate)) or np.any(rate < 0):
            raise InputError(f"rate_per_s must be finite and >= 0 [requests/s], got {rate_per_s!r}.")
        out = self.p0_w + self.slope_w_per_rps * np.minimum(rate, self.knee_rps)
        return float(out) if out.ndim == 0 else out

    def capacity_per_s(self, latency_target_s: float | None = None) -> float:
        """Requests/s one node serves within a median end-to-end latency target [requests/s].

        ``None`` gives the saturation throughput (median over the repeats of the runs at the
        highest offered rates, >= 500 requests/s). Otherwise the achieved throughput is
        interpolated linearly on the offered-rate grid at the point where the median E2E
        latency reaches ``latency_target_s`` [s].
        """
        cap = self.capacity
        if latency_target_s is None:
            return float(cap.loc[cap["request_rate_per_s"] >= 500, "request_throughput_per_s"].median())
        lat = cap["median_e2e_latency_s"].to_numpy()
        thr = cap["request_throughput_per_s"].to_numpy()
        if not np.isfinite(latency_target_s) or latency_target_s < lat[0]:
            raise InputError(
                f"latency_target_s={latency_target_s!r} s is below the lowest median E2E latency "
                f"measured for {self.dataset}/{self.output_tokens} tokens ({lat[0]:.2f} s at "
                f"{cap['request_rate_per_s'].iloc[0]:g} requests/s); give a target >= {lat[0]:.2f} s."
            )
        # latency grows with offered rate; keep the monotone envelope before interpolating
        lat_env = np.maximum.accumulate(lat)
        return float(np.interp(latency_target_s, lat_env, thr))


def _fit_saturating(rate: np.ndarray, power: np.ndarray) -> tuple[float, float, float]:
    """Least-squares ``P0 + k min(rate, knee)``: linear in (P0, k) for a fixed knee."""

    def sse(knee: float) -> float:
        a = np.column_stack([np.ones_like(rate), np.minimum(rate, knee)])
        coef, *_ = np.linalg.lstsq(a, power, rcond=None)
        return float(((a @ coef - power) ** 2).sum())

    grid = np.unique(rate)[1:-1]
    best = grid[int(np.argmin([sse(k) for k in grid]))]
    lo, hi = grid[max(0, np.searchsorted(grid, best) - 1)], grid[min(len(grid) - 1, np.searchsorted(grid, best) + 1)]
    knee = optimize.minimize_scalar(sse, bounds=(lo, hi), method="bounded").x
    a = np.column_stack([np.ones_like(rate), np.minimum(rate, knee)])
    (p0, k), *_ = np.linalg.lstsq(a, power, rcond=None)
    return float(p0), float(k), float(knee)


@functools.lru_cache(maxsize=None)
def _online_cached(hardware: str, dataset: str, output_tokens: int) -> InferenceScaling:
    if hardware != "4xH100":
        raise InputError(
            f"online-inference scaling exists only for hardware '4xH100' (NLR runs), got "
            f"{hardware!r}; use aiload.profiles.find('online-inference', hardware={hardware!r}) "
            "for a measured profile instead."
        )
    if dataset not in ONLINE_DATASETS:
        raise InputError(f"dataset {dataset!r} unknown; expected one of {sorted(ONLINE_DATASETS)}.")
    rate_runs = read_bundled_csv("nlr_online_rate.csv")
    pts = rate_runs[rate_runs["dataset"] == dataset][["request_rate_per_s", "mean_power_w"]]
    pts = pts.sort_values("request_rate_per_s", ignore_index=True)
    r, p = pts["request_rate_per_s"].to_numpy(float), pts["mean_power_w"].to_numpy(float)
    p0, k, knee = _fit_saturating(r, p)
    finite = read_bundled_csv("nlr_online_finite.csv")
    sel = finite[(finite["dataset"] == dataset) & (finite["output_tokens"] == output_tokens)]
    if sel.empty:
        raise InputError(
            f"output_tokens={output_tokens!r} not measured; expected one of "
            f"{sorted(finite['output_tokens'].unique().tolist())}."
        )
    cap = (sel.groupby("request_rate_per_s")[["request_throughput_per_s", "median_e2e_latency_s"]]
           .median().reset_index())
    fitted = p0 + k * np.minimum(r, knee)
    res = residual_frame("request_rate_per_s", r, "power_w", p, fitted)
    return InferenceScaling(hardware, dataset, output_tokens, p0, k, knee, idle_power_w(hardware),
                            pts, cap, r_squared(p, fitted), res, float(res["residual"].abs().max()))


def online_inference(hardware: str = "4xH100", dataset: str = "instructcoder", *,
                     output_tokens: int = 512) -> InferenceScaling:
    """Per-node power against request rate and node capacity of online LLM inference.

    Fitted to the NLR Llama-3.1-70B vLLM runs on one 4xH100 node: the sustained-rate runs
    (1-100 requests/s) for power, the finite-pool runs for throughput and latency.

    Parameters
    ----------
    hardware : str
        Only ``"4xH100"`` has such runs.
    dataset : str
        ``"instructcoder"`` or ``"mlperf-llama2"``.
    output_tokens : int
        Output length of the capacity runs: 256, 512 or 1024 [tokens].

    Examples
    --------
    >>> fit = online_inference()
    >>> 2700 < fit.p_sat_w < 2950
    True
    """
    return _online_cached(hardware, dataset, int(output_tokens))


# --------------------------------------------------------------------------- offline inference


@dataclass(frozen=True)
class OfflineEnergyFit:
    """Energy per prompt of offline (batch) inference against batch size.

    ``e(b) = e_inf_j + a_j * b ** (-c)``.

    Attributes
    ----------
    max_output_tokens : int
        Output length cap of the runs [tokens].
    e_inf_j, a_j, c : float
        Fitted asymptote [J], amplitude [J] and exponent [-].
    points : pandas.DataFrame
        ``batch_size, energy_per_prompt_j`` of every run (mean power x elapsed / batch size).
    r2 : float
        R² on all runs [-].
    residuals : pandas.DataFrame
        ``batch_size, quantity, observed, fitted, residual`` [J].
    max_abs_residual : float
        Largest absolute residual [J].
    """

    max_output_tokens: int
    e_inf_j: float
    a_j: float
    c: float
    points: pd.DataFrame = field(repr=False)
    r2: float = float("nan")
    residuals: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    max_abs_residual: float = float("nan")

    def energy_j(self, batch_size) -> np.ndarray | float:
        """Fitted energy per prompt at a batch size [J] (vectorised; batch size in prompts)."""
        b = positive_array(batch_size, "batch_size", "prompts")
        out = self.e_inf_j + self.a_j * b ** (-self.c)
        return float(out) if out.ndim == 0 else out


@functools.lru_cache(maxsize=None)
def _offline_cached(max_output_tokens: int) -> OfflineEnergyFit:
    runs = read_bundled_csv("nlr_offline.csv")
    sel = runs[runs["max_output_tokens"] == max_output_tokens]
    if sel.empty:
        raise InputError(
            f"max_output_tokens={max_output_tokens!r} not measured; expected one of "
            f"{sorted(runs['max_output_tokens'].unique().tolist())}."
        )
    b = sel["batch_size"].to_numpy(float)
    e = (sel["mean_power_w"] * sel["elapsed_s"] / sel["batch_size"]).to_numpy(float)
    pts = pd.DataFrame({"batch_size": b.astype(int), "energy_per_prompt_j": e})

    def model(x, e_inf, a, c):
        return e_inf + a * x ** (-c)

    (e_inf, a, c), _ = optimize.curve_fit(model, b, e, p0=(e.min(), e.max() * 25, 1.0), maxfev=20000)
    fitted = model(b, e_inf, a, c)
    res = residual_frame("batch_size", b.astype(int), "energy_per_prompt_j", e, fitted)
    return OfflineEnergyFit(max_output_tokens, float(e_inf), float(a), float(c), pts,
                            r_squared(e, fitted), res, float(res["residual"].abs().max()))


def offline_energy_per_prompt(max_output_tokens: int = 512) -> OfflineEnergyFit:
    """Fitted energy per prompt of offline Llama-3-70B inference on one 4xH100 node.

    Parameters
    ----------
    max_output_tokens : int
        512 or 1024 [tokens].

    Examples
    --------
    >>> fit = offline_energy_per_prompt(512)
    >>> 100 < fit.energy_j(1000) < 200
    True
    """
    return _offline_cached(int(max_output_tokens))
