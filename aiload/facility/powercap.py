"""Power-cap curves: how fast a job runs when its power is held below what it would draw.

A curve maps the power fraction ``r`` (mean power of a capped run / mean power of the same work
uncapped) to the relative throughput ``s`` (uncapped time to solution / capped). A job capped to
``r`` runs ``1/s`` times longer and uses ``r/s`` times the energy per unit of work.

The bundled curves (``aiload/facility/data/power_caps.json``, built from the sources by
``docs/scripts/make_power_cap_curve.py``; the points, their sources and their status are in
docs/flexibility.md, "Power caps: the data"):

- ``"hpc-hpl"``: measured: 64 CPU nodes of HLRS Hawk running HPL uncapped, under a static and
  under a dynamic socket power limit (LLNL LAST data set, Patki et al., ICS 2025; the files are
  in the shared data and in tests/data). A facility-level analogue, not a GPU.
- ``"gpu-llm-training"``: measured on one NVIDIA A40 at NVML power limits of 100-300 W,
  BERT-base fine-tuning on SQuAD (Zeus power trace, You et al., NSDI 2023): a transformer,
  not an LLM at scale; GPU power.
- ``"gpu-training-v100"``: the same on a V100 (100-250 W).
- ``"gpu-llm-inference"``: one point, LLaMA inference at a 175 W limit of 250 W (Samsi et al.,
  HPEC 2023), read in a secondary summary of the paper and marked to be checked.

``power_scope`` says whose power ``r`` is: the node's (``"hpc-hpl"``) or the GPU's (the GPU
curves). A node whose GPUs draw the share ``g`` of its power, capped through its GPUs, follows
:meth:`PowerCapCurve.for_node`: ``r_node = 1 - g (1 - r_gpu)`` at the same throughput.

Between points the curve is linear; it is not extrapolated below its lowest measured cap nor
above 1 (:class:`~aiload.errors.InputError`, naming the value and the range).

Examples
--------
>>> from aiload.facility.powercap import power_cap_curve
>>> curve = power_cap_curve("hpc-hpl")
>>> bool(curve.throughput(1.0) == 1.0)
True
>>> round(float(curve.power_fraction(curve.throughput(0.9))), 6)
0.9
"""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from aiload._suggest import suggest
from aiload.errors import InputError

__all__ = ["POWER_CAP_CURVES", "PowerCapCurve", "power_cap_curve"]

DATA = Path(__file__).resolve().parent / "data" / "power_caps.json"
#: the names :func:`power_cap_curve` knows, in the order the data file lists them
POWER_CAP_CURVES: tuple[str, ...] = ("hpc-hpl", "gpu-llm-training", "gpu-training-v100",
                                     "gpu-llm-inference")
#: what ``r`` is the fraction of
POWER_SCOPES = ("node", "gpu")


