"""``[facility.iteration]`` and ``[stabilise]``: sub-second synchronous-job power and what
holds a limit at the point of interconnection (POI).

``[facility.iteration]`` switches on the facility model's iteration cycles, checkpoint
stalls, failures and start/stop ramps (``aiload.facility(..., dynamics=IterationDynamics(...))``;
every key left out keeps the model's default, whose source is in ``docs/stabilisation.md``)::

    [facility.iteration]
    step_time_s = 2.0

``[stabilise]`` runs ``microgrid.stabilise`` on the facility series at its own step
(0.1 s resolves the iteration cycle) against ``microgrid.PoiLimits``::

    [stabilise]
    ramp_up_mw_per_s = 5.0
    ramp_down_mw_per_s = 5.0
    band_amplitude_mw = 1.0
    [stabilise.site_battery]           # microgrid.SiteBattery(**table); also gpu_smoothing,
    usable_fraction = 0.8              # psu_storage (absent: the defaults)

Each table builds its object while the file is validated, so a bad value is reported with
the file, the line and the key.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from aiload.errors import InputError
from scenarios.schema_facility import refuse_non_finite

__all__ = ["IterationSection", "StabiliseSection", "OPTION_NAMES"]

#: the options ``[stabilise] options`` may list, in the table's order
OPTION_NAMES = ("gpu_smoothing", "psu_storage", "site_battery")


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )

    _finite = field_validator("*", mode="before")(refuse_non_finite)


def _build(make, kwargs: dict[str, Any], what: str, name_it: bool = False):
    """``make(**kwargs)`` with an InputError or a TypeError said as the table's error
    (``name_it``: prefixed with ``what``, a sub-table the loader does not name)."""
    try:
        return make(**kwargs)
    except InputError as exc:  # a sub-table is named; the loader names the table itself
        raise ValueError(f"{what}: {exc}" if name_it else str(exc)) from None
    except TypeError as exc:
        import inspect  # noqa: PLC0415

        if "unexpected keyword" not in str(exc):  # a value of the wrong type
            raise ValueError(f"{what}: {exc}; expected numbers where the key's unit says "
                             "so") from None
        allowed = [p for p in inspect.signature(make).parameters if p != "name"]
        raise ValueError(f"{what}: {exc}; the keys are {', '.join(allowed)}") from None


class IterationSection(_Section):
    """Sub-second power of large synchronous training jobs (``aiload.facility.IterationDynamics``):
    iteration cycle, checkpoint stalls, failures and restarts, start and stop ramps. A key
    left out keeps the model's default (its source: docs/stabilisation.md)."""

    step_time_s: float | None = Field(None, description="iteration period [s]; default 2 "
                                      "(assumption, inside the 0.2-3 Hz band of Choukse et "
                                      "al. 2025)")
    compute_share: float | None = Field(None, description="share of the period at the compute "
                                        "level, in (0, 1) [-]; default 0.75 (assumption)")
    comm_ratio: float | None = Field(None, description="power above idle while communicating "
                                     "over that while computing, in [0, 1] [-]; default 0.5 "
                                     "(assumption)")
    transition_s: float | None = Field(None, description="ramp between the two levels [s]; "
                                       "default 0.1 (assumption)")
    checkpoints: bool = Field(True, description="checkpoint stalls every "
                              "checkpoint_interval_s; false: none")
    checkpoint_interval_s: float | None = Field(None, description="time between checkpoints "
                                                "[s]; default 1800 (assumption)")
    checkpoint_s: float | None = Field(None, description="length of a checkpoint stall [s]; "
                                       "default 30 (assumption)")
    checkpoint_ratio: float | None = Field(None, description="power above idle during a stall "
                                           "over the training power above idle [-]; default "
                                           "0.2 (assumption)")
    failures_per_gpu_h: float | None = Field(None, description="unexpected failures per "
                                             "GPU-hour [1/h]; default 1.97e-5 (Llama 3 report: "
                                             "419 in 54 days on 16,384 GPUs)")
    drop_s: float | None = Field(None, description="fall to idle after a failure [s]; default 1")
    restart_s: float | None = Field(None, description="from a failure to the restart [s]; "
                                    "default 180 (assumption)")
    start_ramp_s: float | None = Field(None, description="ramp from idle at a (re)start [s]; "
                                       "default 1 (measured: WattAMeter 0.1 s log)")
    stop_ramp_s: float | None = Field(None, description="ramp to idle at the end [s]; default "
                                      "1 (assumption)")
    min_nodes: int | None = Field(None, description="jobs of at least this many nodes get the "
                                  "dynamics [-]; default 256 (assumption)")
    gpus_per_node: int | None = Field(None, description="GPUs per node; None: the N of the "
                                      "hardware name NxGPU")

    @model_validator(mode="after")
    def _builds(self) -> IterationSection:
        if not self.checkpoints and self.checkpoint_interval_s is not None:
            raise ValueError(f"checkpoints = false with checkpoint_interval_s = "
                             f"{self.checkpoint_interval_s:g}: remove one of them")
        self.to_dynamics()
        return self

    def to_dynamics(self):
        """The ``aiload.facility.IterationDynamics`` of the table."""
        from aiload.facility import IterationDynamics  # noqa: PLC0415

        kwargs = {k: v for k, v in self.model_dump().items()
                  if v is not None and k != "checkpoints"}
        if not self.checkpoints:
            kwargs["checkpoint_interval_s"] = None
        return _build(IterationDynamics, kwargs, "[facility.iteration]")


