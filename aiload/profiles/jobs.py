"""Per-node profile of a training job of any node count, placed on the fitted scaling curves.

Method (``docs/scaling.md``): take the bundled profile of the same model and hardware whose
node count is nearest (log scale); **stretch its time axis** by ``d(n) / d_base`` — the
samples stay, each interval becomes ``step_s * d(n) / d_base`` long — so the duration equals
the fitted ``duration_s(n)``; then **scale its level** by ``P(n) / P_base`` so the mean equals
the fitted ``power_w_per_node(n)``. Per-node energy is then ``P(n) * d(n)``, i.e. the fitted
job energy divided by ``n``. Features keep their count (a job that runs longer has its
dips further apart), which is what a fixed amount of work done more slowly looks like.

Beyond the data the fit is an assumption, not a measurement: a fit with one node count has
no fitted duration scaling at all (``d ~ 1/n`` is assumed). ``extrapolate`` says what to do
there: follow the fit and warn (default), follow it silently (``True``), or hold the
duration, shape and per-node power of the nearest measured node count (``False``).
"""

from __future__ import annotations

import dataclasses
import warnings
import zlib

import numpy as np
import pandas as pd

from aiload._checks import check_number
from aiload.errors import InputError
from aiload.profiles import scaling
from aiload.profiles._profile import Profile
from aiload.profiles.library import _catalog_cached, get
from aiload.profiles.refine import refine

__all__ = ["job_profile", "ExtrapolationWarning", "EXTRAPOLATION_FACTOR", "FINE_STEP_S",
           "measured_nodes"]

#: a request more than this factor outside the measured node counts is an extrapolation
EXTRAPOLATION_FACTOR = 2.0
#: the step job profiles are refined to by default [s]: the facility model's finest output
FINE_STEP_S = 0.1


class ExtrapolationWarning(UserWarning):
    """A job profile rests on a scaling fit used outside its data."""


def measured_nodes(fit: scaling.TrainingScaling) -> tuple[int, int]:
    """Smallest and largest node count with a measured duration [nodes]."""
    n = fit.points.loc[fit.points["quantity"] == "duration_s", "nodes"]
    return int(n.min()), int(n.max())


def _outside(fit: scaling.TrainingScaling, nodes: int) -> str:
    """Why ``nodes`` is an extrapolation of ``fit`` ('' when it is not)."""
    lo, hi = measured_nodes(fit)
    if lo == hi:
        if nodes == lo:
            return ""
        return (f"the duration was measured at {lo} nodes only, so its scaling to {nodes} "
                f"nodes is assumed (d ~ n^-{fit.alpha:g}), not fitted")
    if nodes * EXTRAPOLATION_FACTOR < lo or nodes > hi * EXTRAPOLATION_FACTOR:
        return (f"{nodes} nodes is more than {EXTRAPOLATION_FACTOR:g}x outside the measured "
                f"{lo}..{hi} nodes")
    return ""


