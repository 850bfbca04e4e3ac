"""The bundled library of per-node workload power profiles and its scaling fits.

- :func:`catalog`, :func:`get`, :func:`find` — the profiles (training, fine-tuning, offline
  and online inference, idle), measured where a time series exists, synthesised from cited
  run statistics where not (``measured`` says which);
- :func:`idle_power_w` — per-node idle power of a hardware [W];
- :func:`node_boundary` — where a hardware's profiles are measured and the layers up to the
  rack input (rest of node, PSU conversion, network, storage);
- :mod:`aiload.profiles.refine` — a profile on a finer step (``refine.refine``), every
  interval's energy kept, the structure below the measured step from the measured sub-step
  spectrum;
- :func:`job_profile` — the per-node profile of a job of any node count, placed on the
  fitted scaling curves;
- :mod:`aiload.profiles.scaling` — duration, power and energy against node count, request
  rate and batch size.

Data credits: see ``docs/profiles.md``.
"""

from __future__ import annotations

from aiload.profiles import refine, scaling
from aiload.profiles._profile import WORKLOADS, Profile
from aiload.profiles.boundary import NodeBoundary, node_boundary
from aiload.profiles.jobs import job_profile
from aiload.profiles.library import catalog, find, get, idle_power_w

__all__ = ["Profile", "WORKLOADS", "catalog", "get", "find", "idle_power_w", "job_profile", "scaling",
           "NodeBoundary", "node_boundary", "refine"]
