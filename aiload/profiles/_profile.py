"""The :class:`Profile` type: one per-node workload power profile on relative time."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from aiload._checks import check_number
from aiload.errors import InputError

__all__ = ["Profile", "WORKLOADS"]

#: workload kinds a profile can describe
WORKLOADS = ("training", "fine-tuning", "offline-inference", "online-inference", "idle")


@dataclass(frozen=True)
class Profile:
    """Per-node power of one workload, on relative time.

    Attributes
    ----------
    name : str
        Unique catalogue name, e.g. ``"mlperf-gpt3-8xh100-64n"``.
    workload : str
        One of :data:`WORKLOADS`.
    model : str
        The AI model run, e.g. ``"gpt3-175b"``, ``"llama2-70b-lora"``.
    hardware : str
        Node type, e.g. ``"8xH100-SXM"`` or ``"4xH100"``.
    gpus_per_node : int
        GPUs in one node.
    nodes : int
        Node count of the (measured or described) job the profile comes from.
    step_s : float
        Interval length of ``power_w`` [s].
    power_w : pandas.DataFrame
        Interval-mean power *per node* [W]; index a ``TimedeltaIndex`` named ``elapsed``
        starting at 0 with a fixed step; one column per replicate (``r0``, ``r1``, ...).
    measured : bool
        True when the series is a measurement (resampled and normalised per node); False
        when the shape is synthesised from cited run statistics.
    source, license, citation : str
        Where the data comes from, under which license, and what to cite.
    boundary : str
        What the power covers, e.g. ``"AC wall power of the node"`` or
        ``"GPU (NVML) + CPU (RAPL) components"``.
    notes : str
        Free text: how it was derived.
    """

    name: str
    workload: str
    model: str
    hardware: str
    gpus_per_node: int
    nodes: int
    step_s: float
    power_w: pd.DataFrame
    measured: bool
    source: str
    license: str
    citation: str
    boundary: str
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.workload not in WORKLOADS:
            raise InputError(
                f"Profile {self.name!r}: workload {self.workload!r} is not one of {WORKLOADS}."
            )
        if self.nodes < 1 or self.gpus_per_node < 1:
            raise InputError(
                f"Profile {self.name!r}: nodes and gpus_per_node must be >= 1, got "
                f"{self.nodes} and {self.gpus_per_node}."
            )
        if not isinstance(self.power_w, pd.DataFrame):
            raise InputError(
                f"Profile {self.name!r}: power_w must be a DataFrame with one column per "
                f"replicate ('r0', ...), got {type(self.power_w).__name__}; e.g. "
                "series.to_frame('r0')."
            )
        idx = self.power_w.index
        if not isinstance(idx, pd.TimedeltaIndex) or idx.name != "elapsed":
            raise InputError(
                f"Profile {self.name!r}: power_w needs a TimedeltaIndex named 'elapsed', got "
                f"{type(idx).__name__} named {idx.name!r}."
            )
        check_number(self.step_s, f"Profile {self.name!r}: step_s", gt=0.0, unit="s")
        values = self.power_w.to_numpy(dtype=float)
        if values.size == 0 or np.isnan(values).any() or (values < 0).any():
            raise InputError(
                f"Profile {self.name!r}: power_w must be non-empty, without NaN or negative values."
            )
        if np.isinf(values).any():
            raise InputError(
                f"Profile {self.name!r}: power_w holds an infinite value at "
                f"{idx[int(np.argwhere(np.isinf(values))[0][0])]}; expected finite power [W]."
            )
        # labels 0, step, 2·step, ...: duration and energy are len × step_s, so a step_s that
        # is not the labels' spacing would scale them silently (a label step may be cut to
        # whole ns, so label k may be k ns off)
        t_ns = idx.as_unit("ns").asi8
        step_ns = self.step_s * 1e9
        k = np.arange(t_ns.size)
        off = np.flatnonzero(np.abs(t_ns - k * step_ns) > 1.0 + k + 1e-9 * np.abs(t_ns))
        if off.size:
            i = int(off[0])
            raise InputError(
                f"Profile {self.name!r}: label {i} is {idx[i]}, but step_s = {self.step_s:g} s puts "
                f"it at {pd.Timedelta(i * step_ns, unit='ns')}; expected labels 0, step_s, "
                "2·step_s, ... Give the step the labels have, or relabel the series."
            )

    @property
    def duration_s(self) -> float:
        """Length of the profile [s]."""
        return len(self.power_w) * self.step_s

    @property
    def replicates(self) -> int:
        """Number of replicate columns."""
        return self.power_w.shape[1]

    @property
    def mean_power_w(self) -> float:
        """Mean per-node power over all replicates [W]."""
        return float(self.power_w.to_numpy(dtype=np.float64).mean())

    @property
    def energy_wh(self) -> float:
        """Per-node energy of one run, averaged over replicates [Wh]."""
        return float(self.power_w.to_numpy(dtype=np.float64).sum(axis=0).mean() * self.step_s / 3600)