def job_profile(model: str, hardware: str, nodes: int, *, replicate: int = 0,
                extrapolate: bool | None = None, step_s: float | None = FINE_STEP_S) -> Profile:
    """Per-node profile of a training/fine-tuning job on ``nodes`` nodes.

    Parameters
    ----------
    model : str
        e.g. ``"llama2-70b-lora"``, ``"stable-diffusion-v2"``, ``"gpt3-175b"``.
    hardware : str
        ``"4xH100"`` or ``"8xH100-SXM"``.
    nodes : int
        Node count of the job [nodes].
    replicate : int
        Which replicate column of the base profile to use.
    extrapolate : bool or None
        What to do when ``nodes`` lies outside the data of the fit (a fit with one measured
        node count and any other ``nodes``, or more than :data:`EXTRAPOLATION_FACTOR` beyond
        the measured range): ``None`` follows the fit and emits an
        :class:`ExtrapolationWarning`; ``True`` follows the fit without warning; ``False``
        holds the duration, shape and per-node power of the nearest measured node count
        (no scaling invented; ``nodes`` still sets ``Profile.nodes``). ``notes`` and
        ``extra`` say which applied.
    step_s : float or None
        Refine the base profile to this step before it is stretched
        (:func:`aiload.profiles.refine.refine`: every measured interval's energy kept, the
        structure below it from the measured sub-step spectrum) when its step is a larger
        whole multiple of it [s]; None keeps the base profile's step. Default
        :data:`FINE_STEP_S`, the facility model's finest output step, so a facility series at
        0.1 s is not a staircase of 2 s measurements.

    Returns
    -------
    Profile
        One column ``r0`` [W]; unless held, ``duration_s == training(...).duration_s(nodes)``
        and mean == ``power_w_per_node(nodes)`` (to rounding). ``step_s`` is the stretched
        step [s] (exact); the index labels are that step rounded to the nanosecond.
        ``extra`` holds ``base``, ``stretch``, ``scale``, ``extrapolated`` (bool: the fit
        was used outside its data), ``held_at_nodes`` (the node count whose fitted values
        were used, or None) and ``measured_nodes`` (the measured range).

    Examples
    --------
    >>> p = job_profile("llama2-70b-lora", "8xH100-SXM", 16)
    >>> p.nodes, p.workload
    (16, 'fine-tuning')
    >>> held = job_profile("gpt3-175b", "8xH100-SXM", 8192, extrapolate=False)
    >>> round(held.duration_s), held.extra["held_at_nodes"]
    (3413, 64)
    """
    if isinstance(nodes, (bool, np.bool_)) or not (isinstance(nodes, (int, np.integer))
                                                   and nodes >= 1):
        raise InputError(f"nodes must be an integer >= 1, got {nodes!r}.")
    if not any(extrapolate is v for v in (None, True, False)):
        raise InputError(f"extrapolate must be None, True or False, got {extrapolate!r}.")
    if isinstance(replicate, (bool, np.bool_)) or not isinstance(replicate, (int, np.integer)):
        raise InputError(
            f"job_profile(replicate=): expected a whole number >= 0, got {replicate!r}."
        )
    check_number(step_s, "job_profile(step_s=)", gt=0.0, unit="s", optional=True,
                 hint="Give e.g. 0.1, or None to keep the base profile's step.")
    fit = scaling.training(model, hardware)
    cat = _catalog_cached()
    cand = cat[(cat["model"] == model) & (cat["hardware"] == hardware)
               & cat["workload"].isin(["training", "fine-tuning"])]
    if cand.empty:
        raise InputError(f"no bundled training profile for model={model!r} on hardware={hardware!r}.")
    dist = np.abs(np.log(cand["nodes"].to_numpy(float) / nodes))
    order = np.lexsort((~cand["measured"].to_numpy(bool), cand["nodes"].to_numpy(), dist))
    base = get(cand["name"].iloc[order[0]])
    if not 0 <= replicate < base.replicates:
        raise InputError(
            f"replicate={replicate!r} out of range: the base profile {base.name!r} has "
            f"{base.replicates} replicate(s) (0..{base.replicates - 1})."
        )
    base_step_s = base.step_s
    one = dataclasses.replace(base, power_w=base.power_w.iloc[:, [replicate]])
    if step_s is not None and base.step_s > step_s * (1 + 1e-9):
        ratio = base.step_s / step_s
        if abs(ratio - round(ratio)) <= 1e-6 * ratio:
            # a fixed seed per base profile and replicate: the same profile on every call
            one = refine(one, step_s, seed=zlib.crc32(f"{base.name}:{replicate}".encode()))
    values = one.power_w.iloc[:, 0].to_numpy(np.float64)
    refined = one.step_s != base_step_s
    lo, hi = measured_nodes(fit)
    why = _outside(fit, int(nodes))
    held_at = None
    if extrapolate is False and not lo <= nodes <= hi:
        held_at = int(np.clip(nodes, lo, hi))
        caveat = (f" Outside the measured {lo}..{hi} nodes: duration and per-node power HELD "
                  f"at the fitted values for {held_at} nodes (no scaling extrapolated).")
    elif why:
        caveat = f" EXTRAPOLATED: {why}."
        if extrapolate is None:
            warnings.warn(
                f"job_profile({model!r}, {hardware!r}, {nodes}): {why}. Pass extrapolate=True "
                f"to accept the fitted curve there, or extrapolate=False to hold the values of "
                f"{int(np.clip(nodes, lo, hi))} nodes.", ExtrapolationWarning, stacklevel=2)
    else:
        caveat = ""
    at = held_at if held_at is not None else nodes
    duration_s = float(fit.duration_s(at))
    mean_w = float(fit.power_w_per_node(at))
    stretch = duration_s / (len(values) * one.step_s)
    scale = mean_w / values.mean()
    stretched_s = duration_s / len(values)
    index = pd.timedelta_range(start=pd.Timedelta(0), periods=len(values),
                               freq=pd.Timedelta(seconds=stretched_s).round("ns"), name="elapsed")
    power = pd.DataFrame({"r0": values * scale}, index=index)
    return Profile(
        name=f"job-{model}-{hardware.lower()}-{nodes}n-r{replicate}", workload=base.workload,
        model=model, hardware=hardware, gpus_per_node=base.gpus_per_node, nodes=int(nodes),
        step_s=stretched_s, power_w=power, measured=False, source=base.source, license=base.license,
        citation=base.citation, boundary=base.boundary,
        notes=(f"Derived from {base.name!r} (replicate {replicate}, "
               f"{'measured' if base.measured else 'synthesised'}): time stretched x{stretch:.4f} "
               f"to the fitted duration {duration_s:.1f} s, level scaled x{scale:.4f} to the fitted "
               f"per-node mean {mean_w:.1f} W.{caveat}"
               + (f" Refined from {base_step_s:g} s to {one.step_s:g} s before the stretch "
                  "(energy of every interval kept; structure below it from the measured "
                  "sub-step spectrum)." if refined else "")),
        extra={"base": base.name, "stretch": stretch, "scale": scale,
               "extrapolated": bool(why) and held_at is None, "held_at_nodes": held_at,
               "measured_nodes": (lo, hi),
               "measured_step_s": base_step_s if base.measured else base.extra.get("measured_step_s"),
               "base_step_s": base_step_s, "refined_to_step_s": one.step_s if refined else None},
    )
