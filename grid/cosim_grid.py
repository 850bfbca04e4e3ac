"""The closed-loop :class:`~grid.powerflow.GridResult` of :func:`grid.cosimulate`, from the
loop's own power flows.

At the start of every control period the loop solves the network for the period just
ended: the facility at its mean metered power of that period and the existing loads at that
period's mean background, warm-started from the previous period, with the same prepared
model (:func:`grid.engines.prepare`) and the same Newton solver with PV -> PQ switching
(:func:`grid.qlims.newton_q_limited`) that :func:`grid.timeseries` uses when generator Q
limits are enforced. When the control period equals the output step, that is exactly the
power flow :func:`grid.timeseries` repeats for the step on the closed-loop series. The
voltages are therefore kept (:class:`KeptVoltages`) and turned into the reported quantities
with :func:`grid.engines.flows`, the code :func:`grid.timeseries` runs on its own voltages;
only the steps the loop did not solve (the last one; any whose power or background differs)
are solved here, warm-started as :func:`grid.timeseries` would.

Only the Q-limited Newton case is reused: without Q limits :func:`grid.timeseries` prefers
lightsim2grid's batch solver (equal to 1e-6 pu, not bit for bit), so there it is called as
before.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grid import engines
from grid.attach import facility_mw, q_mvar
from grid.limits import Limits
from grid.powerflow import CHUNK_STEPS, GridResult, assemble

__all__ = ["KeptVoltages", "closed_loop_result"]

#: relative difference of power or background below which a kept solution is the step's
MATCH_REL = 1e-12
#: the reason :func:`grid.timeseries` gives when Q limits send it to Newton
QLIMS_REASON = "newton used: generator Q limits enforced (PV->PQ switching)"


class KeptVoltages:
    """Complex bus voltages [pu, ppci order] the loop solved, one row per output step.

    Parameters
    ----------
    model : grid.engines.Model
        The loop's prepared model.
    index : pandas.DatetimeIndex
        The facility's output index.
    enabled : bool
        Keep anything at all (False: :func:`closed_loop_result` is not used).
    """

    def __init__(self, model: engines.Model, index: pd.DatetimeIndex, enabled: bool) -> None:
        self.times = index.as_unit("ns").asi8
        n = len(index)
        self.step_ns = int(self.times[1] - self.times[0]) if n > 1 else 0
        self.enabled = bool(enabled) and n > 1
        n_keep = n if self.enabled else 0
        self.v = np.empty((n_keep, len(model.v0)), dtype=complex)  # pages taken when written
        self.p_mw = np.full(n_keep, np.nan)
        self.scale = np.full(n_keep, np.nan)
        self.solved = np.zeros(n_keep, dtype=bool)  # the loop solved this step
        self.converged = np.zeros(n_keep, dtype=bool)

    def keep(self, t_ns: int, period_s: float, p_mw: float, scale: float,
             v: np.ndarray | None) -> None:
        """Keep the solution of the period that ends at ``t_ns`` when it is one output step."""
        if not self.enabled or round(period_s * 1e9) != self.step_ns:
            return
        k = int(np.searchsorted(self.times, t_ns, side="left")) - 1
        if k < 0 or self.times[k] != t_ns - self.step_ns:
            return
        self.solved[k] = True
        self.p_mw[k], self.scale[k] = p_mw, scale
        self.converged[k] = v is not None
        if v is not None:
            self.v[k] = v

    @property
    def steps(self) -> int:
        """Steps the loop solved."""
        return int(self.solved.sum())


def closed_loop_result(net, network, kept: KeptVoltages, facility_kw: pd.Series, *,
                       bus: int, pf: float, scale: np.ndarray, limits: Limits
                       ) -> tuple[GridResult, int]:
    """:func:`grid.timeseries` on ``facility_kw``, from the loop's kept voltages.

    Returns the result and the number of steps taken from the loop.
    """
    model = network.model
    series = facility_mw(facility_kw, net=net)
    p = series.to_numpy(dtype=np.float64)
    q = q_mvar(p, pf)
    v = kept.v
    use = kept.solved & (np.abs(kept.p_mw - p) <= MATCH_REL * np.maximum(1.0, np.abs(p))) \
        & (np.abs(kept.scale - scale) <= MATCH_REL * np.maximum(1.0, np.abs(scale)))
    converged = use & kept.converged
    v[use & ~kept.converged] = np.nan
    for k in np.flatnonzero(~use):
        # grid.timeseries warm-starts from the step before when it converged, else from v0
        network.v = v[k - 1].copy() if k > 0 and converged[k - 1] else model.v0.copy()
        flows = network.solve(float(p[k]), float(scale[k]), keep=False)
        converged[k] = flows is not None
        v[k] = flows.v if flows is not None else np.nan
    parts = [engines.flows(model, v[a:a + CHUNK_STEPS], p[a:a + CHUNK_STEPS],
                           q[a:a + CHUNK_STEPS], scale[a:a + CHUNK_STEPS])
             for a in range(0, len(p), CHUNK_STEPS)]
    out = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    result = assemble(net, series, out, converged, bus, "newton_qlims", QLIMS_REASON, model,
                      limits)
    return result, int(use.sum())
