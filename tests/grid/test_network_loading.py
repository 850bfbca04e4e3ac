"""Network files are data: a pandapower JSON file cannot make aiload import a module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandapower as pp
import pandapower.networks as pn
import pytest

from aiload.errors import InputError
from grid import networks

ROOT = Path(__file__).resolve().parents[2]

# a module whose import leaves a trace: the file named in $AILOAD_TEST_TRACE
_EVIL = textwrap.dedent("""
    import os
    from pathlib import Path
    Path(os.environ["AILOAD_TEST_TRACE"]).write_text("imported")
    def run(*args):
        pass
    class Thing:
        def __init__(self, *args, **kwargs):
            pass
""")


def _crafted(tmp_path: Path, where: str) -> Path:
    """cigre_mv saved by pandapower, with an object of module ``evil_mod`` put ``where``."""
    document = json.loads(pp.to_json(pn.create_cigre_network_mv()))
    evil = {"_module": "evil_mod", "_class": "function", "_object": "run"}
    if where == "net":
        document["_object"]["evil"] = {"_module": "evil_mod", "_class": "Thing", "_object": "{}"}
    else:
        # inside a table: a cell of the bus table, itself a JSON document held in a string
        bus = json.loads(document["_object"]["bus"]["_object"])
        bus["data"][0][0] = evil
        document["_object"]["bus"]["_object"] = json.dumps(bus)
    path = tmp_path / f"crafted-{where}.json"
    path.write_text(json.dumps(document))
    return path


def _load_in_child(tmp_path: Path, path: Path, loader: str) -> tuple[str, bool, bool]:
    """Load ``path`` in a fresh interpreter; returns (outcome, module imported, trace left)."""
    (tmp_path / "evil_mod.py").write_text(_EVIL)
    trace = tmp_path / "trace.txt"
    code = textwrap.dedent(f"""
        import sys
        try:
            if {loader!r} == "aiload":
                from grid import networks
                networks.load({str(path)!r})
            else:
                import pandapower
                pandapower.from_json({str(path)!r})
            print("loaded")
        except Exception as exc:
            print(type(exc).__name__ + ": " + str(exc))
        print("evil_mod" in sys.modules)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
           "AILOAD_TEST_TRACE": str(trace)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    lines = out.stdout.strip().splitlines()
    assert len(lines) >= 2, out.stderr
    outcome, imported = lines[-2], lines[-1] == "True"
    found = trace.exists()
    trace.unlink(missing_ok=True)
    return outcome, imported, found


@pytest.mark.parametrize("where", ["net", "table_cell"])
def test_crafted_network_file_imports_nothing(tmp_path, where):
    path = _crafted(tmp_path, where)
    # the file is a real threat: pandapower's own loader imports the module it names
    _, imported, traced = _load_in_child(tmp_path, path, "pandapower")
    assert imported and traced
    outcome, imported, traced = _load_in_child(tmp_path, path, "aiload")
    cls = "Thing" if where == "net" else "function"
    assert outcome.startswith(f"InputError: network file {str(path)!r} names the object "
                              f"{cls!r} of module 'evil_mod'"), outcome
    assert "may only hold objects of pandapower, pandas, numpy" in outcome
    assert not imported and not traced


@pytest.mark.parametrize("module", ["os", "this", "builtins", "pandas_extra", "subprocess"])
def test_objects_outside_the_allowed_packages_are_refused(tmp_path, module):
    document = json.loads(pp.to_json(pn.case33bw()))
    document["_object"]["x"] = {"_module": module, "_class": "system", "_object": "id"}
    path = tmp_path / "n.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=rf"names the object 'system' of module '{module}'"):
        networks.load(path)


def test_a_saved_network_loads_as_pandapower_loads_it(tmp_path):
    net = pn.create_cigre_network_mv(with_der="pv_wind")
    path = tmp_path / "cigre.json"
    pp.to_json(net, str(path))
    ours, theirs = networks.load(path), pp.from_json(str(path))
    for table in ("bus", "line", "trafo", "load", "sgen", "switch", "ext_grid"):
        assert ours[table].equals(theirs[table]), table
    pp.runpp(ours)
    pp.runpp(net)
    np.testing.assert_allclose(ours.res_bus.vm_pu.to_numpy(), net.res_bus.vm_pu.to_numpy(),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("text, message", [
    ("not json at all", "cannot be read as JSON"),
    ('{"a": 1}', "is JSON but not a pandapower network"),
])
def test_files_that_are_not_networks(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        networks.load(path)


@pytest.mark.parametrize("module,cls,why", [
    # an allowed module, but the decoder would fetch a callable by name from it
    ("pandapower.toolbox", "function", "fetch a callable"),
    ("pandapower", "function", "fetch a callable"),
    # an allowed module, a name that is no class of it
    ("pandapower", "runpp", "is not a class"),
    ("pandas", "read_pickle", "is not a class"),
    ("numpy", "__builtins__", "not a plain public name"),
    ("pandapower.auxiliary", "os.system", "not a plain public name"),
])
def test_the_class_is_checked_too(tmp_path, module, cls, why):
    # issue 26: the check read only `_module`; `_class` decides what pandapower fetches
    document = json.loads(pp.to_json(pn.case33bw()))
    document["_object"]["x"] = {"_module": module, "_class": cls, "_object": "id"}
    path = tmp_path / "n.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=why):
        networks.load(path)


def test_every_class_a_real_network_file_names_passes(tmp_path):
    # the classes pandapower itself writes (net, DataFrames, a controller) are classes of
    # their modules: the check lets each through
    import pandapower.control as control

    net = pn.create_cigre_network_mv(with_der="pv_wind")
    control.ConstControl(net, element="load", variable="p_mw", element_index=[0],
                         profile_name=["x"], data_source=None)
    path = tmp_path / "n.json"
    pp.to_json(net, str(path))
    document = json.loads(path.read_text())
    pairs = set(networks._objects(document))
    assert pairs and all(networks._class_problem(m, c) is None for m, c in pairs), pairs
    assert len(networks.load(path).controller) == 1
