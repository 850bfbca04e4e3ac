"""Is the facility bus supplied? Connectivity to a slack, and the elements that cut it off.

pandapower solves a bus that no in-service path joins to a slack as isolated: it converges,
reports NaN there and the facility load simply vanishes from the solution (the slack import
does not change). Every study checks the facility bus first with :func:`check_supplied`
and refuses such a bus with the cut named.

The live graph is :func:`pandapower.topology.create_nxgraph` with switches respected and
out-of-service elements left out, exactly the graph pandapower's own
:func:`pandapower.topology.unsupplied_buses` walks. The cut is found on a second graph with
every element and switch present: the edges that leave the facility's live island and are
dead (element out of service, an open switch, an out-of-service bus at the far end).
"""

from __future__ import annotations

import networkx as nx
import pandapower as pp
import pandapower.topology as top

from aiload.errors import InputError

__all__ = ["slack_buses", "supplied_buses", "cut_of", "check_supplied"]

def slack_buses(net: pp.pandapowerNet) -> set[int]:
    """In-service buses holding an in-service ext_grid or slack generator."""
    buses = set(net.ext_grid.bus[net.ext_grid.in_service.astype(bool)].astype(int))
    if len(net.gen) and "slack" in net.gen:
        slack = net.gen.slack.fillna(False).astype(bool) & net.gen.in_service.astype(bool)
        buses |= set(net.gen.bus[slack].astype(int))
    live = set(net.bus.index[net.bus.in_service.astype(bool)].astype(int))
    return buses & live


def supplied_buses(net: pp.pandapowerNet) -> set[int]:
    """Buses joined to a slack by in-service elements through closed switches."""
    graph = top.create_nxgraph(net, respect_switches=True, include_out_of_service=False)
    out: set[int] = set()
    for slack in slack_buses(net):
        if slack in graph and slack not in out:
            out |= {int(b) for b in nx.node_connected_component(graph, slack)}
    return out


def _open_switches(net: pp.pandapowerNet, et: str, element: int) -> list[int]:
    sw = net.switch
    if not len(sw):
        return []
    hit = (sw.et == et) & (sw.element == element) & ~sw.closed.astype(bool)
    return [int(i) for i in sw.index[hit]]


def _why_dead(net: pp.pandapowerNet, kind: str, idx: int, far_bus: int) -> str:
    """Why the element ``kind idx`` carries no power towards ``far_bus`` ('' when it does)."""
    reasons = []
    if kind == "switch":
        if not bool(net.switch.at[idx, "closed"]):
            reasons.append("open")
    else:
        if not bool(net[kind].at[idx, "in_service"]):
            reasons.append("out of service")
        et = {"line": "l", "trafo": "t", "trafo3w": "t3"}.get(kind)
        if et is not None:
            reasons += [f"switch {s} open" for s in _open_switches(net, et, idx)]
    if not bool(net.bus.at[far_bus, "in_service"]):
        reasons.append(f"bus {far_bus} beyond it out of service")
    return ", ".join(reasons)


def cut_of(net: pp.pandapowerNet, bus: int) -> list[str] | None:
    """The dead elements that separate ``bus`` from every slack; None when it is supplied.

    Returns
    -------
    list of str or None
        One entry per element on the boundary of the bus' live island whose far end leads
        to a slack once every element is in service and every switch closed, e.g.
        ``"line 3 (switch 2 open)"``, ``"trafo 0 (out of service)"``; ``"...; bus 6
        beyond it is not supplied either"`` when restoring that element alone would not
        reconnect the bus. An empty list: no element of the network joins the island to a
        slack at all.
    """
    supplied = supplied_buses(net)
    if bus in supplied:
        return None
    live = top.create_nxgraph(net, respect_switches=True, include_out_of_service=False)
    island = set(nx.node_connected_component(live, bus)) if bus in live else {bus}
    full = top.create_nxgraph(net, respect_switches=False, include_out_of_service=True)
    outside = full.subgraph([b for b in full.nodes if b not in island])
    reach: set[int] = set()
    for slack in slack_buses(net):
        if slack in outside and slack not in reach:
            reach |= set(nx.node_connected_component(outside, slack))
    cut = []
    for u, v, key in full.edges(keys=True):
        if (u in island) == (v in island):
            continue
        far = v if u in island else u
        if far not in reach:  # a dead end: restoring it would not reach a slack
            continue
        kind, idx = str(key[0]), int(key[1])
        why = _why_dead(net, kind, idx, int(far))
        if far not in supplied and bool(net.bus.at[far, "in_service"]):
            why += f"; bus {far} beyond it is not supplied either"
        entry = f"{kind} {idx} ({why})"
        if entry not in cut:
            cut.append(entry)
    return cut


def check_supplied(net: pp.pandapowerNet, bus: int) -> None:
    """Raise when ``bus`` has no in-service path to a slack, naming the cut.

    Raises
    ------
    aiload.errors.InputError
        The message lists the dead elements around the facility's island (``cut_of``).
    """
    if not slack_buses(net):
        raise InputError(
            "the network has no in-service slack (ext_grid, or gen with slack=True): nothing "
            "supplies it; put one in service (pandapower.create_ext_grid)."
        )
    cut = cut_of(net, bus)
    if cut is None:
        return
    island = _island_size(net, bus)
    where = (f"; the cut: {'; '.join(cut)}" if cut else
             "; no element of the network joins it to a slack, even with every switch "
             "closed and every element in service")
    raise InputError(
        f"bus {bus} is not supplied: no in-service path joins it to a slack "
        f"({island} bus(es) in its island){where}. pandapower would solve it as isolated and "
        "the facility would silently draw nothing. Close the switch or put the element back "
        "in service (e.g. net.switch.at[i, 'closed'] = True), or pick a supplied bus."
    )


def _island_size(net: pp.pandapowerNet, bus: int) -> int:
    live = top.create_nxgraph(net, respect_switches=True, include_out_of_service=False)
    return len(nx.node_connected_component(live, bus)) if bus in live else 1
