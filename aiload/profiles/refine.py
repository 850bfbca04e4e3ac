"""Finer steps for a profile, from measurements: :func:`refine`, :func:`mean_preserving`.

A profile measured at 1–2 s (MLPerf) or synthesised at 0.2 s says nothing directly about
what happens inside one of its intervals. Repeating each value (a staircase) puts every
change of the series into one jump at the interval edge. :func:`refine` instead:

1. interpolates the **cumulative energy** at the interval edges with a monotone cubic
   (PCHIP) and differences it on the finer grid, then corrects each coarse interval's fine
   values so their mean is the coarse value: every coarse interval keeps its energy
   exactly, the power stays >= 0, and a step between two levels becomes a ramp across the
   neighbouring intervals (with the under- and overshoot that keeping both neighbours' means
   with a continuous power requires);
2. adds a **sub-step fluctuation with the measured spectrum**: from the WattAMeter 0.1 s
   log of a 4xH100 node (``data/subsample.json``, built by :mod:`aiload.profiles.build`),
   the residual between the measured 0.1 s series and the step-1 refinement of its own 2 s
   means, scaled by the local change of the coarse series (in steady load the measured
   residual is ~0: NVML's ~1 s averaging) and normalised; its power spectrum on the
   frequency axis ``f x coarse step`` is kept in bands. The fluctuation is drawn with that
   spectrum (random phases, seeded), scaled by ``alpha x`` the local change, and made
   zero-mean within each coarse interval, so step 1's energies are untouched.

The result's ``extra`` says which resolution is measured and which synthesised.
"""

from __future__ import annotations

import dataclasses
import functools
import json

import numpy as np
import pandas as pd
from scipy.interpolate import PchipInterpolator

from aiload.errors import InputError
from aiload.profiles._bundle import bundle_path
from aiload.profiles._profile import Profile

__all__ = ["refine", "mean_preserving", "local_change", "fluctuation", "substep_spectrum"]


def mean_preserving(values: np.ndarray, factor: int) -> np.ndarray:
    """Interval means on a grid ``factor`` times finer, each coarse mean kept exactly [W].

    Parameters
    ----------
    values : numpy.ndarray
        Interval means >= 0, shape (n,) or (n, k) [W].
    factor : int
        Fine intervals per coarse interval (>= 1).

    Returns
    -------
    numpy.ndarray
        Shape (n·factor,) or (n·factor, k) [W], >= 0.

    Examples
    --------
    >>> mean_preserving(np.array([0.0, 10.0]), 4).reshape(2, 4).mean(axis=1).tolist()
    [0.0, 10.0]
    """
    if not (isinstance(factor, (int, np.integer)) and factor >= 1):
        raise InputError(f"factor must be an integer >= 1, got {factor!r}.")
    v = np.asarray(values, dtype=np.float64)
    flat = v.ndim == 1
    v = v.reshape(len(v), -1)
    if len(v) == 0 or not np.isfinite(v).all() or (v < 0).any():
        raise InputError("mean_preserving: values must be a non-empty array of finite numbers >= 0 [W].")
    if factor == 1:
        return v[:, 0].copy() if flat else v.copy()
    n = len(v)
    energy = np.vstack([np.zeros((1, v.shape[1])), np.cumsum(v, axis=0)])
    if n == 1:
        fine = np.repeat(v, factor, axis=0)
    else:
        # monotone in, monotone out: the cumulative energy never decreases, so power >= 0
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # tiny slopes
            curve = PchipInterpolator(np.arange(n + 1, dtype=np.float64), energy, axis=0)
            fine = np.diff(curve(np.arange(n * factor + 1) / factor), axis=0) * factor
        fine = np.where(np.isfinite(fine), np.maximum(fine, 0.0), np.repeat(v, factor, axis=0))
        blocks = fine.reshape(n, factor, -1)
        # exact coarse means: each block scaled to its coarse energy (stays >= 0)
        sums = blocks.sum(axis=1)
        scale = np.divide(v * factor, sums, out=np.zeros_like(sums), where=sums > 0)
        blocks = blocks * scale[:, None, :]
        flat_fill = (sums <= 0) & (v > 0)
        if flat_fill.any():
            blocks = np.where(flat_fill[:, None, :], v[:, None, :], blocks)
        fine = blocks.reshape(n * factor, -1)
    return fine[:, 0] if flat else fine


def local_change(values: np.ndarray) -> np.ndarray:
    """Largest change to a neighbouring interval, per interval [W] (shape of ``values``)."""
    v = np.asarray(values, dtype=np.float64)
    d = np.abs(np.diff(v, axis=0))
    pad = np.zeros((1,) + v.shape[1:])
    return np.maximum(np.concatenate([pad, d]), np.concatenate([d, pad]))


@functools.lru_cache(maxsize=1)
def substep_spectrum() -> dict:
    """The measured sub-step fluctuation (``data/subsample.json``): ``alpha`` [-], the band
    edges ``u_edges`` on ``f x coarse step`` [-] and the normalised band densities ``psd``."""
    return json.loads(bundle_path("subsample.json").read_text(encoding="utf-8"))


