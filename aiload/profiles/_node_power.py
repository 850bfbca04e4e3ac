"""Node idle power and the layers from component power to the rack input, from measurements.

Used by :mod:`aiload.profiles.build`; the results are bundled in ``data/idle.json`` and
``data/node_boundary.json`` and read by :func:`aiload.profiles.idle_power_w` and
:func:`aiload.profiles.node_boundary`. The derivations (``docs/facility.md``, "Boundaries"):

- **4xH100 idle** (GPU + CPU component boundary, as the NLR data): the WattAMeter example
  log of one NLR Kestrel node holds both components idle only at its start. The four GPUs
  stay idle for ≈ 5 s; the two CPU packages for ≈ 0.6 s, then step from ≈ 140 W to ≈ 220 W
  as the job's processes start (the GPUs still idle; the old 521 W figure was that state).
  Idle = median of the GPU sum over its idle run + mean of the CPU sum over its idle run
  (RAPL power is ΔE/Δt, which alternates with the read jitter: the mean keeps the energy).
- **Cross-check**: the NLR whole-facility statistics are, per node, ``P = P_idle + u·(P_busy −
  P_idle)`` at the component boundary; two utilisations of one facility give ``P_idle``.
- **Rest of node** (memory, NICs, board, pumps; outside GPU + CPU): Harvard FASRC IPMI
  snapshot, 4-GPU nodes ``holygpu8a*``: ``Sys Power − CPU Power − GPU Board Power`` against
  ``CPU Power + GPU Board Power``, Theil–Sen line (readings of one node are not taken at the
  same instant, so a robust fit).
- **PSU / enclosure conversion**: the same snapshot, enclosures of four such nodes:
  ``Σ Chassis Power / Σ (Σ node Sys Power) − 1``.
- **Network**: MLPerf Training v4.0 SMC ``sw_0.txt``, the submitter's interconnect power
  estimate of its 64-node (512-GPU) InfiniBand NDR fabric, as a fraction of the nodes'
  nameplate (a documented fraction for hardware without such data).
- **Storage**: no data; an assumed fraction of the node nameplate (:data:`STORAGE_FRACTION`).
"""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from aiload.errors import InputError
from aiload.traces import read_trace

__all__ = ["wattameter_idle", "facility_implied_idle", "settled_level", "harvard_rest_of_node",
           "mlperf_network", "node_boundaries", "STORAGE_FRACTION",
           "SMC_NODE_NAMEPLATE_W"]

_WATT = Path("wattameter-example-logs")
_FACILITY = Path("nlr-whole-facility-statistics")
_HARVARD = Path("harvard-fasrc-ipmi-snapshot/2025-05-29.tar.gz")
_SMC = Path("mlperf-training-v4.0-smc-power/smc-ac-power/results")
_SW = {64: _SMC / "64xSMC-H100-SXM-80GB/gpt3/power/result_5848-240517221859825376616_2/sw_0.txt",
       8: _SMC / "8xSMC-H100-SXM-80GB/llama2_70b_lora/power/result_5742-240517053836692164828_10/sw_0.txt"}
#: the NLR facilities: nodes and the GPU count per node [-]
_FACILITY_NODES = {"colocation_10mw": 2840, "inference_1mw": 283}
#: storage IT as a fraction of the node nameplate: an ASSUMPTION (no data in shared/data)
STORAGE_FRACTION = 0.02
#: nameplate of one SMC node (8 x H100-SXM, the DGX H100 system maximum) [W]
SMC_NODE_NAMEPLATE_W = 10200.0
_HARVARD_CITE = ("Harvard FAS Research Computing, hpc_sustainability_dataset (MIT), "
                 "ipmi/2025-05-29.tar.gz, commit a2b6ff8f.")
_SMC_CITE = ("MLCommons, MLPerf Training v4.0 results, submitter Sustainable Metal Cloud "
             "(Apache-2.0), smc-ac-power/results/*/power/*/sw_0.txt.")


def _leading_run(values: np.ndarray, limit: float) -> int:
    """Length of the leading run of ``values`` at or below ``limit``."""
    above = np.flatnonzero(values > limit)
    return int(above[0]) if above.size else len(values)


