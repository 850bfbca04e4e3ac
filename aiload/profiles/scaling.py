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

from aiload.errors import InputError
from aiload.profiles._bundle import read_bundled_csv
from aiload.profiles._fitting import positive_array, r_squared, residual_frame
from aiload.profiles._inference_fits import (
    ONLINE_DATASETS,
    InferenceScaling,
    OfflineEnergyFit,
    offline_energy_per_prompt,
    online_inference,
)
from aiload.profiles.idle import idle_power_w

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
        n = positive_array(nodes, "nodes", "nodes")
        out = self.d1_s * n ** (-self.alpha)
        return float(out) if out.ndim == 0 else out

    def power_w_per_node(self, nodes) -> np.ndarray | float:
        """Fitted per-node mean power at ``nodes`` nodes, never below ``floor_w`` [W] (vectorised)."""
        n = positive_array(nodes, "nodes", "nodes")
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
        n = positive_array(nodes, "nodes", "nodes")
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
    floor_w = idle_power_w(hardware)
    fit = TrainingScaling(model, hardware, float(d1), float(alpha), float(p1), float(s), pts,
                          floor_w=floor_w)
    frames = []
    for quantity, func in (("duration_s", fit.duration_s),
                           ("power_w_per_node", fit.power_w_per_node),
                           ("energy_kwh", fit.energy_kwh)):
        q = pts[pts["quantity"] == quantity]
        frames.append(residual_frame("nodes", q["nodes"], quantity, q["value"],
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
