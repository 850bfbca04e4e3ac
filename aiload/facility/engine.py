"""The event engine: the only module that holds SimPy's clock.

SimPy decides *when* things happen — job arrivals, queueing, node allocation, job ends and
inference autoscaling. Job arrivals are SimPy timeouts; job ends are settled arithmetically
inside their callbacks, each at its own time (see :func:`schedule_jobs`). No power is computed
here; the engine returns times, and
:mod:`aiload.facility.summation` turns them into power with numpy.
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from collections.abc import Callable, Sequence
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
        Discrete events of the simulation [-]: one per arrival and one per job end within
        the horizon.
    simpy_events : int
        Of these, the ones processed as SimPy timeouts [-]: every arrival. Job ends are
        settled arithmetically, in order, at the next SimPy event (see
        :func:`schedule_jobs`).
    """

    start_s: np.ndarray
    events: int
    simpy_events: int = 0


def schedule_jobs(
    arrival_s: np.ndarray, nodes: np.ndarray, duration_s: np.ndarray, capacity_nodes: int,
    horizon_s: float, *, backfill: bool = True, checkpoints_s: Sequence[float] = (),
    on_checkpoint: Callable[[float, list], None] | None = None, origin_s: float = 0.0,
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
    checkpoints_s, on_checkpoint : optional
        At each checkpoint time [s] before the horizon, ``on_checkpoint(t, starts)`` is called
        with the start times decided so far (a list indexed by job, ``inf`` where not started;
        read it, do not keep or change it). Every job that starts before ``t`` is in it. The
        calls change nothing in the schedule (the facility model uses them to sum power
        behind the clock).
    origin_s : float
        Time at which the simulation starts [s], <= the first arrival; negative for a
        burn-in before the output (times keep the output's origin, so jobs started in the
        burn-in have negative ``start_s``).

    Notes
    -----
    The rules. Events are arrivals and job ends; at equal times ends go first, equal ends
    in launch order. At each end while jobs wait, and at an arrival that finds jobs waiting
    and a job ended since the last pass, a *pass* starts the queue's head while it fits,
    then (with backfilling) reserves the head's start: walking the running jobs by end time
    (equal ends by size), the shadow time is the end at which enough nodes are free, and the
    nodes then left over are spare. Of the next :data:`BACKFILL_DEPTH` queued jobs (as they
    stand when the pass begins), each that fits now starts if it ends by the shadow time or
    fits the spare nodes (which it then uses up). An arrival that finds jobs waiting and no
    end since the last pass is checked alone against that pass's reservation (it starts
    if it is within the depth, fits and ends by the shadow time or fits the spare nodes;
    otherwise it queues; a waiting job that moved into the window since that pass is looked
    at again at the next end, not here). An arrival that finds nobody waiting starts if it
    fits.

    How it runs. Every arrival is a SimPy timeout; its callback first settles, in order and
    each at its own time, the job ends up to its clock, then handles the arrival. A job end
    is arithmetic (``running`` is sorted by end time): an end that frees nodes while jobs
    wait gets its pass at its own end time, exactly as an end event would have. Checkpoints
    and the horizon settle the ends before them in the same way. While a pass has found that
    no waiting job can start before the shadow time (no spare nodes for the smallest job,
    no job short enough), the ends before that time only return nodes: their passes would
    start nothing and leave the reservation as it is.
    """
    if on_checkpoint is not None and not callable(on_checkpoint):
        raise TypeError(f"on_checkpoint: expected a function (time_s, starts), got "
                        f"{type(on_checkpoint).__name__}.")
    env = simpy.Environment(initial_time=float(origin_s))
    n_jobs = len(arrival_s)
    if n_jobs and arrival_s[0] < origin_s:
        raise ValueError(f"schedule_jobs: the first arrival ({arrival_s[0]} s) is before "
                         f"origin_s = {origin_s} s; start the simulation at or before it.")
    inf = np.inf
    starts = [inf] * n_jobs  # a list: item assignment is cheaper than on an ndarray
    arr = arrival_s.tolist()
    size = nodes.tolist()
    dur = duration_s.tolist()
    depth = BACKFILL_DEPTH
    queue: deque[int] = deque()
    # (end, nodes, job, seq) sorted: the shadow walk takes equal ends by size
    running: list[tuple[float, int, int, int]] = []
    seq = itertools.count().__next__  # launch order: the order of equal ends
    free = int(capacity_nodes)
    min_size = min(size) if size else 1  # no job fits in fewer free nodes: skip the pass
    min_dur = min(dur) if dur else 0.0  # no job ends sooner
    # the last pass's reservation for the head job: valid until a job ends
    bf_valid, bf_shadow, bf_extra = False, inf, 0
    # while jobs wait, none can start before this time (a pass found nothing could start
    # before the head's shadow time: the ends before it need no pass of their own)
    hold_until = -inf
    timeout = env.timeout
    insort = bisect.insort

    def settle(until: float, before: bool = False) -> None:
        """Return the nodes of every job ended by ``until`` (before it, with ``before``) in
        order, each end with its own pass at its own time while jobs wait."""
        nonlocal free
        while running:
            first = running[0]
            end = first[0]
            if end > until or (before and end == until):
                return
            if len(running) > 1 and running[1][0] == end:
                # equal ends go in launch order (``seq``), as their timeouts would have
                k, i, last = 0, 1, len(running)
                while i < last and running[i][0] == end:
                    if running[i][3] < running[k][3]:
                        k = i
                    i += 1
                first = running.pop(k)
            else:
                del running[0]
            free += first[1]
            if queue and end >= hold_until:
                dispatch(end)

    def launch(job: int, now: float) -> None:
        nonlocal free
        starts[job] = now
        free -= size[job]
        insort(running, (now + dur[job], size[job], job, seq()))

    def dispatch(now: float) -> None:
        """A pass at ``now``: the head while it fits, then the backfill reservation."""
        nonlocal free, bf_valid, bf_shadow, bf_extra, hold_until
        bf_valid = False
        hold_until = -inf
        while queue and size[queue[0]] <= free:
            job = queue.popleft()  # launch() inlined: most passes only start the head
            starts[job] = now
            free -= size[job]
            insort(running, (now + dur[job], size[job], job, seq()))
        if not (backfill and len(queue) > 1 and free >= min_size):
            return  # no reservation: nothing else fits (or one job waits, or no backfill)
        head = size[queue[0]]
        avail, shadow = free, inf
        for end, n, _, _ in running:
            avail += n
            if avail >= head:
                shadow = end
                break
        extra = avail - head  # nodes still spare at the shadow time
        if extra < min_size and now + min_dur > shadow:
            # no queued job fits the spare nodes or ends before the shadow time: the pass
            # would start nothing (common while the facility is saturated), and neither would
            # a pass at any end before the shadow time (same head, shadow and spare nodes; no
            # job short enough), nor a newcomer: nothing can start before the shadow time
            bf_valid, bf_shadow, bf_extra, hold_until = True, shadow, extra, shadow
            return
        for job in list(itertools.islice(queue, 1, depth + 1)):
            if free < min_size:
                break
            n = size[job]
            if n > free:
                continue
            if now + dur[job] <= shadow:
                queue.remove(job)
                launch(job, now)
            elif n <= extra:
                extra -= n
                queue.remove(job)
                launch(job, now)
        bf_valid, bf_shadow, bf_extra = True, shadow, extra

    # arrivals chain themselves through callbacks: cheaper than a generator process per event
    def on_arrival(_event) -> None:
        nonlocal bf_extra, free, job
        now = env.now
        if running and running[0][0] <= now:
            if queue:
                settle(now)
            else:
                # nobody waits: the ends only return nodes (their order does not matter)
                while running and running[0][0] <= now:
                    free += running.pop(0)[1]
        n = size[job]
        if queue:
            if bf_valid:
                # nothing ended since the last pass: the newcomer alone is checked against
                # that pass's reservation (still valid: every job started since then ends
                # before the shadow time or uses only spare nodes). A full pass here could
                # also start a job that moved into the window when that pass started jobs
                # ahead of it: the rule (see Notes) leaves it for the next end's pass
                if n > free or len(queue) > depth:
                    queue.append(job)
                elif now + dur[job] <= bf_shadow:
                    launch(job, now)
                elif n <= bf_extra:
                    bf_extra -= n
                    launch(job, now)
                else:
                    queue.append(job)
            elif free < min_size:
                queue.append(job)  # the pass would start nothing: no job fits
            else:
                queue.append(job)
                dispatch(now)
        elif n <= free:
            # nobody waits and it fits (most arrivals below saturation): launch() inlined
            starts[job] = now
            free -= n
            insort(running, (now + dur[job], n, job, seq()))
        else:
            queue.append(job)
            dispatch(now)
        job += 1
        if job < n_jobs:
            timeout(arr[job] - now).callbacks.append(on_arrival)

    job = 0  # the next arrival (arrivals come in order)
    if n_jobs:
        timeout(arr[0] - env.now).callbacks.append(on_arrival)
    if on_checkpoint is not None:
        def at_checkpoint(event) -> None:
            settle(event.value)
            on_checkpoint(event.value, starts)

        for at_s in checkpoints_s:
            if 0.0 <= at_s < horizon_s:
                timeout(at_s - env.now, at_s).callbacks.append(at_checkpoint)
    env.run(until=horizon_s)
    settle(horizon_s, before=True)  # ends after the last arrival, before the horizon
    start_s = np.asarray(starts, dtype=np.float64)
    arrivals = int(np.count_nonzero(arrival_s < horizon_s))
    events = arrivals + int(np.count_nonzero(start_s + duration_s < horizon_s))
    return Schedule(start_s=start_s, events=events, simpy_events=arrivals)


def autoscale(
    observed_per_s: np.ndarray, decision_s: float, capacity_per_node_s: float, *, nodes: int,
    min_replicas: int, target_load: float, headroom: float, reaction_s: float, horizon_s: float,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Replica changes of an inference pool decided every ``decision_s`` seconds.

    At each decision the controller reads the mean demand of the interval just ended and asks
    for ``ceil(D·(1 + headroom) / (target_load·capacity))`` replicas (clipped to
    ``min_replicas..nodes``); the change takes effect ``reaction_s`` later.

    Parameters
    ----------
    observed_per_s : ndarray
        Mean request rate of each decision interval, the first from t = 0 [requests/s].
    decision_s : float
        Decision interval [s].
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
    blocks = len(observed_per_s)
    observed = np.asarray(observed_per_s, dtype=np.float64)
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
