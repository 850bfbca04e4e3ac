"""Parallel circuits of a network row: how many a row stands for, and taking one out (N-1).

Shared by :mod:`grid.outages`, :mod:`grid.stability` and :mod:`grid.strength`, which import
each other otherwise.
"""

from __future__ import annotations

import pandapower as pp
import pandas as pd

__all__ = ["circuits", "one_circuit_out", "outage_label"]


def circuits(table: pd.DataFrame, idx: int) -> int:
    """How many parallel circuits a line or transformer row stands for (``parallel``)."""
    return int(table.at[idx, "parallel"]) if "parallel" in table else 1


def one_circuit_out(net: pp.pandapowerNet, kind: str, idx: int) -> None:
    """Take one circuit of ``net[kind]`` row ``idx`` out, in place: N-1 of that row.

    A row with ``parallel=k`` is k circuits (a double-circuit line, a pair of transformers):
    one out leaves ``parallel=k-1``, exactly the network pandapower builds from k rows with
    one out of service. A single circuit goes out of service.
    """
    k = circuits(net[kind], idx)
    if k > 1:
        net[kind].at[idx, "parallel"] = k - 1
    else:
        net[kind].at[idx, "in_service"] = False


def outage_label(table: pd.DataFrame, kind: str, idx: int) -> str:
    """The N-1 case's name: ``"line 3"``, or ``"trafo 0 (1 of 2 circuits)"`` for a row with
    parallel circuits, of which the case takes one out."""
    k = circuits(table, idx)
    return f"{kind} {idx}" + (f" (1 of {k} circuits)" if k > 1 else "")
