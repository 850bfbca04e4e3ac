"""microgrid.size(progress=): the phases of the solve as short lines (aiload run's progress
lines of the sizing stage, issue 26 item 5)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import microgrid as mg
from aiload.errors import InputError
from microgrid.decompose import PROGRESS_EVERY, block_steps
from microgrid.sizing import prepare_inputs

SCALE = 100_000.0 / 3166.0  # Hawk's peak in these 3 days -> a 100 MW peak [-]


@pytest.fixture(scope="module")
def problem(hawk_3d_kw):
    """Three measured Hawk days repeated 8 times (2,304 steps of 15 min), decomposable."""
    values = np.tile(hawk_3d_kw.to_numpy() * SCALE, 8)
    load = pd.Series(values, index=pd.date_range("2025-06-01", periods=len(values),
                                                 freq="15min", tz="UTC"))
    kwargs = dict(pv_availability=mg.pv_availability(index=load.index),
                  costs=mg.costs("atb2024-moderate", generator="gas_engine"),
                  generator=mg.technology("gas_engine").generator(),
                  import_limit_kw=70_000.0, pv_area_ha=100.0)
    return load, kwargs


def test_decomposition_reports_its_blocks_and_every_fifth_round(problem):
    load, kwargs = problem
    lines: list[str] = []
    s = mg.size(load, **kwargs, method="decompose", progress=lines.append)
    data, _ = prepare_inputs(load, **{k: v for k, v in kwargs.items()},
                             battery=mg.Battery())
    assert lines[0] == f"decomposition on {block_steps(data)}-step blocks (certified gap 0.0001)"
    rounds = int(re.search(r"in (\d+) rounds", s.method_reason).group(1))
    assert rounds > PROGRESS_EVERY  # so that some round lines are due
    shown = [int(re.match(r"decomposition round (\d+), ", line).group(1)) for line in lines[1:]]
    # the round that certifies stops before its line; every earlier fifth round is said
    assert shown == list(range(PROGRESS_EVERY, rounds, PROGRESS_EVERY))


def test_exact_lp_says_why(problem):
    load, kwargs = problem
    lines: list[str] = []
    mg.size(load.iloc[:96], **{**kwargs, "pv_availability": kwargs["pv_availability"].iloc[:96]},
            method="exact", progress=lines.append)
    assert lines == ["exact LP, 96 steps (HiGHS): method='exact' was asked for"]


def test_progress_must_be_a_function(problem):
    load, kwargs = problem
    with pytest.raises(InputError, match=r"size: progress must be a function of one str "
                                         r"\(or None\), got True\."):
        mg.size(load, **kwargs, progress=True)
