"""Workload catalogues: where the facility model gets per-node profiles and inference curves.

The engine only needs two things from a catalogue, so tests can inject hand-checkable
profiles and the bundled library can be swapped:

- ``job_profile(model, hardware, nodes) -> Profile`` (per-node W on ``elapsed``; each column a
  replicate, one of which a job draws), and ``models(hardware) -> list[str]``;
- ``inference_curve(model, hardware, latency_target_s) -> InferenceCurve``.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np
import pandas as pd

from aiload._checks import check_finite_values, check_number
from aiload.errors import InputError, InputWarning
from aiload.profiles._profile import Profile

__all__ = [
    "Catalogue",
    "InferenceCurve",
    "DictCatalogue",
    "ProfilesCatalogue",
    "FallbackCatalogue",
    "default_catalogue",
    "constant_profile",
    "capacity_at_latency",
    "CAPACITY_RUNS",
]


@dataclass(frozen=True)
class InferenceCurve:
    """Per-node power of an inference server against its request rate.

    Attributes
    ----------
    power_w : callable
        ``power_w(rate_per_s: ndarray) -> ndarray`` per-node power [W] at a per-node rate
        [requests/s]; vectorised.
    capacity_per_s : float
        Requests one node serves at the latency target [requests/s].
    source : str
        Where the curve comes from.
    """

    power_w: Callable[[np.ndarray], np.ndarray]
    capacity_per_s: float
    source: str


class Catalogue(Protocol):
    """What the facility model needs from a workload catalogue."""

    def models(self, hardware: str) -> list[str]: ...

    def job_profile(self, model: str, hardware: str, nodes: int) -> Profile: ...

    def inference_curve(
        self, model: str, hardware: str, latency_target_s: float | None
    ) -> InferenceCurve: ...


def constant_profile(
    name: str, power_w: float | list[float], duration_s: float, step_s: float, *,
    model: str = "test", hardware: str = "4xH100", nodes: int = 1, workload: str = "training",
    source: str = "constructed", measured: bool = False,
) -> Profile:
    """A Profile of constant per-node power (one column per value of ``power_w``) [W].

    ``duration_s`` [s] is rounded to a whole number of ``step_s`` [s]; an
    :class:`~aiload.errors.InputWarning` says so when that changes it.
    """
    check_number(duration_s, "constant_profile(duration_s=)", gt=0.0, unit="s")
    check_number(step_s, "constant_profile(step_s=)", gt=0.0, unit="s")
    levels = check_finite_values(np.atleast_1d(power_w), "constant_profile(power_w=) [W]")
    if (levels < 0).any():
        raise InputError(
            f"constant_profile(power_w=): got {power_w!r}; expected per-node power >= 0 W."
        )
    steps = int(round(duration_s / step_s))
    if steps < 1:
        raise InputError(
            f"constant_profile: duration_s = {duration_s:g} s is less than half of step_s = "
            f"{step_s:g} s, so the profile would have no interval; give a longer duration or a "
            "shorter step."
        )
    if abs(steps * step_s - duration_s) > 1e-9 * duration_s:
        warnings.warn(
            f"constant_profile({name!r}): duration_s = {duration_s:g} s is not a whole number "
            f"of step_s = {step_s:g} s; the profile lasts {steps} steps = {steps * step_s:g} s. "
            "Give a duration that is a multiple of the step to silence this.",
            InputWarning, stacklevel=2)
    index = pd.timedelta_range(0, periods=steps, freq=pd.Timedelta(seconds=step_s), name="elapsed")
    frame = pd.DataFrame(
        {f"r{i}": np.full(steps, lv) for i, lv in enumerate(levels)}, index=index
    )
    return Profile(
        name=name, workload=workload, model=model, hardware=hardware, gpus_per_node=4,
        nodes=nodes, step_s=step_s, power_w=frame, measured=measured, source=source,
        license="n/a", citation="n/a", boundary="per node",
    )


class DictCatalogue:
    """A catalogue from explicit profiles: ``{(model, nodes): Profile}`` (tests, user data).

    ``curves`` maps a served model to an :class:`InferenceCurve`.
    """

    def __init__(self, profiles: dict, curves: dict | None = None) -> None:
        self._profiles = dict(profiles)
        self._curves = dict(curves or {})

    def models(self, hardware: str) -> list[str]:
        return sorted({m for m, _ in self._profiles} | set(self._curves))

    def job_profile(self, model: str, hardware: str, nodes: int) -> Profile:
        try:
            return self._profiles[(model, nodes)]
        except KeyError:
            sizes = sorted(n for m, n in self._profiles if m == model)
            raise InputError(
                f"No profile for model {model!r} on {nodes} nodes; this catalogue has "
                f"{model!r} on {sizes} nodes."
            ) from None

    def inference_curve(self, model: str, hardware: str, latency_target_s: float | None):
        try:
            return self._curves[model]
        except KeyError:
            raise InputError(f"No inference curve for {model!r}; have {sorted(self._curves)}.") from None


class ProfilesCatalogue:
    """The bundled profile library, :mod:`aiload.profiles`, and its scaling fits."""

    def __init__(self) -> None:
        import aiload.profiles as profiles  # noqa: PLC0415 - heavy, only when used

        self._p = profiles

    def models(self, hardware: str) -> list[str]:
        table = self._p.catalog()
        rows = table[(table["hardware"] == hardware) & (table["workload"] != "idle")]
        return sorted(set(rows["model"]))

    def job_profile(self, model: str, hardware: str, nodes: int) -> Profile:
        """All replicates of ``job_profile`` as the columns of one Profile.

        Node counts outside the measured ones hold the nearest measured duration and
        per-node power (``extrapolate=False``): a facility study should not rest on an
        invented scaling; ``notes``/``extra`` of the profile say when this applied.
        The bundled library does not change within a process, so the result is memoised
        across facility runs (a sweep task or a one-week run spent ~0.2 s rebuilding them).
        """
        return _bundled_job_profile(model, hardware, int(nodes))

    def inference_curve(self, model: str, hardware: str, latency_target_s: float | None):
        """Power from the sustained-rate runs; capacity at ``latency_target_s`` from the
        finite-pool runs of :data:`CAPACITY_RUNS` (:func:`capacity_at_latency`), or, without
        a target, the saturation throughput of the 512-token runs (the former default)."""
        fit = self._p.scaling.online_inference(hardware=hardware)
        if latency_target_s is None:
            capacity = float(fit.capacity_per_s())
            how = "saturation throughput, InstructCoder 512-token runs"
        else:
            runs = self._p.scaling.online_inference(hardware=hardware, **CAPACITY_RUNS)
            capacity = capacity_at_latency(runs.capacity, latency_target_s)
            how = (f"offered rate at median E2E latency {latency_target_s:g} s, "
                   f"{CAPACITY_RUNS['dataset']} {CAPACITY_RUNS['output_tokens']}-token runs")
        return InferenceCurve(
            power_w=lambda rate: np.asarray(fit.power_w(np.asarray(rate)), dtype=float),
            capacity_per_s=capacity,
            source=f"aiload.profiles.scaling.online_inference (NLR online runs; capacity: {how})",
        )


#: the NLR finite-pool runs the latency capacity is read from: InstructCoder prompts with the
#: 256-token output cap (158 output tokens per request on average, the shortest measured)
CAPACITY_RUNS = {"dataset": "instructcoder", "output_tokens": 256}
#: above this offered rate the finite 1000-prompt pool arrives within a few seconds, so the
#: latency measures the drain of one batch, not a rate the node sustains [requests/s]
SUSTAINED_MAX_RATE_PER_S = 100.0


def capacity_at_latency(table: pd.DataFrame, latency_target_s: float) -> float:
    """Requests/s one node takes while its median end-to-end latency stays within a target
    [requests/s].

    The offered rate at which the median E2E latency of the NLR finite-pool runs (medians
    over the repeats) reaches ``latency_target_s`` [s], interpolated linearly on the
    monotone envelope of the latency over the sustained rates (<= 100 requests/s). It is an
    *offered* rate: the runs' ``request_throughput`` divides 1,000 prompts by a duration that
    includes the first request's latency and the drain after the last arrival, so it stays
    below what the node takes while it keeps up (``docs/facility.md``, "Inference").

    Parameters
    ----------
    table : pandas.DataFrame
        ``request_rate_per_s`` [requests/s] and ``median_e2e_latency_s`` [s], by rate.
    latency_target_s : float
        Median end-to-end latency target [s].
    """
    rows = table[table["request_rate_per_s"] <= SUSTAINED_MAX_RATE_PER_S]
    rows = rows.sort_values("request_rate_per_s")
    rate = rows["request_rate_per_s"].to_numpy(dtype=float)
    lat = np.maximum.accumulate(rows["median_e2e_latency_s"].to_numpy(dtype=float))
    if not (np.isfinite(latency_target_s) and lat[0] <= latency_target_s <= lat[-1]):
        raise InputError(
            f"latency_target_s={latency_target_s!r} s is outside the median E2E latencies the "
            f"sustained runs measured ({lat[0]:.2f} s at {rate[0]:g} to {lat[-1]:.2f} s at "
            f"{rate[-1]:g} requests/s); give a target in that range or capacity_per_s= directly."
        )
    # first rate at which the envelope reaches the target, interpolated from the one before
    k = int(np.searchsorted(lat, latency_target_s, side="left"))
    if k == 0 or lat[k] == lat[k - 1]:
        return float(rate[k])
    share = (latency_target_s - lat[k - 1]) / (lat[k] - lat[k - 1])
    return float(rate[k - 1] + share * (rate[k] - rate[k - 1]))


@functools.lru_cache(maxsize=256)
def _bundled_job_profile(model: str, hardware: str, nodes: int) -> Profile:
    import aiload.profiles as profiles  # noqa: PLC0415 - heavy, only when used

    first = profiles.job_profile(model, hardware, nodes, replicate=0, extrapolate=False)
    columns = [first.power_w.iloc[:, 0].rename("r0")]
    for r in range(1, 64):
        try:
            other = profiles.job_profile(model, hardware, nodes, replicate=r, extrapolate=False)
        except (InputError, IndexError, KeyError):
            break
        if len(other.power_w) != len(first.power_w) or other.step_s != first.step_s:
            break
        columns.append(other.power_w.iloc[:, 0].rename(f"r{r}"))
    frame = pd.concat(columns, axis=1)
    # shared by every later run of this process: read-only, so no caller can alter it in place
    values = frame.to_numpy(dtype=np.float64, copy=True)
    values.flags.writeable = False
    frame = pd.DataFrame(values, index=frame.index, columns=frame.columns, copy=False)
    return dataclasses.replace(first, power_w=frame)


# Per-node mean power [W] and job duration [s] by node count, from the NLR dataset summaries
# in BACKGROUND §3.2 (third-party audit and the official notebook printout), and the online-rate
# linear fit of §3.3. Only used when aiload.profiles is not importable: the shapes are flat,
# synthesised from those statistics, never measured series.
_FALLBACK_LEVELS = {
    ("llama2-70b-lora", "4xH100"): {2: (2631.0, 89 * 60), 4: (2576.0, 58 * 60),
                                    8: (2469.0, 35 * 60), 16: (2401.0, 35 * 60)},
    ("stable-diffusion-v2", "4xH100"): {1: (2706.0, 7.0 * 3600), 2: (2656.0, 3.8 * 3600),
                                        4: (2396.0, 1.8 * 3600), 8: (2235.0, 0.95 * 3600),
                                        16: (2067.0, 0.45 * 3600)},
    # MLPerf Training v4.0 SMC runs (shared/data/mlperf-training-v4.0-smc-power/SOURCE.md)
    ("gpt3-175b", "8xH100-SXM"): {64: (6850.0, 3412.0)},
    ("llama2-70b-lora", "8xH100-SXM"): {1: (6900.0, 1693.0), 8: (5800.0, 318.0),
                                        64: (5110.0, 116.0)},
}


class FallbackCatalogue:
    """Flat per-node profiles from the summary statistics in BACKGROUND §3.2 (synthesised).

    Node counts between the tabulated ones take the nearest smaller size's power and scale the
    duration to keep node-hours constant.
    """

    def models(self, hardware: str) -> list[str]:
        return sorted({m for m, h in _FALLBACK_LEVELS if h == hardware} | {"llama3-70b"})

    def job_profile(self, model: str, hardware: str, nodes: int) -> Profile:
        try:
            table = _FALLBACK_LEVELS[(model, hardware)]
        except KeyError:
            raise InputError(f"No fallback profile for {model!r} on {hardware!r}.") from None
        ref = max([n for n in table if n <= nodes] or [min(table)])
        power_w, duration_s = table[ref]
        # whole minutes, the profile's step (as constant_profile would round it)
        duration_s = max(round(duration_s * ref / nodes / 60.0), 1) * 60.0
        return constant_profile(
            f"fallback-{model}-{nodes}n", power_w, duration_s, 60.0, model=model,
            hardware=hardware, nodes=nodes, source="BACKGROUND.md §3.2 summary statistics",
        )

    def inference_curve(self, model: str, hardware: str, latency_target_s: float | None):
        return InferenceCurve(
            power_w=lambda rate: np.minimum(1985.0 + 28.6 * np.asarray(rate, float), 2830.0),
            capacity_per_s=30.0,
            source="BACKGROUND.md §3.3 linear fit (InstructCoder), plateau 2.83 kW, 30 req/s",
        )


def default_catalogue() -> Catalogue:
    """The bundled profile library, or the flat fallback (with a warning) if it is missing."""
    try:
        import aiload.profiles as profiles  # noqa: PLC0415

        if hasattr(profiles, "job_profile"):
            return ProfilesCatalogue()
    except ImportError:
        pass
    warnings.warn(
        "aiload.profiles.job_profile is not available; using flat per-node profiles "
        "synthesised from summary statistics (FallbackCatalogue).",
        stacklevel=3,
    )
    return FallbackCatalogue()
