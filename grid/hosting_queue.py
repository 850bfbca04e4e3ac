"""Hosting capacity of an interconnection queue: the common scaling and the queue-order
allocation, by the same bisection as one facility's (:func:`grid.hosting.bisect_capacity`).

``grid.hosting_capacity(net, queue={bus: request, ...})`` lands here. A request is a
constant size [MW] or a facility series (its shape over time, sized by its peak [MW]).

(a) **Common scaling**: the largest factor ``s`` such that every facility at ``s`` times
    its request, all at once, breaks no limit at any step.
(b) **Queue order**: each facility in turn, with those before it connected at their
    allocations, gets the largest size that breaks no limit (``hosting_mw``, with the
    binding constraint just above it); its allocation is the smaller of that and its
    request. Those after it are not connected yet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError
from grid import engines
from grid.attach import attach_all, check_bus, facility_mw, is_number, q_mvar
from grid.bisection import bisect_capacity
from grid.collapse import COLLAPSE, NUMERICAL, NUMERICAL_FAILURE, Continuation, settle
from grid.limits import Limits
from grid.powerflow import _background_scale, solve
from grid.queue import align

__all__ = ["QueueCapacity", "queue_capacity"]


@dataclass(frozen=True)
class QueueCapacity:
    """Result of ``grid.hosting_capacity(net, queue=...)``.

    Attributes
    ----------
    allocation : pandas.DataFrame
        One row per facility in queue order, index ``bus``: ``requested_mw`` [MW] (its
        size: the constant request or its series' peak), ``common_mw`` (``common_scale``
        times the request) [MW], ``hosting_mw`` (the largest size with those before it at
        their allocations, within ``tolerance_mw``) [MW], ``allocated_mw`` (the smaller of
        request and ``hosting_mw``) [MW], ``granted`` (the request fits in full), and the
        constraint that binds just above ``hosting_mw``: ``element`` (``"bus 5"``,
        ``"line 3"``, ``"trafo 0"``, ``"trafo3w 0"``, ``"power flow"`` for voltage
        collapse: no solution even when walked up to by continuation, :mod:`grid.collapse`,
        or ``"power flow (numerical failure)"``), ``quantity`` (``vm_pu``,
        ``loading_percent``, ``converged``),
        ``value`` and ``limit`` [pu or %], ``time`` (the binding step; None for constant
        requests without a background); ``nose_mw`` (the nose of its P-V curve at the
        binding step with those before it at their allocations: the size at which the
        network stops solving at all, within ``tolerance_mw``: :func:`grid.stability.nose`
        stepped up from ``hosting_mw`` when a limit binds, the continuation's nose of
        :mod:`grid.collapse` when collapse binds, as one facility's ``nose_p_mw``) and
        ``collapse_margin_mw`` (``nose_mw - hosting_mw``) [MW].
    common_scale : float
        Largest common factor of all requests with no violation [-] (within
        ``tolerance_mw`` on the largest request).
    common_element, common_quantity : str
        What binds the common scaling just above ``common_scale``.
    common_value, common_limit : float
        Its value and limit [pu or %].
    common_time : pandas.Timestamp or None
        Its step.
    tolerance_mw : float
        Width of each final bisection bracket [MW].
    enforce_q_lims : bool
        Whether generator Q limits were enforced.
    """

    allocation: pd.DataFrame
    common_scale: float
    common_element: str
    common_quantity: str
    common_value: float
    common_limit: float
    common_time: pd.Timestamp | None
    tolerance_mw: float
    enforce_q_lims: bool = False


def _requests(net, queue: Mapping, refuse_slack_bus
              ) -> tuple[tuple[int, ...], np.ndarray, np.ndarray, pd.DatetimeIndex | None]:
    """Buses, sizes [MW] and shapes [-] (steps x facilities; 1 at each one's peak)."""
    if not isinstance(queue, Mapping) or len(queue) == 0:
        raise InputError(f"queue: expected a non-empty mapping bus -> requested size [MW] or "
                         f"facility series, e.g. {{49: 100.0, 59: load_kw}}, got {queue!r}.")
    buses, sizes, series = [], [], {}
    for key, value in queue.items():
        b = check_bus(net, key)
        refuse_slack_bus(net, b)
        if is_number(value):
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"queue[{b}]: expected a finite requested size > 0 [MW], got "
                                 f"{value!r}.")
            sizes.append(float(value))
        else:
            s = facility_mw(value, f"queue[{b}]", net=net)
            if not float(s.max()) > 0:
                raise InputError(f"queue[{b}]: the facility series is 0 at every step; a "
                                 "request needs a positive peak [MW].")
            series[b] = s
            sizes.append(float(s.max()))
        buses.append(b)
    if not series:
        return tuple(buses), np.array(sizes), np.ones((1, len(buses))), None
    frame = align(series, "queue")
    shapes = np.ones((len(frame), len(buses)))
    for j, b in enumerate(buses):
        if b in frame:
            shapes[:, j] = frame[b].to_numpy() / sizes[j]
    return tuple(buses), np.array(sizes), shapes, frame.index


def _nose(model: engines.Model, power_factor: float, j: int, hosting_mw: float,
          before_mw: np.ndarray, shape_j: float, scale: float, tolerance_mw: float,
          p_max_mw: float) -> float:
    """Facility ``j``'s P-V nose [MW of its size] with ``before_mw`` [MW] held, as one
    facility's hosting capacity finds its own (:func:`grid.hosting.hosting_capacity`)."""
    from grid.stability import nose

    if not shape_j > 0:  # it draws nothing at the binding step: no curve to follow
        return float("nan")
    direction = np.zeros(len(before_mw))
    direction[j] = shape_j
    found = nose(model, power_factor, p_start_mw=hosting_mw, step_mw=max(1.0, 0.1 * hosting_mw),
                 tolerance_mw=tolerance_mw, p_max_mw=100.0 * p_max_mw, scale=scale,
                 direction=direction, offset=before_mw)
    return float("nan") if found is None else found[0]


def queue_capacity(net, queue: Mapping, *, limits: Limits, power_factor: float,
                   background: pd.Series | None, p_max_mw: float, tolerance_mw: float,
                   enforce_q_lims: bool | None, rules) -> QueueCapacity:
    """The common scaling and queue-order allocation (arguments checked by the caller,
    :func:`grid.hosting_capacity`, except the queue itself).

    ``rules``: :mod:`grid.hosting`'s ``(worst_violation, base_violation_text,
    refuse_slack_bus)``, the same rules as one facility's search.
    """
    worst_violation, base_violation_text, refuse_slack_bus = rules
    buses, sizes, shapes, axis = _requests(net, queue, refuse_slack_bus)
    if axis is None and background is not None:
        axis = background.index
        shapes = np.ones((len(axis), len(buses)))
    scale = np.ones(len(shapes)) if background is None else _background_scale(background, axis)
    work, load_index = attach_all(net, buses, power_factor=power_factor)
    model = engines.prepare(work, load_index, enforce_q_lims)
    engine = "auto" if len(scale) > 1 else "newton"
    engine = "runpp" if model.fast_reason else engine
    columns = {"bus": net.bus.index, "line": net.line.index, "trafo": net.trafo.index,
               "trafo3w": net.trafo3w.index}

    # a step that does not converge is walked up to by continuation before it counts as
    # voltage collapse, the rule of one facility's search (grid.collapse): along the
    # direction the search grows (all facilities in proportion for the common scaling, one
    # facility for its allocation), those before it held at their allocations
    cont = Continuation(model, power_factor, tolerance_mw)

    def check(size_mw: np.ndarray, walk: float, direction: np.ndarray, offset: np.ndarray):
        p = shapes * size_mw[None, :]
        out, conv, _, _ = solve(model, p, q_mvar(p, power_factor), scale, engine)
        if not conv.all():
            status = settle(cont, out, conv, np.full(len(scale), walk), scale,
                            stop_at_collapse=True, direction=direction, offset=offset)
            for kind, element in ((COLLAPSE, "power flow"), (NUMERICAL, NUMERICAL_FAILURE)):
                if (status == kind).any():
                    return int(np.flatnonzero(status == kind)[0]), element, "converged", 0.0, 1.0
        return worst_violation(out, conv, limits, columns)

    zero = np.zeros(len(buses))
    p0 = shapes * zero[None, :]
    out0, conv0, _, _ = solve(model, p0, p0, scale, engine)
    if worst_violation(out0, conv0, limits, columns) is not None:
        raise InputError(base_violation_text(out0, conv0, limits, columns, axis))
    times = axis if axis is not None else None

    def when(k: int):
        return None if times is None else times[k]

    top = float(sizes.max())
    grow_all, held_none = shapes * sizes[None, :], np.zeros_like(shapes)
    common, worst = bisect_capacity(
        lambda s: check(s * sizes, s, grow_all, held_none), p_max=p_max_mw / top,
        tolerance=tolerance_mw / top,
        too_much=f"the queue hosts more than p_max_mw={p_max_mw} MW at its largest facility "
                 "without a violation; raise p_max_mw.")
    rows, allocated = [], zero.copy()
    for j, b in enumerate(buses):
        grow = np.zeros_like(shapes)
        grow[:, j] = shapes[:, j]
        held = shapes * allocated[None, :]  # allocated[j] is still 0 here

        def one(x: float, j=j, grow=grow, held=held):
            trial = allocated.copy()
            trial[j] = x
            return check(trial, x, grow, held)

        hosting, found = bisect_capacity(
            one, p_max=p_max_mw, tolerance=tolerance_mw,
            too_much=f"bus {b} hosts more than p_max_mw={p_max_mw} MW without a violation "
                     "(with those before it in the queue); raise p_max_mw.")
        k, element, quantity, value, limit = found
        if quantity == "converged" and element == "power flow":
            # collapse binds: the nose is the one the search walked to, as one facility's
            p_nose = cont.nose_mw(float(scale[k]), 100.0 * p_max_mw, grow[k], held[k])
        else:
            p_nose = _nose(model, power_factor, j, hosting, allocated * shapes[k],
                           shapes[k, j], float(scale[k]), tolerance_mw, p_max_mw)
        allocated[j] = min(sizes[j], hosting)
        rows.append({"bus": b, "requested_mw": sizes[j], "common_mw": common * sizes[j],
                     "hosting_mw": hosting, "allocated_mw": allocated[j],
                     "granted": bool(hosting >= sizes[j]), "element": element,
                     "quantity": quantity, "value": value, "limit": limit, "time": when(k),
                     "nose_mw": p_nose, "collapse_margin_mw": p_nose - hosting})
    k, element, quantity, value, limit = worst
    return QueueCapacity(pd.DataFrame(rows).set_index("bus"), common, element, quantity,
                         value, limit, when(k), tolerance_mw, model.enforce_q_lims)