def fluctuation(n_coarse: int, factor: int, coarse_step_s: float, rng: np.random.Generator,
                spectrum: dict | None = None) -> np.ndarray:
    """Noise on the fine grid with the measured spectrum (unit variance before each coarse
    interval's mean is taken out, so zero mean per coarse interval); shape
    (n_coarse·factor,) [-]."""
    spec = substep_spectrum() if spectrum is None else spectrum
    n = n_coarse * factor
    if factor == 1 or n < 4:
        return np.zeros(n)
    fine_s = coarse_step_s / factor
    u = np.fft.rfftfreq(n, fine_s) * coarse_step_s
    edges = np.asarray(spec["u_edges"], dtype=float)
    band = np.searchsorted(edges, u, side="right") - 1
    inside = (band >= 0) & (band < len(spec["psd"]))
    psd = np.zeros(u.size)
    psd[inside] = np.asarray(spec["psd"], dtype=float)[band[inside]]
    coef = np.sqrt(psd) * (rng.standard_normal(u.size) + 1j * rng.standard_normal(u.size))
    z = np.fft.irfft(coef, n)
    sd = z.std()
    z = (z / sd if sd > 0 else z).reshape(n_coarse, factor)
    # zero mean in each coarse interval (its energy is the coarse value's); what this takes
    # out is the part of the spectrum the coarse series already holds
    z -= z.mean(axis=1, keepdims=True)
    return z.ravel()


def refine(profile: Profile, step_s: float, *, seed: int = 0) -> Profile:
    """The profile on a finer step: energy of every interval kept, sub-step structure measured.

    Parameters
    ----------
    profile : Profile
        Any profile; its step must be a whole multiple of ``step_s``.
    step_s : float
        The finer step [s].
    seed : int
        Seed of the fluctuation's random phases (same seed, same output).

    Returns
    -------
    Profile
        ``step_s`` finer; every coarse interval's mean unchanged (to rounding); ``measured``
        False; ``extra`` adds ``measured_step_s`` (the finest measured resolution, None when
        the source was synthesised), ``refined_from_step_s`` and ``synthesised_below_s``.

    Examples
    --------
    >>> import aiload.profiles as profiles
    >>> p = profiles.get("mlperf-llama2-70b-lora-8xh100-8n")
    >>> fine = refine(p, 0.1)
    >>> fine.step_s, fine.extra["measured_step_s"], round(fine.energy_wh / p.energy_wh, 9)
    (0.1, 2.0, 1.0)
    """
    if not isinstance(profile, Profile):
        raise InputError(
            f"refine: expected an aiload.profiles.Profile, got {type(profile).__name__}; e.g. "
            "refine(aiload.profiles.get(name), 0.1)."
        )
    if isinstance(step_s, (bool, np.bool_)) or not (
            isinstance(step_s, (int, float, np.integer, np.floating)) and np.isfinite(step_s)
            and step_s > 0):
        raise InputError(f"refine: step_s must be a positive number of seconds, got {step_s!r}.")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(
            f"refine(seed=): expected a whole number >= 0, got {seed!r}; the same seed gives the "
            "same fluctuation, e.g. seed=0."
        )
    ratio = profile.step_s / step_s
    factor = int(round(ratio))
    if factor < 1 or abs(ratio - factor) > 1e-6 * max(ratio, 1.0):
        raise InputError(
            f"refine: the profile's step {profile.step_s:g} s is not a whole multiple of "
            f"step_s = {step_s:g} s; give a step that divides it, e.g. {profile.step_s / 20:g}."
        )
    measured_s = profile.step_s if profile.measured else profile.extra.get("measured_step_s")
    if factor == 1:
        return profile
    values = profile.power_w.to_numpy(dtype=np.float64)
    fine = mean_preserving(values, factor)
    spec = substep_spectrum()
    change = np.repeat(local_change(values), factor, axis=0)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(values.shape[1])]
    for j, rng in enumerate(rngs):
        wiggle = spec["alpha"] * change[:, j] * fluctuation(len(values), factor, profile.step_s, rng)
        # never below zero: where the fluctuation would cross it, that coarse interval
        # gets a smaller one (still zero-mean, so the energy stays)
        room = np.where(wiggle < 0, fine[:, j] / np.maximum(-wiggle, 1e-300), np.inf)
        shrink = np.minimum(room.reshape(len(values), factor).min(axis=1), 1.0)
        fine[:, j] += wiggle * np.repeat(shrink, factor)
    index = pd.timedelta_range(start=pd.Timedelta(0), periods=len(fine),
                               freq=pd.Timedelta(seconds=step_s).round("ns"), name="elapsed")
    power = pd.DataFrame(np.maximum(fine, 0.0), index=index, columns=profile.power_w.columns)
    note = (f" Refined from {profile.step_s:g} s to {step_s:g} s: mean-preserving monotone "
            "interpolation of the cumulative energy plus a fluctuation with the spectrum measured "
            "in the WattAMeter 0.1 s log (aiload.profiles.refine); every "
            f"{profile.step_s:g} s mean is kept, the structure below it is synthesised.")
    extra = {**profile.extra, "measured_step_s": measured_s,
             "refined_from_step_s": profile.step_s, "synthesised_below_s": profile.step_s}
    return dataclasses.replace(profile, step_s=float(step_s), power_w=power, measured=False,
                               notes=profile.notes + note, extra=extra)
