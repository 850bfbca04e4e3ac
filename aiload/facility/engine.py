"""The event engine: the only module that holds SimPy's clock.

SimPy decides *when* things happen — job arrivals, queueing, node allocation, job ends and
inference autoscaling. No power is computed here; the engine returns times, and
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
        Of these, the ones processed as SimPy timeouts [-]: every arrival, and a job end only
        while jobs wait in the queue (an end with nobody waiting changes nothing but the free
        node count, which the next event settles arithmetically).
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
    Every arrival is a SimPy timeout. A job end is one only while the queue is not empty:
    with nobody waiting an end just returns nodes, so the ends up to ``now`` are released
    at the start of the next event instead (``running`` is sorted by end time). When a job
    has to wait, a wake-up is scheduled at the earliest running end (and again after each
    end while the queue stays non-empty), so queued jobs start at exactly the same times.
    """
    if on_checkpoint is not None and not callable(on_checkpoint):
        raise TypeError(f"on_checkpoint: expected a function (time_s, starts), got "
                        f"{type(on_checkpoint).__name__}.")
    env = simpy.Environment(initial_time=float(origin_s))
    n_jobs = len(arrival_s)
    if n_jobs and arrival_s[0] < origin_s:
        raise ValueError(f"schedule_jobs: the first arrival ({arrival_s[0]} s) is before "
                         f"origin_s = {origin_s} s; start the simulation at or before it.")
    starts = [np.inf] * n_jobs  # a list: item assignment is cheaper than on an ndarray
    arr = arrival_s.tolist()
    size = nodes.tolist()
    dur = duration_s.tolist()
    queue: deque[int] = deque()
    # (end, nodes, job, seq) sorted: the backfill pass walks equal ends by size
    running: list[tuple[float, int, int, int]] = []
    seq = itertools.count()  # launch order: the order of equal ends' SimPy events
    free = int(capacity_nodes)
    min_size = min(size) if size else 1  # no job fits in fewer free nodes: skip the pass
    min_dur = min(dur) if dur else 0.0  # no job ends sooner
    # the last backfill pass's reservation for the head job: still valid until a job ends
    bf_valid, bf_shadow, bf_extra = False, np.inf, 0
    wake_at = np.inf  # earliest pending wake-up (only while the queue is not empty)
    # no job can start before this time (set by a backfill pass that could start nothing: the
    # ends before the head's shadow time change nothing, so they need no wake-up of their own)
    hold_until = -np.inf
    wakeups = 0
    clock = None  # during a wake-up: the exact end time it stands for [s]
    timeout = env.timeout
    insort = bisect.insort

    def release(now: float) -> None:
        """Return the nodes of every job ended by ``now``, one by one in SimPy's order."""
        nonlocal free, bf_valid
        while running and running[0][0] <= now:
            k, end = 0, running[0][0]
            if len(running) > 1 and running[1][0] == end:
                # equal ends go in launch order (``seq``), as their timeouts would have
                ties = itertools.takewhile(lambda r: r[0] == end, running)
                k = min(enumerate(ties), key=lambda kr: kr[1][3])[0]
            free += running.pop(k)[1]
            bf_valid = False
            if queue:
                # each end gets its own pass, as an end event would: with backfilling,
                # one pass per end and one pass after several can start different jobs
                dispatch()

    def arm(now: float) -> None:
        """Make sure a wake-up is pending at the earliest running end (queue not empty)."""
        nonlocal wake_at
        if running:
            end = running[0][0]
            if hold_until > end:
                end = hold_until  # a running end (the head's shadow time)
            if end < wake_at and end < horizon_s:
                wake_at = end
                # the end time rides along as the value: now + (end - now) may miss it by an
                # ulp, and the original end event's clock read exactly ``end``
                timeout(end - now, end).callbacks.append(on_wake)

    def on_wake(event) -> None:
        nonlocal wake_at, wakeups, clock
        wakeups += 1
        now = clock = event.value
        if now >= wake_at:
            wake_at = np.inf
        release(now)
        if queue:
            arm(now)
        clock = None

    def launch(job: int) -> None:
        nonlocal free
        now = env.now if clock is None else clock
        starts[job] = now
        free -= size[job]
        insort(running, (now + dur[job], size[job], job, next(seq)))

    def dispatch() -> None:
        nonlocal bf_valid, bf_shadow, bf_extra, hold_until
        bf_valid = False
        hold_until = -np.inf
        while queue and size[queue[0]] <= free:
            launch(queue.popleft())
        if not (backfill and len(queue) > 1 and free >= min_size):
            return
        head = size[queue[0]]
        avail, shadow = free, np.inf
        for end, n, _, _ in running:
            avail += n
            if avail >= head:
                shadow = end
                break
        extra = avail - head  # nodes still spare at the shadow time
        now = env.now if clock is None else clock
        if extra < min_size and now + min_dur > shadow:
            # no queued job fits the spare nodes or ends before the shadow time: the pass
            # would start nothing (common while the facility is saturated), and neither would
            # a pass at any end before the shadow time (same head, shadow and spare nodes; no
            # job short enough), nor a newcomer: nothing can start before the shadow time
            bf_valid, bf_shadow, bf_extra, hold_until = True, shadow, extra, shadow
            return
        for job in list(itertools.islice(queue, 1, BACKFILL_DEPTH + 1)):
            if free < min_size:
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
        if running and running[0][0] <= now:
            release(now)
        if not queue and n <= free:
            # fast path (most arrivals below saturation): launch() inlined
            starts[job] = now
            free -= n
            insort(running, (now + dur[job], n, job, next(seq)))
        else:
            if bf_valid and queue:
                # nothing ended since the last backfill pass, so only the newcomer can change
                # the outcome, and the head's reservation still holds (every job started
                # since then ends before it or uses only spare nodes)
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
            if queue:
                arm(now)
        job += 1
        if job < n_jobs:
            timeout(arr[job] - now, job).callbacks.append(on_arrival)

    if n_jobs:
        timeout(arr[0] - env.now, 0).callbacks.append(on_arrival)
    if on_checkpoint is not None:
        for at_s in checkpoints_s:
            if 0.0 <= at_s < horizon_s:
                timeout(at_s - env.now, at_s).callbacks.append(
                    lambda event: on_checkpoint(event.value, starts))
    env.run(until=horizon_s)
    start_s = np.asarray(starts, dtype=np.float64)
    arrivals = int(np.count_nonzero(arrival_s < horizon_s))
    events = arrivals + int(np.count_nonzero(start_s + duration_s < horizon_s))
    return Schedule(start_s=start_s, events=events, simpy_events=arrivals + wakeups)


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
