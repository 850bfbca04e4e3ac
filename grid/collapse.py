"""Voltage collapse or a Newton that gave up? One rule for the capacity searches.

:func:`grid.hosting_capacity` and :func:`grid.flexible_interconnection` solve each trial
size cold, from the network's base voltages, with :data:`grid.engines.MAX_ITERATION`
Newton iterations (the batch engine warm-starts from the previous step instead). Near the
nose of the P-V curve that start may not converge although a solution exists: a solver
failure, which both searches used to count as voltage collapse, and which made them
disagree (they try different sizes, and the batch and Newton engines fail at different
ones). On the IEEE 39-bus case, bus 0, a cold start stopped converging at 925.7 MW while
the network carries 937.8 MW.

:class:`Continuation` settles every step that did not converge the way
:func:`grid.pv_curve` finds the nose: it walks the facility power up at that step's
background level, each point warm-started from the last solved one with
:data:`grid.stability.NOSE_MAX_ITERATION` iterations, halving the step after a failure. If
it reaches the trial size, the step is solved there and its limits are checked as any
other step's; if it cannot advance by ``tolerance_mw`` below the trial size, the nose lies
below it: a voltage collapse. What it learns per level (the solved points, the nose
bracket) is kept, so a search pays for one walk per level.

A queue's searches (:mod:`grid.hosting_queue`, :mod:`grid.flexible_queue`) walk the same
way along their own direction: the facilities that grow with the search, in proportion (all
of them for the common scaling, one for its allocation), on top of those before it held at
their allocations (``direction`` and ``offset``, as :func:`grid.stability.nose`); a level is
then the background with that direction and offset.
"""

from __future__ import annotations

import bisect

import numpy as np

from grid import engines
from grid.attach import q_mvar

__all__ = ["Continuation", "settle", "NUMERICAL_FAILURE"]

SOLVED, COLLAPSE, NUMERICAL = "solved", "collapse", "numerical"
#: the binding "element" of a step that does not solve even at 0 MW of facility power at its
#: background level (a solver failure, not a voltage collapse caused by the facility)
NUMERICAL_FAILURE = "power flow (numerical failure)"


class Continuation:
    """Solved points and nose brackets of a prepared model, per background level.

    Parameters
    ----------
    model : grid.engines.Model
        The prepared network with the facility loads (one facility, or a queue's).
    power_factor : float
        Lagging power factor of the facility [-].
    tolerance_mw : float
        The nose is bracketed to this width [MW] (the search's own tolerance).
    """

    def __init__(self, model: engines.Model, power_factor: float, tolerance_mw: float) -> None:
        self.model = model
        self.power_factor = power_factor
        self.tolerance_mw = float(tolerance_mw)
        self.solver = None
        if not model.fast_reason:
            from lightsim2grid.algorithm import NRSing_KLU

            self.solver = NRSing_KLU()
        # level -> (sorted solved powers [MW], their voltages, lowest power known beyond the
        # nose); a level is the background scale, with a queue's direction and offset
        self._levels: dict[tuple, tuple[list[float], list[np.ndarray], list[float]]] = {}

    @staticmethod
    def _level(scale: float, direction: np.ndarray | None, offset: np.ndarray | None
               ) -> tuple:
        if direction is None and offset is None:
            return (scale,)
        d = np.zeros(0) if direction is None else np.asarray(direction, dtype=float)
        o = np.zeros(0) if offset is None else np.asarray(offset, dtype=float)
        return (scale, d.tobytes(), o.tobytes())

    def reach(self, p_mw: float, scale: float, direction: np.ndarray | None = None,
              offset: np.ndarray | None = None) -> tuple[str, np.ndarray | None]:
        """Walk up to ``p_mw`` at background ``scale``: (``"solved"``, voltages [pu, ppci
        order]), (``"collapse"``, None) when the nose lies below ``p_mw``, or
        (``"numerical"``, None) when not even 0 MW solves at this level.

        ``direction``, ``offset``: for a queue's model, each facility's share [-] of
        ``p_mw`` and the power [MW] held under it (those before it in the queue at their
        allocations), as :func:`grid.stability.nose`; None for one facility.
        """
        from grid.stability import _solve_at

        def solve_at(p: float, v_start: np.ndarray) -> np.ndarray | None:
            return _solve_at(self.model, self.solver, p, self.power_factor, v_start, scale,
                             direction, offset)

        scale = float(scale)
        level = self._level(scale, direction, offset)
        if level not in self._levels:
            v0 = solve_at(0.0, self.model.v0)
            if v0 is None:
                return NUMERICAL, None
            self._levels[level] = ([0.0], [v0], [np.inf])
        powers, voltages, beyond = self._levels[level]
        if p_mw >= beyond[0]:
            return COLLAPSE, None
        i = bisect.bisect_right(powers, p_mw) - 1
        p, v = powers[i], voltages[i]
        if p == p_mw:
            return SOLVED, v
        step = p_mw - p
        while True:
            trial = min(p + step, p_mw)
            found = solve_at(trial, v)
            if found is None:
                if step < self.tolerance_mw:
                    # no step of the tolerance's width solves: the nose is below p + step
                    beyond[0] = min(beyond[0], p + step)
                    return COLLAPSE, None
                step *= 0.5
                continue
            p, v = trial, found
            j = bisect.bisect_right(powers, p)
            powers.insert(j, p)
            voltages.insert(j, v)
            if p >= p_mw:
                return SOLVED, v
            step *= 2.0

    def nose_mw(self, scale: float, p_max_mw: float, direction: np.ndarray | None = None,
                offset: np.ndarray | None = None) -> float:
        """The nose of the P-V curve at background ``scale`` [MW], within ``tolerance_mw``
        below it, by the same walk (NaN when the network still solves at ``p_max_mw``, or
        not even at 0 MW); ``direction`` and ``offset`` as :meth:`reach`."""
        kind, _ = self.reach(float(p_max_mw), scale, direction, offset)
        if kind != COLLAPSE:
            return float("nan")
        powers, _, beyond = self._levels[self._level(float(scale), direction, offset)]
        return float(max(p for p in powers if p < beyond[0]))


