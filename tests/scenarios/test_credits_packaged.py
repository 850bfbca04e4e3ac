"""The installed package is whole: the report's data credits ship as package data, and
.ci/check_wheel.py (run on the built wheel by .ci/run) names any package file a wheel lacks."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import scenarios
from scenarios import report

ROOT = Path(__file__).resolve().parents[2]


def _check_wheel():
    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / ".ci" / "check_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_packaged_credits_are_docs_credits():
    packaged = report.CREDITS_PATH
    assert packaged.parent.parent == Path(scenarios.__file__).resolve().parent
    docs = (ROOT / "docs" / "credits.md").read_text(encoding="utf-8")
    assert packaged.read_text(encoding="utf-8") == docs, (
        "scenarios/data/credits.md differs from docs/credits.md: "
        "run `cp docs/credits.md scenarios/data/credits.md`")


def test_wheel_check_names_a_missing_data_file_and_stale_credits(tmp_path):
    check = _check_wheel()
    files = check.source_files(ROOT)
    data = "aiload/facility/data/servegen_mlarge_rate_shape.csv"
    assert data in files and "scenarios/bundled/campus-100mw-microgrid.toml" in files
    assert check.CREDITS in files
    wheel = tmp_path / "aiload-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name in sorted(files - {data}):
            zf.writestr(name, "stale" if name == check.CREDITS else (ROOT / name).read_bytes())
    found = check.problems(wheel, ROOT)
    assert found[0] == f"missing from the wheel: {data}"
    assert "differs from docs/credits.md" in found[1] and len(found) == 2
