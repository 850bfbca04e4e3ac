"""Convergence settings shared by the power-flow engines (:mod:`grid.engines`,
:mod:`grid.batch`) and the generator Q-limit loop (:mod:`grid.qlims`).

Their own module so that :mod:`grid.qlims` does not import :mod:`grid.engines` back.
"""

from __future__ import annotations

__all__ = ["TOLERANCE_MVA", "MAX_ITERATION", "AGREEMENT_PU"]

#: Newton-Raphson mismatch tolerance [MVA] (also passed to ``pandapower.runpp``)
TOLERANCE_MVA = 1e-8
#: Newton-Raphson iterations per solve [-]
MAX_ITERATION = 10
#: largest voltage difference [pu] at which the batch engine's result is kept
AGREEMENT_PU = 1e-6
