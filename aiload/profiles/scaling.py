"""Scaling fits from real run metadata: training vs node count, inference vs load.

Three families of fitted curves, each carrying the data points it was fitted to (with their
source), its goodness of fit (R², on the original scale) and residuals:

- :func:`training` — job duration, per-node mean power and job energy of a training or
  fine-tuning job against node count ``n``:

  .. math:: d(n) = d_1\\, n^{-\\alpha}, \\qquad P(n) = p_1 + s \\log_2 n, \\qquad
            E(n) = P(n)\\, n\\, d(n)

  ``d`` is fitted by least squares on ``log d`` (a power law is a straight line there),
  ``P`` by least squares on the points; ``E`` is *derived*, so the three always agree.
- :func:`online_inference` — per-node power against request rate ``λ``, rising then flat at
  saturation: :math:`P(λ) = P_0 + k \\min(λ, λ_s)` (so :math:`P_{sat} = P_0 + k λ_s`), and the
  requests/s one node serves at a latency target.
- :func:`offline_energy_per_prompt` — energy per prompt of batch inference against batch
  size ``b``: :math:`e(b) = e_\\infty + a\\, b^{-c}` (a fixed per-batch overhead spread over
  the prompts on top of a per-prompt cost).

Data: the NLR GenAI power dataset (Vercellino et al., arXiv:2604.07345, DOI
10.7799/3025227, CC BY 4.0) and MLPerf Training v4.0 SMC power logs (Apache-2.0); see
``docs/scaling.md``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize

from aiload.errors import InputError
from aiload.profiles._bundle import read_bundled_csv

__all__ = [
    "TrainingScaling",
    "InferenceScaling",
    "OfflineEnergyFit",
    "training",
    "online_inference",
    "offline_energy_per_prompt",
    "r_squared",
    "TRAINING_FITS",
    "ONLINE_DATASETS",
]

#: (model, hardware) pairs with training data points
TRAINING_FITS = (
    ("llama2-70b-lora", "4xH100"),
    ("stable-diffusion-v2", "4xH100"),
    ("llama2-70b-lora", "8xH100-SXM"),
    ("gpt3-175b", "8xH100-SXM"),
)

#: short dataset names of the NLR online runs -> the ``dataset-path`` in the metadata
ONLINE_DATASETS = {
    "instructcoder": "likaixin/InstructCoder",
    "mlperf-llama2": "mgoin/mlperf-inference-llama2-data",
}


def r_squared(observed: np.ndarray, fitted: np.ndarray) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot`` [-]; NaN with fewer than 2 points."""
    observed = np.asarray(observed, dtype=float)
    fitted = np.asarray(fitted, dtype=float)
    if observed.size < 2:
        return float("nan")
    ss_tot = float(((observed - observed.mean()) ** 2).sum())
    ss_res = float(((observed - fitted) ** 2).sum())
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


def _residual_frame(x_name: str, x, quantity: str, observed, fitted) -> pd.DataFrame:
    observed = np.asarray(observed, dtype=float)
    fitted = np.asarray(fitted, dtype=float)
    return pd.DataFrame(
        {x_name: np.asarray(x), "quantity": quantity, "observed": observed,
         "fitted": fitted, "residual": observed - fitted}
    )


