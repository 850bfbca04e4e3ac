"""Operating limits that grid results are checked against."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from aiload.errors import InputError

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    """Voltage band and branch loading limit of a grid study.

    Parameters
    ----------
    vm_min_pu : float
        Lowest acceptable bus voltage [pu]. Default 0.95 (ANSI C84.1 range A: ±5 %).
    vm_max_pu : float
        Highest acceptable bus voltage [pu]. Default 1.05.
    loading_max_percent : float
        Highest acceptable line and transformer loading [%] of the rated current.
        Default 100.

    Examples
    --------
    >>> Limits(vm_min_pu=0.93).vm_max_pu
    1.05
    """

    vm_min_pu: float = 0.95
    vm_max_pu: float = 1.05
    loading_max_percent: float = 100.0

    def __post_init__(self) -> None:
        for name in ("vm_min_pu", "vm_max_pu", "loading_max_percent"):
            value = getattr(self, name)
            if (isinstance(value, (bool, np.bool_)) or not isinstance(value, Real)
                    or not math.isfinite(value) or value <= 0):
                raise InputError(
                    f"Limits.{name}: expected a positive finite number, got {value!r}."
                )
        if self.vm_min_pu >= self.vm_max_pu:
            raise InputError(
                f"Limits: vm_min_pu ({self.vm_min_pu}) must be below vm_max_pu "
                f"({self.vm_max_pu}); e.g. Limits(vm_min_pu=0.95, vm_max_pu=1.05)."
            )
