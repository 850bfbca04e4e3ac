"""The facility as a load on a bus: input checks and the kW -> MW boundary.

The facility layer speaks kW (``facility_kw``); pandapower speaks MW. The conversion
happens here and only here: a Series whose name ends in ``_kw`` (or a ``FacilityLoad``,
whose ``power["facility_kw"]`` is used) is divided by 1,000; any other Series is taken to
be in MW already.
"""

from __future__ import annotations

import copy
import difflib
import logging
import math
import warnings
from numbers import Real

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError, InputWarning
from aiload.timeseries import validate_power_series
from grid.topology import check_supplied

__all__ = ["facility_mw", "check_bus", "check_power_factor", "q_mvar", "attach", "attach_all",
           "is_number"]

FACILITY_LOAD_NAME = "aiload facility"

log = logging.getLogger(__name__)


def drop_user_pf_options(net: pp.pandapowerNet) -> None:
    """Empty ``net.user_pf_options`` of a study's own copy, warning with the options named.

    pandapower applies the power-flow options saved in a network (``pp.set_user_pf_options``,
    kept by ``to_json``) to every ``runpp`` that does not pass them itself; a saved
    ``neglect_open_switch_branches=True`` or ``algorithm="bfsw"`` would silently change a
    study's voltages and loadings. The grid studies run with aiload's own explicit options
    only (docs/grid.md, "Saved power-flow options"); ``net`` is the copy, never the user's net.
    """
    saved = net.get("user_pf_options") if hasattr(net, "get") else None
    if not saved:
        return
    named = ", ".join(f"{k}={v!r}" for k, v in dict(saved).items())
    text = (f"the network carries saved power-flow options (net.user_pf_options: {named}); "
            "the grid studies ignore them and run with aiload's own options, so the results "
            "do not depend on them. To silence this, clear them "
            "(net.user_pf_options = {}) before the study, or re-save the network without them.")
    log.warning("grid: %s", text)
    warnings.warn(text, InputWarning, stacklevel=3)
    net["user_pf_options"] = {}


def facility_mw(load: object, what: str = "load_mw", *, net=None) -> pd.Series:
    """Return the facility series in MW, validated.

    Parameters
    ----------
    load : pandas.Series or FacilityLoad
        Interval-mean facility power on a tz-aware fixed-step index: in [MW], or in [kW]
        when the Series is named ``*_kw``; or an object with a ``power`` DataFrame holding
        a ``facility_kw`` column [kW] (``aiload.facility(...)``'s ``FacilityLoad``).
    what : str
        Name used in error messages.
    net : pandapower.pandapowerNet, optional
        The study's network: a series taken as MW whose peak is over 300x the network's own
        load and generation is most likely kW left unnamed, and an
        :class:`~aiload.errors.InputWarning` says so (the unit-slip rule,
        :func:`aiload._checks.warn_unit_slip`; issue 26: ``grid.contingency`` read an unnamed
        100,000 kW series as 100 GW).

    Returns
    -------
    pandas.Series
        Facility power [MW], named ``facility_mw``, same index.
    """
    power = getattr(load, "power", None)
    if isinstance(power, pd.DataFrame):
        if "facility_kw" not in power.columns:
            raise InputError(
                f"{what}: the object's .power has no 'facility_kw' column (columns: "
                f"{list(power.columns)}); pass a FacilityLoad or a Series in MW."
            )
        series = power["facility_kw"]
        scale = 1e-3
    elif isinstance(load, pd.Series):
        series = load
        name = str(load.name or "")
        # the unit suffix in any case: 'load_KW' is kW, not MW
        if name.lower().endswith("_kw"):
            scale = 1e-3
        elif name.lower().endswith("_w") or name.lower().endswith("_gw"):
            raise InputError(
                f"{what}: the series is named {name!r}; grid studies take MW (or kW in a "
                "series named '*_kw'). Convert it, e.g. series / 1e6 for W -> MW."
            )
        else:
            scale = 1.0
    else:
        raise InputError(
            f"{what}: expected a pandas Series (MW, or kW when named '*_kw') or a "
            f"FacilityLoad, got {type(load).__name__}."
        )
    validate_power_series(series, what)
    out = (series.astype(np.float64) * scale).rename("facility_mw")
    if net is not None and scale == 1.0:
        _warn_mw_slip(out, what, net)
    return out


def network_scale_mw(net: pp.pandapowerNet) -> float:
    """The network's own scale [MW]: the larger of its in-service load and generation."""
    total = []
    for table, column in (("load", "p_mw"), ("gen", "p_mw"), ("sgen", "p_mw")):
        frame = net.get(table) if hasattr(net, "get") else None
        if isinstance(frame, pd.DataFrame) and column in frame and len(frame):
            live = frame["in_service"] if "in_service" in frame else True
            total.append(float(np.abs(frame[column].where(live, 0.0)).sum()))
    return max(total, default=0.0)


