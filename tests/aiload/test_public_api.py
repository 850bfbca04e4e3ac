"""The public API as the docs use it: top-level names after a bare ``import aiload``.

Each check runs in a fresh interpreter: what ``aiload.facility`` is depends on what was imported
before (it once was the function after ``import aiload`` and the package after
``import aiload.facility``), so the import order is part of what is tested.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "docs" / "getting-started.md", ROOT / "docs" / "facility.md"]
FACILITY_NAMES = ["facility", "read_facility", "FacilityLoad", "FacilitySpec", "FleetSpec",
                  "JobStreamSpec", "InferenceSpec", "OverheadSpec"]


def _run(code: str, cwd: Path) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                         timeout=600)
    assert out.returncode == 0, f"failed:\n{code}\n--- stderr ---\n{out.stderr[-3000:]}"
    return out.stdout


def test_top_level_names_are_the_facility_package_names(tmp_path):
    code = (
        "import aiload, aiload.facility.spec as spec, aiload.facility.io as io\n"
        f"for name in {FACILITY_NAMES!r}:\n"
        "    assert name in aiload.__all__, name\n"
        "assert aiload.read_facility is io.read_facility\n"
        "assert aiload.FacilityLoad is io.FacilityLoad\n"
        "for name in ('FacilitySpec', 'FleetSpec', 'JobStreamSpec', 'InferenceSpec',"
        " 'OverheadSpec'):\n"
        "    assert getattr(aiload, name) is getattr(spec, name), name\n"
        "    assert getattr(aiload.facility, name) is getattr(spec, name), name\n"
        "print(sorted(set(aiload.__all__) - set(dir(aiload))))\n"
    )
    assert _run(code, tmp_path).strip() == "[]"  # every __all__ name is listed by dir()


@pytest.mark.parametrize("first", ["import aiload", "import aiload.facility\nimport aiload",
                                   "import aiload.facility.model\nimport aiload"])
def test_aiload_facility_is_callable_and_holds_its_names_whatever_was_imported_first(
        first, tmp_path):
    code = (
        f"{first}\n"
        "load = aiload.facility('inference-1mw', start='2025-01-06 00:00+00:00', end='1h',"
        " freq='15min', progress=False)\n"
        "load.to_parquet('f.parquet')\n"
        "a = aiload.facility.read_facility('f.parquet')\n"
        "b = aiload.read_facility('f.parquet')\n"
        "assert a.power.equals(load.power) and b.power.equals(load.power)\n"
        "assert aiload.facility.FleetSpec is aiload.FleetSpec\n"
        "import inspect\n"
        "print(len(load.power), list(inspect.signature(aiload.facility).parameters)[:2])\n"
    )
    assert _run(code, tmp_path).split("\n")[0] == "4 ['spec_or_preset', 'start']"


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def test_the_docs_facility_snippets_run_after_a_bare_import(tmp_path):
    """The README's and docs/facility.md's opening snippets, run as written (one interpreter,
    in order: the second facility.md block uses ``aiload`` imported by the first)."""
    blocks = [b for b in _python_blocks(ROOT / "README.md") if "aiload.facility(" in b]
    blocks += [b for b in _python_blocks(ROOT / "docs" / "facility.md")[:2]]
    assert len(blocks) == 3
    assert "aiload.read_facility(" in blocks[1] and "aiload.FleetSpec(" in blocks[2]
    code = "\n".join(blocks) + (
        "\nassert again.power.equals(aiload.facility('colocation-10mw', start='2025-01-06 "
        "00:00+00:00', end='7D', freq='1min', seed=0, utilization=0.8, progress=False).power)"
        "\nprint(len(load.power), len(again.power))\n")
    assert _run(code, tmp_path).split()[-2:] == ["1440", "10080"]  # 1 day and 7 days at 1 min


def test_every_aiload_name_the_docs_mention_exists():
    """``aiload.x`` / ``aiload.x.y`` in the README and the facility docs resolve from the package
    (attributes, or submodules where the docs name a module)."""
    import aiload

    missing = []
    for path in DOCS:
        for ref in sorted(set(re.findall(r"\baiload(?:\.[A-Za-z_]\w*)+",
                                         path.read_text(encoding="utf-8")))):
            obj, parts = aiload, ref.split(".")[1:]
            for i, part in enumerate(parts):
                try:
                    obj = getattr(obj, part)
                except AttributeError:
                    try:
                        obj = importlib.import_module(".".join(["aiload", *parts[:i + 1]]))
                    except ImportError:
                        # a file name such as facility.parquet after "aiload." is not API
                        if part not in ("parquet", "json", "md", "toml", "py"):
                            missing.append(f"{path.name}: {ref}")
                        break
    assert not missing, missing
