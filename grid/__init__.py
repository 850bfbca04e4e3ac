"""Interconnection studies: an AI facility as a time-varying bus load in pandapower.

- :func:`timeseries` / :class:`GridResult` — time-series AC power flow (fast engines
  checked against ``pandapower.runpp``);
- :func:`hosting_capacity` — the largest facility a bus can take, with the binding
  constraint;
- :func:`contingency` — N-1 screening at the facility's peak hours;
- :func:`load_loss` — the facility tripping off at once, and dV/dP per MW;
- :mod:`grid.networks` — standard networks by name, user networks from files;
- :mod:`grid.plots` — voltage envelopes, loading duration curves, hosting capacity, N-1.

Units are pandapower's: MW, MVAr, pu, % loading. A kW facility series is converted to MW
at the boundary (:func:`grid.attach.facility_mw`).
"""

from __future__ import annotations

from grid import networks
from grid.contingency import contingency
from grid.hosting import HostingCapacity, hosting_capacity
from grid.limits import Limits
from grid.loadloss import LoadLoss, load_loss
from grid.timeseries import GridResult, timeseries

__all__ = [
    "networks",
    "timeseries",
    "GridResult",
    "Limits",
    "hosting_capacity",
    "HostingCapacity",
    "contingency",
    "load_loss",
    "LoadLoss",
]
