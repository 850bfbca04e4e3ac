"""report.html opens in a real headless chromium: no console errors, every image loads."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scenarios.runner import run_scenario

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]
# counts images that did not decode; appended to a COPY of the report (the report has no script)
CHECK = ("<script>window.addEventListener('load',function(){var m=document.images,b=0;"
         "for(var i=0;i<m.length;i++){if(!(m[i].complete&&m[i].naturalWidth>0))b++;}"
         "var d=document.createElement('div');d.id='aiload-check';"
         "d.textContent='IMAGES '+m.length+' BROKEN '+b;document.body.appendChild(d);});</script>")


def chromium(args: list[str], tmp: Path, profile: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / profile}", *args],
        capture_output=True, text=True, timeout=120,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_chromium(tmp_path, facility_fn):
    out = tmp_path / "out"
    run_scenario("colocation-10mw", out, progress=False,
                 overrides={"facility.end": "2025-01-03T00:00:00Z"})
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page and "http://" not in page.split("<h2>Provenance")[0]
    assert not re.search(r'src="(?!data:image/png;base64,)', page), "every image must be embedded"

    checked = tmp_path / "checked.html"
    checked.write_text(page.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    dom = chromium(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
                    "--dump-dom", checked.as_uri()], tmp_path, "p1")
    found = re.search(r"IMAGES (\d+) BROKEN (\d+)", dom.stdout)
    assert found, f"chromium did not run the check; stderr:\n{dom.stderr[-2000:]}"
    assert int(found.group(1)) == page.count("<img ") >= 2
    assert int(found.group(2)) == 0
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], f"console messages: {console}"

    shot = tmp_path / "report.png"
    chromium(["--window-size=1280,4000", f"--screenshot={shot}", (out / "report.html").as_uri()],
             tmp_path, "p2")
    assert shot.is_file() and shot.stat().st_size > 10_000
    print(f"report screenshot: {shot}")
    artefacts = os.environ.get("AILOAD_TEST_ARTIFACTS")
    if artefacts:
        Path(artefacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artefacts) / "report.png")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_browser_check_catches_a_broken_page(tmp_path):
    # the same check on a page with a broken image and a script error must report both
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><img src="data:image/png;base64,AAAA">'
                   "<script>missing_function();</script>" + CHECK + "</body></html>")
    dom = chromium(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
                    "--dump-dom", bad.as_uri()], tmp_path, "p3")
    assert "IMAGES 1 BROKEN 1" in dom.stdout
    assert any("CONSOLE" in line and "missing_function" in line for line in dom.stderr.splitlines())
