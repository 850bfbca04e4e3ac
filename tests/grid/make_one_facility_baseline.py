"""Record one-facility results of the grid studies as the code computed them before the
interconnection queue (issue 30), so that tests/grid/test_queue_same_bits.py can check that
one facility still gives the same bits.

Run from the repository root, on the commit before the queue change (3f20445):
``python tests/grid/make_one_facility_baseline.py`` -> tests/grid/data/one_facility_baseline.npz
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).parent / "data" / "one_facility_baseline.npz"


def cases():
    """The inputs, shared with the test (same function, same numbers)."""
    rng = np.random.default_rng(30)
    idx = pd.date_range("2024-07-01", periods=24, freq="h", tz="America/Chicago")
    shape = 0.6 + 0.4 * rng.random(24)
    background = pd.Series(0.8 + 0.3 * rng.random(24), idx)
    return idx, shape, background


def record() -> dict[str, np.ndarray]:
    import grid

    idx, shape, background = cases()
    out: dict[str, np.ndarray] = {}
    cigre = grid.networks.load("cigre_mv")
    case118 = grid.networks.load("case118")
    for engine in ("auto", "newton", "runpp"):
        res = grid.timeseries(cigre, pd.Series(4.0 * shape, idx), bus=5, background=background,
                              engine=engine)
        for name in ("vm_pu", "line_loading_percent", "trafo_loading_percent"):
            out[f"ts_cigre_{engine}_{name}"] = getattr(res, name).to_numpy()
        out[f"ts_cigre_{engine}_ext_grid_p_mw"] = res.ext_grid_p_mw.to_numpy()
    res = grid.timeseries(case118, pd.Series(1e5 * shape, idx, name="facility_kw"), bus=49)
    out["ts_118_vm_pu"] = res.vm_pu.to_numpy()
    out["ts_118_line_loading_percent"] = res.line_loading_percent.to_numpy()
    out["ts_118_trafo_loading_percent"] = res.trafo_loading_percent.to_numpy()
    out["ts_118_ext_grid_p_mw"] = res.ext_grid_p_mw.to_numpy()
    limits = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)
    hc = grid.hosting_capacity(case118, bus=49, limits=limits, power_factor=0.95)
    out["hc_118"] = np.array([hc.p_mw, hc.value, hc.limit, hc.nose_p_mw])
    hc = grid.hosting_capacity(cigre, bus=5, background=background * 0.6)
    out["hc_cigre_bg"] = np.array([hc.p_mw, hc.value, hc.limit, hc.nose_p_mw,
                                   float(idx.get_loc(hc.time))])
    table = grid.contingency(cigre, pd.Series(4.0 * shape, idx), bus=5, n_peak=4)
    out["n1_cigre"] = table[["converged_steps", "min_vm_pu", "max_vm_pu",
                             "max_line_loading_percent", "max_trafo_loading_percent",
                             "nose_mw"]].to_numpy(dtype=float)
    table = grid.contingency(case118, pd.Series(80.0 * shape, idx), bus=49, n_peak=3,
                             outages="trafos")
    out["n1_118"] = table[["converged_steps", "min_vm_pu", "max_vm_pu",
                           "max_line_loading_percent", "nose_mw"]].to_numpy(dtype=float)
    ev = grid.load_loss(cigre, bus=5, p_mw=5.0)
    out["ll_cigre"] = np.c_[ev.vm_pre_pu, ev.vm_post_pu, ev.sensitivity_pu_per_mw]
    ev = grid.load_loss(case118, bus=49, p_mw=60.0)
    out["ll_118"] = np.c_[ev.vm_pre_pu, ev.vm_post_pu, ev.sensitivity_pu_per_mw]
    return out


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    np.savez_compressed(OUT, **record())
    print(f"wrote {OUT}")
