"""The measured sub-step fluctuation bundled in ``data/subsample.json`` (see :mod:`.refine`).

Measured on the WattAMeter example log (one 4xH100 NLR Kestrel node, GPU NVML + CPU RAPL,
0.1 s, 14 s from idle to full load): the first 120 intervals form six 2 s means; the
residual ``x − mean_preserving(means)`` at 0.1 s gives the spectrum: the residual's periodogram (no taper: the transition lies near the end of the log) on ``u = f x 2 s`` is
averaged in bands (edges in ``u``) and normalised to unit variance. The amplitude ``alpha``
(per W of local change of the 2 s series) is the one for which the refined 2 s means have the
measured rms of 0.1 s increments (a spectral statistic: the high-pass power), averaged over
:data:`SEEDS` seeds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import signal

from aiload.profiles.refine import fluctuation, local_change, mean_preserving
from aiload.traces import read_trace

__all__ = ["measure_substep", "COARSE_S", "U_EDGES"]

#: the coarse step the residual is measured against [s] (the MLPerf training step)
COARSE_S = 2.0
#: band edges on u = f x coarse step [-]: from the coarse Nyquist (0.5) to the fine one (10)
U_EDGES = (0.5, 1.0, 2.0, 3.0, 4.5, 6.5, 10.01)


#: seeds averaged when the amplitude is calibrated
SEEDS = 64


def _increment_rms(coarse, factor, spectrum, alpha) -> float:
    base = mean_preserving(coarse, factor)
    change = np.repeat(local_change(coarse), factor)
    rms = []
    for seed in range(SEEDS):
        z = fluctuation(len(coarse), factor, COARSE_S, np.random.default_rng(seed), spectrum)
        rms.append(np.sqrt((np.diff(base + alpha * change * z) ** 2).mean()))
    return float(np.mean(rms))


def _calibrate(coarse, factor, spectrum, target_w: float) -> float:
    """The amplitude whose refined series has the measured rms of fine increments (bisection;
    0 when the plain interpolation already has more)."""
    lo, hi = 0.0, 1.0
    if _increment_rms(coarse, factor, spectrum, lo) >= target_w:
        return 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _increment_rms(coarse, factor, spectrum, mid) < target_w else (lo, mid)
    return 0.5 * (lo + hi)


def measure_substep(data: Path) -> dict:
    """``alpha``, ``u_edges``, ``psd`` and the provenance of the measured sub-step fluctuation."""
    folder = Path(data) / "wattameter-example-logs"
    trace = read_trace([folder / "nvml_wattameter.log", folder / "rapl_wattameter.log"])
    fine_s = float(trace.meta.extra.get("grid_step_s", 0.1))
    factor = int(round(COARSE_S / fine_s))
    x = trace.total_w().to_numpy(np.float64)
    n = len(x) // factor
    x = x[: n * factor]
    coarse = x.reshape(n, factor).mean(axis=1)
    residual = x - mean_preserving(coarse, factor)
    change = np.repeat(local_change(coarse), factor)
    residual_alpha = float(np.sqrt((residual ** 2).mean() / (change ** 2).mean()))
    # the residual's own spectrum (its large part is the idle->load transition; the steady
    # parts add RAPL read jitter of a few W)
    freq, power = signal.periodogram(residual - residual.mean(), fs=1.0 / fine_s, window="boxcar")
    u = freq * COARSE_S
    psd = []
    for lo, hi in zip(U_EDGES[:-1], U_EDGES[1:]):
        sel = (u >= lo) & (u < hi)
        psd.append(float(power[sel].mean()) if sel.any() else 0.0)
    psd = np.asarray(psd)
    widths = np.diff(U_EDGES)
    psd = psd / float((psd * widths).sum())  # unit variance over the bands (u units)
    spectrum = dict(u_edges=list(U_EDGES), psd=psd.tolist())
    target = float(np.sqrt((np.diff(x) ** 2).mean()))
    alpha = _calibrate(coarse, factor, spectrum, target)
    return dict(
        alpha=alpha, residual_alpha=residual_alpha, increment_rms_w=target, seeds=SEEDS,
        u_edges=list(U_EDGES), psd=psd.tolist(), coarse_step_s=COARSE_S,
        fine_step_s=fine_s, intervals=int(n * factor),
        source="WattAMeter examples/post-process/{nvml,rapl}_wattameter.log (NatLabRockies/WattAMeter, "
               "commit 1060d909, BSD-3-Clause)",
        notes=("Spectrum: the residual of the measured 0.1 s node power (GPU NVML + CPU RAPL) "
               "against the mean-preserving refinement of its own 2 s means, band densities on "
               f"u = f x 2 s. Amplitude alpha = {alpha:.4f} per W of local 2 s change: the value "
               f"for which the refined 2 s means have the measured rms of 0.1 s increments "
               f"({target:.1f} W; mean over {SEEDS} seeds); the residual's own rms would give "
               f"{residual_alpha:.3f}, but as random-phase noise it overshoots the measured "
               "increments (the residual is one deterministic transition). One 14 s log with one "
               "idle->load step: a small sample, and NVML averages over ~1 s, so nothing finer "
               "than that is in the measurement."))
