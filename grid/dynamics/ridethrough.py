"""The campus's protection rule as data: when its UPS transfers to backup, and when it returns.

A rule is a frozen :class:`RideThrough`. Its voltage-time pairs say "transfer when the bus
voltage stays below ``v_pu`` for longer than ``duration_s``"; its frequency band says the same
for frequency. After a transfer the voltage-sensitive ``share`` of the facility is off the grid
(on UPS, then on its generators); it returns after ``return_delay_s`` of healthy voltage and
ramps back over ``ramp_s``. :class:`RuleState` is the rule applied step by step in a simulation.

Defaults and where they come from
---------------------------------
- Voltage-time pairs ``(0.7, 0.02), (0.8, 0.5), (0.9, 10.0)``: the lower envelope of the ITIC
  (CBEMA) curve's no-interruption region (Information Technology Industry Council, *ITI (CBEMA)
  Curve Application Note*, 2000): IT equipment is expected to ride through 0 V for 20 ms, 70 %
  for 0.5 s and 80 % for 10 s. A UPS set to protect such equipment transfers before its load
  would leave that region. *Assumption*: real campus settings differ and are seldom published;
  set yours.
- ``return_delay_s = inf``: NERC's incident review of the 2024-07-10 Eastern Interconnection
  event (*Incident Review: Considering Simultaneous Voltage-Sensitive Load Reductions*, NERC,
  January 2025) found about 1,500 MW of data-centre load transferred to backup on a 230 kV
  fault sequence and did not return automatically; it came back over hours, by hand.
- ``share = 1.0``: the whole facility is voltage-sensitive (*assumption*; cooling plant on
  its own feed would make it smaller).
- Frequency band 57.8–61.8 Hz, no delay: the bounds outside which NERC PRC-024 lets generators
  in the Eastern Interconnection trip at once (*assumption*: applied to the load for want of a
  load standard; ERCOT's large-electronic-load ride-through rules, NOGRR 282 / NPRR 1308, ask
  loads to stay through excursions and should replace it where they apply).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["RideThrough", "ITIC_VOLTAGE_TIME", "RuleState", "longest_below_s"]

#: ITIC (CBEMA) no-interruption lower envelope as (v_pu, duration_s): below v_pu for longer
#: than duration_s leaves the region (ITI, 2000)
ITIC_VOLTAGE_TIME: tuple[tuple[float, float], ...] = ((0.7, 0.02), (0.8, 0.5), (0.9, 10.0))


@dataclass(frozen=True)
class RideThrough:
    """A facility's protection rule (UPS transfer on voltage or frequency; return and ramp).

    Parameters
    ----------
    voltage_time
        ``(v_pu, duration_s)`` pairs: transfer when the bus voltage stays below ``v_pu`` [pu]
        for longer than ``duration_s`` [s]. Default: ITIC lower envelope (see module notes).
    f_low_hz, f_high_hz
        Transfer when the bus frequency leaves ``[f_low_hz, f_high_hz]`` [Hz] for longer than
        ``f_duration_s`` [s]. ``None`` disables that side.
    share
        Voltage-sensitive share of the facility that transfers [0-1].
    return_delay_s
        Healthy voltage (at or above the highest ``v_pu``) needed before the load returns [s];
        ``math.inf``: it does not return within the simulation (NERC 2025 review).
    ramp_s
        Duration of the linear ramp back to full load once it returns [s]. *Assumption*: 10 s.
    """

    voltage_time: tuple[tuple[float, float], ...] = ITIC_VOLTAGE_TIME
    f_low_hz: float | None = 57.8
    f_high_hz: float | None = 61.8
    f_duration_s: float = 0.0
    share: float = 1.0
    return_delay_s: float = math.inf
    ramp_s: float = 10.0
    name: str = field(default="ITIC envelope, no return (NERC 2025)")

    def __post_init__(self):
        pairs = tuple((float(v), float(d)) for v, d in self.voltage_time)
        object.__setattr__(self, "voltage_time", pairs)
        for v, d in pairs:
            if not (0.0 < v < 1.5) or d < 0 or not math.isfinite(d):
                raise ValueError(f"voltage_time pair ({v}, {d}) is not (v_pu in (0, 1.5), "
                                 f"duration_s >= 0 and finite); e.g. (0.7, 0.02)")
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"share={self.share} is not within [0, 1]")
        if self.return_delay_s < 0 or self.ramp_s < 0 or self.f_duration_s < 0:
            raise ValueError(f"return_delay_s={self.return_delay_s}, ramp_s={self.ramp_s} and "
                             f"f_duration_s={self.f_duration_s} must be >= 0")
        if (self.f_low_hz is not None and self.f_high_hz is not None
                and self.f_low_hz >= self.f_high_hz):
            raise ValueError(f"f_low_hz={self.f_low_hz} must be below f_high_hz={self.f_high_hz}")

    @property
    def v_healthy_pu(self) -> float:
        """Voltage at or above which the bus counts as healthy (the highest ``v_pu``) [pu]."""
        return max((v for v, _ in self.voltage_time), default=0.0)


def longest_below_s(t_s, v, threshold: float) -> float:
    """Longest time ``v`` stays below ``threshold`` on samples at ``t_s`` [s].

    A run of samples below the threshold lasts from its first to its last sample: the
    convention :class:`RuleState` judges a dip by, so a hand count on a recorded trace and the
    rule in the simulation agree.
    """
    longest, start, last = 0.0, None, None
    for tk, vk in zip(t_s, v):
        if vk < threshold:
            if start is None:
                start = tk
            last = tk
            longest = max(longest, last - start)
        else:
            start = None
    return float(longest)


class RuleState:
    """A :class:`RideThrough` rule applied step by step to one facility.

    ``update(t_s, v_pu, f_hz)`` takes the bus voltage and frequency solved at time ``t_s`` (the
    last solved step) and returns the share of the facility on the grid [0-1]. ``log`` records the
    transfers and returns as ``(t_s, what)``.
    """

    def __init__(self, rule: RideThrough | None):
        self.rule = rule
        self.online = 1.0
        self.log: list[tuple[float, str]] = []
        self._below_since = [None] * (len(rule.voltage_time) if rule else 0)
        self._f_out_since = None
        self._transferred_at = None
        self._healthy_since = None
        self._return_at = None

    def update(self, t_s: float, v_pu: float, f_hz: float) -> float:
        rule = self.rule
        if rule is None or rule.share == 0.0:
            return 1.0
        trip = False
        for k, (v, d) in enumerate(rule.voltage_time):
            if v_pu < v:
                if self._below_since[k] is None:
                    self._below_since[k] = t_s
                if t_s - self._below_since[k] > d + 1e-9:
                    trip = True
            else:
                self._below_since[k] = None
        f_out = ((rule.f_low_hz is not None and f_hz < rule.f_low_hz)
                 or (rule.f_high_hz is not None and f_hz > rule.f_high_hz))
        if f_out:
            if self._f_out_since is None:
                self._f_out_since = t_s
            if t_s - self._f_out_since >= rule.f_duration_s - 1e-9:
                trip = True
        else:
            self._f_out_since = None
        if trip and (self._transferred_at is None or self._return_at is not None):
            self._transferred_at = t_s
            self._return_at = None
            self._healthy_since = None
            self.online = 1.0 - rule.share
            self.log.append((t_s, "transfer" if not f_out else "transfer (frequency)"))
            return self.online
        if self._transferred_at is None:
            return self.online
        if self._return_at is None:
            healthy = v_pu >= rule.v_healthy_pu and not f_out
            if not healthy:
                self._healthy_since = None
            elif self._healthy_since is None:
                self._healthy_since = t_s
            if (self._healthy_since is not None
                    and t_s - self._healthy_since >= rule.return_delay_s - 1e-9):
                self._return_at = t_s
                self.log.append((t_s, "return"))
        if self._return_at is not None:
            frac = 1.0 if rule.ramp_s == 0 else (t_s - self._return_at) / rule.ramp_s
            frac = 1.0 if frac >= 1.0 - 1e-9 else frac
            self.online = 1.0 - rule.share * (1.0 - frac)
            if frac >= 1.0:
                self.log.append((t_s, "restored"))
                self._transferred_at = self._return_at = self._healthy_since = None
        return self.online
