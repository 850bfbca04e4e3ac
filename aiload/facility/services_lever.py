"""The inference lever: fewer serving nodes, requests beyond them queued, then unserved.

A throttled service keeps at most ``cap`` nodes serving; each serves up to its capacity at the
service's latency target (the capacity the open-loop run sized the pool with). Requests beyond
``cap`` nodes' capacity wait first come first served; a request that would wait longer than
the service's ``timeout_s`` is unserved — the queue rule of
:func:`aiload.facility.inference.latency_sizing`, here with ``cap`` nodes. Power follows the
service's measured per-node curve: ``busy·P(served/busy) + (nodes − busy)·P_idle``.
"""

from __future__ import annotations

import math

import numpy as np

from aiload.errors import InputError

__all__ = ["ServiceThrottle"]


def _to_grid(values: np.ndarray, fine_s: float, h: float) -> np.ndarray:
    """Fine-step means to means on steps of ``h`` [unit of values]."""
    if abs(h - fine_s) < 1e-9:
        return values
    if h > fine_s:
        k = round(h / fine_s)
        return values.reshape(-1, k).mean(axis=1)
    return np.repeat(values, round(fine_s / h))


class ServiceThrottle:
    """The services' open-loop series on the control grid and what throttling changes.

    Attributes
    ----------
    power_ol, replicas_ol : ndarray
        Open-loop power [W] and busy nodes [-] of all services per step.
    d_w, d_busy : ndarray
        Throttled minus open-loop power [W] and busy nodes [-] per step.
    queued_requests, unserved_requests : ndarray
        Per step: requests that had to wait, requests given up, beyond the open loop's [-].
    """

    def __init__(self, spec, results, freq_s: float, h: float, n: int, lever, idle_w: float):
        self.h, self.n, self.lever, self.idle_w = h, n, lever, idle_w
        self.power_ol = np.zeros(n)
        self.replicas_ol = np.zeros(n)
        self.d_w = np.zeros(n)
        self.d_busy = np.zeros(n)
        self.queued_requests = np.zeros(n)
        self.unserved_requests = np.zeros(n)
        self.items = []
        self._queues: list[float] = []
        fine_s = freq_s if freq_s <= 60 else 60.0
        ratio = max(h, fine_s) / min(h, fine_s)
        if results and abs(ratio - round(ratio)) > 1e-9:
            raise InputError(f"FlexibilitySpec.control_period_s: with inference services the "
                             f"control step {h:g} s must be a multiple or divisor of the "
                             f"services' {fine_s:g} s step.")
        n_fine = int(round(n * h / fine_s))
        for res in results:
            part = res.window(0, n_fine)
            item = {
                "res": res, "nodes": res.spec.nodes, "c": res.capacity_per_s,
                "min": res.spec.min_replicas, "timeout_s": res.spec.timeout_s,
                "demand": _to_grid(part["requests_per_s"], fine_s, h),
                "power": _to_grid(part["power_w"], fine_s, h),
                "busy": _to_grid(part["replicas"], fine_s, h),
                "unserved": _to_grid(part["unserved_per_s"], fine_s, h),
                "cap": res.spec.nodes, "queue": 0.0,
                "p_full": float(np.asarray(res.curve.power_w(np.array([res.capacity_per_s])))[0]),
            }
            self.power_ol += item["power"]
            self.replicas_ol += item["busy"]
            self.items.append(item)

    @property
    def neutral(self) -> bool:
        """No service throttled and no queue left to drain."""
        return all(it["cap"] >= it["nodes"] and it["queue"] == 0.0 for it in self.items)

    def walk(self, a: int, b: int) -> None:
        """Steps ``a … b − 1`` with the current caps: fill ``d_w`` and ``d_busy``."""
        for arr in (self.d_w, self.d_busy, self.queued_requests, self.unserved_requests):
            arr[a:b] = 0.0
        for it in self.items:
            if it["cap"] >= it["nodes"] and it["queue"] == 0.0:
                continue
            self._walk_one(it, a, b)

    def _walk_one(self, it: dict, a: int, b: int) -> None:
        h, c, cap = self.h, it["c"], it["cap"]
        q = it["queue"]
        full = cap * c * h
        bound = cap * c * it["timeout_s"]
        res = it["res"]
        for k in range(a, b):
            arrivals = it["demand"][k] * h
            served = min(q + arrivals, full)
            rest = q + arrivals - served
            q_new = min(rest, bound)
            dropped = rest - q_new
            self.queued_requests[k] += max(0.0, arrivals - max(0.0, full - q))
            self.unserved_requests[k] += max(0.0, dropped - it["unserved"][k] * h)
            busy = min(max(math.ceil(served / (c * h) * (1.0 - 1e-12)), it["min"]), cap)
            rate = served / h / busy if busy > 0 else 0.0
            power = busy * float(np.asarray(res.curve.power_w(np.array([rate])))[0]) + \
                (it["nodes"] - busy) * self.idle_w
            self.d_w[k] += power - it["power"][k]
            self.d_busy[k] += busy - it["busy"][k]
            q = q_new
        it["queue"] = q

    def saving_per_node_w(self) -> float:
        """Power one serving node at capacity draws above idle [W] (the largest)."""
        return max((it["p_full"] - self.idle_w for it in self.items), default=0.0)

    def set_caps(self, change_nodes: int, a: int, b: int) -> bool:
        """Lower (negative) or raise every service's cap by ``change_nodes``; a first cut
        starts from the nodes busy in steps ``a … b − 1``. False if no cap moved."""
        moved = False
        for it in self.items:
            low = math.ceil(self.lever.min_node_fraction * it["nodes"])
            base = it["cap"]
            if change_nodes < 0 and base >= it["nodes"]:
                base = math.ceil(float(np.max(it["busy"][a:b])) - 1e-9)
            new = int(min(it["nodes"], max(low, base + change_nodes)))
            if change_nodes < 0:
                new = min(new, it["cap"])
            moved |= new != it["cap"]
            it["cap"] = new
        return moved

    def begin(self) -> None:
        """Remember the queues at the start of a control period."""
        self._queues = [it["queue"] for it in self.items]

    def rewalk(self, a: int, b: int) -> None:
        """Walk steps ``a … b − 1`` again from the period's starting queues (caps changed)."""
        for it, queue in zip(self.items, self._queues):
            it["queue"] = queue
        self.walk(a, b)
