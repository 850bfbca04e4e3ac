"""The interconnection queue in scenario files (issue 30): ``[[facility]]`` tables.

The scenario's grid results must be what ``grid`` gives when called directly with the same
mapping bus -> series; one ``[facility]`` table must give the outputs it gave before the
queue existed (recorded from the code before the change); bad queues fail with messages.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from scenarios.loader import ScenarioError, load_scenario

DATA = Path(__file__).parent / "data"

HEAD = """name = "two-sites"
[queue]
seed = 7
"""
SITE = """
[[facility]]
bus = {bus}
preset = "{preset}"
start = 2025-03-03T00:00:00Z
end = 2025-03-04T00:00:00Z
freq = "1h"
{extra}"""
GRID = """
[grid]
network = "case33bw"
studies = ["timeseries", "hosting_capacity", "load_loss"]
[grid.limits]
vm_min_pu = 0.9       # case33bw is at 0.913 pu without any facility
[outputs]
report = false
"""


def write(tmp_path: Path, text: str, name: str = "q.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def two_sites(extra0: str = "", extra1: str = "", grid: str = GRID, head: str = HEAD,
              preset1: str = "inference-1mw") -> str:
    return (head + SITE.format(bus=17, extra=extra0, preset="inference-1mw")
            + SITE.format(bus=32, extra=extra1, preset=preset1) + grid)


# ------------------------------------------------------------------------- schema errors


def test_duplicate_buses_named(tmp_path):
    one = SITE.format(bus=17, extra="", preset="inference-1mw")
    text = HEAD + one + one + GRID
    with pytest.raises(ScenarioError, match=r"facility\[1\]\.bus = 17 repeats "
                       r"facility\[0\]\.bus; a queue has one facility per bus"):
        load_scenario(write(tmp_path, text))


def test_facility_without_bus(tmp_path):
    text = two_sites().replace("bus = 32\n", "", 1)
    with pytest.raises(ScenarioError, match=r"line 1[0-9]: field 'facility\.1\.bus' is "
                       r"required but missing; add it to the file\. facility\.1\.bus: index "
                       r"of the bus this facility connects to"):
        load_scenario(write(tmp_path, text))


def test_table_and_array_both(tmp_path):
    text = ('name = "x"\n[facility]\npreset = "inference-1mw"\nstart = 2025-03-03T00:00:00Z\n'
            'end = 2025-03-04T00:00:00Z\n' + SITE.format(bus=17, extra="", preset="inference-1mw")
            + GRID)
    with pytest.raises(ScenarioError, match=r"both a \[facility\] table and \[\[facility\]\] "
                       r"tables; write one \[facility\] table .* or only \[\[facility\]\] tables"):
        load_scenario(write(tmp_path, text))


def test_grid_bus_with_a_queue_and_no_bus_with_one(tmp_path):
    with pytest.raises(ScenarioError, match=r"grid\.bus = 5 with \[\[facility\]\] tables: each "
                       r"queued facility names its own bus .* remove bus from \[grid\]"):
        load_scenario(write(tmp_path, two_sites(grid=GRID.replace("[grid]\n",
                                                                  "[grid]\nbus = 5\n"))))


def test_unknown_key_in_a_queued_facility_names_the_nearest(tmp_path):
    with pytest.raises(ScenarioError, match=r"unknown key 'facility\.0\.buss'\. Did you mean "
                       r"'bus'\?"):
        load_scenario(write(tmp_path, two_sites(extra0="buss = 3\n")))


def test_bad_order_and_trip(tmp_path):
    head = HEAD + "order = [0, 0]\n"
    with pytest.raises(ScenarioError, match=r"queue\.order = \[0, 0\]: expected each position "
                       r"0\.\.1 of the 2 \[\[facility\]\] tables once"):
        load_scenario(write(tmp_path, two_sites(head=head)))
    head = HEAD + "trip = [5]\n"
    with pytest.raises(ScenarioError, match=r"queue\.trip = \[5\]: expected some of the "
                       r"queue's buses \[17, 32\] \(\[5\] not in it\)"):
        load_scenario(write(tmp_path, two_sites(head=head)))


def test_different_horizons_refused(tmp_path):
    text = two_sites(extra1="").replace("end = 2025-03-04T00:00:00Z", "end = 2025-03-05T00:00:00Z"
                                        ).replace("end = 2025-03-05T00:00:00Z",
                                                  "end = 2025-03-04T00:00:00Z", 1)
    with pytest.raises(ScenarioError, match=r"facility\[1\]\.end = 2025-03-05T00:00:00\+00:00 "
                       r"is not the same instant as facility\[0\]\.end"):
        load_scenario(write(tmp_path, text))


def test_studies_without_a_queue_refused_together_before_computing(tmp_path):
    from scenarios.runner import run_scenario

    grid = GRID.replace('studies = ["timeseries", "hosting_capacity", "load_loss"]',
                        'studies = ["timeseries", "short_circuit", "flexible_interconnection"]')
    grid += "\n[microgrid]\nimport_limit_kw = 100.0\n"
    path = write(tmp_path, two_sites(grid=grid))
    out = tmp_path / "out"
    with pytest.raises(InputError) as info:
        run_scenario(path, out, progress=False)
    text = str(info.value)
    # flexible_interconnection takes a queue (tests/scenarios/test_queue_flexible_scenario.py)
    assert "grid.studies has 'short_circuit', which do not take an " \
           "interconnection queue ([[facility]] tables) yet" in text
    assert "[microgrid] does not take an interconnection queue" in text
    assert not (out / "summary.json").exists()


def test_queued_bus_not_in_the_network(tmp_path):
    from scenarios.runner import run_scenario

    path = write(tmp_path, two_sites().replace("bus = 32", "bus = 99"))
    with pytest.raises(InputError, match=r"facility\[1\]\.bus = 99: network 'case33bw' has no "
                       r"such bus; its 33 buses are numbered 0 to 32"):
        run_scenario(path, tmp_path / "out", progress=False)


# --------------------------------------------------------------------------- seeds


def test_seeds_independent_in_phase_and_own():
    from scenarios.queue_study import sections
    from scenarios.schema import Scenario

    def scenario(seeds: str, own: dict | None = None):
        site = {"preset": "inference-1mw", "start": "2025-03-03T00:00:00Z",
                "end": "2025-03-04T00:00:00Z", "freq": "1h"}
        return Scenario.model_validate({"name": "s", "queue": {"seed": 7, "seeds": seeds},
                                        "facility": [{**site, "bus": 3},
                                                     {**site, "bus": 4, **(own or {})}]})

    # independent: numpy's SeedSequence([seed, position]), first 32-bit word
    expected = [int(np.random.SeedSequence([7, k]).generate_state(1, np.uint32)[0])
                for k in (0, 1)]
    assert [s.seed for _, s in sections(scenario("independent"))] == expected
    assert expected[0] != expected[1]
    assert [s.seed for _, s in sections(scenario("in_phase"))] == [7, 7]
    assert [s.seed for _, s in sections(scenario("in_phase", {"seed": 3}))] == [7, 3]


# --------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def two_site_run(tmp_path_factory):
    pytest.importorskip("grid")
    from scenarios.runner import run_scenario

    folder = tmp_path_factory.mktemp("queue")
    # facility 0 on its site's clock (inference demand follows the local hour), facility 1
    # a small colocation site (its jobs follow its seed; inference-1mw's do not)
    path = write(folder, two_sites(extra0='timezone = "America/Chicago"\n',
                                   extra1="overrides = { nodes = 200 }\n",
                                   preset1="colocation-10mw"))
    return run_scenario(path, folder / "out", progress=False)


def test_two_facilities_grid_result_equals_grid_called_directly(two_site_run):
    import grid

    LIMITS = grid.Limits(vm_min_pu=0.9)
    out = two_site_run.out_dir
    series = pd.read_parquet(out / "facility_queue.parquet")
    assert list(series.columns) == ["bus 17", "bus 32"]
    mapping = {int(c.split()[1]): (series[c] / 1000.0).rename("facility_mw") for c in series}
    net = grid.networks.load("case33bw")
    direct = grid.timeseries(net, mapping, limits=LIMITS)
    ran = two_site_run.grid["timeseries"]
    pd.testing.assert_frame_equal(ran.vm_pu, direct.vm_pu, check_exact=True)
    pd.testing.assert_frame_equal(ran.line_loading_percent, direct.line_loading_percent,
                                  check_exact=True)
    written = pd.read_parquet(out / "grid_timeseries_vm_pu.parquet")
    np.testing.assert_array_equal(written.to_numpy(), direct.vm_pu.to_numpy())
    queue = grid.hosting_capacity(net, queue=mapping, limits=LIMITS)
    pd.testing.assert_frame_equal(two_site_run.grid["hosting_capacity"].allocation,
                                  queue.allocation)
    rows = two_site_run.summary["queue"]["facilities"]
    assert [r["bus"] for r in rows] == [17, 32]
    for r in rows:
        a = queue.allocation.loc[r["bus"]]
        assert r["allocated_mw"] == a["allocated_mw"] and r["granted"] == a["granted"]
        assert r["requested_mw"] == pytest.approx(float(mapping[r["bus"]].max()), rel=1e-12)
        assert r["min_vm_pu_at_bus"] == float(direct.vm_pu[r["bus"]].min())


def test_two_facilities_series_energy_and_seeds(two_site_run, facility_fn):
    out = two_site_run.out_dir
    series = pd.read_parquet(out / "facility_queue.parquet")
    total = pd.read_parquet(out / "facility.parquet")["facility_kw"]
    # the total is the sum per step: energy of the queue = the facilities' energies
    np.testing.assert_allclose(total.to_numpy(), series.sum(axis=1).to_numpy(), rtol=1e-12)
    # facility 0 is the preset run on its site's clock, facility 1 on its own seed
    seed0, seed1 = (int(np.random.SeedSequence([7, k]).generate_state(1, np.uint32)[0])
                    for k in (0, 1))
    chicago = pd.Timestamp("2025-03-02T18:00", tz="America/Chicago")
    alone0 = facility_fn("inference-1mw", start=chicago, end=chicago + pd.Timedelta("1D"),
                         freq="1h", seed=seed0, progress=False)
    np.testing.assert_array_equal(series["bus 17"].to_numpy(),
                                  alone0.power["facility_kw"].to_numpy())
    start = pd.Timestamp("2025-03-03", tz="UTC")
    alone1 = facility_fn("colocation-10mw", start=start, end=start + pd.Timedelta("1D"),
                         freq="1h", seed=seed1, nodes=200, progress=False)
    np.testing.assert_array_equal(series["bus 32"].to_numpy(),
                                  alone1.power["facility_kw"].to_numpy())
    other = facility_fn("colocation-10mw", start=start, end=start + pd.Timedelta("1D"),
                        freq="1h", seed=seed0, nodes=200, progress=False)
    assert not np.array_equal(other.power["facility_kw"].to_numpy(), series["bus 32"].to_numpy())
    rows = two_site_run.summary["queue"]["facilities"]
    assert [r["seed"] for r in rows] == [seed0, seed1]
    assert [r["timezone"] for r in rows] == ["America/Chicago", "UTC"]


def test_digest_says_the_queue(two_site_run):
    from scenarios.runner import digest

    lines = digest(two_site_run.summary)
    queue = [line for line in lines if line.startswith("queue")]
    rows = two_site_run.summary["queue"]["facilities"]
    granted = sum(r["granted"] for r in rows)
    assert queue[0].startswith(f"queue: 2 facilities, ")
    assert f"{granted} granted in full" in queue[0]
    assert queue[1].startswith("queue common scaling: ")


def test_load_loss_trips_the_queue_at_its_coincident_peak(two_site_run):
    import grid

    series = pd.read_parquet(two_site_run.out_dir / "facility_queue.parquet") / 1000.0
    peak = series.sum(axis=1).idxmax()
    ll = two_site_run.grid["load_loss"]
    assert ll.p_mw == pytest.approx(float(series.loc[peak].sum()), rel=1e-12)
    direct = grid.load_loss(grid.networks.load("case33bw"),
                            p_mw={17: float(series.loc[peak, "bus 17"]),
                                  32: float(series.loc[peak, "bus 32"])})
    pd.testing.assert_series_equal(ll.dv_pu, direct.dv_pu)


# ------------------------------------------------------- one facility: unchanged bits


# the recording predates issue 27: the campus's serving nodes on the ServeGen shape, as then
ONE = {"facility.end": "2025-01-03T00:00:00Z", "facility.freq": "1h",
       "facility.overrides": {"inference_shape": "servegen-m-large"},
       "grid.contingency_hours": 2,
       "grid.studies": ["timeseries", "hosting_capacity", "contingency", "load_loss"],
       "outputs.report": False}


def _hash(path: Path) -> str:
    numbers = pd.read_parquet(path).select_dtypes("number").to_numpy(dtype=np.float64)
    return hashlib.sha256(np.ascontiguousarray(numbers).tobytes()).hexdigest()


@pytest.mark.slow  # reason: a campus on case118 with N-1, ~20 s on the CI machine
def test_one_facility_outputs_unchanged_bit_for_bit(tmp_path):
    pytest.importorskip("grid")
    from scenarios.runner import run_scenario

    before = json.loads((DATA / "one_facility_before_queue.json").read_text())
    result = run_scenario("campus-100mw-interconnection", tmp_path / "out", overrides=ONE,
                          progress=False)
    assert sorted(result.files) == before["files"]
    for name, digest in before["hashes"].items():
        assert _hash(tmp_path / "out" / name) == digest, name
    assert result.summary["facility"]["energy_kwh"] == before["energy_kwh"]
    for study, values in before["grid"].items():
        for key, value in values.items():
            assert result.summary["grid"][study][key] == value, (study, key)
    assert "queue" not in result.summary


def test_facilities_on_dask_equal_the_serial_run(tmp_path):
    pytest.importorskip("distributed")
    from scenarios.queue_study import run_facilities

    scenario = load_scenario(write(tmp_path, two_sites(extra1='timezone = "Asia/Tokyo"\n')))
    serial = run_facilities(scenario)
    on_dask = run_facilities(scenario, workers=2)
    assert list(on_dask) == list(serial) == [17, 32]
    for bus in serial:
        pd.testing.assert_frame_equal(on_dask[bus].power, serial[bus].power, check_exact=True)
    with pytest.raises(InputError, match=r"workers = -1: expected a whole number >= 0"):
        run_facilities(scenario, workers=-1)


def test_sweep_over_queue_order_and_a_facility_field(tmp_path):
    pytest.importorskip("grid")
    import grid

    from scenarios.sweep_queue import run_queue_sweep as run_sweep

    # facility 1 a small colocation site: its series follows its seed
    path = write(tmp_path, two_sites(extra1="overrides = { nodes = 200 }\n",
                                     preset1="colocation-10mw"))
    result = run_sweep(path, tmp_path / "sweep", workers=0, progress=False,
                       overrides={"grid.studies": ["hosting_capacity"]},
                       sets={"queue.order": ["0,1", "1/0"],
                             "facility[1].utilization": [0.3, 0.6]})
    table = result.comparison
    assert len(result.cases) == 4 and len(table) == 8
    net = grid.networks.load("case33bw")
    series = {}
    for case in result.cases:
        folder = tmp_path / "sweep" / "cases" / case.case_id
        frame = pd.read_parquet(folder / "facility_queue.parquet")
        order = [int(p) for p in json.loads(table.loc[table.case_id == case.case_id,
                                                      "queue.order"].iloc[0]).replace("/", ",")
                 .split(",")]
        buses = [(17, 32)[p] for p in order]
        assert list(frame.columns) == [f"bus {b}" for b in buses]
        mapping = {b: (frame[f"bus {b}"] / 1000.0).rename("facility_mw") for b in buses}
        direct = grid.hosting_capacity(net, queue=mapping, limits=grid.Limits(vm_min_pu=0.9))
        mine = table[table.case_id == case.case_id]
        assert mine["bus"].tolist() == buses
        np.testing.assert_array_equal(mine["allocated_mw"].to_numpy(),
                                      direct.allocation["allocated_mw"].to_numpy())
        series.setdefault(case.overrides["facility.1.utilization"], []).append(frame["bus 32"])
    # the seeds follow the position in the file, not the queue order: reordering moves no bit
    for same in series.values():
        pd.testing.assert_series_equal(same[0], same[1], check_exact=True)
    assert (tmp_path / "sweep" / "report.html").read_text().count("<img") == 4


def test_sweep_of_a_queue_refuses_replicates_and_other_fields(tmp_path):
    from scenarios.sweep_queue import run_queue_sweep as run_sweep

    path = write(tmp_path, two_sites())
    with pytest.raises(InputError, match=r"replicates = 3: a queue sweep runs each case once"):
        run_sweep(path, tmp_path / "a", workers=0, progress=False, replicates=3,
                  sets={"queue.seed": [1, 2]})
    with pytest.raises(InputError, match=r"sweep over 'grid.power_factor': a queue sweep "
                       r"varies a queued facility's fields"):
        run_sweep(path, tmp_path / "b", workers=0, progress=False,
                  sets={"grid.power_factor": [0.95, 0.99]})
    from scenarios.sweep import run_sweep as facility_sweep

    with pytest.raises(InputError, match=r"is an interconnection queue \(\[\[facility\]\] "
                       r"tables\): its cases are whole runs"):
        facility_sweep(path, tmp_path / "c", workers=0, progress=False)