def settle(cont: Continuation, out: dict[str, np.ndarray], converged: np.ndarray,
           p_mw: np.ndarray, scale: np.ndarray, *, stop_at_collapse: bool = False,
           direction: np.ndarray | None = None, offset: np.ndarray | None = None
           ) -> np.ndarray:
    """Settle the steps that did not converge, in place: a step the continuation solves gets
    its flows and ``converged`` True; the others stay not converged.

    Parameters
    ----------
    out, converged
        Flows and convergence flags of :func:`grid.powerflow.solve` (steps x ...).
    p_mw, scale : numpy.ndarray
        Facility power [MW] and background multiplier [-] of each step.
    stop_at_collapse : bool
        Stop at the first confirmed collapse (the heaviest background first): enough for a
        search that needs only to know whether a size breaks anything.
    direction, offset : numpy.ndarray, optional
        For a queue's model (steps x facilities): which facilities grow with ``p_mw`` and
        in what proportion [-], and the power held under them [MW]; a step's facility
        table is ``p_mw * direction + offset``. None for one facility.

    Returns
    -------
    numpy.ndarray of str
        Per step: ``""`` (converged at first), ``"solved"``, ``"collapse"``,
        ``"numerical"`` or ``"unchecked"`` (skipped after a collapse).
    """
    status = np.full(len(converged), "", dtype=object)
    failed = np.flatnonzero(~converged)
    status[failed] = "unchecked"
    for k in failed[np.argsort(-scale[failed], kind="stable")]:
        d = None if direction is None else direction[k]
        o = None if offset is None else offset[k]
        kind, v = cont.reach(float(p_mw[k]), float(scale[k]), d, o)
        status[k] = kind
        if kind == SOLVED:
            if d is None and o is None:
                p = np.array([float(p_mw[k])])
            else:  # the facility table the walk solved, as grid.stability._solve_at
                p = float(p_mw[k]) * (np.ones(cont.model.load_indices.size) if d is None
                                      else d)[None, :]
                if o is not None:
                    p = p + o[None, :]
            row = engines.flows(cont.model, v[None, :], p, q_mvar(p, cont.power_factor),
                                np.array([float(scale[k])]))
            for key, values in row.items():
                out[key][k] = values[0]
            converged[k] = True
        elif stop_at_collapse and kind == COLLAPSE:
            break
    return status
