"""The interconnection queue in a scenario file: ``[[facility]]`` tables and ``[queue]``.

A scenario with one ``[facility]`` table studies one facility at ``grid.bus``. A scenario
with ``[[facility]]`` tables (an array of tables) studies a queue: every table is one
facility with its own ``bus``, preset or full spec, size, seed and site clock, all on one
UTC time axis, connected in queue order (the order of the tables, or ``[queue] order``).

Seeds (the correlation between sites, made explicit):

- ``seeds = "independent"`` (default): facility ``k`` (its 0-based position in the file)
  runs with ``seed`` when its table sets one, else with :func:`facility_seed` of the
  queue's ``seed`` and ``k`` -- numpy's ``SeedSequence([seed, k])``, so the streams are
  statistically independent and do not move when the queue is reordered;
- ``seeds = "in_phase"``: every facility runs with the queue's ``seed`` (one operator's
  jobs in phase: facilities of the same preset then draw the same job stream);
- weather-driven cooling reads the weather named in each facility's overheads: give every
  facility the same weather (``overrides = { weather = "pvlib-greensboro" }``) for common
  weather, as one site's weather year is shared.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from scenarios.schema_facility import refuse_non_finite

__all__ = ["QueueSection", "facility_seed"]

#: the grid studies that take a queue (grid.timeseries, grid.hosting_capacity(queue=),
#: grid.contingency, grid.load_loss, grid.flexible_interconnection, grid.cosimulate with a
#: mapping bus -> series / MW / spec)
QUEUE_GRID_STUDIES = ("timeseries", "hosting_capacity", "contingency", "load_loss",
                      "flexible_interconnection", "cosimulate")


def facility_seed(queue_seed: int, position: int) -> int:
    """The seed of the facility at ``position`` (0-based, in the file) of a queue whose
    ``[queue] seed`` is ``queue_seed``: the first 32-bit word of numpy's
    ``SeedSequence([queue_seed, position])`` [-]."""
    words = np.random.SeedSequence([int(queue_seed), int(position)]).generate_state(1, np.uint32)
    return int(words[0])


class QueueSection(BaseModel):
    """How the ``[[facility]]`` tables form a queue: seeds, order, which facilities trip."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True,
                              allow_inf_nan=False)
    _finite = field_validator("*", mode="before")(refuse_non_finite)

    seed: int = Field(0, ge=0, description="the queue's seed: facility k without a seed of "
                      "its own runs with SeedSequence([seed, k])'s first word (independent "
                      "seeds), or with seed itself (seeds = 'in_phase')")
    seeds: Literal["independent", "in_phase"] = Field(
        "independent", description="'independent': a seed per facility from the queue's seed "
        "and its position in the file; 'in_phase': every facility with the queue's seed (the "
        "same operator's jobs in phase); a facility's own seed wins in both")
    order: list[int] | str | None = Field(
        None, description="queue order as 0-based positions of the [[facility]] tables, a list "
        "or a text such as '2,0,1' or '2/0/1' (sweepable: --set queue.order=2/0/1,0/1/2); "
        "None: the order of the tables")
    trip: list[int] | None = Field(
        None, description="load_loss: the buses whose facilities trip together (each at its "
        "power in the step of the queue's coincident peak); None: all of them")

    @field_validator("order")
    @classmethod
    def _order(cls, value: list[int] | str | None) -> list[int] | None:
        if isinstance(value, str):
            try:
                return [int(part) for part in re.split(r"[\s,;/]+", value.strip()) if part]
            except ValueError:
                raise ValueError(f"expected positions of the [[facility]] tables separated by "
                                 f"commas or slashes, such as '2,0,1' or '2/0/1', got "
                                 f"{value!r}") from None
        return value


def check_queue_fields(facilities: list, queue: QueueSection | None, grid_bus: int | None
                       ) -> None:
    """The checks across ``[[facility]]`` tables (ValueError with the fix)."""
    if not facilities:
        raise ValueError("[[facility]]: no facility; write one [facility] table, or one "
                         "[[facility]] table per queued facility, each with its bus")
    seen: dict[int, int] = {}
    for k, section in enumerate(facilities):
        if section.bus in seen:
            raise ValueError(
                f"facility[{k}].bus = {section.bus} repeats facility[{seen[section.bus]}].bus; "
                "a queue has one facility per bus: merge the two into one facility or move one "
                "to another bus")
        seen[section.bus] = k
    first = facilities[0]
    for k, section in enumerate(facilities[1:], start=1):
        for name in ("start", "end"):
            if getattr(section, name) != getattr(first, name):  # the same instant, any offset
                raise ValueError(
                    f"facility[{k}].{name} = {getattr(section, name).isoformat()} is not the "
                    f"same instant as facility[0].{name} = {getattr(first, name).isoformat()}; "
                    "a queue is studied on one time axis: give every facility the same start "
                    "and end (each may be written in its site's offset), and its site clock "
                    "in timezone")
        if section.freq != first.freq:
            raise ValueError(
                f"facility[{k}].freq = {section.freq!r} differs from facility[0].freq = "
                f"{first.freq!r}; a queue is studied on one time axis: give every facility "
                "the same freq")
    if grid_bus is not None:
        raise ValueError(
            f"grid.bus = {grid_bus} with [[facility]] tables: each queued facility names its "
            "own bus in its [[facility]] table; remove bus from [grid]")
    if queue is not None and queue.order is not None:
        n = len(facilities)
        if sorted(queue.order) != list(range(n)):
            raise ValueError(
                f"queue.order = {queue.order}: expected each position 0..{n - 1} of the "
                f"{n} [[facility]] tables once, e.g. {list(range(n))[::-1]}")
    if queue is not None and queue.trip is not None:
        unknown = [b for b in queue.trip if b not in seen]
        if unknown or not queue.trip:
            raise ValueError(
                f"queue.trip = {queue.trip}: expected some of the queue's buses "
                f"{sorted(seen)}" + (f" ({unknown} not in it)" if unknown else ""))
