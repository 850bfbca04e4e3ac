"""Interconnection studies: an AI facility as a time-varying bus load in pandapower.

- :func:`timeseries` / :class:`GridResult` — time-series AC power flow (fast engines
  checked against ``pandapower.runpp``);
- :func:`hosting_capacity` — the largest facility a bus can take (or a queue's common scaling
  and queue-order allocation, :class:`QueueCapacity`), with the binding
  constraint;
- :func:`contingency` — N-1 screening at the facility's peak hours;
- :func:`load_loss` — the facility tripping off at once, and dV/dP per MW;
- :func:`flexible_interconnection` — hourly headroom at the bus and the curtailment each
  facility size above the firm hosting capacity needs (or a queue's headroom shared in queue
  order step by step, :class:`QueueFlexible`); :func:`curtailment_cost` — a chosen
  size's implied limit run through the facility model (what the curtailment costs);
- :func:`cosimulate` / :class:`Cosimulation` — the facility and the network in closed loop
  (a controller sets the facility's power limit every control period; a queue's loops close
  in queue order, :class:`QueueCosimulation`);
- :func:`pv_curve` — the facility bus' P-V curve to the nose (voltage-collapse margin);
- :func:`short_circuit_strength` — Sk'' and short-circuit ratio at the bus, intact and N-1;
- :mod:`grid.topology` — is the facility bus supplied, and what cuts it off;
- :mod:`grid.qlims` — generator reactive-power limits (PV -> PQ switching);
- :mod:`grid.networks` — standard networks by name, user networks from files;
- :mod:`grid.dynamics` — dynamic studies in ANDES (trips, faults, ride-through, RoCoF);
- :mod:`grid.plots` — voltage envelopes, loading duration curves, hosting capacity, N-1.

Units are pandapower's: MW, MVAr, pu, % loading. A kW facility series is converted to MW
at the boundary (:func:`grid.attach.facility_mw`).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "networks",
    "dynamics",
    "timeseries",
    "GridResult",
    "Limits",
    "hosting_capacity",
    "QueueCapacity",
    "HostingCapacity",
    "contingency",
    "load_loss",
    "LoadLoss",
    "pv_curve",
    "PVCurve",
    "short_circuit_strength",
    "ShortCircuitStrength",
    "ShortCircuitData",
    "flexible_interconnection",
    "FlexibleInterconnection",
    "QueueFlexible",
    "cosimulate",
    "Cosimulation",
    "QueueCosimulation",
    "curtailment_cost",
    "CurtailmentCost",
]

# pandapower takes seconds to import: load it on first use, so ``import grid`` stays light
_LAZY = {
    "networks": ("grid.networks", None),
    "dynamics": ("grid.dynamics", None),
    "timeseries": ("grid.powerflow", "timeseries"),
    "GridResult": ("grid.powerflow", "GridResult"),
    "Limits": ("grid.limits", "Limits"),
    "hosting_capacity": ("grid.hosting", "hosting_capacity"),
    "HostingCapacity": ("grid.hosting", "HostingCapacity"),
    "QueueCapacity": ("grid.hosting_queue", "QueueCapacity"),
    "contingency": ("grid.outages", "contingency"),
    "load_loss": ("grid.loadloss", "load_loss"),
    "LoadLoss": ("grid.loadloss", "LoadLoss"),
    "pv_curve": ("grid.stability", "pv_curve"),
    "PVCurve": ("grid.stability", "PVCurve"),
    "short_circuit_strength": ("grid.strength", "short_circuit_strength"),
    "ShortCircuitStrength": ("grid.strength", "ShortCircuitStrength"),
    "ShortCircuitData": ("grid.strength", "ShortCircuitData"),
    "flexible_interconnection": ("grid.flexible", "flexible_interconnection"),
    "FlexibleInterconnection": ("grid.flexible", "FlexibleInterconnection"),
    "QueueFlexible": ("grid.flexible_queue", "QueueFlexible"),
    "cosimulate": ("grid.cosim", "cosimulate"),
    "Cosimulation": ("grid.cosim", "Cosimulation"),
    "QueueCosimulation": ("grid.cosim_queue", "QueueCosimulation"),
    "curtailment_cost": ("grid.flexible_run", "curtailment_cost"),
    "CurtailmentCost": ("grid.flexible_run", "CurtailmentCost"),
}


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'grid' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