@dataclass(frozen=True)
class PowerCapCurve:
    """Relative throughput against power fraction, piecewise linear between measured points.

    Attributes
    ----------
    name : str
        The curve's name (e.g. ``"hpc-hpl"``).
    r_points : tuple of float
        Power fractions of the points, strictly increasing, the last one 1 [-].
    s_points : tuple of float
        Relative throughputs at ``r_points``, non-decreasing, the last one 1 [-].
    point_sources : tuple of str
        Where each point comes from (citation and how it was obtained).
    point_status : tuple of str
        ``"measured"``, ``"definition"`` (the point (1, 1)), ``"secondary report, to be
        checked"`` or ``"transcribed from memory, to be checked"``, one per point.
    source : str
        The curve's main citation.
    description : str
        What was measured: hardware, workload, which power ``r`` refers to.
    power_scope : str
        ``"node"`` (``r`` is the node's power fraction) or ``"gpu"`` (the GPU's).
    """

    name: str
    r_points: tuple[float, ...]
    s_points: tuple[float, ...]
    point_sources: tuple[str, ...]
    point_status: tuple[str, ...]
    source: str
    description: str = ""
    power_scope: str = "node"

    def __post_init__(self):
        r = np.asarray(self.r_points, dtype=float)
        s = np.asarray(self.s_points, dtype=float)
        where = f"power-cap curve {self.name!r}"
        if self.power_scope not in POWER_SCOPES:
            raise InputError(f"{where}: power_scope must be one of {POWER_SCOPES}; got "
                             f"{self.power_scope!r}")
        if r.ndim != 1 or r.size < 2 or s.shape != r.shape:
            raise InputError(f"{where}: needs at least two points with one r and one s each; "
                             f"got {r.size} r and {s.size} s values")
        if len(self.point_sources) != r.size or len(self.point_status) != r.size:
            raise InputError(f"{where}: one source and one status per point are needed; got "
                             f"{r.size} points, {len(self.point_sources)} sources, "
                             f"{len(self.point_status)} statuses")
        if not (np.all(np.isfinite(r)) and np.all(np.isfinite(s))):
            raise InputError(f"{where}: points must be finite numbers; got r={r.tolist()}, "
                             f"s={s.tolist()}")
        if r[-1] != 1.0 or s[-1] != 1.0:
            raise InputError(f"{where}: the last point must be the uncapped run (1, 1); got "
                             f"({r[-1]}, {s[-1]})")
        if np.any(np.diff(r) <= 0) or r[0] <= 0:
            raise InputError(f"{where}: power fractions must be positive and strictly "
                             f"increasing; got {r.tolist()}")
        if np.any(np.diff(s) < 0) or s[0] <= 0:
            raise InputError(f"{where}: throughputs must be positive and non-decreasing in r "
                             f"(more power never slows a job); got {s.tolist()}")

    @property
    def min_power_fraction(self) -> float:
        """Lowest power fraction the data cover [-]; below it the curve is not defined."""
        return float(self.r_points[0])

    @property
    def min_throughput(self) -> float:
        """Relative throughput at :attr:`min_power_fraction` [-]."""
        return float(self.s_points[0])

    @property
    def points(self) -> pd.DataFrame:
        """The points: columns ``r`` [-], ``s`` [-], ``status``, ``source``."""
        return pd.DataFrame({"r": self.r_points, "s": self.s_points,
                             "status": self.point_status, "source": self.point_sources})

    def _check(self, values, what: str, low: float) -> np.ndarray:
        expected = f"{what}: expected numbers in [{low:.4g}, 1] (a float, an array or a Series)"
        # numpy would read the text '0.5' (and True) as a number: only numbers are taken
        if not _numeric(values):
            raise InputError(f"{expected}, got {values!r}. Only real numbers are read (not "
                             "text, bytes or booleans): pass floats, e.g. 0.8 (float('0.8') "
                             "for text).")
        try:
            x = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{expected}, got {values!r}.") from None
        bad = ~((x >= low) & (x <= 1.0))  # NaN is bad too
        if np.any(bad):
            first = float(x[bad].flat[0])
            raise InputError(
                f"{what} {first!r} is outside the range the {self.name!r} power-cap data cover, "
                f"[{low:.4g}, 1]: the curve is not extrapolated below its lowest measured cap "
                f"nor above uncapped. Pass a value in [{low:.4g}, 1], or a curve measured "
                f"lower (known: {', '.join(POWER_CAP_CURVES)}).")
        return x

    def throughput(self, power_fraction):
        """Relative throughput ``s`` at power fraction ``r`` (linear between points) [-].

        Parameters
        ----------
        power_fraction : float or array_like
            Capped / uncapped mean power, in [:attr:`min_power_fraction`, 1] [-].

        Returns
        -------
        float, ndarray or Series
            Uncapped / capped time to solution [-], in the form of the input.
        """
        r = self._check(power_fraction, "power fraction", self.min_power_fraction)
        return _like(power_fraction, np.interp(r, self.r_points, self.s_points))

    def power_fraction(self, throughput):
        """Least power fraction ``r`` that gives relative throughput ``s`` (the inverse) [-].

        Where the curve is flat (equal ``s`` at several ``r``) the lowest ``r`` is returned:
        the least power that reaches the throughput.

        Parameters
        ----------
        throughput : float or array_like
            Relative throughput in [:attr:`min_throughput`, 1] [-].

        Returns
        -------
        float, ndarray or Series
            Capped / uncapped mean power [-], in the form of the input.
        """
        s = self._check(throughput, "throughput", self.min_throughput)
        sp, rp = np.asarray(self.s_points), np.asarray(self.r_points)
        i = np.clip(np.searchsorted(sp, s, side="left"), 1, sp.size - 1)
        s0, s1, r0, r1 = sp[i - 1], sp[i], rp[i - 1], rp[i]
        flat = s1 == s0
        w = np.where(flat, 0.0, (s - s0) / np.where(flat, 1.0, s1 - s0))
        r = np.where(s <= s0, r0, r0 + w * (r1 - r0))
        return _like(throughput, r)

    def for_node(self, gpu_share: float) -> "PowerCapCurve":
        """This GPU curve seen at the node: ``r_node = 1 - gpu_share * (1 - r_gpu)`` [-].

        Capping the GPUs leaves the rest of the node (CPUs, memory, network, fans) at its
        power, so the node's power falls by the GPUs' share of the fall.

        Parameters
        ----------
        gpu_share : float
            The GPUs' share of the node's uncapped power, in (0, 1] [-].

        Returns
        -------
        PowerCapCurve
            Same throughputs, node power fractions, ``power_scope="node"``.
        """
        if self.power_scope != "gpu":
            raise InputError(f"power-cap curve {self.name!r} is already of node power "
                             f"(power_scope={self.power_scope!r}); for_node applies to GPU "
                             "curves only")
        numeric = isinstance(gpu_share, (int, float, np.number)) and not isinstance(
            gpu_share, (bool, np.bool_))
        share = float(gpu_share) if numeric else np.nan
        if not 0.0 < share <= 1.0:
            raise InputError(f"gpu_share {gpu_share!r} must be in (0, 1]: the GPUs' share of "
                             "the node's uncapped power (e.g. 0.75 for an 8-GPU server whose "
                             "GPUs draw three quarters of its power)")
        r_node = tuple(1.0 - share * (1.0 - r) for r in self.r_points)
        return PowerCapCurve(
            name=f"{self.name}@node(gpu_share={share:g})", r_points=r_node,
            s_points=self.s_points, point_sources=self.point_sources,
            point_status=self.point_status, source=self.source,
            description=(f"{self.description} Seen at the node with a GPU share of "
                         f"{share:g}: r_node = 1 - {share:g} (1 - r_gpu)."),
            power_scope="node")

    def energy_per_work(self, power_fraction):
        """Energy per unit of work relative to uncapped, ``r / s(r)`` [-]."""
        r = self._check(power_fraction, "power fraction", self.min_power_fraction)
        return _like(power_fraction, r / np.interp(r, self.r_points, self.s_points))


