"""microgrid: least-cost on-site PV, batteries and generators for an AI campus.

A linear program (``docs/formulation.md``; built as arrays for HiGHS, or a Pyomo MILP with
unit commitment) sizes PV [kWp], battery energy [kWh] and power [kW], one or more generator
technologies [kW] and optionally the grid import limit [kW] for any facility load series
[kW], and returns the step-by-step dispatch; ``size(method="decompose")`` sizes long
horizons by a certified decomposition.

Examples
--------
>>> import microgrid
>>> a = microgrid.pv_availability()          # kW per kWp, bundled TMY year, offline
"""

from __future__ import annotations

from microgrid.aggregate import Aggregation, coarsen
from microgrid.costsets import (
    CostSet,
    GeneratorTechnology,
    cost_set,
    cost_set_names,
    costs,
    priced_generator,
    pv_kwp_per_ha,
    technology,
    technology_names,
)
from microgrid.inputs import (
    Battery,
    Carbon,
    Costs,
    Generator,
    PricedGenerator,
    capital_recovery_factor,
)
from microgrid.pv import default_weather, pv_availability
from microgrid.sizing import Sizing, SolverStoppedError, size
from microgrid.solve import SizingInfeasibleError
from microgrid.stabilise import PoiLimits, Stabilisation, stabilise

__all__ = [
    "pv_availability",
    "default_weather",
    "size",
    "Sizing",
    "Costs",
    "Battery",
    "Generator",
    "PricedGenerator",
    "Carbon",
    "capital_recovery_factor",
    "costs",
    "cost_set",
    "cost_set_names",
    "CostSet",
    "technology",
    "technology_names",
    "GeneratorTechnology",
    "pv_kwp_per_ha",
    "priced_generator",
    "coarsen",
    "Aggregation",
    "SizingInfeasibleError",
    "SolverStoppedError",
    "stabilise",
    "PoiLimits",
    "Stabilisation",
]
