"""The closed loop of an interconnection queue: ``grid.cosimulate(net, {bus: spec, ...})``.

The facilities close their loops in queue order, as the queue shares headroom
(:mod:`grid.hosting_queue`, :mod:`grid.flexible_queue`): the first runs its loop alone; each
next one runs its own with those before it connected at their closed-loop power (each
period's mean, the same average its own metered power gets), and those after it not yet
connected. Its controller therefore answers to the network as the facilities ahead of it
left it; it never pushes them back. The last loop sees them all: the queue's result is the
power flow with every facility at its closed-loop power.

Each facility runs ``aiload.facility`` once with its own seed (independent by default:
``SeedSequence([seed, k])`` for the k-th, as the scenario layer's ``[queue] seeds``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError
from grid.attach import check_bus
from grid.powerflow import GridResult, timeseries

__all__ = ["QueueCosimulation", "cosimulate_queue"]


@dataclass(frozen=True)
class QueueCosimulation:
    """Result of ``grid.cosimulate(net, {bus: spec, ...})``.

    Attributes
    ----------
    facilities : dict
        bus -> :class:`grid.cosim.Cosimulation` of each facility's loop, in queue order
        (its ``grid``: it and those before it at their closed-loop power).
    grid : GridResult
        The power flow with every facility at its closed-loop power (UTC axis).
    open_loop : GridResult or None
        Every facility at its demand without the loop (metered plus curtailed power).
    seeds : dict
        bus -> the seed its facility run used.
    violation_steps, open_loop_violation_steps : int
        Steps with at least one violation, closed and open loop (-1 without the open loop).
    """

    facilities: dict
    grid: GridResult
    open_loop: GridResult | None
    seeds: dict
    violation_steps: int
    open_loop_violation_steps: int

    @property
    def buses(self) -> tuple[int, ...]:
        """The facilities' buses, in queue order."""
        return tuple(self.facilities)

    @property
    def facility_kw(self) -> pd.DataFrame:
        """Each facility's closed-loop power [kW], time x bus."""
        return pd.DataFrame({b: c.load.power["facility_kw"] for b, c in
                             self.facilities.items()}).rename_axis(columns="bus")


def _seeds(buses: list[int], seed) -> dict[int, int]:
    if isinstance(seed, Mapping):
        missing = [b for b in buses if b not in seed]
        if missing:
            raise InputError(f"seed: a mapping must give every facility's bus a seed; missing "
                             f"{missing} (got {sorted(seed)}).")
        return {b: int(seed[b]) for b in buses}
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed: expected an int (each facility's seed drawn from "
                         f"SeedSequence([seed, k])) or a mapping bus -> int, got {seed!r}.")
    return {b: int(np.random.SeedSequence([int(seed), k]).generate_state(1)[0])
            for k, b in enumerate(buses)}


def cosimulate_queue(net, specs: Mapping, *, seed=0, power_factor: float = 0.99,
                     background: pd.Series | None = None, limits=None,
                     enforce_q_lims: bool | None = None, open_loop: bool = True,
                     cosimulate, **options) -> QueueCosimulation:
    """The loops in queue order (arguments as :func:`grid.cosimulate`; ``cosimulate`` is
    that function, passed in to keep one import direction)."""
    if len(specs) == 0:
        raise InputError("cosimulate: the mapping of facilities is empty; give bus -> "
                         "FacilitySpec or preset name, e.g. {14: 'colocation-10mw'}.")
    buses = [check_bus(net, b) for b in specs]
    if len(set(buses)) != len(buses):
        raise InputError(f"cosimulate: two facilities at one bus ({buses}); give one entry "
                         "per bus (one larger facility, or another bus).")
    seeds = _seeds(buses, seed)
    held: dict[int, pd.Series] = {}
    demand: dict[int, pd.Series] = {}
    loops = {}
    for b, spec in zip(buses, specs.values()):
        res = cosimulate(net, spec, bus=b, seed=seeds[b], power_factor=power_factor,
                         background=background, limits=limits, enforce_q_lims=enforce_q_lims,
                         open_loop=False, _held=dict(held), **options)
        loops[b] = res
        power = res.load.power
        held[b] = (power["facility_kw"] / 1e3).rename("facility_mw")
        wanted = power["facility_kw"] + power.get("curtailed_kw", 0.0)
        demand[b] = (wanted / 1e3).rename("facility_mw")
    study = dict(power_factor=power_factor, background=background, limits=limits,
                 enforce_q_lims=enforce_q_lims)
    closed = timeseries(net, held, **study)
    before = timeseries(net, demand, **study) if open_loop else None

    def steps(result: GridResult) -> int:
        table = result.violations()
        return int(table["time"].nunique()) if len(table) else 0

    return QueueCosimulation(loops, closed, before, seeds, steps(closed),
                             -1 if before is None else steps(before))
