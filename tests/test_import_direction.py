"""Dependencies point one way: scenarios -> grid, microgrid -> aiload.

Checked statically on every module's import statements (so a lazy import inside a function
counts too), and dynamically by importing each package in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "aiload": {"grid", "microgrid", "scenarios"},
    "grid": {"microgrid", "scenarios"},
    "microgrid": {"grid", "scenarios"},
    "scenarios": set(),
}


def imported_top_levels(path: Path) -> set[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add((alias.name.split(".")[0], node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add((node.module.split(".")[0], node.lineno))
        elif isinstance(node, ast.Call):
            # importlib.import_module("grid.x") with a literal name
            func = node.func
            name = getattr(func, "attr", getattr(func, "id", ""))
            if name == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                value = node.args[0].value
                if isinstance(value, str):
                    found.add((value.split(".")[0], node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # dotted module names in registries such as aiload.cli.COMMAND_MODULES
            head = node.value.split(".")[0]
            if "." in node.value and " " not in node.value and head in FORBIDDEN:
                found.add((head, node.lineno))
    return found


def violations(package: str, root: Path = ROOT) -> list[str]:
    bad = []
    for path in sorted((root / package).rglob("*.py")):
        for top, line in imported_top_levels(path):
            if top in FORBIDDEN[package]:
                bad.append(f"{path.relative_to(root)}:{line} imports {top}")
    return bad


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_import_points_the_wrong_way(package):
    assert violations(package) == []


def test_checker_catches_a_wrong_import(tmp_path):
    # the checker itself must be able to fail
    (tmp_path / "aiload").mkdir()
    (tmp_path / "aiload" / "bad.py").write_text("def f():\n    from grid import networks\n")
    assert violations("aiload", tmp_path) == ["aiload/bad.py:2 imports grid"]


@pytest.mark.parametrize("package", ["aiload", "grid", "microgrid"])
def test_importing_a_package_loads_nothing_downstream(package):
    code = (
        f"import sys, {package}\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {forbidden!r})\n"
        "print(','.join(bad))\n"
    ).replace("{forbidden!r}", repr(FORBIDDEN[package]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_public_functions_survive_their_modules_being_imported():
    """``aiload.resample`` / ``aiload.facility`` stay callable whatever was imported first."""
    code = (
        "import aiload.traces, aiload.facility, aiload.resampling\n"
        "import aiload\n"
        "assert callable(aiload.resample), type(aiload.resample)\n"
        "assert callable(aiload.facility), type(aiload.facility)\n"
        "assert callable(aiload.read_trace)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
