"""Fit the batch-job submission process bundled in ``aiload/facility/data/`` from a real cluster.

Run from the project root: ``python docs/scripts/fit_arrivals.py`` (needs ``../shared/data``).

The model (see :mod:`aiload.facility.arrivals` and ``docs/validation.md``) is a log-Gaussian Cox
process: submissions are Poisson with the intensity

    λ(t) = λ̄ · h(hour of week) · exp(X(t) − σ²/2),

``h`` a mean-1 hour-of-week profile and ``X`` a stationary Gaussian (Ornstein–Uhlenbeck) process
of variance σ² and correlation time τ. Everything is fitted from the job submissions of the
Helios cluster *Earth*, virtual cluster ``vc6YE`` (the largest one; 208 GPUs, May 2020,
minute-level job counts):

1. Submissions per minute = the positive steps of ``total_gpujob_num`` (running + pending GPU
   jobs). A minute in which a job ends and another arrives counts one arrival too few; with
   ~12 jobs running and multi-hour run times such minutes are rare (a lower bound, stated).
2. ``h``: the mean count per hour of day, smoothed by its first three Fourier harmonics (the
   raw hourly means carry single bursts: one month gives 31 samples per hour), times the mean
   count per day of week (each divided by its mean).
3. σ² and τ by the method of moments on hourly counts ``N_k`` with expectation
   ``Λ_k = N̄·h_k``: for a log-Gaussian Cox process the pair correlation at lag ``j ≥ 1`` is
   ``E[N_k N_{k+j}] / E[Λ_k Λ_{k+j}] = exp(σ² e^{−jΔ/τ})``, so ``ln(1 + g_j) = σ² e^{−jΔ/τ}``.
   The measured curve has a fast part (hours) and a small slow one (days to weeks: the second
   half of the month is busier), so two components are fitted by least squares to lags
   1–96 h (``σ_f² e^{−j/τ_f} + σ_s² e^{−j/τ_s}``, non-negative). The slow one comes out with
   ``τ_s`` at the longest the search allows (a third of the one-month record): the record
   cannot resolve it, so it is written to the file and not used; the ``helios-earth`` process
   is the fast component.
4. The same on *minute* counts (lags 1–360 min, against the profile of step 2): a component
   of minutes (sweeps of jobs submitted together) that hourly counts cannot see, and one of
   hours. Written to the file as ``minute_scale``, with the correlations it was fitted to.
   The ``colocation`` process takes its correlation time (``tau_min``) for its clusters; its
   other numbers are the calibration's (``calibrations`` in the file, kept when the file is
   rewritten; ``docs/validation.md``).
5. The week: submissions per calendar day (the trace's local clock), weekdays (Monday-Friday,
   21 days) against weekend days (10 days), each group summarised by its **median over the
   dates** (one month gives four or five samples of each weekday, too few for seven factors: a
   single Friday holds 186 submissions, and the per-weekday medians put Sunday above
   Wednesday). The ratio of the medians, with a bootstrap interval (dates resampled within
   each group, seed 0), is ``fit.weekday_weekend`` in the file; the ``colocation`` process
   uses it when its calibration says ``"days_of_week": "weekday-weekend"``. Corroboration,
   not a measurement: the Philly cluster's daily mean node occupancy per weekday over its ten
   weeks (2017-10-03..12-15) is written beside it (occupancy answers submissions with the
   jobs' run times and is capped by the queue, so it damps and delays a weekly swing).

Output: ``aiload/facility/data/arrivals_helios_earth.json`` (the fitted numbers, the lags and
correlations they were fitted to, the source and its license).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "helios-philly-cluster-occupancy"
OUT = ROOT / "aiload" / "facility" / "data" / "arrivals_helios_earth.json"
MAX_LAG_H = 96
HARMONICS = 3
TAU_FAST_H = np.arange(0.5, 12.0, 0.05)
TAU_SLOW_H = np.arange(12.0, 250.0, 1.0)
MAX_LAG_MIN = 360
TAU_MINUTES = np.arange(1.0, 60.0, 0.5)      # the minute-scale component [min]
TAU_HOURS_MIN = np.arange(60.0, 600.0, 5.0)  # the hour-scale one [min]


def hourly_submissions(path: Path) -> pd.Series:
    """Jobs submitted per hour (positive steps of the running+pending GPU-job count) [-]."""
    frame = pd.read_csv(path, parse_dates=["time"]).set_index("time")
    steps = frame["total_gpujob_num"].diff().clip(lower=0).fillna(0.0)
    return steps.resample("1h").sum()


def minute_submissions(path: Path) -> pd.Series:
    """Jobs submitted per minute (positive steps of the running+pending GPU-job count) [-]."""
    frame = pd.read_csv(path, parse_dates=["time"]).set_index("time")
    return frame["total_gpujob_num"].diff().clip(lower=0).fillna(0.0)


def smooth_daily(means: np.ndarray, harmonics: int = HARMONICS) -> np.ndarray:
    """The first ``harmonics`` Fourier harmonics of a 24-value daily cycle, mean 1 [-]."""
    coef = np.fft.rfft(means)
    coef[harmonics + 1:] = 0.0
    smooth = np.fft.irfft(coef, n=len(means))
    return smooth / smooth.mean()


def fit_correlation(counts: np.ndarray, expected: np.ndarray, max_lag: int,
                    taus: tuple = (TAU_FAST_H, TAU_SLOW_H)) -> dict:
    """Two-component fit of the log pair correlation of counts (σ², τ of each, τ in steps of
    the counts: hours for hourly counts)."""
    lags = np.arange(1, max_lag + 1)
    g = np.array([np.mean(counts[:-j] * counts[j:]) / np.mean(expected[:-j] * expected[j:])
                  for j in lags])
    y = np.log(g)  # ln(1 + g_j) with g_j the excess
    best = (np.inf, None, 0.0, 0.0)
    for tau_f in taus[0]:
        for tau_s in taus[1]:
            basis = np.stack([np.exp(-lags / tau_f), np.exp(-lags / tau_s)], axis=1)
            coef = np.linalg.lstsq(basis, y, rcond=None)[0]
            if np.any(coef < 0):
                continue
            err = float(np.sum((basis @ coef - y) ** 2))
            if err < best[0]:
                best = (err, coef, tau_f, tau_s)
    err, coef, tau_f, tau_s = best
    return {"sigma2": float(coef[0]), "tau_h": float(tau_f), "slow_sigma2": float(coef[1]),
            "slow_tau_h": float(tau_s), "lags_h": lags.tolist(),
            "log_pair_correlation": np.round(y, 4).tolist(), "residual_ss": err}


def weekday_weekend(counts: pd.Series, draws: int = 2000, seed: int = 0) -> dict:
    """Weekend/weekday ratio of submissions per calendar day (medians over the dates), with a
    bootstrap 90 % interval, from hourly counts [-]."""
    daily = counts.resample("1D").sum()
    weekend = (daily.index.dayofweek >= 5)
    wd, we = daily[~weekend].to_numpy(), daily[weekend].to_numpy()
    rng = np.random.default_rng(seed)
    boot = np.median(rng.choice(we, (draws, len(we))), axis=1) / np.median(
        rng.choice(wd, (draws, len(wd))), axis=1)
    by_day = daily.groupby(daily.index.dayofweek)
    return {
        "method": "submissions per calendar day (trace's local clock); median over the weekend "
                  "dates / median over the weekday dates; 90 % interval: bootstrap of the dates "
                  "within each group (2000 draws, seed 0) (docs/scripts/fit_arrivals.py)",
        "weekend_over_weekday": round(float(np.median(we) / np.median(wd)), 3),
        "interval_90": [round(float(q), 3) for q in np.percentile(boot, [5, 95])],
        "ratio_of_means": round(float(we.mean() / wd.mean()), 3),
        "weekday_days": int(len(wd)), "weekend_days": int(len(we)),
        "median_per_day_weekday": float(np.median(wd)),
        "median_per_day_weekend": float(np.median(we)),
        "per_weekday_median_not_used": [float(v) for v in by_day.median()],
        "per_weekday_dates": [int(v) for v in by_day.size()],
    }


def philly_occupancy_by_weekday(path: Path) -> dict:
    """Philly's daily mean node occupancy (active/total) per weekday, Monday first [-]."""
    frame = pd.read_csv(path, parse_dates=["time"]).set_index("time")
    daily = (frame["active"] / frame["total"]).resample("1D").mean().dropna()
    weekend = daily.index.dayofweek >= 5
    return {
        "what": "Philly (Microsoft) daily mean node occupancy active/total per weekday, "
                "Monday first, 2017-10-03..2017-12-15 (Helios artifact philly_node_sequence.csv)"
                "; corroboration only: occupancy is submissions convolved with run times and "
                "capped by the queue",
        "mean_by_weekday": np.round(daily.groupby(daily.index.dayofweek).mean(), 3).tolist(),
        "weekend_over_weekday_mean": round(float(daily[weekend].mean()
                                                 / daily[~weekend].mean()), 3),
    }