def wattameter_idle(data: Path) -> dict:
    """Idle power of one 4xH100 node at the GPU + CPU boundary [W], with its derivation."""
    folder = Path(data) / _WATT
    trace = read_trace([folder / "nvml_wattameter.log", folder / "rapl_wattameter.log"])
    power = trace.power_w
    gpu = power[[c for c in power.columns if c.startswith("gpu")]].sum(axis=1).to_numpy(np.float64)
    cpu = power[[c for c in power.columns if c.startswith("cpu")]].sum(axis=1).to_numpy(np.float64)
    step_s = float(trace.meta.extra.get("grid_step_s", 0.1))
    # idle runs: GPU sum within 1 % of its first interval; CPU sum within 15 % of the median
    # of its first five (the RAPL values alternate by ±15 % with the read jitter)
    n_gpu = _leading_run(gpu, 1.01 * gpu[0])
    n_cpu = _leading_run(cpu, 1.15 * float(np.median(cpu[:5])))
    if n_gpu < 10 or n_cpu < 3:
        raise InputError(f"{folder}: expected an idle start (>= 1 s GPU, >= 0.3 s CPU), found "
                         f"{n_gpu * step_s:.1f} s and {n_cpu * step_s:.1f} s.")
    gpu_w, cpu_w = float(np.median(gpu[:n_gpu])), float(cpu[:n_cpu].mean())
    both = (gpu + cpu)[:min(n_gpu, n_cpu)]
    return dict(
        power_w=gpu_w + cpu_w, series=both, step_s=step_s, gpu_idle_w=gpu_w, cpu_idle_w=cpu_w,
        gpu_idle_window_s=n_gpu * step_s, cpu_idle_window_s=n_cpu * step_s,
        old_figure_w=float(np.median((gpu + cpu)[:60])))


def facility_implied_idle(data: Path) -> dict:
    """``P_idle`` implied by the NLR facility statistics, one solve per facility [W per node].

    Mean power per node is ``P_idle + u·(P_busy − P_idle)`` (idle nodes at idle, busy ones at
    a mean busy level): the two given utilisations give two equations in two unknowns.
    Solved with the achieved ``util_mean`` and with the target ``avg_utilization``.
    """
    out = {}
    for name, nodes in _FACILITY_NODES.items():
        table = pd.read_csv(Path(data) / _FACILITY / f"{name}.csv")
        if len(table) != 2:
            raise InputError(f"{name}.csv: expected the two given utilisations, found {len(table)} rows.")
        per_node_w = table["mean_mw"].to_numpy(float) * 1e6 / nodes
        solves = {}
        for column in ("util_mean", "avg_utilization"):
            u = table[column].to_numpy(float)
            busy_minus_idle = (per_node_w[1] - per_node_w[0]) / (u[1] - u[0])
            idle = per_node_w[0] - u[0] * busy_minus_idle
            solves[column] = dict(idle_w=float(idle), busy_w=float(idle + busy_minus_idle))
        out[name] = dict(utilizations=table["avg_utilization"].tolist(),
                         mean_w_per_node=per_node_w.tolist(), **solves)
    return out


def settled_level(total: pd.Series, step_w: float = 100.0) -> tuple[float, int]:
    """Median of the readings after the last step down larger than ``step_w`` [W], and their
    count: the level a node settles at once a job's processes have ended."""
    values = total.to_numpy(np.float64)
    drops = np.flatnonzero(np.diff(values) < -step_w)
    first = int(drops[-1]) + 1 if drops.size else 0
    return float(np.median(values[first:])), len(values) - first


def _ipmi_frame(path: Path) -> pd.DataFrame:
    """Power sensors [W] of every node file in the Harvard IPMI snapshot, one row per node."""
    rows = []
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            node = re.sub(r"-\d{4}-\d{2}-\d{2}\.txt$", "", Path(member.name).name)
            row = {"node": node}
            for line in io.TextIOWrapper(tar.extractfile(member), encoding="utf-8"):
                parts = [p.strip() for p in line.split("|")]
                if len(parts) >= 2 and parts[1].endswith(" Watts"):
                    row[parts[0]] = float(parts[1].split()[0])
            rows.append(row)
    return pd.DataFrame(rows)


