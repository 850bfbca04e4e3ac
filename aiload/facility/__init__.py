"""The event-driven facility model: node profiles -> the power a data center draws.

The model's steps are in :mod:`aiload.facility.model`. SimPy decides when jobs arrive, wait,
start and end and when inference replicas scale (:mod:`aiload.facility.engine`); each job's
node-count-scaled profile is summed exactly onto the output grid
(:mod:`aiload.facility.jobpower`, built on :mod:`aiload.facility.summation`); losses and
cooling lead to the meter (:mod:`aiload.facility.overheads`); the result and its files are in
:mod:`aiload.facility.io`.
"""

from __future__ import annotations

import inspect
import sys
import types

from aiload.facility.catalogue import (
    DictCatalogue, FallbackCatalogue, InferenceCurve, ProfilesCatalogue, constant_profile,
)
from aiload.facility.control import FacilityState
from aiload.facility.flexspec import (
    BatteryLever, DeferralLever, FlexibilitySpec, InferenceLever, PowerCapLever,
)
from aiload.facility.io import FacilityLoad, read_facility
from aiload.facility.iteration import IterationDynamics
from aiload.facility.model import BAND_PERCENTILES, facility
from aiload.facility.presets import PRESETS
from aiload.facility.spec import (
    FacilitySpec, FleetSpec, InferenceSpec, JobStreamSpec, OverheadSpec,
)

__all__ = [
    "facility",
    "FacilitySpec",
    "FacilityLoad",
    "FleetSpec",
    "JobStreamSpec",
    "InferenceSpec",
    "OverheadSpec",
    "FlexibilitySpec",
    "BatteryLever",
    "InferenceLever",
    "PowerCapLever",
    "DeferralLever",
    "FacilityState",
    "PRESETS",
    "read_facility",
    "BAND_PERCENTILES",
    "InferenceCurve",
    "DictCatalogue",
    "ProfilesCatalogue",
    "FallbackCatalogue",
    "constant_profile",
    "IterationDynamics",
]


class _CallableModule(types.ModuleType):
    """``aiload.facility`` is both this package and the function :func:`facility`.

    Once the package is imported, Python binds the name ``aiload.facility`` to the module, and
    ``aiload``'s lazy attribute gives the module too, so the module itself answers
    ``aiload.facility(...)`` and ``aiload.facility.read_facility`` works whatever was imported
    first.
    """

    def __call__(self, *args, **kwargs):
        return facility(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
#: ``inspect.signature(aiload.facility)`` and ``help`` show the function's parameters
__signature__ = inspect.signature(facility)