def _warn_mw_slip(series_mw: pd.Series, what: str, net) -> None:
    from aiload._checks import warn_unit_slip  # noqa: PLC0415

    scale = network_scale_mw(net)
    if scale > 0:
        warn_unit_slip(
            float(series_mw.max()), f"{what} (a Series taken as MW: not named '*_kw')",
            reference=scale, reference_what="the network's own load and generation",
            unit="MW", too_small=False,
            fix="or name the series '*_kw', e.g. series.rename('facility_kw')", stacklevel=5)


def check_bus(net: pp.pandapowerNet, bus: int) -> int:
    """Check ``bus`` is an in-service bus of ``net`` joined to a slack; return it as ``int``.

    A bus that no in-service path joins to a slack (an open switch, a line, transformer or
    bus out of service) is refused with the cut named (:func:`grid.topology.check_supplied`).
    """
    if not isinstance(net, pp.pandapowerNet):
        raise InputError(f"net: expected a pandapower network (e.g. grid.networks.load("
                         f"'cigre_mv')), got {type(net).__name__}.")
    if isinstance(bus, (bool, np.bool_)) or not isinstance(bus, (int, np.integer)):
        raise InputError(f"bus: expected a bus index (int) of net.bus, got {bus!r}.")
    if bus not in net.bus.index:
        close = difflib.get_close_matches(str(bus), [str(b) for b in net.bus.index], n=3)
        raise InputError(
            f"bus {bus} does not exist in this network (it has {len(net.bus)} buses, index "
            f"{net.bus.index.min()}..{net.bus.index.max()}). Pick one of net.bus.index"
            + (f", e.g. {', '.join(close)}." if close else ".")
        )
    if not bool(net.bus.at[bus, "in_service"]):
        raise InputError(f"bus {bus} is out of service; put it in service or pick another bus.")
    check_unchecked_branches(net)
    check_zero_impedance(net)
    check_supplied(net, int(bus))
    return int(bus)


def check_unchecked_branches(net: pp.pandapowerNet) -> None:
    """Refuse in-service ``impedance`` and ``dcline`` elements: no study here checks them.

    pandapower gives an ``impedance`` no rating (its ``sn_mva`` is the per-unit base) and
    a ``dcline`` a fixed transfer, so neither enters the loading limits nor the N-1 cases
    of these studies; a result would stay silent about them.
    """
    for kind, what in (("impedance", "an impedance branch (no rating in pandapower)"),
                       ("dcline", "a DC line (fixed transfer, modelled as two generators)")):
        table = net[kind] if kind in net else None
        if table is None or not len(table):
            continue
        live = table.index[table.in_service.astype(bool)]
        if len(live):
            raise InputError(
                f"net.{kind} has {len(live)} in-service element(s) (index "
                f"{', '.join(str(i) for i in live[:5])}{', ...' if len(live) > 5 else ''}): "
                f"{what} is in the power flow but in no loading limit and no N-1 case of the "
                "grid studies, so a result would say nothing about it. Model it as a line "
                "(pp.create_line_from_parameters with max_i_ka) or transformer with a rating, "
                f"or set net.{kind}.in_service = False if it does not matter here.")


_ZERO_IMPEDANCE_FIX = (
    "pandapower cannot solve a branch without series reactance (its DC start and admittance "
    "matrix divide by it). Give it a small impedance (e.g. length_km=0.001 with the line's "
    "per-km data, or a transformer vk_percent above vkr_percent), or, for a tie with no "
    "impedance, replace it by a bus-bus switch (pp.create_switch(net, bus_a, bus_b, et='b')) "
    "or merge the two buses.")


