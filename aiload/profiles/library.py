"""The bundled profile library: :func:`catalog`, :func:`get`, :func:`find` (and
:func:`idle_power_w`, from :mod:`aiload.profiles.idle`).

Measured profiles are read from ``data/measured_profiles.*`` (built by
:mod:`aiload.profiles.build`); synthesised ones are generated on request from cited run
statistics by :mod:`aiload.profiles.synth` with a fixed seed, so they are the same on every
call and need no space in the package.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.profiles import scaling, synth
from aiload.profiles._bundle import bundle_path, read_bundled_csv
from aiload.profiles._profile import WORKLOADS, Profile
from aiload.profiles.idle import idle_power_w

__all__ = ["catalog", "get", "find", "idle_power_w", "CATALOG_COLUMNS"]

#: columns of :func:`catalog`, in order
CATALOG_COLUMNS = ("name", "workload", "model", "hardware", "gpus_per_node", "nodes", "step_s",
                   "duration_s", "replicates", "mean_power_w", "measured", "source", "license",
                   "boundary")

_NLR_SRC = "NLR Dataset of Generative AI Workload Power Profiles, DOI 10.7799/3025227"
_NLR_CITE = ("R. Vercellino et al., Measurement of Generative AI Workload Power Profiles for Whole-Facility "
             "Data Center Infrastructure Planning, arXiv:2604.07345 (2026); dataset DOI 10.7799/3025227.")
_NLR_BOUNDARY = "GPU (NVML) + CPU (RAPL) components of one 4xH100 node"
_REPLICATES = 5


@dataclass(frozen=True)
class _SynthSpec:
    """How to generate one synthesised profile (the catalogue row comes from it)."""

    name: str
    workload: str
    model: str
    nodes: int
    step_s: float
    duration_s: float
    mean_w: tuple[float, ...]
    kind: str  # "training", "offline" or "online"
    args: tuple = ()
    source: str = ""
    notes: str = ""


def _cited(model: str, quantity: str) -> dict[int, float]:
    pts = read_bundled_csv("cited_training_points.csv")
    sel = pts[(pts["model"] == model) & (pts["quantity"] == quantity)]
    return dict(zip(sel["nodes"].astype(int), sel["value"].astype(float), strict=True))


@functools.lru_cache(maxsize=1)
def _synth_specs() -> tuple[_SynthSpec, ...]:
    specs = []
    for model, workload, shape_name in (("llama2-70b-lora", "fine-tuning", "LORA_SHAPE"),
                                        ("stable-diffusion-v2", "training", "SD_SHAPE")):
        power, duration = _cited(model, "power_w_per_node"), _cited(model, "duration_s")
        fit = scaling.training(model, "4xH100")
        for nodes, mean_w in sorted(power.items()):
            dur = duration.get(nodes)
            dur_note = ("duration cited" if dur is not None
                        else "duration from the fitted duration_s(n) (no cited duration at this size)")
            specs.append(_SynthSpec(
                name=f"nlr-{model}-4xh100-{nodes}n", workload=workload, model=model, nodes=nodes,
                step_s=0.2, duration_s=float(dur if dur is not None else fit.duration_s(nodes)),
                mean_w=(mean_w,) * _REPLICATES, kind="training", args=(shape_name,),
                source=f"{_NLR_SRC}: cited run statistics (aiload/profiles/data/cited_training_points.csv)",
                notes=(f"SYNTHESISED: shape {shape_name} from cited features (BACKGROUND 3.2); per-node mean "
                       f"{mean_w:.0f} W cited; {dur_note}; {_REPLICATES} replicates differ in dip phase "
                       "and noise (seeded).")))
    rate = read_bundled_csv("nlr_online_rate.csv")
    for dataset in ("instructcoder", "mlperf-llama2"):
        runs = rate[(rate["dataset"] == dataset) & (rate["request_rate_per_s"] >= 40)]
        runs = runs.sort_values("request_rate_per_s").head(_REPLICATES)
        specs.append(_SynthSpec(
            name=f"nlr-llama3-70b-online-4xh100-{dataset}", workload="online-inference",
            model="llama3-70b", nodes=1, step_s=0.2, duration_s=180.0,
            mean_w=tuple(runs["mean_power_w"]), kind="online", args=(tuple(runs["peak_power_w"]),),
            source=f"{_NLR_SRC}: inference_online_rate_llama3_70b/metadata.csv",
            notes=(f"SYNTHESISED: flat level at the measured mean of the saturated runs at "
                   f"{', '.join(f'{r:g}' for r in runs['request_rate_per_s'])} requests/s (one per "
                   "replicate), white noise of spread (peak - mean)/3.5; 3-min window as measured.")))
    off = read_bundled_csv("nlr_offline.csv")
    for tokens in (512, 1024):
        # repeat 0 is the first run after the server started: ~3 s longer and +5-13 % energy
        # (cold); repeats 1 and 2 agree with each other (warm), the state of a busy server
        runs = off[(off["batch_size"] == 500) & (off["max_output_tokens"] == tokens) & (off["repeat"] >= 1)]
        runs = runs.sort_values(["seed", "repeat"])
        specs.append(_SynthSpec(
            name=f"nlr-llama3-70b-offline-4xh100-b500-{tokens}tok", workload="offline-inference",
            model="llama3-70b", nodes=1, step_s=0.1, duration_s=float(runs["elapsed_s"].median()),
            mean_w=tuple(runs["mean_power_w"]), kind="offline", args=(tuple(runs["peak_power_w"]),),
            source=f"{_NLR_SRC}: inference_offline_llama3_70b/metadata.csv",
            notes=("SYNTHESISED: 500 prompts, max output "
                   f"{tokens} tokens; one replicate per warm run (prompt seeds x repeats 1-2; "
                   "repeat 0, the cold first run after the server start, left out): ramp to the "
                   "run's peak in 1 s then a linear decline to the run's mean; length = median "
                   "elapsed of the warm runs.")))
    return tuple(specs)


@functools.lru_cache(maxsize=1)
def _measured_meta() -> tuple[dict, ...]:
    return tuple(json.loads(bundle_path("measured_profiles.json").read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=1)
def _measured_series() -> dict[str, np.ndarray]:
    long = pd.read_parquet(bundle_path("measured_profiles.parquet"))
    return {name: g.sort_values("i")["power_w"].to_numpy(np.float64) for name, g in long.groupby("name")}


def _gpus(hardware: str) -> int:
    return int(hardware.split("x", 1)[0])


@functools.lru_cache(maxsize=1)
def _catalog_cached() -> pd.DataFrame:
    rows = []
    series = _measured_series()
    for m in _measured_meta():
        values = series[m["name"]]
        rows.append({**{k: m[k] for k in CATALOG_COLUMNS if k in m},
                     "duration_s": len(values) * m["step_s"], "replicates": 1,
                     "mean_power_w": float(values.mean())})
    for s in _synth_specs():
        n = int(round(s.duration_s / s.step_s))
        rows.append(dict(name=s.name, workload=s.workload, model=s.model, hardware="4xH100",
                         gpus_per_node=4, nodes=s.nodes, step_s=s.step_s, duration_s=n * s.step_s,
                         replicates=len(s.mean_w), mean_power_w=float(np.mean(s.mean_w)),
                         measured=False, source=s.source, license="CC-BY-4.0",
                         boundary=_NLR_BOUNDARY))
    return pd.DataFrame(rows, columns=list(CATALOG_COLUMNS))


def catalog() -> pd.DataFrame:
    """Every bundled profile, one row each.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CATALOG_COLUMNS`: ``step_s`` and ``duration_s`` [s], ``mean_power_w``
        per node over all replicates [W], ``measured`` (False = synthesised from cited run
        statistics).

    Examples
    --------
    >>> cat = catalog()
    >>> bool((cat["workload"] == "idle").any())
    True
    """
    return _catalog_cached().copy()


def _unknown_name(name: str) -> InputError:
    names = list(_catalog_cached()["name"])
    # a fragment such as "gpt3" should find the names that contain it
    close = [n for n in names if str(name).lower() in n][:3] or difflib.get_close_matches(
        str(name), names, n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return InputError(f"no bundled profile named {name!r}.{hint} See aiload.profiles.catalog() "
                      "or 'aiload profiles' for the list.")


@functools.lru_cache(maxsize=None)
def _synth_frame(name: str) -> pd.DataFrame:
    spec = next(s for s in _synth_specs() if s.name == name)
    idle_w = idle_power_w("4xH100")
    if spec.kind == "training":
        return synth.synth_training(getattr(synth, spec.args[0]), duration_s=spec.duration_s,
                                    mean_w=spec.mean_w[0], idle_w=idle_w, step_s=spec.step_s,
                                    replicates=len(spec.mean_w), seed=spec.nodes)
    if spec.kind == "offline":
        return synth.synth_offline(elapsed_s=spec.duration_s, mean_w=list(spec.mean_w),
                                   peak_w=list(spec.args[0]), idle_w=idle_w, step_s=spec.step_s)
    return synth.synth_online(duration_s=spec.duration_s, mean_w=list(spec.mean_w),
                              peak_w=list(spec.args[0]), step_s=spec.step_s, seed=0)


def get(name: str) -> Profile:
    """One bundled profile by name.

    Parameters
    ----------
    name : str
        A ``name`` of :func:`catalog`.

    Returns
    -------
    Profile
        A new object each call (its ``power_w`` [W] may be modified freely).

    Raises
    ------
    InputError
        Unknown name; the message suggests the closest names.
    """
    for m in _measured_meta():
        if m["name"] == name:
            values = _measured_series()[name]
            power = synth._frame([values], m["step_s"])
            return Profile(power_w=power, **{k: v for k, v in m.items() if k != "power_w"})
    for s in _synth_specs():
        if s.name == name:
            return Profile(name=s.name, workload=s.workload, model=s.model, hardware="4xH100",
                           gpus_per_node=4, nodes=s.nodes, step_s=s.step_s,
                           power_w=_synth_frame(name).copy(), measured=False, source=s.source,
                           license="CC-BY-4.0", citation=_NLR_CITE, boundary=_NLR_BOUNDARY,
                           notes=s.notes,
                           extra={"measured_step_s": None, "synthesised_step_s": s.step_s})
    raise _unknown_name(name)


def find(workload: str, *, hardware: str | None = None, model: str | None = None,
         nodes: int | None = None) -> Profile:
    """The bundled profile that best matches a workload (and optionally hardware, model, size).

    Among the profiles matching ``workload``, ``hardware`` and ``model``, the one whose node
    count is nearest to ``nodes`` on a log scale (ties: the smaller; measured before
    synthesised at equal node count).

    Parameters
    ----------
    workload : str
        One of :data:`aiload.profiles.WORKLOADS`.
    hardware, model : str, optional
        Filters (exact names, see :func:`catalog`).
    nodes : int, optional
        Node count wanted [nodes].

    Raises
    ------
    InputError
        Nothing matches; the message lists what exists for the workload.
    """
    if workload not in WORKLOADS:
        close = difflib.get_close_matches(str(workload), WORKLOADS, n=1, cutoff=0.3)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(f"workload {workload!r} is not one of {WORKLOADS}.{hint}")
    if nodes is not None and (isinstance(nodes, (bool, np.bool_))
                              or not (isinstance(nodes, (int, np.integer)) and nodes >= 1)):
        raise InputError(f"nodes must be an integer >= 1, got {nodes!r}.")
    cat = _catalog_cached()
    cand = cat[cat["workload"] == workload]
    for key, value in (("hardware", hardware), ("model", model)):
        if value is None:
            continue
        sel = cand[cand[key] == value]
        if sel.empty:
            have = sorted(cand[key].unique())
            close = difflib.get_close_matches(str(value), have, n=1, cutoff=0.3)
            hint = f" The nearest is {close[0]!r}." if close else ""
            raise InputError(
                f"no {workload!r} profile with {key}={value!r}; available {key}s for this workload "
                f"(with the other filters): {have}.{hint}"
            )
        cand = sel
    if nodes is not None:
        dist = np.abs(np.log(cand["nodes"].to_numpy(float) / nodes))
        order = np.lexsort((~cand["measured"].to_numpy(bool), cand["nodes"].to_numpy(), dist))
        return get(cand["name"].iloc[order[0]])
    cand = cand.sort_values("measured", ascending=False, kind="stable")
    return get(cand["name"].iloc[0])