def _positive_array(values, what: str, unit: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if np.any(~np.isfinite(arr)) or np.any(arr <= 0):
        raise InputError(f"{what} must be finite and > 0 [{unit}], got {values!r}.")
    return arr


# --------------------------------------------------------------------------- training


@dataclass(frozen=True)
class TrainingScaling:
    """Fitted scaling of a training job with node count.

    Attributes
    ----------
    model, hardware : str
        What was fitted.
    d1_s : float
        Fitted duration on one node [s].
    alpha : float
        Strong-scaling exponent of the duration [-] (1 = ideal).
    p1_w : float
        Fitted per-node mean power on one node [W].
    slope_w_per_doubling : float
        Change of per-node mean power per doubling of the node count [W].
    points : pandas.DataFrame
        Data used: ``nodes, quantity, value, origin, source`` (``quantity`` in
        ``power_w_per_node`` [W], ``duration_s`` [s], ``energy_kwh`` [kWh]).
    r2 : dict
        R² per quantity on the original scale [-] (NaN when a quantity has < 2 points).
    residuals : pandas.DataFrame
        ``nodes, quantity, observed, fitted, residual`` (observed - fitted, in the
        quantity's unit).
    max_abs_residual : dict
        Largest absolute residual per quantity [unit of the quantity].
    notes : str
        Assumptions (e.g. an exponent fixed for lack of points).
    floor_w : float
        Lower bound of the per-node power: the hardware's measured idle power [W]. The
        log-linear fall of ``P(n)`` reaches it only far outside the fitted node counts.
    """

    model: str
    hardware: str
    d1_s: float
    alpha: float
    p1_w: float
    slope_w_per_doubling: float
    points: pd.DataFrame = field(repr=False)
    r2: dict = field(default_factory=dict)
    residuals: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    max_abs_residual: dict = field(default_factory=dict)
    notes: str = ""
    floor_w: float = 0.0

    def __post_init__(self) -> None:
        if not (self.d1_s > 0 and np.isfinite(self.alpha) and self.p1_w > 0):
            raise InputError(
                f"TrainingScaling {self.model}/{self.hardware}: need d1_s > 0 [s], a finite "
                f"alpha and p1_w > 0 [W]; got {self.d1_s}, {self.alpha}, {self.p1_w}."
            )

    def duration_s(self, nodes) -> np.ndarray | float:
        """Fitted job duration at ``nodes`` nodes [s] (vectorised)."""
        n = _positive_array(nodes, "nodes", "nodes")
        out = self.d1_s * n ** (-self.alpha)
        return float(out) if out.ndim == 0 else out

    def power_w_per_node(self, nodes) -> np.ndarray | float:
        """Fitted per-node mean power at ``nodes`` nodes, never below ``floor_w`` [W] (vectorised)."""
        n = _positive_array(nodes, "nodes", "nodes")
        out = np.maximum(self.p1_w + self.slope_w_per_doubling * np.log2(n), self.floor_w)
        if np.any(out <= 0):
            raise InputError(
                f"{self.model}/{self.hardware}: the fitted per-node power is <= 0 W at "
                f"nodes={nodes!r}; this is far outside the fitted range "
                f"{sorted(self.points['nodes'].unique())}."
            )
        return float(out) if out.ndim == 0 else out

    def energy_kwh(self, nodes) -> np.ndarray | float:
        """Fitted job energy at ``nodes`` nodes, all nodes together [kWh] (vectorised)."""
        n = _positive_array(nodes, "nodes", "nodes")
        out = np.asarray(self.power_w_per_node(n)) * n * np.asarray(self.duration_s(n)) / 3.6e6
        return float(out) if out.ndim == 0 else out


def _training_points(model: str, hardware: str) -> pd.DataFrame:
    cited = read_bundled_csv("cited_training_points.csv")
    cited["origin"] = "cited"
    traced = read_bundled_csv("mlperf_training_points.csv")
    traced["origin"] = "trace"
    allp = pd.concat([cited, traced], ignore_index=True)
    pts = allp[(allp["model"] == model) & (allp["hardware"] == hardware)]
    if pts.empty:
        have = ", ".join(f"({m!r}, {h!r})" for m, h in TRAINING_FITS)
        raise InputError(
            f"no training scaling data for model={model!r}, hardware={hardware!r}; "
            f"available (model, hardware): {have}."
        )
    pts = pts[["nodes", "quantity", "value", "origin", "source"]].reset_index(drop=True)
    if not (pts["quantity"] == "energy_kwh").any():
        # cited sources give power and duration only: the job energy follows from them
        wide = pts.pivot_table(index="nodes", columns="quantity", values="value").dropna()
        derived = pd.DataFrame(
            {"nodes": wide.index, "quantity": "energy_kwh",
             "value": wide["power_w_per_node"] * wide.index * wide["duration_s"] / 3.6e6,
             "origin": "derived", "source": "power_w_per_node x nodes x duration_s of the rows above"}
        )
        pts = pd.concat([pts, derived], ignore_index=True)
    return pts.sort_values(["quantity", "nodes"], ignore_index=True)


@functools.lru_cache(maxsize=None)
def _training_cached(model: str, hardware: str) -> TrainingScaling:
    pts = _training_points(model, hardware)
    notes = []
    dur = pts[pts["quantity"] == "duration_s"]
    n_d, d = dur["nodes"].to_numpy(float), dur["value"].to_numpy(float)
    if np.unique(n_d).size >= 2:
        slope, intercept = np.polyfit(np.log(n_d), np.log(d), 1)
        alpha, d1 = -slope, float(np.exp(intercept))
    else:
        # one node count: assume ideal strong scaling (stated, not fitted)
        alpha = 1.0
        d1 = float(d.mean() * n_d.mean())
        notes.append("duration: one node count only, ideal strong scaling d ~ 1/n ASSUMED")
    pw = pts[pts["quantity"] == "power_w_per_node"]
    n_p, p = pw["nodes"].to_numpy(float), pw["value"].to_numpy(float)
    if np.unique(n_p).size >= 2:
        s, p1 = np.polyfit(np.log2(n_p), p, 1)
    else:
        s, p1 = 0.0, float(p.mean())
        notes.append("power: one node count only, per-node power held constant (ASSUMED)")
    from aiload.profiles.library import idle_power_w  # late: library imports this module

    floor_w = idle_power_w(hardware)
    fit = TrainingScaling(model, hardware, float(d1), float(alpha), float(p1), float(s), pts,
                          floor_w=floor_w)
    frames = []
    for quantity, func in (("duration_s", fit.duration_s),
                           ("power_w_per_node", fit.power_w_per_node),
                           ("energy_kwh", fit.energy_kwh)):
        q = pts[pts["quantity"] == quantity]
        frames.append(_residual_frame("nodes", q["nodes"], quantity, q["value"],
                                      func(q["nodes"].to_numpy(float))))
    residuals = pd.concat(frames, ignore_index=True)
    r2 = {q: r_squared(g["observed"], g["fitted"]) for q, g in residuals.groupby("quantity")}
    max_res = {q: float(g["residual"].abs().max()) for q, g in residuals.groupby("quantity")}
    return TrainingScaling(model, hardware, float(d1), float(alpha), float(p1), float(s), pts,
                           r2, residuals, max_res, "; ".join(notes), floor_w)


def training(model: str, hardware: str) -> TrainingScaling:
    """Fitted duration, per-node power and energy of a training job against node count.

    Parameters
    ----------
    model : str
        ``"llama2-70b-lora"``, ``"stable-diffusion-v2"`` or ``"gpt3-175b"``.
    hardware : str
        ``"4xH100"`` (NLR, cited run statistics) or ``"8xH100-SXM"`` (MLPerf SMC traces).

    Returns
    -------
    TrainingScaling

    Examples
    --------
    >>> fit = training("llama2-70b-lora", "4xH100")
    >>> round(fit.power_w_per_node(8)) in range(2400, 2560)
    True
    """
    return _training_cached(model, hardware)


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
    from aiload.profiles.library import idle_power_w  # late: library imports this module

    fitted = p0 + k * np.minimum(r, knee)
    res = _residual_frame("request_rate_per_s", r, "power_w", p, fitted)
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
        b = _positive_array(batch_size, "batch_size", "prompts")
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
    res = _residual_frame("batch_size", b.astype(int), "energy_per_prompt_j", e, fitted)
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
