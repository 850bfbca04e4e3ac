"""System strength at the facility bus: short-circuit power and short-circuit ratio.

A large power-electronic load (rectifiers, their controls) needs a *strong* point of
interconnection: the short-circuit ratio SCR = Sk'' / P of the facility is the usual
screening figure. Sk'' comes from pandapower's IEC 60909 short-circuit module
(:func:`pandapower.shortcircuit.calc_sc`), for the maximum and the minimum case, on the
intact network and after each N-1 outage. What counts as weak is the user's input
(``scr_weak``, ``scr_very_weak``), not a constant here: 3 and 2 are the figures often used
for screening (e.g. IEEE Std 1204-1997 for HVDC: below 3 low, below 2 very low).

IEC 60909 needs data that power-flow cases often lack (external-grid short-circuit power,
generator subtransient reactance, line end temperature for the minimum case). They are
taken from the network where present; :class:`ShortCircuitData` fills what is missing, and
the result lists every value so assumed. Nothing is assumed silently.
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass, fields

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError
from grid.attach import check_bus, is_number
from grid.circuits import circuits, one_circuit_out, outage_label
from grid.topology import supplied_buses

__all__ = ["ShortCircuitData", "ShortCircuitStrength", "short_circuit_strength"]

_OUTAGES = {"lines": ("line",), "trafos": ("trafo", "trafo3w"),
            "lines+trafos": ("line", "trafo", "trafo3w"), None: ()}


@dataclass(frozen=True)
class ShortCircuitData:
    """Values IEC 60909 needs, used only where the network lacks them (None: not given).

    Parameters
    ----------
    ext_grid_sc_max_mva, ext_grid_sc_min_mva : float, optional
        Short-circuit power of the external grid(s), maximum and minimum case [MVA].
    ext_grid_rx : float, optional
        R/X ratio of the external grid(s) [-] (e.g. 0.1).
    gen_xdss_pu : float, optional
        Generators' subtransient reactance X''d on their rating [pu] (e.g. 0.2).
    gen_rx : float, optional
        Generators' R/X ratio [-]: R = gen_rx * X''d (IEC 60909-0 uses 0.05 to 0.15).
    gen_cos_phi : float, optional
        Generators' rated power factor [-] (e.g. 0.85); a missing rating ``sn_mva`` is then
        ``max(max_p_mw, p_mw) / gen_cos_phi``.
    line_end_temp_degree : float, optional
        Conductor temperature at the end of the fault, minimum case only [°C] (e.g. 80).
    """

    ext_grid_sc_max_mva: float | None = None
    ext_grid_sc_min_mva: float | None = None
    ext_grid_rx: float | None = None
    gen_xdss_pu: float | None = None
    gen_rx: float | None = None
    gen_cos_phi: float | None = None
    line_end_temp_degree: float | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if not is_number(value) or not math.isfinite(value) or value <= 0:
                raise InputError(
                    f"ShortCircuitData.{f.name}: expected a positive finite number or None, "
                    f"got {value!r}."
                )
        lo, hi = self.ext_grid_sc_min_mva, self.ext_grid_sc_max_mva
        if lo is not None and hi is not None and lo > hi:
            raise InputError(f"ShortCircuitData: ext_grid_sc_min_mva ({lo!r}) exceeds "
                             f"ext_grid_sc_max_mva ({hi!r}); the minimum case is the weaker "
                             "grid. Swap them.")
        if self.gen_cos_phi is not None and self.gen_cos_phi > 1:
            raise InputError(f"ShortCircuitData.gen_cos_phi: expected a power factor in (0, 1], "
                             f"got {self.gen_cos_phi!r}.")


@dataclass(frozen=True)
class ShortCircuitStrength:
    """Result of :func:`short_circuit_strength`.

    Attributes
    ----------
    bus : int
        The facility's bus.
    facility_mw : float
        The facility's active power the ratios are taken of [MW].
    skss_max_mva, skss_min_mva : float
        Initial symmetrical short-circuit power Sk'' at the bus, maximum and minimum case
        (IEC 60909, three-phase fault) [MVA].
    scr_max, scr_min : float
        Sk'' / facility_mw for each case [-].
    scr_weak, scr_very_weak : float
        The thresholds given [-].
    strength : str
        ``"strong"``, ``"weak"`` (scr_min < scr_weak) or ``"very weak"``
        (scr_min < scr_very_weak).
    outages : pandas.DataFrame
        One row per outage: ``element``, ``facility_islanded``, ``skss_max_mva``,
        ``skss_min_mva``, ``scr_max``, ``scr_min`` and ``strength``; weakest (lowest
        ``scr_min``) first; empty when no outages were asked for.
    assumed : tuple of str
        Every value taken from :class:`ShortCircuitData` because the network lacked it.
    """

    bus: int
    facility_mw: float
    skss_max_mva: float
    skss_min_mva: float
    scr_max: float
    scr_min: float
    scr_weak: float
    scr_very_weak: float
    strength: str
    outages: pd.DataFrame
    assumed: tuple[str, ...]


def _missing(table: pd.DataFrame, column: str) -> pd.Index:
    if column not in table:
        return table.index
    return table.index[table[column].isna()]


def _fill(net: pp.pandapowerNet, data: ShortCircuitData) -> tuple[pp.pandapowerNet, list[str]]:
    """A copy of ``net`` with IEC 60909 data completed from ``data``; what was assumed."""
    out = copy.deepcopy(net)
    assumed: list[str] = []
    needed: list[str] = []

    def fill(table: str, column: str, value: float | None, arg: str, rows=None) -> None:
        frame = out[table]
        rows = _missing(frame, column) if rows is None else rows
        if not len(rows):
            return
        if value is None:
            needed.append(f"net.{table}.{column} ({len(rows)} missing; or "
                          f"ShortCircuitData({arg}=...))")
            return
        if column not in frame:
            frame[column] = np.nan
        frame.loc[rows, column] = float(value)
        assumed.append(f"{table}.{column} = {value:g} for {len(rows)} element(s) ({arg})")

    live_eg = out.ext_grid[out.ext_grid.in_service.astype(bool)]
    for column, value, arg in (("s_sc_max_mva", data.ext_grid_sc_max_mva, "ext_grid_sc_max_mva"),
                               ("s_sc_min_mva", data.ext_grid_sc_min_mva, "ext_grid_sc_min_mva"),
                               ("rx_max", data.ext_grid_rx, "ext_grid_rx"),
                               ("rx_min", data.ext_grid_rx, "ext_grid_rx")):
        fill("ext_grid", column, value, arg, _missing(live_eg, column))
    gens = out.gen[out.gen.in_service.astype(bool)]
    if len(gens):
        if "vn_kv" not in out.gen or out.gen.vn_kv.isna().any():
            out.gen["vn_kv"] = out.bus.vn_kv.loc[out.gen.bus].to_numpy()
        fill("gen", "cos_phi", data.gen_cos_phi, "gen_cos_phi", _missing(gens, "cos_phi"))
        no_rating = _missing(gens, "sn_mva")
        if len(no_rating) and data.gen_cos_phi is not None:
            p = out.gen.loc[no_rating, ["p_mw"] + (["max_p_mw"] if "max_p_mw" in out.gen else [])]
            out.gen.loc[no_rating, "sn_mva"] = p.abs().max(axis=1).clip(lower=1.0).to_numpy() \
                / out.gen.loc[no_rating, "cos_phi"].to_numpy()
            assumed.append(f"gen.sn_mva = max(max_p_mw, p_mw) / cos_phi for {len(no_rating)} "
                           "generator(s) (gen_cos_phi)")
        elif len(no_rating):
            needed.append(f"net.gen.sn_mva ({len(no_rating)} missing; or "
                          "ShortCircuitData(gen_cos_phi=...))")
        fill("gen", "xdss_pu", data.gen_xdss_pu, "gen_xdss_pu", _missing(gens, "xdss_pu"))
        no_r = _missing(gens, "rdss_ohm")
        if len(no_r) and data.gen_rx is not None and "xdss_pu" in out.gen and \
                "sn_mva" in out.gen and not out.gen.loc[no_r, ["xdss_pu", "sn_mva"]].isna().any().any():
            g = out.gen.loc[no_r]
            out.gen.loc[no_r, "rdss_ohm"] = (data.gen_rx * g.xdss_pu * g.vn_kv**2 / g.sn_mva).to_numpy()
            assumed.append(f"gen.rdss_ohm = {data.gen_rx:g} * X''d for {len(no_r)} generator(s) "
                           "(gen_rx)")
        elif len(no_r):
            needed.append(f"net.gen.rdss_ohm ({len(no_r)} missing; or ShortCircuitData(gen_rx=...))")
    live_lines = out.line[out.line.in_service.astype(bool)]
    fill("line", "endtemp_degree", data.line_end_temp_degree, "line_end_temp_degree",
         _missing(live_lines, "endtemp_degree"))
    if needed:
        raise InputError(
            "short_circuit_strength: IEC 60909 needs data this network lacks: "
            + "; ".join(needed) + ". Give them in the network, or as ShortCircuitData(...) "
            "(typical values: ext_grid_rx=0.1, gen_xdss_pu=0.2, gen_rx=0.07, gen_cos_phi=0.85, "
            "line_end_temp_degree=80; the short-circuit power of the grid from its operator)."
        )
    return out, assumed


def _skss(net: pp.pandapowerNet, bus: int) -> tuple[float, float]:
    """Sk'' at ``bus`` [MVA], maximum and minimum case, by pandapower's calc_sc."""
    import pandapower.shortcircuit as sc

    out = []
    for case in ("max", "min"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # inverse_y=False: an LU solve for the one bus instead of inverting Ybus, the
            # same Sk'' (tested against the default) 20x faster on case118
            sc.calc_sc(net, bus=bus, case=case, fault="3ph", inverse_y=False)
        out.append(float(net.res_bus_sc.at[bus, "skss_mw"]))
    return out[0], out[1]


def _strength(scr_min: float, weak: float, very_weak: float) -> str:
    if not math.isfinite(scr_min):
        return "not supplied"
    return "very weak" if scr_min < very_weak else "weak" if scr_min < weak else "strong"


def short_circuit_strength(
    net: pp.pandapowerNet,
    *,
    bus: int,
    facility_mw: float,
    data: ShortCircuitData | None = None,
    outages: str | None = "lines+trafos",
    scr_weak: float = 3.0,
    scr_very_weak: float = 2.0,
) -> ShortCircuitStrength:
    """Short-circuit power and short-circuit ratio at the facility bus, intact and N-1.

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    bus : int
        The facility's bus.
    facility_mw : float
        The facility's rated (or peak) active power [MW], > 0.
    data : ShortCircuitData, optional
        IEC 60909 values for what the network lacks; every value used is listed in
        ``assumed``.
    outages : {"lines", "trafos", "lines+trafos", None}
        Which in-service branches to take out one circuit at a time (None: intact only; a
        row with ``parallel=k`` loses one circuit, labelled ``"line 0 (1 of 2 circuits)"``);
        "trafos" means 2- and 3-winding transformers (``net.trafo``, ``net.trafo3w``).
    scr_weak, scr_very_weak : float
        SCR below which the point is called weak and very weak [-].

    Returns
    -------
    ShortCircuitStrength

    Examples
    --------
    >>> import grid
    >>> data = grid.ShortCircuitData(line_end_temp_degree=80.0)
    >>> s = grid.short_circuit_strength(grid.networks.load("cigre_mv"), bus=5, facility_mw=5.0,
    ...                                 data=data, outages=None)
    >>> s.strength
    'strong'
    """
    bus = check_bus(net, bus)
    if not is_number(facility_mw) or not math.isfinite(facility_mw) or facility_mw <= 0:
        raise InputError(f"facility_mw: expected a facility power > 0 [MW], got {facility_mw!r}.")
    if outages not in _OUTAGES:
        raise InputError(f"outages: expected one of {list(_OUTAGES)}, got {outages!r}.")
    if not (is_number(scr_weak) and is_number(scr_very_weak)
            and 0 < scr_very_weak <= scr_weak and math.isfinite(scr_weak)):
        raise InputError(f"need 0 < scr_very_weak <= scr_weak, got {scr_very_weak!r}, "
                         f"{scr_weak!r} (e.g. 2 and 3).")
    data = data if data is not None else ShortCircuitData()
    if not isinstance(data, ShortCircuitData):
        raise InputError(f"data: expected a grid.ShortCircuitData, got {type(data).__name__}.")
    work, assumed = _fill(net, data)
    sk_max, sk_min = _skss(work, bus)
    rows = []
    for kind in _OUTAGES[outages]:
        for idx in net[kind].index[net[kind].in_service.astype(bool)]:
            k = circuits(work[kind], idx)
            label = outage_label(work[kind], kind, idx)
            one_circuit_out(work, kind, idx)  # one circuit of a parallel=k row
            try:
                if bus in supplied_buses(work):
                    o_max, o_min = _skss(work, bus)
                else:
                    o_max = o_min = math.nan
            finally:
                work[kind].at[idx, "in_service"] = True
                if k > 1:
                    work[kind].at[idx, "parallel"] = k
            rows.append({"element": label, "facility_islanded": math.isnan(o_max),
                         "skss_max_mva": o_max, "skss_min_mva": o_min,
                         "scr_max": o_max / facility_mw, "scr_min": o_min / facility_mw,
                         "strength": _strength(o_min / facility_mw, scr_weak, scr_very_weak)})
    table = pd.DataFrame(rows, columns=["element", "facility_islanded", "skss_max_mva",
                                        "skss_min_mva", "scr_max", "scr_min", "strength"])
    table = table.sort_values("scr_min", kind="stable", na_position="first")
    return ShortCircuitStrength(
        bus=bus, facility_mw=float(facility_mw), skss_max_mva=sk_max, skss_min_mva=sk_min,
        scr_max=sk_max / facility_mw, scr_min=sk_min / facility_mw, scr_weak=float(scr_weak),
        scr_very_weak=float(scr_very_weak),
        strength=_strength(sk_min / facility_mw, scr_weak, scr_very_weak),
        outages=table.reset_index(drop=True), assumed=tuple(assumed),
    )