def main() -> None:
    counts = hourly_submissions(DATA / "Earth_vcs" / "vc6YE" / "cluster_sequence_vc.csv")
    n = counts.to_numpy()
    by_hour = counts.groupby(counts.index.hour).mean().to_numpy()
    hour_of_day = smooth_daily(by_hour / by_hour.mean())
    by_day = counts.groupby(counts.index.dayofweek).mean().to_numpy()
    day_of_week = by_day / by_day.mean()
    profile = hour_of_day[counts.index.hour] * day_of_week[counts.index.dayofweek]
    expected = n.mean() * profile / profile.mean()
    corr = fit_correlation(n, expected, MAX_LAG_H)
    week = np.outer(day_of_week, hour_of_day).ravel()  # Monday 00h first
    minute = minute_submissions(DATA / "Earth_vcs" / "vc6YE" / "cluster_sequence_vc.csv")
    m_expected = minute.mean() * (week / week.mean())[minute.index.dayofweek * 24
                                                      + minute.index.hour]
    fine = fit_correlation(minute.to_numpy(), m_expected, MAX_LAG_MIN,
                           taus=(TAU_MINUTES, TAU_HOURS_MIN))
    result = {
        "name": "helios-earth",
        "model": "log-Gaussian Cox process: rate * hour_of_week * exp(X - sigma2/2), X an "
                 "Ornstein-Uhlenbeck process (variance sigma2, correlation time tau_s)",
        "hour_of_week": np.round(week / week.mean(), 4).tolist(),
        "sigma2": round(corr["sigma2"], 4),
        "tau_s": round(corr["tau_h"] * 3600.0, 1),
        "fit": {
            "method": "pair correlation of hourly counts, lags 1-96 h, two components by "
                      "least squares, the fast one used (docs/scripts/fit_arrivals.py)",
            "slow_component_not_used": {"sigma2": round(corr["slow_sigma2"], 4),
                                        "tau_h": round(corr["slow_tau_h"], 1)},
            "lags_h": corr["lags_h"],
            "log_pair_correlation": corr["log_pair_correlation"],
            "residual_ss": round(corr["residual_ss"], 5),
            "hour_of_day_raw": np.round(by_hour / by_hour.mean(), 3).tolist(),
            "day_of_week": np.round(day_of_week, 3).tolist(),
            "submissions": int(n.sum()),
            "hours": int(len(n)),
            "index_of_dispersion_1h": round(float(n.var() / n.mean()), 2),
            "weekday_weekend": weekday_weekend(counts),
            "philly_occupancy_by_weekday": philly_occupancy_by_weekday(
                DATA / "philly_node_sequence.csv"),
            "minute_scale": {
                "method": "the same two-component fit on minute counts, lags 1-360 min, "
                          "against the hour-of-week profile above",
                "sigma2_minutes": round(fine["sigma2"], 4),
                "tau_min": round(fine["tau_h"], 1),
                "sigma2_hours": round(fine["slow_sigma2"], 4),
                "tau_hours_min": round(fine["slow_tau_h"], 1),
                "log_pair_correlation_1_360min": fine["log_pair_correlation"],
                "residual_ss": round(fine["residual_ss"], 5),
            },
        },
        "source": "Helios cluster Earth, virtual cluster vc6YE, 2020-05-01..2020-05-31, "
                  "minute-level job counts (S-Lab-System-Group/HeliosArtifact commit bdaae109, "
                  "MIT; derived from the Helios traces, CC BY 4.0). Cite: Q. Hu et al., "
                  "'Characterization and Prediction of Deep Learning Workloads in Large-Scale "
                  "GPU Datacenters', SC'21.",
        "time_zone_note": "hours are the trace's local clock; applied in the facility's local "
                          "time (the time zone of start)",
    }
    # the calibrated numbers (not fitted here): kept from the file when it is rewritten
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    if "calibrations" in previous:
        result["calibrations"] = previous["calibrations"]
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT}: sigma2 = {result['sigma2']}, tau = {corr['tau_h']:.2f} h (slow, not "
          f"used: {corr['slow_sigma2']:.3f}, {corr['slow_tau_h']:.0f} h; minute scale: "
          f"{fine['sigma2']:.2f} at {fine['tau_h']:.1f} min + {fine['slow_sigma2']:.2f} at "
          f"{fine['slow_tau_h']:.0f} min), "
          f"{result['fit']['submissions']} submissions in {len(n)} h")


if __name__ == "__main__":
    main()
