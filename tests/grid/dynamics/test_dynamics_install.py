"""The README's install command prepares ANDES, and the getting-started page repeats it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _install_line(path: Path) -> str:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()
             if line.startswith("python3 -m venv .venv")]
    assert len(lines) == 1, f"{path.name}: expected one install command, found {lines}"
    return lines[0]


def test_getting_started_repeats_the_readme_install_command():
    readme = _install_line(ROOT / "README.md")
    assert _install_line(ROOT / "docs" / "getting-started.md") == readme
    steps = [s.strip() for s in readme.split("&&")]
    assert "python -m grid.dynamics prepare" in steps
    # ANDES is prepared after the install and before the first study
    assert steps.index("python -m pip install -e .") < steps.index(
        "python -m grid.dynamics prepare") < next(
        i for i, s in enumerate(steps) if re.match(r"aiload run ", s))


def test_prepare_command_runs():
    """The command of the install line itself (a no-op once the code is cached, as here)."""
    out = subprocess.run([sys.executable, "-m", "grid.dynamics", "prepare"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() in ("ANDES code already prepared", "ANDES code generated")
    bad = subprocess.run([sys.executable, "-m", "grid.dynamics", "run"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert bad.returncode == 2
    assert "usage: python -m grid.dynamics prepare [--force]" in bad.stderr
