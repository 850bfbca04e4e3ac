"""The control loop of the replay: at each control period read the limit, engage or release
levers in merit order, start the jobs that may start, step the battery.

Lever rules (all decided at a period start, on the period's largest projected interval):

- *engage* (projection above the limit): each lever the response time allows, in merit
  order, until the projection fits: the battery discharges what is left (up to its power and
  energy); inference throttling takes serving nodes away (each at its capacity at the latency
  target: ``ceil(excess / (gain·(P(c) − P_idle)))`` nodes per pass); the power cap steps down
  to the level a linear estimate asks for (``r_new = r·(1 − max excess/capped power)``, on the
  lever's grid, not below the curve's lowest measured cap); deferral pauses the running
  deferrable jobs of largest power until the excess left *after their checkpoint* is covered,
  and holds new starts of deferrable jobs.
- *release* (projection below the limit by more than the release margin): in reverse merit
  order, paused jobs resume (after their restart), the cap steps up, serving nodes come back,
  the battery recharges — each only as far as the room under the limit, less the margin, allows.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from aiload.facility.engine import BACKFILL_DEPTH
from aiload.facility.replay import PASSES, Replay

__all__ = ["run"]

#: quiet stretches are searched this many periods at a time at first (doubling each time)
SKIP_CHUNK = 64


def _available(rep: Replay, lever: str, t: float) -> bool:
    ev = rep.event
    return ev is not None and t - ev["start_s"] >= rep.flex.response_s(lever) - 1e-9


def _levels(rep: Replay, r: float) -> float:
    """The cap level at or below ``r`` on the lever's grid, not below the lowest cap [-]."""
    step = rep.flex.power_cap.step
    level = math.floor(r / step + 1e-9) * step
    return float(min(1.0, max(rep.r_min, level)))


def _apply_cap(rep: Replay, r_new: float, t: float) -> None:
    rep.r = r_new
    speed = rep.speed(r_new)
    jobs = rep.running(t)
    rep.plans.replan_many(jobs, t, lambda j, p: [[0, t, math.inf, p, speed, r_new, False]])
    rep.running_touched.update(jobs)


def _tighten(rep: Replay, k: int, a: int, b: int, t: float, limit: float) -> float:
    """Engage levers until the projection of steps ``a … b − 1`` fits; returns the battery
    discharge [kW]."""
    ev, bat = rep.event, 0.0
    for lever in rep.order:
        if not _available(rep, lever, t):
            continue
        proj = rep.project(a, b)
        rem = float(proj.max()) - bat - limit
        if rem <= 0:
            break
        if lever == "battery" and rep.battery is not None:
            bat = min(rem, rep.battery.max_discharge_kw(rep.period_s))
            if bat > 0:
                ev["levers"].add(lever)
        elif lever == "inference" and rep.services.items:
            for _ in range(PASSES):
                per_node = rep.gain(a, b) * rep.services.saving_per_node_w()
                cut = max(1, math.ceil(rem / per_node)) if per_node > 0 else 0
                if not cut or not rep.services.set_caps(-cut, a, b):
                    break
                rep.services.rewalk(a, b)
                ev["levers"].add(lever)
                rem = float(rep.project(a, b).max()) - bat - limit
                if rem <= 0:
                    break
        elif lever == "power_cap":
            for _ in range(PASSES):
                if rep.r <= rep.r_min:
                    break
                rep.plans.flush()
                jobs_w = rep.jobs_w_ol[a:b] + rep.plans.d_job_w[a:b]
                need_w = (rep.project(a, b) - bat - limit) / rep.gain(a, b)
                share = float(np.max(need_w / np.maximum(jobs_w, 1.0)))
                r_new = _levels(rep, rep.r * (1.0 - share))
                if r_new >= rep.r:
                    r_new = _levels(rep, rep.r - rep.flex.power_cap.step)
                if r_new >= rep.r:
                    break
                _apply_cap(rep, r_new, t)
                ev["levers"].add(lever)
                rem = float(rep.project(a, b).max()) - bat - limit
                if rem <= 0:
                    break
        elif lever == "deferral":
            if _pause(rep, a, b, t, limit + bat):
                ev["levers"].add(lever)
    if bat > 0:
        # a cap step later in the order may cut more than was left: keep the battery's energy
        bat = min(bat, max(0.0, float(rep.project(a, b).max()) - limit))
    return bat


