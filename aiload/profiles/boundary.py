"""Where each hardware's profiles are measured, and what lies between there and the rack input.

Three boundaries appear in a facility series (``docs/facility.md``, "Boundaries"):

1. the **component** boundary of the NLR 4xH100 data: GPU (NVML) + CPU (RAPL) only;
2. the **rack input** (``it_kw``): the node's AC input — component power plus the rest of the
   node (memory, NICs, board; Harvard IPMI) and the PSU/enclosure conversion — plus the
   network (a fraction of the nameplate, from the MLPerf SMC interconnect estimate) and
   storage (an assumed fraction);
3. the **meter** (``facility_kw``): rack input plus UPS/distribution losses and cooling.

MLPerf profiles (8xH100-SXM, 8xH200-SXM) are measured at the node's AC input already: their
rest of node and PSU terms are zero, so nothing is counted twice.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass

from aiload.errors import InputError
from aiload.profiles._bundle import bundle_path

__all__ = ["NodeBoundary", "node_boundary", "MEASURED_AT"]

#: where a profile's power is measured: GPU + CPU components, or the node's AC input
MEASURED_AT = ("component", "node-ac")


@dataclass(frozen=True)
class NodeBoundary:
    """The layers from a hardware's measured power to the rack input.

    Node AC input ``= (P_c·(1 + rest_of_node_fraction) + rest_of_node_w)·(1 + psu_loss_fraction)``
    for component-boundary profiles (``P_c``: GPU + CPU power), the profile itself for
    ``node-ac`` ones; the rack input adds ``(network_fraction + storage_fraction) × nameplate``
    per installed node.

    Attributes
    ----------
    hardware : str
    measured_at : str
        ``"component"`` or ``"node-ac"``.
    rest_of_node_w : float
        Rest-of-node power at zero component power, per powered node [W].
    rest_of_node_fraction : float
        Rest-of-node power per W of component power [-].
    psu_loss_fraction : float
        PSU/enclosure conversion: AC input per DC node power, minus 1 [-].
    network_fraction : float
        Network switch power per installed node, as a fraction of the node nameplate [-]
        (constant: switches draw it busy or not).
    storage_fraction : float
        Storage power as a fraction of the node nameplate, per installed node [-] (assumed).
    notes : dict
        Where each number comes from (``rest``, ``network``, ``storage``) and ``citations``.
    """

    hardware: str
    measured_at: str
    rest_of_node_w: float
    rest_of_node_fraction: float
    psu_loss_fraction: float
    network_fraction: float
    storage_fraction: float
    notes: dict

    def __post_init__(self) -> None:
        if self.measured_at not in MEASURED_AT:
            raise InputError(f"NodeBoundary.measured_at: expected one of {MEASURED_AT}, got "
                             f"{self.measured_at!r}.")

    def fleet_fields(self, nameplate_w: float) -> dict:
        """The :class:`~aiload.facility.FleetSpec` fields for a node of ``nameplate_w`` [W]."""
        return dict(measured_at=self.measured_at, rest_of_node_w=self.rest_of_node_w,
                    rest_of_node_fraction=self.rest_of_node_fraction,
                    psu_loss_fraction=self.psu_loss_fraction,
                    network_w_per_node=self.network_fraction * nameplate_w,
                    storage_w_per_node=self.storage_fraction * nameplate_w)


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(bundle_path("node_boundary.json").read_text(encoding="utf-8"))


def node_boundary(hardware: str) -> NodeBoundary:
    """The measured boundary of a hardware's profiles and the layers up to the rack input.

    Parameters
    ----------
    hardware : str
        ``"4xH100"``, ``"8xH100-SXM"`` or ``"8xH200-SXM"``.

    Examples
    --------
    >>> b = node_boundary("4xH100")
    >>> b.measured_at, 100 < b.rest_of_node_w < 200
    ('component', True)
    >>> node_boundary("8xH100-SXM").psu_loss_fraction
    0.0
    """
    table = _table()
    if hardware not in table:
        close = difflib.get_close_matches(str(hardware), list(table), n=1, cutoff=0.3)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(f"no node boundary for hardware {hardware!r}; known: {sorted(table)}.{hint}")
    row = table[hardware]
    return NodeBoundary(
        hardware=hardware, measured_at=row["measured_at"], rest_of_node_w=row["rest_of_node_w"],
        rest_of_node_fraction=row["rest_of_node_fraction"],
        psu_loss_fraction=row["psu_loss_fraction"], network_fraction=row["network_fraction"],
        storage_fraction=row["storage_fraction"],
        notes={"rest": row["rest_note"], "network": row["network_note"],
               "storage": row["storage_note"], "citations": list(row["citations"])})
