"""Per-node profile of a training job of any node count, placed on the fitted scaling curves.

Method (``docs/scaling.md``): take the bundled profile of the same model and hardware whose
node count is nearest (log scale); **stretch its time axis** by ``d(n) / d_base`` — the
samples stay, each interval becomes ``step_s * d(n) / d_base`` long — so the duration equals
the fitted ``duration_s(n)``; then **scale its level** by ``P(n) / P_base`` so the mean equals
the fitted ``power_w_per_node(n)``. Per-node energy is then ``P(n) * d(n)``, i.e. the fitted
job energy divided by ``n``. Features keep their count (a job that runs longer has its
dips further apart), which is what a fixed amount of work done more slowly looks like.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.profiles import scaling
from aiload.profiles._profile import Profile
from aiload.profiles.library import _catalog_cached, get

__all__ = ["job_profile"]


def job_profile(model: str, hardware: str, nodes: int, *, replicate: int = 0) -> Profile:
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

    Returns
    -------
    Profile
        One column ``r0`` [W]; ``duration_s == training(...).duration_s(nodes)`` and mean ==
        ``power_w_per_node(nodes)`` (to rounding). ``step_s`` is the stretched step [s]
        (exact); the index labels are that step rounded to the nanosecond. ``extra`` holds
        ``base``, ``stretch`` and ``scale``.

    Examples
    --------
    >>> p = job_profile("llama2-70b-lora", "8xH100-SXM", 16)
    >>> p.nodes, p.workload
    (16, 'fine-tuning')
    """
    if not (isinstance(nodes, (int, np.integer)) and nodes >= 1):
        raise InputError(f"nodes must be an integer >= 1, got {nodes!r}.")
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
    values = base.power_w.iloc[:, replicate].to_numpy(np.float64)
    duration_s = float(fit.duration_s(nodes))
    mean_w = float(fit.power_w_per_node(nodes))
    stretch = duration_s / (len(values) * base.step_s)
    scale = mean_w / values.mean()
    step_s = duration_s / len(values)
    index = pd.timedelta_range(start=pd.Timedelta(0), periods=len(values),
                               freq=pd.Timedelta(seconds=step_s).round("ns"), name="elapsed")
    power = pd.DataFrame({"r0": values * scale}, index=index)
    return Profile(
        name=f"job-{model}-{hardware.lower()}-{nodes}n-r{replicate}", workload=base.workload,
        model=model, hardware=hardware, gpus_per_node=base.gpus_per_node, nodes=int(nodes),
        step_s=step_s, power_w=power, measured=False, source=base.source, license=base.license,
        citation=base.citation, boundary=base.boundary,
        notes=(f"Derived from {base.name!r} (replicate {replicate}, "
               f"{'measured' if base.measured else 'synthesised'}): time stretched x{stretch:.4f} "
               f"to the fitted duration {duration_s:.1f} s, level scaled x{scale:.4f} to the fitted "
               f"per-node mean {mean_w:.1f} W."),
        extra={"base": base.name, "stretch": stretch, "scale": scale},
    )
