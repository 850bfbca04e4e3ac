"""Synthesised per-node profiles where only run statistics exist (labelled ``measured=False``).

The NLR 4xH100 time series are not redistributed here, only run statistics and features
cited from them (BACKGROUND §3.2, §6.3; Vercellino et al., arXiv:2604.07345, DOI
10.7799/3025227). A shape is built from those features and then scaled so that its mean
equals the cited per-node mean *exactly*:

- training: a start-up ramp from idle, periodic short dips (Llama-2 LoRA: every ≈ 12.8 s,
  ≈ 16 % deep, 5-7 s long), rare deep dips (Stable Diffusion evaluation/checkpoint: ≈ 40 s,
  ≈ 65 % deep, every ≈ 344 s), noise drawn per second (NVML's ≈ 1 s averaging) and
  refined to the step with energy kept, a ramp down at the end;
- offline inference: a fast ramp to the run's peak, then a linear decline whose slope makes
  the mean equal the run's mean;
- online inference: a flat level at the run's mean with noise whose spread follows the
  run's peak.

Every replicate draws its own dip phases and noise from ``numpy.random.default_rng`` seeded
by ``SeedSequence(seed).spawn``; the same seed gives the same output, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError

__all__ = ["TrainingShape", "LORA_SHAPE", "SD_SHAPE", "synth_training", "synth_offline", "synth_online",
           "elapsed_index"]


@dataclass(frozen=True)
class TrainingShape:
    """Cited features of a training job's per-node power shape.

    Attributes
    ----------
    ramp_s : float
        Duration of the start-up (and end) ramp between idle and busy [s].
    dip_period_s, dip_depth, dip_min_s, dip_max_s : float
        Periodic short dips: period [s], depth as a fraction of busy power [-], shortest and
        longest dip [s]. ``dip_depth=0`` switches them off.
    deep_period_s, deep_depth, deep_s : float
        Rare deep dips (evaluation/checkpoint): period [s], depth [-], length [s].
        ``deep_depth=0`` switches them off.
    noise : float
        Standard deviation of the noise as a fraction of busy power [-] (an assumption, not
        cited).
    noise_step_s : float
        The noise is drawn once per ``noise_step_s`` and refined to the profile's step with
        :func:`aiload.profiles.refine.mean_preserving` [s]: the NLR series come from NVML,
        which averages over ≈ 1 s (the WattAMeter log's idle->load step rises 10->90 % in
        ≈ 1 s), so they hold no independent 0.2 s noise.
    """

    ramp_s: float = 2.0
    dip_period_s: float = 12.8
    dip_depth: float = 0.0
    dip_min_s: float = 5.0
    dip_max_s: float = 7.0
    deep_period_s: float = 344.0
    deep_depth: float = 0.0
    deep_s: float = 40.0
    noise: float = 0.02
    noise_step_s: float = 1.0

    def __post_init__(self) -> None:
        for name in ("ramp_s", "dip_period_s", "dip_min_s", "dip_max_s", "deep_period_s", "deep_s",
                     "noise_step_s"):
            if not getattr(self, name) > 0:
                raise InputError(f"TrainingShape.{name} must be > 0 [s], got {getattr(self, name)!r}.")
        for name in ("dip_depth", "deep_depth", "noise"):
            if not 0 <= getattr(self, name) < 1:
                raise InputError(f"TrainingShape.{name} must be in [0, 1), got {getattr(self, name)!r}.")
        if self.dip_min_s > self.dip_max_s or self.dip_max_s >= self.dip_period_s:
            raise InputError(
                f"TrainingShape: need dip_min_s <= dip_max_s < dip_period_s [s], got "
                f"{self.dip_min_s}, {self.dip_max_s}, {self.dip_period_s}."
            )


#: Llama-2-70B LoRA, 4xH100 (NLR; [3P] audit of the 16-node job): ≈ 12.8 s dips, 16 %, 5-7 s.
#: The 2 s ramp follows from the cited 1-s job ramps (+26.6 kW/s over 16 nodes ≈ 1.7 kW/s/node).
#: Noise 4.5 % (assumed) brings the per-node maximum of the 16-node job near the cited
#: 48.4 kW / 16 = 3.03 kW at its cited mean of 2.40 kW.
LORA_SHAPE = TrainingShape(dip_depth=0.16, noise=0.045)
#: Stable Diffusion v2, 4xH100 (NLR; [3P]): deep dips ≈ 40 s, 64-67 % drop, every ≈ 344 s.
#: Noise 8.5 % (assumed) brings the 16-node per-node maximum near the cited 47.6 kW / 16 = 2.98 kW.
SD_SHAPE = TrainingShape(deep_depth=0.65, noise=0.085)


def elapsed_index(n: int, step_s: float) -> pd.TimedeltaIndex:
    """``n`` interval-start labels from 0 at ``step_s`` [s], named ``elapsed``."""
    step = pd.Timedelta(seconds=step_s)
    return pd.timedelta_range(start=pd.Timedelta(0), periods=n, freq=step, name="elapsed")


def _frame(columns: list[np.ndarray], step_s: float) -> pd.DataFrame:
    data = np.column_stack(columns).astype(np.float64)
    return pd.DataFrame(data, index=elapsed_index(len(data), step_s),
                        columns=[f"r{i}" for i in range(len(columns))])


def _rngs(seed: int, replicates: int) -> list[np.random.Generator]:
    if replicates < 1:
        raise InputError(f"replicates must be >= 1, got {replicates!r}.")
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(replicates)]


def _check(duration_s: float, step_s: float, **levels_w: float) -> int:
    if not (duration_s > 0 and step_s > 0):
        raise InputError(f"duration_s and step_s must be > 0 [s], got {duration_s!r}, {step_s!r}.")
    for name, value in levels_w.items():
        if not value > 0:
            raise InputError(f"{name} must be > 0 [W], got {value!r}.")
    n = int(round(duration_s / step_s))
    if n < 2:
        raise InputError(f"duration_s={duration_s} s is shorter than two steps of {step_s} s.")
    return n


def _smooth_noise(n: int, step_s: float, shape: TrainingShape,
                  rng: np.random.Generator) -> np.ndarray:
    """``1 + noise`` drawn per ``noise_step_s`` and refined, energy kept, to ``step_s`` [-]."""
    from aiload.profiles.refine import mean_preserving  # noqa: PLC0415 - refine imports Profile

    k = max(1, int(round(shape.noise_step_s / step_s)))
    draws = np.clip(1 + shape.noise * rng.standard_normal(-(-n // k)), 0.0, None)
    return mean_preserving(draws, k)[:n]


def synth_training(shape: TrainingShape, *, duration_s: float, mean_w: float, idle_w: float,
                   step_s: float = 0.2, replicates: int = 5, seed: int = 0) -> pd.DataFrame:
    """Per-node training profile from cited features; every column's mean is ``mean_w``.

    Parameters
    ----------
    shape : TrainingShape
        The dip/ramp features.
    duration_s : float
        Job duration [s].
    mean_w : float
        Per-node mean power the profile must have [W].
    idle_w : float
        Per-node idle power, the start of the ramp [W].
    step_s : float
        Interval length [s].
    replicates : int
        Columns (``r0``...), differing in dip phase and noise.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    pandas.DataFrame
        Interval-mean power [W] on a TimedeltaIndex named ``elapsed``.
    """
    n = _check(duration_s, step_s, mean_w=mean_w, idle_w=idle_w)
    t = (np.arange(n) + 0.5) * step_s
    cols = []
    for rng in _rngs(seed, replicates):
        rel = np.ones(n)
        if shape.dip_depth > 0:
            starts = np.arange(rng.uniform(0, shape.dip_period_s), duration_s, shape.dip_period_s)
            lengths = rng.uniform(shape.dip_min_s, shape.dip_max_s, starts.size)
            k = np.searchsorted(starts, t, side="right") - 1
            inside = (k >= 0) & (t < starts[np.maximum(k, 0)] + lengths[np.maximum(k, 0)])
            rel[inside] -= shape.dip_depth
        if shape.deep_depth > 0:
            phase = rng.uniform(0, shape.deep_period_s)
            rel[((t - phase) % shape.deep_period_s < shape.deep_s) & (t >= phase)] -= shape.deep_depth
        rel *= _smooth_noise(n, step_s, shape, rng)
        # the ramps go from the idle level; busy level is only known after scaling, so use the
        # cited mean as its estimate (the exact rescale below fixes the level)
        idle_rel = min(idle_w / mean_w, 1.0)
        ramp = np.clip(np.minimum(t, duration_s - t) / shape.ramp_s, 0, 1)
        rel = idle_rel + (rel - idle_rel) * ramp
        cols.append(np.clip(rel, 0, None) * (mean_w / rel.mean()))
    return _frame(cols, step_s)


def synth_offline(*, elapsed_s: float, mean_w: list[float], peak_w: list[float], idle_w: float,
                  step_s: float = 0.1, ramp_s: float = 1.0) -> pd.DataFrame:
    """Offline-inference profile: fast ramp to the peak, then a linear decline [W].

    One column per (mean, peak) pair of measured runs; each column's mean equals its
    ``mean_w`` exactly; deterministic (no noise: the runs give no spread to cite).
    """
    n = _check(elapsed_s, step_s, idle_w=idle_w)
    t = (np.arange(n) + 0.5) * step_s
    cols = []
    for mean, peak in zip(mean_w, peak_w, strict=True):
        if not idle_w < mean <= peak:
            raise InputError(f"need idle_w < mean_w <= peak_w [W], got {idle_w}, {mean}, {peak}.")
        up = np.clip(t / ramp_s, 0, 1)
        base = idle_w + (peak - idle_w) * up  # ramp, then flat at the peak
        decline = np.clip(t - ramp_s, 0, None)
        # slope chosen so that the mean of base - slope * decline equals the run's mean
        slope = (base.mean() - mean) / decline.mean() if decline.mean() > 0 else 0.0
        cols.append(np.clip(base - slope * decline, idle_w, None))
        cols[-1] *= mean / cols[-1].mean()
    return _frame(cols, step_s)


def synth_online(*, duration_s: float, mean_w: list[float], peak_w: list[float],
                 step_s: float = 0.2, seed: int = 0) -> pd.DataFrame:
    """Online-inference profile: a flat level with white noise [W].

    The noise standard deviation is ``(peak - mean) / 3.5`` of each run (so the run's peak
    is a ≈ 3.5-sigma event over a few thousand samples); each column's mean equals
    its ``mean_w`` exactly.
    """
    n = _check(duration_s, step_s)
    cols = []
    for rng, mean, peak in zip(_rngs(seed, len(mean_w)), mean_w, peak_w, strict=True):
        x = mean + (peak - mean) / 3.5 * rng.standard_normal(n)
        x = np.clip(x, 0, None)
        cols.append(x * (mean / x.mean()))
    return _frame(cols, step_s)
