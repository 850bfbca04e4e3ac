"""The event engine: the only module that holds SimPy's clock.

SimPy decides *when* things happen — job arrivals, queueing, node allocation, job ends and
inference autoscaling. No power is computed here; the engine returns times, and
:mod:`aiload.facility.summation` turns them into power with numpy.
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from dataclasses import dataclass

import numpy as np
import simpy

__all__ = ["Schedule", "schedule_jobs", "autoscale", "BACKFILL_DEPTH"]

#: queued jobs examined per backfill pass (beyond the head); bounds the cost when the queue
#: grows long under overload
BACKFILL_DEPTH = 64


@dataclass(frozen=True)
class Schedule:
    """Start times decided by the engine.

    Attributes
    ----------
    start_s : ndarray of float64
        Start time of each job from the simulation start [s]; ``inf`` when it never started
        within the horizon.
    events : int
        SimPy events processed (arrivals, ends, autoscaling steps).
    """

    start_s: np.ndarray
    events: int


def schedule_jobs(
    arrival_s: np.ndarray, nodes: np.ndarray, duration_s: np.ndarray, capacity_nodes: int,
    horizon_s: float, *, backfill: bool = True,
) -> Schedule:
    """FIFO scheduling of jobs on ``capacity_nodes`` nodes, with optional EASY backfilling.

    Parameters
    ----------
    arrival_s, nodes, duration_s : ndarray
        Jobs sorted by arrival [s], [-], [s].
    capacity_nodes : int
        Nodes available to the jobs [-].
    horizon_s : float
        End of the simulation [s]; jobs not started by then keep ``start_s = inf``.
    backfill : bool
        EASY backfilling: a queued job may jump ahead if it fits now and either ends before
        the head job's reserved start (the *shadow time*) or uses only nodes the head job
        will not need then.
    """
    env = simpy.Environment()
    n_jobs = len(arrival_s)
    starts = [np.inf] * n_jobs  # a list: item assignment is cheaper than on an ndarray
    arr = arrival_s.tolist()
    size = nodes.tolist()
    dur = duration_s.tolist()
    queue: deque[int] = deque()
    running: list[tuple[float, int, int]] = []  # (end, nodes, job), sorted by end
    free = int(capacity_nodes)
    min_size = min(size) if size else 1  # no job fits in fewer free nodes: skip the pass
    # the last backfill pass's reservation for the head job: still valid until a job ends
    bf_valid, bf_shadow, bf_extra = False, np.inf, 0
    timeout = env.timeout
    insort, bisect_left = bisect.insort, bisect.bisect_left

    def on_end(event) -> None:
        nonlocal free, bf_valid
        job = event.value
        free += size[job]
        bf_valid = False
        # ends come in time order, so the ending job is almost always the first entry
        if running[0][2] == job:
            del running[0]
        else:
            del running[bisect_left(running, (starts[job] + dur[job], size[job], job))]
        if queue:
            dispatch()

    def launch(job: int) -> None:
        nonlocal free
        now = env.now
        starts[job] = now
        free -= size[job]
        end = now + dur[job]
        insort(running, (end, size[job], job))
        if end < horizon_s:
            timeout(dur[job], job).callbacks.append(on_end)

    def dispatch() -> None:
        nonlocal bf_valid, bf_shadow, bf_extra
        bf_valid = False
        while queue and size[queue[0]] <= free:
            launch(queue.popleft())
        if not (backfill and len(queue) > 1 and free >= min_size):
            return
        head = size[queue[0]]
        avail, shadow = free, np.inf
        for end, n, _ in running:
            avail += n
            if avail >= head:
                shadow = end
                break
        extra = avail - head  # nodes still spare at the shadow time
        now = env.now
        for job in list(itertools.islice(queue, 1, BACKFILL_DEPTH + 1)):
            if free <= 0:
                break
            n = size[job]
            if n > free:
                continue
            if now + dur[job] <= shadow:
                queue.remove(job)
                launch(job)
            elif n <= extra:
                extra -= n
                queue.remove(job)
                launch(job)
        bf_valid, bf_shadow, bf_extra = True, shadow, extra

    # arrivals chain themselves through callbacks: cheaper than a generator process per event
    def on_arrival(event) -> None:
        nonlocal bf_extra, free
        job = event.value
        n = size[job]
        now = env.now
        if not queue and n <= free:
            # fast path (most arrivals below saturation): launch() inlined
            starts[job] = now
            free -= n
            d = dur[job]
            insort(running, (now + d, n, job))
            if now + d < horizon_s:
                timeout(d, job).callbacks.append(on_end)
        elif bf_valid and queue:
            # nothing ended since the last backfill pass, so only the newcomer can change the
            # outcome, and the head's reservation still holds (every job started since then
            # ends before it or uses only spare nodes)
            if n <= free and len(queue) <= BACKFILL_DEPTH and now + dur[job] <= bf_shadow:
                launch(job)
            elif n <= free and len(queue) <= BACKFILL_DEPTH and n <= bf_extra:
                bf_extra -= n
                launch(job)
            else:
                queue.append(job)
        else:
            queue.append(job)
            dispatch()
        job += 1
        if job < n_jobs:
            timeout(arr[job] - now, job).callbacks.append(on_arrival)

    if n_jobs:
        timeout(arr[0], 0).callbacks.append(on_arrival)
    env.run(until=horizon_s)
    start_s = np.asarray(starts, dtype=np.float64)
    # one event per arrival and one per job end within the horizon
    events = int(np.count_nonzero(arrival_s < horizon_s)
                 + np.count_nonzero(start_s + duration_s < horizon_s))
    return Schedule(start_s=start_s, events=events)


def autoscale(
    demand_per_s: np.ndarray, step_s: float, capacity_per_node_s: float, *, nodes: int,
    min_replicas: int, target_load: float, headroom: float, decision_s: float, reaction_s: float,
    horizon_s: float,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Replica changes of an inference pool decided every ``decision_s`` seconds.

    At each decision the controller reads the mean demand of the interval just ended and asks
    for ``ceil(D·(1 + headroom) / (target_load·capacity))`` replicas (clipped to
    ``min_replicas..nodes``); the change takes effect ``reaction_s`` later.

    Parameters
    ----------
    demand_per_s : ndarray
        Mean request rate per interval of length ``step_s`` [requests/s].
    step_s : float
        Interval of ``demand_per_s`` [s]; ``decision_s`` must be a multiple of it.
    capacity_per_node_s : float
        Requests one node serves at the latency target [requests/s].

    Returns
    -------
    times_s, replicas : ndarray
        Change points [s] and the replica count from each on [-] (first at t = 0).
    events : int
        SimPy events processed.
    """
    env = simpy.Environment()
    per_decision = int(round(decision_s / step_s))
    blocks = len(demand_per_s) // per_decision
    observed = demand_per_s[: blocks * per_decision].reshape(blocks, per_decision).mean(axis=1)
    wanted = np.ceil(observed * (1.0 + headroom) / (target_load * capacity_per_node_s) - 1e-9)
    wanted = np.clip(wanted, min_replicas, nodes).astype(np.int64)
    initial = int(wanted[0]) if blocks else min_replicas
    times, values = [0.0], [initial]
    state = {"events": 0}

    def apply(_event, value: int) -> None:
        state["events"] += 1
        times.append(env.now)
        values.append(value)

    def controller():
        last = initial
        for k in range(1, blocks):
            yield env.timeout(decision_s)
            state["events"] += 1
            value = int(wanted[k - 1])
            if value != last:
                last = value
                env.timeout(reaction_s).callbacks.append(lambda ev, v=value: apply(ev, v))

    env.process(controller())
    env.run(until=horizon_s)
    t = np.asarray(times)
    v = np.asarray(values, dtype=np.int64)
    # changes landing at the same instant: the later decision wins
    keep = np.append(t[1:] != t[:-1], True)
    return t[keep], v[keep], state["events"]
