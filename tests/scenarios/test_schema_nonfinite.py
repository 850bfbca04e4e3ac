"""Scenario files: a TOML ``nan``/``inf`` anywhere is an error naming the key and its line
(issue 14, class 4)."""

from __future__ import annotations

import pytest

from scenarios.loader import ScenarioError, load_scenario

BASE = """\
name = "t"
[facility]
preset = "colocation-10mw"
utilization = {utilization}
start = 2024-01-01T00:00:00Z
end = 2024-01-02T00:00:00Z
[microgrid]
import_limit_kw = 5000.0
[microgrid.costs]
pv_usd_per_kwp_year = {pv_cost}
battery_usd_per_kwh_year = 30.0
battery_usd_per_kw_year = 20.0
generator_usd_per_kw_year = 60.0
import_usd_per_kwh = 0.08
[sweep]
values = {{ "facility.utilization" = [0.3, {sweep}] }}
"""


def write(tmp_path, **values):
    fields = {"utilization": "0.4", "pv_cost": "110.0", "sweep": "0.5", **values}
    path = tmp_path / "s.toml"
    path.write_text(BASE.format(**fields))
    return path


def test_the_base_file_loads(tmp_path):
    assert load_scenario(write(tmp_path)).facility.utilization == 0.4


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"utilization": "nan"}, r"line 4: field 'facility\.utilization' = nan: utilization is NaN or infinite"),
        ({"pv_cost": "inf"}, r"line 9: in table \[microgrid\.costs\]: costs\.pv_usd_per_kwp_year is NaN or infinite"),
        ({"sweep": "-inf"}, r"line 16: .*facility\.utilization\[1\] is NaN or infinite"),
    ],
)
def test_non_finite_toml_values_name_key_and_line(tmp_path, values, match):
    with pytest.raises(ScenarioError, match=match):
        load_scenario(write(tmp_path, **values))