def _pause(rep: Replay, a: int, b: int, t: float, limit: float) -> bool:
    """Pause deferrable jobs until the projection after their checkpoint fits ``limit``."""
    lever = rep.flex.deferral
    shift = int(math.ceil(lever.checkpoint_s / rep.h - 1e-9))
    a2, b2 = min(rep.n - 1, a + shift), min(rep.n, b + shift)
    excess = rep.project(a2, b2) - limit
    g = rep.gain(a2, b2)
    order = rep.order
    if "power_cap" in order and order.index("power_cap") < order.index("deferral") \
            and _available(rep, "power_cap", t) and rep.r > rep.r_min:
        # what deeper caps could still take off: deferral only for the rest
        rep.plans.flush()
        jobs_w = rep.jobs_w_ol[a2:b2] + rep.plans.d_job_w[a2:b2]
        excess = excess - g * (1.0 - rep.r_min / rep.r) * jobs_w
    need = float(excess.max())
    if need <= 0:
        return False  # the checkpoints under way and the caps are enough
    need_w = need / g
    cands = [j for j in rep.running(t) if rep.deferrable[j]]
    cands.sort(key=lambda j: -rep.plans.nodes[j] * rep._mean_w(j))
    got = 0.0
    for j in cands:
        mean_w = rep._mean_w(j) * rep.r
        rep.plans.pause(j, t, lever.checkpoint_s, mean_w)
        rep.running_touched.discard(j)
        rep.paused[j] = t + lever.checkpoint_s
        # what the pause saves once the checkpoint is written, until it resumes
        rep.plans._box(rep.pause_saved_w, t + lever.checkpoint_s, rep.plans.horizon_s,
                       rep.plans.nodes[j] * (mean_w - rep.idle_w))
        rep.pause_w[j] = rep.plans.nodes[j] * (mean_w - rep.idle_w)
        got += rep.plans.nodes[j] * (mean_w - rep.idle_w)
        if got >= need_w:
            break
    rep.hold = lever.hold_submissions
    return bool(cands)


def _free_nodes(rep: Replay, a: int, b: int) -> float:
    occ = rep.jobs_busy_ol[a:b] + rep.plans.d_busy[a:b]
    return rep.capacity - float(occ.max())


