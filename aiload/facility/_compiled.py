"""The compiled loops of :mod:`aiload.facility.summation` (numba, optional).

Imported and compiled on first use, once per process; without numba :func:`numba_loops`
returns None and the summation uses numpy. Every loop repeats, operation for operation, what
the numpy path computes, without fastmath (no fused multiply-add), so both give the same bits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["Loops", "numba_loops"]


class Loops(NamedTuple):
    """The compiled loops (see each one's comment in :func:`numba_loops`)."""

    interior: Callable
    place: Callable
    edges_energy: Callable
    place_run: Callable
    diff_in_place: Callable


@functools.cache
def numba_loops() -> Loops | None:
    """The compiled loops, or None without numba (imported and compiled once per process).

    The loops of the facility model (``place``, ``edges_energy``, ``place_run``,
    ``diff_in_place``) have explicit signatures and are compiled here, eagerly, so that
    whoever warms numba up (``summation.numba_available()``, or a first summation) also pays
    their compilation; ``interior`` (of the reference ``job_energy_at_edges``) compiles at its
    first call.
    """
    try:
        import numba  # noqa: PLC0415 - optional, and slow to import
    except ImportError:
        from aiload._notice import slow_without  # noqa: PLC0415

        slow_without("numba", "the facility summation runs on numpy (same results, ~4x slower)")
        return None

    @numba.njit(cache=False, nogil=True)
    def interior(out, first, last, lead_s, nodes, step_s, e, knot_s, period_s, duration_s):
        n_out = out.shape[0]
        top = e.shape[0] - 2
        cyclic = duration_s > period_s
        for j in range(first.shape[0]):
            stop = min(last[j], n_out)
            w = nodes[j]
            for i in range(first[j], stop):
                # same arithmetic as CumulativeEnergy.__call__, one point at a time
                tau = min(lead_s[j] + (i - first[j]) * step_s, duration_s)
                if cyclic:
                    cycles = np.floor(tau / period_s)
                    pos = (tau - cycles * period_s) / knot_s
                    base = cycles * e[-1]
                else:
                    pos = tau / knot_s
                    base = 0.0
                k = min(int(pos), top)
                out[i] += w * (base + e[k] + (pos - k) * (e[k + 1] - e[k]))

    # no fastmath: a fused multiply-add would round differently from the numpy path
    @numba.njit("void(float64[::1], float64[::1], int64[::1], int64[::1], int64[::1], "
                "float64[::1], int64, int64)", cache=False, nogil=True, boundscheck=False)
    def place(out, table, offset, length, pos, weight, lo, hi):
        # only bins lo … hi−1: threads split the bins, each adds every job in the same order
        for j in range(offset.shape[0]):
            a = max(pos[j], lo)
            b = min(pos[j] + length[j], hi)
            if b <= a:
                continue
            w = weight[j]
            o = offset[j] + a - pos[j]
            # slices first: indexing with a non-negative loop counter lets LLVM vectorise
            # (out[pos + i] needs a wrap-around check per element and ran ~4x slower)
            dst = out[a:b]
            src = table[o:o + b - a]
            for i in range(dst.shape[0]):
                dst[i] += w * src[i]

    # the arithmetic of CumulativeEnergy.__call__ and _kernel_energy, one edge at a time, so
    # a kernel value is the same float on either path (no fastmath: no fused multiply-add)
    @numba.njit("void(float64[::1], float64[::1], float64, float64, float64, float64, "
                "float64, int64[::1], int64[::1], int64[::1])", cache=False, nogil=True,
                boundscheck=False)
    def edges_energy(out, e, knot_s, period_s, duration_s, step_s, placement_s, row_slot,
                     row_lo, n_edges):
        top = e.shape[0] - 2
        cyclic = duration_s > period_s
        i = 0
        for r in range(row_slot.shape[0]):
            shift = float(row_slot[r]) * placement_s
            for k in range(row_lo[r], row_lo[r] + n_edges[r]):
                tau = max(float(k) * step_s - shift, 0.0)
                tau = min(max(tau, 0.0), duration_s)
                if cyclic:
                    cycles = np.floor(tau / period_s)
                    pos = (tau - cycles * period_s) / knot_s
                    j = min(int(pos), top)
                    out[i] = cycles * e[-1] + e[j] + (pos - j) * (e[j + 1] - e[j])
                else:
                    pos = tau / knot_s
                    j = min(int(pos), top)
                    out[i] = e[j] + (pos - j) * (e[j + 1] - e[j])
                i += 1

    # plan_jobs_energy + place for every job of a run, fused: the same filter, placement,
    # kernel offsets and adds, in the same order (jobs by curve, then by index), so the same
    # bits; one call per window holds the GIL only to start and to return
    @numba.njit("void(float64[::1], int64, int64, int64, float64, float64, float64[::1], "
                "float64[::1], float64[::1], int64[::1], int64[::1], float64[::1], "
                "int64[:, ::1], int64[::1], float64, int64)", cache=False, nogil=True,
                boundscheck=False)
    def place_run(out, lo, hi, first_bin, t_lo, t_hi, start, duration, nodes, curve, order,
                  table, row_offset, widths, placement_s, per_bin):
        n_bins = out.shape[0]
        for idx in range(order.shape[0]):
            j = order[idx]
            s = start[j]
            if not (s < t_hi) or not (s + duration[j] > t_lo):
                continue
            slot_index = np.int64(np.rint(s / placement_s))
            bin_start = slot_index // per_bin
            m = bin_start - first_bin
            c = curve[j]
            k0 = max(-m, 0)
            k1 = min(widths[c], n_bins - m)
            a = max(m + k0, lo)
            b = min(m + k1, hi)
            if b <= a:
                continue
            row = row_offset[c, slot_index - bin_start * per_bin]
            if row < 0:
                raise ValueError("RunSums: a kernel row these starts need was not built")
            o = row + k0 + a - (m + k0)
            w = nodes[j]
            dst = out[a:b]
            src = table[o:o + b - a]
            for i in range(dst.shape[0]):
                dst[i] += w * src[i]

    @numba.njit("void(float64[::1])", cache=False, nogil=True, boundscheck=False)
    def diff_in_place(a):
        for i in range(a.shape[0] - 1):
            a[i] = a[i + 1] - a[i]

    return Loops(interior, place, edges_energy, place_run, diff_in_place)
