"""Batch-job submissions as a log-Gaussian Cox process fitted to a real GPU cluster.

Real submissions come in clusters: people submit sweeps, work in office hours and stop at
night and at weekends. :class:`CoxArrivals` models that with a doubly stochastic Poisson
process whose intensity is

.. math::

    λ(t) = λ̄ · h(t) · \\exp(X(t) − σ²/2)

with ``h`` a mean-1 hour-of-week profile (local time of the facility) and ``X`` a stationary
Ornstein–Uhlenbeck process of variance ``σ²`` and correlation time ``τ`` (so ``exp(X − σ²/2)``
has mean 1: Møller, Syversveen and Waagepetersen, "Log Gaussian Cox processes", Scand. J.
Statist. 25 (1998) 451–482, doi:10.1111/1467-9469.00115). Optionally the intensity carries a
slow, bounded *activity level* ``L(t) = 1 + a·tanh(k·Y(t))``, ``Y`` a standard
Ornstein–Uhlenbeck process of correlation time ``τ_L`` (busy and quiet spells of days: a
campaign before a deadline; mean 1, between ``1 − a`` and ``1 + a``). The bundled fit
(:func:`fitted`: ``"helios-earth"``) comes from the job counts of a Helios GPU cluster
(``docs/scripts/fit_arrivals.py``); ``"colocation"`` takes its daily cycle and its minute-scale
clusters, and the activity level calibrated on the NLR colocation cases (``docs/validation.md``).

Queueing and waits are not modelled here: they come out of the scheduler
(:mod:`aiload.facility.engine`) when the submissions outrun the nodes.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from aiload._suggest import suggest
from aiload.errors import InputError
from aiload.facility.demand import _MONDAY_S, _utc_offsets

__all__ = ["CoxArrivals", "fitted", "FITTED", "cox_arrival_times_s", "intensity_path",
           "hour_of_week_factor", "local_week_s"]

#: bundled fits: name -> (file in ``aiload/facility/data``, calibration in it or None).
#: ``"helios-earth"`` is the fit as measured; ``"colocation"`` the colocation preset's process
#: (the fit's daily cycle and minute-scale clusters, an activity level of days; its entry in the
#: file says what was measured and what was chosen on the NLR colocation cases).
FITTED = {"helios-earth": ("arrivals_helios_earth.json", None),
          "colocation": ("arrivals_helios_earth.json", "colocation")}
WEEK_S = 7 * 86400.0
DATA = Path(__file__).with_name("data")


@dataclass(frozen=True)
class CoxArrivals:
    """A log-Gaussian Cox submission process (see the module docstring).

    Parameters
    ----------
    hour_of_week : sequence of 168 float
        Relative submission rate per local hour of the week, Monday 00:00 first; normalised to
        mean 1 [-]. Interpolated linearly between hour centres.
    sigma2 : float
        Variance of the Gaussian log-intensity ``X`` [-]; 0 gives a Poisson process modulated by
        ``hour_of_week`` only.
    tau_s : float
        Correlation time of ``X`` (``corr(X(t), X(t+s)) = exp(−s/τ)``) [s].
    step_s : float
        Resolution of the simulated intensity path [s] (much shorter than ``tau_s``).
    name, source : str
        Label and provenance for the metadata.
    typical_start : bool
        Start a run at a typical moment: the random part is conditioned to its mean level
        (``exp(X − σ²/2) = 1``) at the run's start, a Gaussian conditioning of the path
        (``X(t) − e^{−|t−t₀|/τ}·(X(t₀) − σ²/2)``) whose pull fades with the correlation time
        (a 5 % pull after 3τ); True by default, False for a start in a random state of the
        stationary process (a run may then begin in a lull or a burst). See
        ``docs/validation.md``, "Steady-state start". The activity level's ``Y`` is
        conditioned the same way, to ``Y(t₀) = 0`` (``L = 1``).
    level_amplitude : float
        ``a`` of the activity level ``L = 1 + a·tanh(k·Y)`` [-], 0 <= a < 1; 0 (default): none.
    level_tau_s : float
        Correlation time ``τ_L`` of ``Y`` [s] (>= ``step_s``).
    level_sharpness : float
        ``k`` [-]: how sharply ``L`` switches between its busy (``1 + a``) and quiet (``1 − a``)
        levels; ``k = 2`` spends about half the time within 10 % of ``a`` of either bound.
    """

    hour_of_week: tuple
    sigma2: float
    tau_s: float
    step_s: float = 300.0
    name: str = "custom"
    source: str = ""
    typical_start: bool = True
    level_amplitude: float = 0.0
    level_tau_s: float = 36 * 3600.0
    level_sharpness: float = 2.0

    def __post_init__(self) -> None:
        week = np.asarray(self.hour_of_week, dtype=float)
        if week.shape != (168,) or not np.all(np.isfinite(week)) or np.any(week < 0) \
                or week.sum() <= 0:
            raise InputError(
                f"CoxArrivals.hour_of_week: expected 168 finite non-negative rates (Monday 00h "
                f"first) with a positive sum, got shape {week.shape}."
            )
        object.__setattr__(self, "hour_of_week", tuple((week / week.mean()).tolist()))
        for name in ("sigma2", "tau_s", "step_s", "level_amplitude", "level_tau_s",
                     "level_sharpness"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float,
                                                                             np.number)):
                raise InputError(f"CoxArrivals.{name}: expected a number, got {value!r} "
                                 f"({type(value).__name__}).")
        if not isinstance(self.typical_start, (bool, np.bool_)):
            raise InputError(f"CoxArrivals.typical_start: expected True or False, got "
                             f"{self.typical_start!r}.")
        if not (np.isfinite(self.sigma2) and 0.0 <= self.sigma2 <= 10.0):
            raise InputError(f"CoxArrivals.sigma2: expected 0 <= σ² <= 10, got {self.sigma2!r}.")
        if not (np.isfinite(self.tau_s) and self.tau_s > 0):
            raise InputError(f"CoxArrivals.tau_s: expected a correlation time > 0 s, got "
                             f"{self.tau_s!r}.")
        if not (np.isfinite(self.step_s) and 0 < self.step_s <= self.tau_s):
            raise InputError(f"CoxArrivals.step_s: expected 0 < step <= tau_s = {self.tau_s} s, "
                             f"got {self.step_s!r}.")
        if not (np.isfinite(self.level_amplitude) and 0.0 <= self.level_amplitude < 1.0):
            raise InputError(f"CoxArrivals.level_amplitude: expected 0 <= a < 1 (the level "
                             f"1 + a·tanh(k·Y) stays positive), got {self.level_amplitude!r}.")
        if not (np.isfinite(self.level_tau_s) and self.level_tau_s >= self.step_s):
            raise InputError(f"CoxArrivals.level_tau_s: expected a correlation time >= step_s = "
                             f"{self.step_s} s, got {self.level_tau_s!r}.")
        if not (np.isfinite(self.level_sharpness) and self.level_sharpness > 0):
            raise InputError(f"CoxArrivals.level_sharpness: expected k > 0, got "
                             f"{self.level_sharpness!r}.")

    def tempered(self, alpha: float, alpha_profile: float | None = None) -> CoxArrivals:
        """The process with its log-intensity scaled: ``σ²·α²`` for the random part and the
        profile ``h^α_profile`` (renormalised to mean 1; default ``alpha_profile = alpha``).
        Exponents < 1 are smoother, > 1 burstier [-]. The activity level is kept."""
        a_p = alpha if alpha_profile is None else alpha_profile
        for value, what in ((alpha, "alpha"), (a_p, "alpha_profile")):
            if not (np.isfinite(value) and 0.0 <= value <= 3.0):
                raise InputError(f"CoxArrivals.tempered: expected 0 <= {what} <= 3, got "
                                 f"{value!r}.")
        week = np.asarray(self.hour_of_week) ** a_p
        return dataclasses.replace(self, hour_of_week=tuple(week.tolist()),
                                   sigma2=self.sigma2 * alpha ** 2,
                                   name=f"{self.name} tempered ({alpha:g}, profile {a_p:g})")


def fitted(name: str = "helios-earth") -> CoxArrivals:
    """A bundled fit by name (``"helios-earth"`` or ``"colocation"``); see
    ``docs/validation.md``.

    Examples
    --------
    >>> process = fitted("helios-earth")
    >>> round(process.tau_s / 3600, 1), len(process.hour_of_week)
    (1.6, 168)
    """
    if name not in FITTED:
        raise InputError(f"Unknown arrival process {name!r}; the bundled fits are "
                         f"{sorted(FITTED)}.{suggest(name, list(FITTED))}")
    return _load(name)


@lru_cache(maxsize=None)
def _load(name: str) -> CoxArrivals:
    file, calibration = FITTED[name]
    fit = json.loads((DATA / file).read_text(encoding="utf-8"))
    process = CoxArrivals(hour_of_week=tuple(fit["hour_of_week"]), sigma2=float(fit["sigma2"]),
                          tau_s=float(fit["tau_s"]), name=fit["name"], source=fit["source"])
    if calibration is None:
        return process
    cal = fit["calibrations"][calibration]
    fine = fit["fit"]["minute_scale"]
    week = np.asarray(process.hour_of_week).reshape(7, 24)
    daily = week[0] / week[0].mean()  # the fit's daily cycle (the same shape every day)
    days = _days_of_week(cal["days_of_week"], fit["fit"])
    tau_s = float(fine["tau_min"]) * 60.0
    return CoxArrivals(hour_of_week=tuple(np.outer(days, daily).ravel().tolist()),
                       sigma2=float(cal["sigma2"]), tau_s=tau_s, step_s=tau_s / 3.0,
                       level_amplitude=float(cal["level_amplitude"]),
                       level_tau_s=float(cal["level_tau_h"]) * 3600.0,
                       level_sharpness=float(cal["level_sharpness"]), name=name,
                       source=process.source)


#: what ``calibrations.<name>.days_of_week`` in a fit file may say
DAYS_OF_WEEK = ("flat", "weekday-weekend")


def _days_of_week(kind: str, fit: dict) -> np.ndarray:
    """Relative submissions per day of the week, Monday first, mean 1 [-]: ``"flat"`` or
    ``"weekday-weekend"`` (weekend days at the measured ``fit.weekday_weekend`` ratio of the
    weekdays; ``docs/scripts/fit_arrivals.py``)."""
    if kind == "flat":
        return np.ones(7)
    if kind == "weekday-weekend":
        ratio = float(fit["weekday_weekend"]["weekend_over_weekday"])
        days = np.array([1.0] * 5 + [ratio] * 2)
        return days / days.mean()
    raise InputError(f"Fit file: days_of_week {kind!r} is not known; expected one of "
                     f"{list(DAYS_OF_WEEK)}.{suggest(kind, list(DAYS_OF_WEEK))}")


def local_week_s(t_s: np.ndarray, start: pd.Timestamp) -> np.ndarray:
    """Seconds since local Monday 00:00 of each instant ``t_s`` after ``start`` [s], on the
    calendar of ``start``'s time zone: each instant's own weekday and local time,
    daylight-saving changes during the run included (a naive ``start`` is read as local time
    without changes). The same instant gives the same value in any run."""
    t = np.asarray(t_s, dtype=np.float64)
    if t.size == 0:
        return t.copy()
    if start.tz is None:  # local wall time, no offsets
        first_s = (start - pd.Timestamp("1970-01-01")).total_seconds()
        return (first_s + t - _MONDAY_S) % WEEK_S
    t_first = float(t.min())
    first = start + pd.to_timedelta(t_first, unit="s")
    origin_s, offsets = _utc_offsets(first, float(t.max()) - t_first)
    # seconds since the grid's origin (small numbers: no rounding at a 15-min cell's edge)
    rel = (start.value // 10**9 - origin_s) + (start.value % 10**9) / 1e9 + t
    cell = np.clip((rel // 900).astype(np.int64), 0, len(offsets) - 1)
    return (origin_s - _MONDAY_S + rel + offsets[cell]) % WEEK_S


def hour_of_week_factor(t_s: np.ndarray, start: pd.Timestamp, process: CoxArrivals) -> np.ndarray:
    """``h`` at times ``t_s`` after ``start`` [-]: each instant's own weekday and local hour in
    ``start``'s time zone, daylight-saving changes during the run included
    (:func:`local_week_s`)."""
    week_h = local_week_s(t_s, start) / 3600.0
    week = np.asarray(process.hour_of_week)
    # periodic linear interpolation between hour centres (h + 0.5)
    centres = np.arange(-0.5, 168.5 + 1e-9)
    values = np.concatenate(([week[-1]], week, [week[0]]))
    return np.interp(week_h, centres, values)


def intensity_path(process: CoxArrivals, t0_s: float, t1_s: float, start: pd.Timestamp,
                   rng: np.random.Generator, *, mean_over_s: tuple[float, float] | None = None,
                   run_start_s: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Relative intensity ``h·exp(X − σ²/2)`` on steps of ``process.step_s`` from ``t0_s``.

    Parameters
    ----------
    t0_s, t1_s : float
        Span of the path, from ``start`` [s] (``t0_s`` < 0 for a burn-in).
    mean_over_s : (float, float), optional
        Scale ``exp(X − σ²/2)`` so that its mean over the steps in this span is exactly 1
        (the run's utilisation is then the requested one, not a draw around it).
    run_start_s : float, optional
        Start of the output [s]: with ``process.typical_start`` the random part is
        conditioned to its mean level at the step holding it (see :class:`CoxArrivals`);
        None leaves the stationary path as drawn.

    Returns
    -------
    edges_s : ndarray
        Step edges from ``start`` [s] (one more than the values).
    relative : ndarray
        Relative intensity of each step [-].
    """
    step = process.step_s
    n = max(int(np.ceil((t1_s - t0_s) / step)), 1)
    edges = t0_s + step * np.arange(n + 1, dtype=np.float64)
    # the step holding the run's start, where a typical start pins the random parts
    k = (min(int((run_start_s - t0_s) // step), n - 1)
         if process.typical_start and run_start_s is not None and t0_s <= run_start_s < t1_s
         else None)
    x = np.zeros(n)
    if process.sigma2 > 0:
        x = _ou_path(n, step, process.tau_s, np.sqrt(process.sigma2), rng)
        if k is not None:  # X(t_k) = σ²/2: the intensity's mean level at the start
            x = _pinned(x, k, step, process.tau_s, 0.5 * process.sigma2)
    z = np.exp(x - 0.5 * process.sigma2)
    if process.level_amplitude > 0:
        # the activity level, drawn after X so that a process without one keeps its draws
        y = _ou_path(n, step, process.level_tau_s, 1.0, rng)
        if k is not None:  # Y(t_k) = 0: L = 1 at the start
            y = _pinned(y, k, step, process.level_tau_s, 0.0)
        z *= 1.0 + process.level_amplitude * np.tanh(process.level_sharpness * y)
    if mean_over_s is not None:
        mid = 0.5 * (edges[1:] + edges[:-1])
        inside = (mid >= mean_over_s[0]) & (mid < mean_over_s[1])
        if inside.any():
            z /= z[inside].mean()
    mid = 0.5 * (edges[1:] + edges[:-1])
    return edges, z * hour_of_week_factor(mid, start, process)


def _ou_path(n: int, step: float, tau: float, sigma: float,
             rng: np.random.Generator) -> np.ndarray:
    """A stationary Ornstein–Uhlenbeck path of standard deviation ``sigma`` and correlation
    time ``tau`` on ``n`` steps of ``step`` [s], starting in its stationary distribution."""
    phi = float(np.exp(-step / tau))
    noise = rng.standard_normal(n)
    noise[1:] *= sigma * np.sqrt(1.0 - phi * phi)
    noise[0] *= sigma
    return _ar1(noise, phi)


def _pinned(x: np.ndarray, k: int, step: float, tau: float, value: float) -> np.ndarray:
    """``x`` conditioned on ``x[k] = value``: exact Gaussian conditioning of an OU path, whose
    correlation with step ``k`` is ``exp(−|t − t_k|/τ)`` (``x − ρ·(x[k] − value)``)."""
    lag = step * np.abs(np.arange(len(x)) - k)
    return x - np.exp(-lag / tau) * (x[k] - value)


def _ar1(noise: np.ndarray, phi: float) -> np.ndarray:
    """``x[0] = e[0]; x[k] = phi·x[k−1] + e[k]`` (vectorised in blocks)."""
    if phi <= 0.0:
        return noise.copy()
    out = np.empty_like(noise)
    # φ^-block stays below e^300 (far from overflow) whatever step/τ
    block = int(min(4096, max(1, 300.0 / -np.log(phi)))) if phi < 1 else 4096
    carry = 0.0
    powers = phi ** np.arange(1, block + 1)
    for b0 in range(0, len(noise), block):
        e = noise[b0:b0 + block]
        k = len(e)
        # within a block: x_j = φ^(j+1)·carry + Σ_{i<=j} φ^(j−i) e_i, by a scaled cumsum
        scale = powers[:k]
        out[b0:b0 + k] = scale * (carry + np.cumsum(e / scale))
        carry = out[b0 + k - 1]
    return out


def cox_arrival_times_s(process: CoxArrivals, rate_per_s: float, t0_s: float, t1_s: float,
                        start: pd.Timestamp, rng: np.random.Generator, *,
                        mean_over_s: tuple[float, float] | None = None,
                        run_start_s: float | None = None) -> np.ndarray:
    """Sorted submission times in ``[t0_s, t1_s)`` from ``start`` [s].

    ``rate_per_s`` is the mean rate [1/s]; each step of the intensity path gets a Poisson count
    placed uniformly within it. ``mean_over_s`` and ``run_start_s``: see
    :func:`intensity_path`.
    """
    edges, rel = intensity_path(process, t0_s, t1_s, start, rng, mean_over_s=mean_over_s,
                                run_start_s=run_start_s)
    step = process.step_s
    counts = rng.poisson(rate_per_s * rel * step)
    t = np.repeat(edges[:-1], counts) + rng.uniform(0.0, step, size=int(counts.sum()))
    t.sort()
    return t[t < t1_s]