def _release(rep: Replay, k: int, a: int, b: int, t: float, limit: float) -> float:
    """Release levers in reverse merit order as far as the room allows; returns the battery
    power (negative: charging) [kW]."""
    margin = rep.flex.release_margin * limit if math.isfinite(limit) else 0.0
    bat = 0.0
    for lever in reversed(rep.order):
        if lever == "deferral" and rep.paused:
            shift = int(math.ceil(rep.flex.deferral.restart_s / rep.h - 1e-9))
            b2 = min(rep.n, b + shift)
            g = rep.gain(a, b2)
            room_w = (limit - margin - float(rep.project(a, b2).max())) / g
            free = _free_nodes(rep, a, b2)
            for j in sorted(rep.paused, key=rep.paused.get):
                if rep.paused[j] > t:
                    continue  # still writing its checkpoint
                est = rep.plans.nodes[j] * (rep._mean_w(j) * rep.r - rep.idle_w)
                if est > room_w or rep.plans.nodes[j] > free + 1e-9:
                    break
                rep.start_job(j, t, t, after_s=rep.flex.deferral.restart_s)
                del rep.paused[j]
                rep.plans._box(rep.pause_saved_w, t, rep.plans.horizon_s, -rep.pause_w.pop(j))
                room_w -= est
                free -= rep.plans.nodes[j]
            if not rep.paused:
                rep.hold = False
        elif lever == "power_cap" and rep.r < 1.0:
            for _ in range(PASSES):
                rep.plans.flush()
                jobs_w = rep.jobs_w_ol[a:b] + rep.plans.d_job_w[a:b]
                room_w = (limit - margin - rep.project(a, b)) / rep.gain(a, b)
                share = float(np.min(room_w / np.maximum(jobs_w, 1.0)))
                r_new = 1.0 if not math.isfinite(limit) else _levels(rep, rep.r * (1.0 + share))
                if r_new <= rep.r:
                    break
                before = rep.r
                _apply_cap(rep, r_new, t)
                peak = float(rep.project(a, b).max())
                if peak > limit:
                    _apply_cap(rep, before, t)  # the estimate was too bold: keep the cap
                    break
                if peak > limit - margin or r_new >= 1.0:
                    break
        elif lever == "inference" and not rep.services.neutral:
            g = rep.gain(a, b)
            per_node = g * rep.services.saving_per_node_w()
            room = limit - margin - float(rep.project(a, b).max())
            more = rep.services.items[0]["nodes"] if not math.isfinite(limit) else (
                int(room // per_node) if per_node > 0 else 0)
            if more > 0:
                rep.services.set_caps(more, a, b)
                rep.services.rewalk(a, b)
        elif lever == "battery" and rep.battery is not None:
            room = limit - margin - float(rep.project(a, b).max())
            if room > 0:
                bat = -min(room, rep.battery.max_charge_kw(rep.period_s))
    return bat


def _start_waiting(rep: Replay, a: int, b: int, t: float, limit: float) -> None:
    """Start waiting jobs, first fit in open-loop order among the first of the queue, while
    nodes are free and (under a limit) the room allows."""
    if not rep.waiting:
        return
    smallest = rep.smallest_job_nodes
    free = _free_nodes(rep, a, b)
    if free < smallest - 1e-9:
        return  # nothing fits: the common case while a backlog clears
    margin = rep.flex.release_margin * limit if math.isfinite(limit) else 0.0
    room_w = math.inf
    if math.isfinite(limit):
        room_w = (limit - margin - float(rep.project(a, b).max())) / rep.gain(a, b)
    started = set()
    # as the engine's backfill, only the first jobs of a long queue are looked at
    for j in itertools.islice(rep.waiting, BACKFILL_DEPTH + 1):
        if free < smallest - 1e-9 or room_w <= 0:
            break
        nodes = rep.plans.nodes[j]
        if (rep.hold and rep.deferrable[j]) or nodes > free + 1e-9:
            continue
        est = nodes * (rep._mean_w(j) * rep.r - rep.idle_w)
        if est > room_w:
            continue
        rep.start_job(j, t, t)
        started.add(j)
        free -= nodes
        room_w -= est
    if started:
        # the started jobs are among the first of the queue: rebuild only its head
        head = [rep.waiting.popleft() for _ in range(min(len(rep.waiting), BACKFILL_DEPTH + 1))]
        rep.waiting.extendleft(reversed([j for j in head if j not in started]))


def _starts(rep: Replay, a: int, b: int, t: float) -> None:
    """Open-loop starts of steps ``a … b − 1``: kept, capped, or sent to wait."""
    t1 = b * rep.h
    plans = rep.plans
    crowded = float(plans.d_busy[a:b].max()) > 1e-9
    while rep.ptr < len(rep.start_sorted) and rep.start_sorted[rep.ptr] < t1:
        j = int(rep.by_start[rep.ptr])
        rep.ptr += 1
        if plans.touched(j):
            continue
        if (rep.hold and rep.deferrable[j]) or (crowded and _free_nodes(rep, a, b) < -1e-6):
            plans.wait(j, t)
            rep.waiting.append(j)
            crowded = float(plans.d_busy[a:b].max()) > 1e-9
            continue
        if rep.r < 1.0:
            s = float(plans.ol_start[j])
            plans.replan(j, t, [[0, s, math.inf, 0.0, rep.speed(rep.r), rep.r, False]])
            rep.running_touched.add(j)


def _quiet_until(rep: Replay, k: int, chunk: int) -> int:
    """First period from ``k`` where anything may happen (the projection above the limit or
    nodes taken beyond the open loop's); ``k + chunk`` (or the end) when none [-]."""
    k_end = min(rep.n_periods, k + chunk)
    a, b = k * rep.m, min(rep.n, k_end * rep.m)
    proj = rep.project(a, b)
    busy = rep.plans.d_busy[a:b]
    pad = (k_end - k) * rep.m - (b - a)
    if pad:
        proj = np.append(proj, np.full(pad, -np.inf))
        busy = np.append(busy, np.zeros(pad))
    peak = proj.reshape(-1, rep.m).max(axis=1)
    crowded = busy.reshape(-1, rep.m).max(axis=1) > 1e-9
    hit = np.flatnonzero((peak > rep.limit.values[k:k_end]) | crowded)
    return k + int(hit[0]) if len(hit) else k_end


def _quiet(rep: Replay) -> bool:
    return (rep.event is None and not rep.paused and not rep.waiting and rep.r >= 1.0
            and rep.services.neutral and rep.limit.func is None
            and (rep.battery is None or "battery" not in rep.order
                 or rep.battery.energy_kwh >= rep.battery.hi_kwh - 1e-9))


def run(rep: Replay) -> None:
    """Walk every control period of ``rep`` (mutates it)."""
    k, chunk = 0, SKIP_CHUNK
    rep.hold = False
    while k < rep.n_periods:
        if _quiet(rep):
            nxt = _quiet_until(rep, k, chunk)
            if nxt > k:
                rep.limits[k:nxt] = rep.limit.values[k:nxt]
                t_next = nxt * rep.m * rep.h
                rep.ptr = max(rep.ptr, int(np.searchsorted(rep.start_sorted, t_next, "left")))
                chunk = chunk * 2 if nxt == k + chunk else SKIP_CHUNK
                if rep.limit.func is None and rep.lag_s == 0:
                    # nothing reads the last period's means (no callable) nor a lag state
                    k = nxt
                    continue
                rep.advance(k * rep.m, min(rep.n, nxt * rep.m))
                k = nxt
                continue
        chunk = SKIP_CHUNK
        _period(rep, k)
        rep.advance(k * rep.m, min(rep.n, (k + 1) * rep.m))
        k += 1


def _period(rep: Replay, k: int) -> None:
    rep.k = k
    a, b = k * rep.m, min(rep.n, (k + 1) * rep.m)
    t = a * rep.h
    limit = rep.limit.at(k, lambda: rep.state(k))
    rep.calls += rep.limit.func is not None
    rep.limits[k] = limit
    _starts(rep, a, b, t)
    rep.services.begin()
    if not rep.services.neutral:
        rep.services.walk(a, b)
    # without a limit nothing needs the projection (every lever is released)
    excess = float(rep.project(a, b).max()) - limit if math.isfinite(limit) else -math.inf
    if excess > 0 and rep.event is None:
        rep.event = {"k0": k, "start_s": t, "levers": set()}
    if excess > 0:
        bat = _tighten(rep, k, a, b, t, limit)
    else:
        bat = _release(rep, k, a, b, t, limit)
    if rep.event is not None and "deferral" in rep.order and _available(rep, "deferral", t):
        # look ahead: a pause acts only after its checkpoint, so pause now for an excess
        # the earlier levers will not cover then
        ahead = bat if bat > 0 else 0.0
        if rep.battery is not None and "battery" in rep.order and \
                rep.order.index("battery") < rep.order.index("deferral"):
            ahead = rep.battery.max_discharge_kw(rep.period_s)
        later = limit
        if rep.limit.values is not None:
            # a scheduled limit is known ahead: the one in force when the checkpoint is done
            shift = int(math.ceil(rep.flex.deferral.checkpoint_s / rep.period_s - 1e-9))
            later = float(rep.limit.values[min(rep.n_periods - 1, rep.k + shift)])
        if math.isfinite(later) and _pause(rep, a, b, t, later + ahead):
            rep.event["levers"].add("deferral")
    _start_waiting(rep, a, b, t, limit)
    if rep.battery is not None and bat:
        rep.battery.step(bat, (b - a) * rep.h)
    rep.battery_kw[k] = bat
    ev = rep.event
    if ev is not None:
        ev["soc_min"] = min(ev.get("soc_min", math.inf),
                            rep.battery.soc if rep.battery is not None else math.inf)
        # an event lasts while the open-loop demand is above the limit or a lever acts
        # (with the release margin as hysteresis, so that an event does not end and start
        # again, each time with its response time, while the demand hovers at the limit)
        if excess <= 0 and bat <= 0 and not rep.paused and rep.r >= 1.0 \
                and rep.services.neutral and (
                    not math.isfinite(limit) or float(rep.fac_ol[a:b].max())
                    <= limit * (1.0 - rep.flex.release_margin)):
            ev["k1"] = k
            rep.events.append(ev)
            rep.event = None