class StabiliseSection(_Section):
    """What holds the limits at the point of interconnection (``microgrid.stabilise`` with
    ``microgrid.PoiLimits``): GPU power smoothing, rack/PSU storage, a site battery and
    combinations, sized on the facility series at its own step, and the cheapest that meets
    every limit."""

    ramp_up_mw_per_s: float | None = Field(None, ge=0.0, description="largest rise over "
                                           "ramp_window_s [MW/s]; None: no limit")
    ramp_down_mw_per_s: float | None = Field(None, ge=0.0, description="largest fall over "
                                             "ramp_window_s [MW/s]; None: no limit")
    ramp_window_s: float = Field(1.0, gt=0.0, description="window of the ramp [s]; a whole "
                                 "number of facility.freq")
    band_hz: list[float] = Field(default_factory=lambda: [0.1, 20.0], description="critical "
                                 "band [low, high) [Hz]; evaluated up to the Nyquist "
                                 "frequency of the facility step")
    band_amplitude_mw: float | None = Field(None, ge=0.0, description="largest amplitude of "
                                            "the fluctuation in the band [MW]; None: no limit")
    band_energy_share: float | None = Field(None, ge=0.0, le=1.0, description="largest share "
                                            "of the fluctuation energy in the band [-]; None: "
                                            "no limit")
    min_power_kw: float | None = Field(None, ge=0.0, description="lowest power at the POI "
                                       "[kW]; None: no limit")
    options: list[Literal["gpu_smoothing", "psu_storage", "site_battery"]] = Field(
        default_factory=lambda: list(OPTION_NAMES), description="options to size, any of "
        "'gpu_smoothing', 'psu_storage', 'site_battery'")
    combinations: bool = Field(True, description="also GPU smoothing at the ramp limits + "
                               "each storage option")
    gpus: int | None = Field(None, ge=1, description="GPUs the smoothing and PSU storage act "
                             "on [-]; None: the facility's (nodes x GPUs per node)")
    energy_usd_per_kwh: float | None = Field(None, ge=0.0, description="price of burned and "
                                             "lost energy [USD/kWh]; None: the bundled cost "
                                             "set's grid energy")
    gpu_smoothing: dict[str, Any] = Field(default_factory=dict, description="microgrid."
                                          "GpuSmoothing(**table) beside gpus, e.g. floor_pct, "
                                          "hysteresis_s, tmp_w")
    psu_storage: dict[str, Any] = Field(default_factory=dict, description="microgrid."
                                        "PsuStorage(**table) beside gpus, e.g. max_wh_per_gpu")
    site_battery: dict[str, Any] = Field(default_factory=dict, description="microgrid."
                                         "SiteBattery(**table), e.g. usable_fraction, tau_s")

    @field_validator("band_hz")
    @classmethod
    def _band(cls, value: list[float]) -> list[float]:
        if len(value) != 2 or not 0 <= value[0] < value[1]:
            raise ValueError(f"band_hz = {value!r}: expected [low_hz, high_hz] with 0 <= low < "
                             "high, e.g. [0.1, 20.0]")
        return value

    @model_validator(mode="after")
    def _builds(self) -> StabiliseSection:
        limits = self.to_limits()
        if not (limits.ramp_up_mw_per_s is not None or limits.ramp_down_mw_per_s is not None
                or limits.has_band or limits.min_power_kw is not None):
            raise ValueError("no limit given: set at least one of ramp_up_mw_per_s, "
                             "ramp_down_mw_per_s, band_amplitude_mw, band_energy_share, "
                             "min_power_kw (e.g. ramp_up_mw_per_s = 5.0)")
        if not self.options:
            raise ValueError("options = []: expected at least one of "
                             f"{', '.join(OPTION_NAMES)}")
        if len(set(self.options)) != len(self.options):
            raise ValueError(f"options = {self.options}: each option once")
        for key in OPTION_NAMES:
            given = getattr(self, key)
            if given and key not in self.options:
                raise ValueError(f"[stabilise.{key}] is given but options = {self.options} "
                                 f"leaves {key} out; add it to options or remove the table")
            if "gpus" in given or "name" in given:
                raise ValueError(f"[stabilise.{key}]: gpus and name are set by [stabilise] "
                                 "itself; write gpus = ... in [stabilise]")
        self.to_options(gpus=self.gpus or 1)
        return self

    def to_limits(self):
        """The ``microgrid.PoiLimits`` of the table."""
        from microgrid.stabilise import PoiLimits  # noqa: PLC0415

        return _build(PoiLimits, dict(
            ramp_up_mw_per_s=self.ramp_up_mw_per_s, ramp_down_mw_per_s=self.ramp_down_mw_per_s,
            ramp_window_s=self.ramp_window_s, band_hz=tuple(self.band_hz),
            band_amplitude_mw=self.band_amplitude_mw, band_energy_share=self.band_energy_share,
            min_power_kw=self.min_power_kw), "[stabilise]")

    def to_options(self, gpus: int) -> list:
        """The option objects, in :data:`OPTION_NAMES` order, for ``gpus`` GPUs."""
        from microgrid.stabilise import GpuSmoothing, PsuStorage, SiteBattery  # noqa: PLC0415

        make = {"gpu_smoothing": (GpuSmoothing, {"gpus": gpus}),
                "psu_storage": (PsuStorage, {"gpus": gpus}),
                "site_battery": (SiteBattery, {})}
        return [_build(make[k][0], {**make[k][1], **getattr(self, k)}, f"[stabilise.{k}]",
                       name_it=True)
                for k in OPTION_NAMES if k in self.options]