def harvard_rest_of_node(data: Path) -> dict:
    """Rest-of-node power (intercept [W], slope [-]) and the enclosure conversion loss [-] of
    4-GPU nodes, from the Harvard FASRC IPMI snapshot."""
    frame = _ipmi_frame(Path(data) / _HARVARD)
    gpu = frame[frame["node"].str.startswith("holygpu8a")]
    nodes = gpu.dropna(subset=["Sys Power", "CPU Power", "GPU Board Power"])
    nodes = nodes[nodes["Sys Power"] > 100]  # a node switched off reports a few tens of W
    component = (nodes["CPU Power"] + nodes["GPU Board Power"]).to_numpy(float)
    rest = nodes["Sys Power"].to_numpy(float) - component
    fit = stats.theilslopes(rest, component)
    # enclosures: nodes named <enclosure>NN; enclosures with all four nodes reporting
    encl = gpu.dropna(subset=["Sys Power", "Chassis Power"]).assign(enclosure=lambda d: d["node"].str[:-2])
    groups = encl.groupby("enclosure").agg(n=("node", "size"), sys_w=("Sys Power", "sum"),
                                          chassis_w=("Chassis Power", "median"))
    full = groups[groups["n"] == 4]
    return dict(
        nodes=int(len(nodes)), rest_median_w=float(np.median(rest)),
        rest_of_node_w=float(fit.intercept), rest_of_node_fraction=float(fit.slope),
        fraction_ci95=(float(fit.low_slope), float(fit.high_slope)),
        component_median_w=float(np.median(component)),
        enclosures=int(len(full)),
        psu_loss_fraction=float(full["chassis_w"].sum() / full["sys_w"].sum() - 1.0),
        citation=_HARVARD_CITE)


def mlperf_network(data: Path) -> dict:
    """Interconnect power estimate per GPU of the SMC MLPerf fabrics [W]."""
    out = {}
    for nodes, rel in _SW.items():
        text = (Path(data) / rel).read_text(encoding="utf-8")
        match = re.search(r'"interconnect_power_est", "value": ([0-9.]+)', text)
        if match is None:
            raise InputError(f"{rel}: expected an interconnect_power_est line.")
        out[nodes] = dict(total_w=float(match.group(1)), gpus=8 * nodes,
                          w_per_gpu=float(match.group(1)) / (8 * nodes))
    return out


def node_boundaries(data: Path) -> dict:
    """Per hardware: where its profiles are measured and the layers up to the rack input."""
    rest = harvard_rest_of_node(data)
    net = mlperf_network(data)
    # the larger fabric (its per-GPU figure is half the 8-node one's), per W of nameplate
    network_fraction = net[64]["total_w"] / (64 * SMC_NODE_NAMEPLATE_W)
    network_note = (f"MLPerf SMC interconnect_power_est of the 64-node (512-GPU) NDR fabric, "
                    f"{net[64]['total_w']:.0f} W (a submitter estimate, not a measurement; "
                    f"{net[64]['w_per_gpu']:.1f} W per GPU, the 8-node fabric "
                    f"{net[8]['w_per_gpu']:.1f} W per GPU), over 64 x {SMC_NODE_NAMEPLATE_W:.0f} W "
                    f"node nameplate (DGX H100 maximum) = {network_fraction:.2%} of the node "
                    "nameplate per installed node; for other hardware a transferred fraction.")
    storage_note = (f"ASSUMPTION, no data: storage = {STORAGE_FRACTION:.0%} of the node nameplate "
                    "per installed node (set FleetSpec.storage_w_per_node).")
    out = {}
    for hardware in ("4xH100", "8xH100-SXM", "8xH200-SXM"):
        component = hardware == "4xH100"
        out[hardware] = dict(
            measured_at="component" if component else "node-ac",
            rest_of_node_w=rest["rest_of_node_w"] if component else 0.0,
            rest_of_node_fraction=rest["rest_of_node_fraction"] if component else 0.0,
            psu_loss_fraction=rest["psu_loss_fraction"] if component else 0.0,
            network_fraction=network_fraction, storage_fraction=STORAGE_FRACTION,
            rest_note=(
                f"Harvard FASRC IPMI, {rest['nodes']} 4-GPU nodes holygpu8a*: Sys - CPU - GPU Board "
                f"Power = {rest['rest_of_node_w']:.1f} W + {rest['rest_of_node_fraction']:.4f} x "
                f"(CPU + GPU) (Theil-Sen; slope 95 % CI {rest['fraction_ci95'][0]:.3f}.."
                f"{rest['fraction_ci95'][1]:.3f}; median {rest['rest_median_w']:.0f} W); "
                f"enclosure conversion {rest['psu_loss_fraction']:.2%} = sum Chassis Power / sum "
                f"node Sys Power - 1 over {rest['enclosures']} four-node enclosures."
                if component else
                "Profiles measured at the node's AC input (MLPerf): rest of node and PSU losses "
                "are inside them; nothing is added."),
            network_note=network_note, storage_note=storage_note,
            citations=[_HARVARD_CITE, _SMC_CITE] if component else [_SMC_CITE])
    return out