def zero_impedance_branches(net: pp.pandapowerNet) -> list[str]:
    """In-service lines and transformers of ``net`` whose series reactance is zero.

    A line's reactance is ``x_ohm_per_km * length_km`` [ohm] (negative: a series capacitor); a two-winding
    transformer's ``sqrt(vk_percent^2 - vkr_percent^2)`` [%]; a three-winding transformer's
    per pair of windings. Each entry names the element and the values that make it zero.
    """
    found: list[str] = []
    live_bus = set(net.bus.index[net.bus.in_service.astype(bool)])

    def live(table: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
        if not len(table):
            return table
        rows = table[table.in_service.astype(bool)]
        return rows[np.logical_and.reduce([rows[c].isin(live_bus) for c in cols])]

    def label(kind: str, idx: object, row: pd.Series) -> str:
        name = row.get("name")
        return f"{kind} {idx}" + (f" ({name!r})" if isinstance(name, str) and name else "")

    lines = live(net.line, ("from_bus", "to_bus"))
    x_ohm = (lines.x_ohm_per_km * lines.length_km).to_numpy(dtype=np.float64)
    # NaN counts as zero; a negative reactance is a series capacitor (case300 has one)
    for idx, row in lines[~(np.isfinite(x_ohm) & (x_ohm != 0.0))].iterrows():
        x = float(row.x_ohm_per_km) * float(row.length_km)
        found.append(f"{label('line', idx, row)}: x_ohm_per_km {row.x_ohm_per_km:g} x "
                     f"length_km {row.length_km:g} = {x:g} ohm")
    for idx, row in live(net.trafo, ("hv_bus", "lv_bus")).iterrows():
        vk, vkr = float(row.vk_percent), float(row.vkr_percent)
        if not vk * vk - vkr * vkr != 0.0:
            found.append(f"{label('trafo', idx, row)}: vk_percent {vk:g}, vkr_percent {vkr:g} "
                         "(reactance sqrt(vk^2 - vkr^2) = 0)")
    if "trafo3w" in net:
        for idx, row in live(net.trafo3w, ("hv_bus", "mv_bus", "lv_bus")).iterrows():
            for pair in ("hv", "mv", "lv"):
                vk = float(row[f"vk_{pair}_percent"])
                vkr = float(row[f"vkr_{pair}_percent"])
                if not vk * vk - vkr * vkr != 0.0:
                    found.append(f"{label('trafo3w', idx, row)}: vk_{pair}_percent {vk:g}, "
                                 f"vkr_{pair}_percent {vkr:g} (reactance 0)")
    return found


def check_zero_impedance(net: pp.pandapowerNet) -> None:
    """Refuse in-service branches without series reactance, naming each and the fix."""
    found = zero_impedance_branches(net)
    if found:
        shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        raise InputError(f"the network has {len(found)} in-service branch(es) with zero series "
                         f"reactance: {shown}. {_ZERO_IMPEDANCE_FIX}")


def is_number(value: object) -> bool:
    """True for a real number (numpy's included); False for a bool, a string, a Series."""
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_))


def check_power_factor(power_factor: float) -> float:
    """Check a lagging power factor lies in (0, 1]; return it as ``float`` [-]."""
    if not is_number(power_factor) or not math.isfinite(power_factor) or not (
        0.0 < power_factor <= 1.0
    ):
        raise InputError(
            f"power_factor: expected a number in (0, 1] (e.g. 0.99 for a lagging load), got "
            f"{power_factor!r}."
        )
    return float(power_factor)


def q_mvar(p_mw: np.ndarray | float, power_factor: float) -> np.ndarray:
    """Reactive power of a lagging load [MVAr] from active power [MW] and power factor [-]."""
    return np.asarray(p_mw, dtype=np.float64) * math.tan(math.acos(power_factor))


def attach(
    net: pp.pandapowerNet, bus: int, *, p_mw: float = 0.0, power_factor: float = 0.99
) -> tuple[pp.pandapowerNet, int]:
    """A copy of ``net`` with the facility as a constant-power load at ``bus``.

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    bus : int
        Index of the connection bus in ``net.bus``.
    p_mw : float
        Facility active power [MW].
    power_factor : float
        Lagging power factor [-], in (0, 1].

    Returns
    -------
    (pandapower.pandapowerNet, int)
        The copy and the index of the facility load in ``copy.load``.
    """
    out, index = attach_all(net, [bus], p_mw=[p_mw], power_factor=power_factor)
    return out, int(index[0])


def attach_all(
    net: pp.pandapowerNet, buses, *, p_mw=None, power_factor: float = 0.99
) -> tuple[pp.pandapowerNet, np.ndarray]:
    """A copy of ``net`` with one constant-power facility load at each of ``buses``.

    The interconnection queue's form of :func:`attach` (which is its one-bus case).

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    buses : sequence of int
        The facilities' buses, in queue order.
    p_mw : sequence of float, optional
        Each facility's active power [MW]; default 0.
    power_factor : float
        Lagging power factor of every facility [-], in (0, 1].

    Returns
    -------
    (pandapower.pandapowerNet, numpy.ndarray)
        The copy and the facilities' indexes in ``copy.load``, in the order of ``buses``.
    """
    buses = [check_bus(net, bus) for bus in buses]
    pf = check_power_factor(power_factor)
    p_mw = [0.0] * len(buses) if p_mw is None else list(p_mw)
    out = copy.deepcopy(net)
    drop_user_pf_options(out)
    index = [pp.create_load(out, bus, p_mw=float(p), q_mvar=float(q_mvar(p, pf)),
                            name=FACILITY_LOAD_NAME) for bus, p in zip(buses, p_mw, strict=True)]
    return out, np.asarray(index, dtype=np.int64)
