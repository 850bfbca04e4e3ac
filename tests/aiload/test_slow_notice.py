"""Without lightsim2grid or numba the results are the same but slower: say so once, on stderr."""

from __future__ import annotations

import sys

import pandapower.networks as pn

from aiload import _notice
from aiload.facility import _compiled
from grid import engines


def test_missing_numba_is_named_once_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(_notice, "_said", set())
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba -> ImportError
    assert _compiled.numba_loops.__wrapped__() is None
    assert _compiled.numba_loops.__wrapped__() is None
    err = capsys.readouterr().err
    assert err.count("aiload: numba is not installed") == 1
    assert "runs on numpy" in err and "pip install numba" in err


def test_missing_lightsim2grid_is_named_once_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(_notice, "_said", set())
    monkeypatch.setitem(sys.modules, "lightsim2grid", None)
    net = pn.case9()
    assert engines._fast_reason(net) == "lightsim2grid is not installed (pip install lightsim2grid)"
    engines._fast_reason(net)
    err = capsys.readouterr().err
    assert err.count("aiload: lightsim2grid is not installed") == 1
    assert "pandapower.runpp" in err


def test_nothing_is_said_when_both_are_installed(monkeypatch, capsys):
    monkeypatch.setattr(_notice, "_said", set())
    assert engines._fast_reason(pn.case9()) is None
    assert capsys.readouterr().err == ""
