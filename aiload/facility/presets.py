"""Bundled facility presets (the names are API) and resolution of ``spec_or_preset``.

- ``"colocation-10mw"``: 2,840 nodes of 4×H100 (≈ 10 MW IT nameplate at 3.52 kW/node, the
  NLR/DIPLOEE colocation case) running Llama-2-70B LoRA fine-tuning and Stable Diffusion v2
  training jobs of 2–16 nodes; ``utilization=`` is the target mean node utilisation.
- ``"inference-1mw"``: 283 nodes of 4×H100 (≈ 1 MW) serving Llama-3-70B to users with the
  Azure LLM inference 2024 week as demand (digitised from the trace's published plots, on the
  calendar), nodes sized each minute by a latency target; ``utilization=`` is the
  achieved mean share of busy nodes (as in the NLR study).
- ``"campus-100mw"``: 9,800 nodes of 8×H100-SXM (≈ 100 MW IT nameplate at 10.2 kW/node, the
  DGX H100 rated maximum): one synchronous GPT-3-175B training job on 8,192 nodes (65,536
  GPUs) for the whole run, Llama-2-70B LoRA fine-tuning jobs on the rest of the job pool, and
  800 nodes serving Llama-3-70B.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

from aiload.errors import InputError
from aiload.facility.demand import DEFAULT_SHAPE
from aiload.facility.spec import (
    FacilitySpec, FleetSpec, InferenceSpec, JobStreamSpec, OverheadSpec, suggest,
)

__all__ = ["PRESETS", "colocation_10mw", "inference_1mw", "campus_100mw", "resolve_spec"]


def _idle_w(hardware: str, default_w: float) -> float:
    """Idle node power from the profile library when it has it, else ``default_w`` [W]."""
    try:
        import aiload.profiles as profiles  # noqa: PLC0415

        return float(profiles.idle_power_w(hardware))
    except (ImportError, AttributeError, LookupError, ValueError):
        return default_w


def _boundary(hardware: str, nameplate_w: float) -> dict:
    """FleetSpec fields from the measured boundary of ``hardware``'s profiles up to the rack
    input (rest of node, PSU conversion, network, storage; ``docs/facility.md``,
    "Boundaries"), or none when the profile library does not know the hardware."""
    try:
        from aiload.profiles.boundary import node_boundary  # noqa: PLC0415

        return node_boundary(hardware).fleet_fields(nameplate_w)
    except (ImportError, LookupError, ValueError, OSError):
        return {}


#: jobs per node count of the colocation preset: each doubling of the job size is 0.31 times
#: as frequent (real clusters' jobs are mostly small: Helios median 1 GPU, mean 3.7; Acme Seren
#: median 1, mean 5.7), the ratio set so that with the NLR workloads' measured durations a job
#: holds 5.42 node-hours on average, the NLR colocation's own figure (utilisation × nodes × 24 h
#: / jobs per day: 5.42 at u = 0.4 and 5.41 at u = 0.8); see docs/validation.md
COLOCATION_NODE_COUNTS = {2: 0.70, 4: 0.21, 8: 0.07, 16: 0.02}


def colocation_10mw(utilization: float = 0.6, *, nodes: int = 2840, backfill: bool = True,
                    cooling: str = "pue", arrival_process: Any = "colocation",
                    daily_amplitude: float = 0.0, weekly_amplitude: float = 0.0,
                    catalogue: Any = None) -> FacilitySpec:
    """10 MW colocation: 2,840 × 4×H100 nodes, training and fine-tuning jobs.

    Parameters
    ----------
    utilization : float
        Achieved mean share of the nodes busy over the run, in (0, 1] (0.2–0.8 are the NLR
        reference cases): the submission rate is ``u·N / E[nodes·duration]`` and the
        submission process's intensity is scaled to that mean over the run.
    nodes : int
        Fleet size [-] (2,840 in the reference case).
    arrival_process : str, CoxArrivals or None
        Job submissions: ``"colocation"`` (default), a log-Gaussian Cox process with the daily
        cycle and minute-scale clusters fitted to a Helios GPU cluster and an activity level of
        days (busy and quiet spells), chosen on the NLR colocation cases
        (``docs/validation.md``); ``"helios-earth"``, the fit as measured
        (:mod:`aiload.facility.arrivals`); None for
        the former Poisson arrivals with the cosine modulation of ``daily_amplitude`` and
        ``weekly_amplitude`` (e.g. ``arrival_process=None, daily_amplitude=0.2,
        weekly_amplitude=0.2``, an assumption, not fitted).
    daily_amplitude, weekly_amplitude : float
        Cosine modulation, only with ``arrival_process=None``.
    """
    stream = JobStreamSpec(
        name="training+fine-tuning",
        workloads={"llama2-70b-lora": 0.5, "stable-diffusion-v2": 0.5},
        node_counts=COLOCATION_NODE_COUNTS,
        utilization=utilization, daily_amplitude=daily_amplitude,
        weekly_amplitude=weekly_amplitude, arrival_process=arrival_process,
    )
    return FacilitySpec(
        fleet=FleetSpec(nodes=nodes, hardware="4xH100", idle_w=_idle_w("4xH100", 700.0),
                        nameplate_w=3520.0, **_boundary("4xH100", 3520.0)),
        streams=(stream,), overheads=OverheadSpec(cooling=cooling), backfill=backfill,
        catalogue=catalogue, name="colocation-10mw",
    )


def inference_1mw(utilization: float = 0.5, *, nodes: int = 283, sizing: str = "latency",
                  latency_target_s: float | None = 5.5, timeout_s: float = 60.0,
                  target_load: float = 0.8, headroom: float = 0.1,
                  reaction_s: float = 300.0, bursts: bool = False, cooling: str = "pue",
                  shape: Any = DEFAULT_SHAPE, catalogue: Any = None) -> FacilitySpec:
    """1 MW inference: 283 × 4×H100 nodes serving Llama-3-70B, sized as the NLR study does.

    Parameters
    ----------
    utilization : float
        Achieved mean share of busy nodes, in (0, 1) (0.2–0.8 are the NLR reference cases);
        with ``sizing="autoscaler"`` mean demand / pool capacity.
    nodes : int
        Serving nodes [-] (283 in the reference case).
    sizing : str
        ``"latency"`` (nodes per minute from a latency target) or ``"autoscaler"`` (the
        former replica controller with ``target_load``, ``headroom``, ``reaction_s``).
    latency_target_s : float
        Median end-to-end latency target [s]: 5.5 s gives 62.5 requests/s per node on the NLR
        runs (``docs/facility.md``, "Inference").
    timeout_s : float
        Longest wait of a request beyond capacity before it counts as unserved [s].
    shape : str or pandas.Series
        Demand shape (``InferenceSpec.shape``): ``"azure-2024-week"`` (default),
        ``"servegen-m-large"`` or a tz-aware Series.
    """
    service = InferenceSpec(nodes=nodes, utilization=utilization, model="llama3-70b",
                            sizing=sizing, latency_target_s=latency_target_s,
                            timeout_s=timeout_s, target_load=target_load, headroom=headroom,
                            reaction_s=reaction_s, bursts=bursts, shape=shape)
    return FacilitySpec(
        fleet=FleetSpec(nodes=nodes, hardware="4xH100", idle_w=_idle_w("4xH100", 700.0),
                        nameplate_w=3520.0, **_boundary("4xH100", 3520.0)),
        inference=(service,), overheads=OverheadSpec(cooling=cooling), catalogue=catalogue,
        name="inference-1mw",
    )


def campus_100mw(utilization: float = 0.07, *, big_job_nodes: int = 8192,
                 serving_nodes: int = 800, inference_utilization: float = 0.5,
                 cooling: str = "liquid", inference_shape: Any = DEFAULT_SHAPE,
                 catalogue: Any = None) -> FacilitySpec:
    """≈100 MW AI campus of 9,800 × 8×H100-SXM nodes.

    Parameters
    ----------
    utilization : float
        Fine-tuning stream's share of the job pool's node-time, in (0, 1].
    big_job_nodes : int
        Nodes of the synchronous GPT-3-175B job that runs from the start to the end [-].
    serving_nodes : int
        Nodes of the Llama-3-70B service [-]; each counts as two 4×H100 servers of the
        measured NLR curve.
    inference_utilization : float
        Achieved mean share of the serving nodes busy, in (0, 1).
    inference_shape : str or pandas.Series
        The serving nodes' demand shape (``InferenceSpec.shape``): ``"azure-2024-week"``
        (default), ``"servegen-m-large"`` or a tz-aware Series.
    cooling : str
        ``"liquid"`` (direct-to-chip, the default: 80 % of the heat to a warm-water loop on dry
        coolers, PUE ≈ 1.1), ``"drybulb"`` (air cooling with an integrated economiser) or
        ``"pue"``; see ``docs/facility.md``, "Cooling".
    """
    big = JobStreamSpec(name="gpt3-pretraining", workloads={"gpt3-175b": 1.0},
                        node_counts={big_job_nodes: 1.0}, arrivals=(0.0,),
                        duration_s=10 * 366 * 86400.0, profile_nodes=64)
    tuning = JobStreamSpec(name="fine-tuning", workloads={"llama2-70b-lora": 1.0},
                           node_counts={8: 0.6, 64: 0.4}, utilization=utilization,
                           daily_amplitude=0.2, weekly_amplitude=0.2)
    service = InferenceSpec(nodes=serving_nodes, utilization=inference_utilization,
                            model="llama3-70b", curve_hardware="4xH100", curve_nodes_per_node=2.0,
                            shape=inference_shape)
    return FacilitySpec(
        # idle: the level the 1-node MLPerf LoRA node settles at after the run (AC input)
        fleet=FleetSpec(nodes=9800, hardware="8xH100-SXM", idle_w=_idle_w("8xH100-SXM", 2400.0),
                        nameplate_w=10200.0, **_boundary("8xH100-SXM", 10200.0)),
        streams=(big, tuning), inference=(service,), overheads=OverheadSpec(cooling=cooling),
        catalogue=catalogue, name="campus-100mw",
    )


PRESETS: dict[str, Callable[..., FacilitySpec]] = {
    "colocation-10mw": colocation_10mw,
    "inference-1mw": inference_1mw,
    "campus-100mw": campus_100mw,
}


def resolve_spec(spec_or_preset, overrides: dict) -> FacilitySpec:
    """A FacilitySpec from a spec (fields replaced by ``overrides``) or a preset name."""
    if isinstance(spec_or_preset, str):
        if spec_or_preset not in PRESETS:
            raise InputError(
                f"Unknown facility preset {spec_or_preset!r}; expected one of "
                f"{sorted(PRESETS)}.{suggest(spec_or_preset, list(PRESETS))}"
            )
        make = PRESETS[spec_or_preset]
        allowed = list(inspect.signature(make).parameters)
        for key in overrides:
            if key not in allowed:
                raise InputError(
                    f"Preset {spec_or_preset!r} has no parameter {key!r}; it takes "
                    f"{allowed}.{suggest(key, allowed)}"
                )
        return make(**overrides)
    if isinstance(spec_or_preset, FacilitySpec):
        fields = [f.name for f in dataclasses.fields(FacilitySpec)]
        for key in overrides:
            if key not in fields:
                raise InputError(
                    f"FacilitySpec has no field {key!r}; overrides must be one of {fields}."
                    f"{suggest(key, fields)}"
                )
        return dataclasses.replace(spec_or_preset, **overrides) if overrides else spec_or_preset
    raise InputError(
        f"facility(): expected a FacilitySpec or a preset name, got "
        f"{type(spec_or_preset).__name__}."
    )
