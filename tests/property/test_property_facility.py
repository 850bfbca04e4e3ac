"""Facility specifications and runs under random and hostile values: an InputError naming the
field, or a spec/run that passes its invariants (every field finite; the meter power is IT
plus losses plus cooling; busy nodes within the fleet; power never below the idle floor)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st
from property_strategies import assert_clear_error, fast, hostile_values

import aiload
from aiload.errors import AiloadError
from aiload.facility.spec import FleetSpec, InferenceSpec, JobStreamSpec, OverheadSpec

BASE = {
    FleetSpec: {"nodes": 16},
    JobStreamSpec: {"name": "s", "workloads": {"llama2-70b-lora": 1.0}, "node_counts": {2: 1.0},
                    "utilization": 0.5},
    InferenceSpec: {"nodes": 4, "utilization": 0.5},
    OverheadSpec: {},
}
NUMERIC = {
    cls: [f.name for f in dataclasses.fields(cls)
          if f.type in ("float", "float | None", "int", "int | None")]
    for cls in BASE
}


@fast(150)
@given(data=st.data(), cls=st.sampled_from(list(BASE)))
def test_any_value_in_a_numeric_field_is_refused_by_name_or_kept_finite(data, cls):
    name = data.draw(st.sampled_from(NUMERIC[cls]), label="field")
    value = data.draw(hostile_values, label="value")
    kwargs = dict(BASE[cls])
    if cls is JobStreamSpec and name in ("rate_per_h",):
        kwargs.pop("utilization")  # exactly one of utilization / rate_per_h / arrivals
    kwargs[name] = value
    try:
        spec = cls(**kwargs)
    except AiloadError as err:
        assert_clear_error(err)
        assert name in str(err), str(err)
        event("refused")
        return
    event("accepted")
    got = getattr(spec, name)
    assert got is None or (not isinstance(got, bool) and math.isfinite(float(got)))


@fast(6)
@given(
    utilization=st.floats(0.05, 1.0),
    inference_nodes=st.integers(0, 6),
    pue=st.floats(1.0, 2.0),
    idle_w=st.floats(0.0, 1500.0),
    seed=st.integers(0, 1000),
)
def test_small_runs_pass_their_invariants(utilization, inference_nodes, pue, idle_w, seed):
    fleet = FleetSpec(nodes=16, idle_w=idle_w)
    stream = JobStreamSpec(**{**BASE[JobStreamSpec], "utilization": utilization})
    inference = (InferenceSpec(nodes=inference_nodes, utilization=0.5),) if inference_nodes else ()
    spec = aiload.facility.FacilitySpec(fleet=fleet, streams=(stream,), inference=inference,
                                        overheads=OverheadSpec(pue=pue))
    try:
        load = aiload.facility(spec, start="2025-01-06 00:00+00:00", end="6h", freq="5min",
                               seed=seed, progress=False)
    except AiloadError as err:  # e.g. a pool whose always-on replicas exceed its demand
        assert_clear_error(err)
        event("refused")
        return
    event("simulated")
    p = load.power
    assert len(p) == 72 and np.isfinite(p.to_numpy(dtype=float)).all()
    np.testing.assert_allclose(p["facility_kw"], p["it_kw"] + p["losses_kw"] + p["cooling_kw"],
                               rtol=1e-9, atol=1e-9)
    assert (p["busy_nodes"] >= -1e-9).all() and (p["busy_nodes"] <= 16 + 1e-9).all()
    # every node draws at least its idle power; cooling and losses are not negative
    assert (p["it_kw"] >= 16 * idle_w / 1000 * (1 - 1e-9) - 1e-9).all()
    assert (p["losses_kw"] >= 0).all() and (p["cooling_kw"] >= 0).all()