def _numeric(values) -> bool:
    """True for numbers, or an array or Series of them (integer, float, or objects that are
    real numbers); False for text, bytes, booleans and anything else."""
    if isinstance(values, (str, bytes, bool, np.bool_)):
        return False
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.api.extensions.ExtensionDtype):
        # nullable Float64/Int64: numbers with pd.NA (refused later as outside the range)
        return (pd.api.types.is_numeric_dtype(values.dtype)
                and not pd.api.types.is_bool_dtype(values.dtype))
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        return False
    if array.dtype.kind in "iuf":
        return True
    return array.dtype.kind == "O" and all(
        isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in array.flat)


def _like(given, values: np.ndarray):
    """``values`` in the form of ``given``: a float, a Series on its index, or an array."""
    if isinstance(given, pd.Series):
        return pd.Series(values, index=given.index, name=given.name)
    return float(values) if values.ndim == 0 else values


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))["curves"]


def power_cap_curve(name: str) -> PowerCapCurve:
    """The bundled power-cap curve ``name`` (one of :data:`POWER_CAP_CURVES`).

    Parameters
    ----------
    name : str
        ``"hpc-hpl"`` (64 CPU nodes, node power), ``"gpu-llm-training"`` (A40),
        ``"gpu-training-v100"`` or ``"gpu-llm-inference"`` (GPU power).

    Returns
    -------
    PowerCapCurve
    """
    table = _table()
    if not isinstance(name, str) or name not in table:
        raise InputError(f"unknown power-cap curve {name!r}; known: "
                         f"{', '.join(POWER_CAP_CURVES)}.{suggest(name, POWER_CAP_CURVES)}")
    entry = table[name]
    pts = entry["points"]
    return PowerCapCurve(
        name=name,
        r_points=tuple(float(p["r"]) for p in pts),
        s_points=tuple(float(p["s"]) for p in pts),
        point_sources=tuple(p["source"] for p in pts),
        point_status=tuple(p["status"] for p in pts),
        source=entry["source"],
        description=entry["description"],
        power_scope=entry["power_scope"],
    )
