"""The scenario loader under random and hostile values for its keys (as ``--set`` gives them):
a ScenarioError naming the key, or a Scenario whose every number is finite and whose facility
specification builds."""

from __future__ import annotations

import math

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from property_strategies import assert_clear_error, fast, hostile_values

from scenarios.loader import ScenarioError, load_scenario

FILE = """\
name = "p"
[facility]
start = 2025-03-03T00:00:00Z
end = 2025-03-04T00:00:00Z
freq = "15min"
[facility.fleet]
nodes = 64
nameplate_w = 3520.0
[[facility.streams]]
name = "ft"
workloads = { "llama2-70b-lora" = 1.0 }
node_counts = { 2 = 0.5, 4 = 0.5 }
utilization = 0.5
[[facility.inference]]
nodes = 8
utilization = 0.4
[facility.overheads]
pue = 1.25
[microgrid]
import_limit_kw = 500.0
[microgrid.costs]
pv_usd_per_kwp_year = 110.0
battery_usd_per_kwh_year = 30.0
battery_usd_per_kw_year = 20.0
generator_usd_per_kw_year = 60.0
import_usd_per_kwh = 0.08
"""

KEYS = [
    "facility.fleet.nodes", "facility.fleet.idle_w", "facility.fleet.nameplate_w",
    "facility.streams.0.utilization", "facility.streams.0.peak_hour",
    "facility.streams.0.duration_s", "facility.inference.0.utilization",
    "facility.inference.0.capacity_per_s", "facility.overheads.pue",
    "facility.overheads.loss_a", "facility.overheads.cop_slope_per_c", "facility.seed",
    "facility.replicates", "microgrid.import_limit_kw", "microgrid.costs.import_usd_per_kwh",
]


def _numbers(value):
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _numbers(item)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("property_scenario") / "p.toml"
    p.write_text(FILE)
    return p


def test_the_file_loads(path):
    assert load_scenario(path).facility.fleet.nodes == 64


@fast(120)
@given(key=st.sampled_from(KEYS), value=hostile_values)
def test_any_value_for_a_key_is_refused_by_name_or_finite(path, key, value):
    try:
        scenario = load_scenario(path, overrides={key: value})
    except ScenarioError as err:
        assert_clear_error(err)
        assert key.split(".")[-1] in str(err), str(err)
        event("refused")
        return
    event("loaded")
    numbers = list(_numbers(scenario.model_dump()))
    assert all(math.isfinite(x) for x in numbers)
