"""Size on-site supply for the campus-100mw preset at three import limits; draw the figures.

Run from the project root:  python docs/scripts/make_microgrid_figures.py
Writes docs/figures/microgrid_*.png and prints the tables used in docs/microgrid.md.
Takes a few minutes on a 2-core machine (one simulated facility year, four hourly-year LPs).

The costs are ASSUMPTIONS of a typical order of magnitude, not measured or published figures;
they are listed in docs/microgrid.md. The load is aiload's simulated campus-100mw facility.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

import aiload
import microgrid as mg
from microgrid.plots import (
    plot_cost_breakdown,
    plot_dispatch_week,
    plot_import_duration,
    plot_soc,
)

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"
START = pd.Timestamp("2025-01-01", tz="UTC")
END = pd.Timestamp("2026-01-01", tz="UTC")
LIMITS_KW = {"100 MW": 100_000.0, "60 MW": 60_000.0, "40 MW": 40_000.0}


def assumed_costs() -> mg.Costs:
    """Annualised prices [USD]: 7 % real discount rate, lives 30/15/25 years (assumed)."""
    crf = mg.capital_recovery_factor
    return mg.Costs(
        pv_usd_per_kwp_year=1100 * crf(0.07, 30) + 18,  # 1,100 USD/kWdc + 18 USD/kW-yr O&M
        battery_usd_per_kwh_year=250 * crf(0.07, 15) + 2.5,  # 250 USD/kWh
        battery_usd_per_kw_year=300 * crf(0.07, 15),  # 300 USD/kW of inverter
        generator_usd_per_kw_year=1000 * crf(0.07, 25) + 15,  # gas engines, 1,000 USD/kW
        import_usd_per_kwh=0.07,
        fuel_usd_per_kwh=0.08,  # gas at ~8 USD/MMBtu, ~8.5 MMBtu/MWh, + variable O&M
        demand_charge_usd_per_kw_month=15.0,
    )


def campus_load_kw(freq: str = "1h") -> pd.Series:
    """The campus-100mw preset's facility power for 2025 (seed 0) [kW]."""
    load = aiload.facility("campus-100mw", start=START, end=END, freq=freq, seed=0,
                           progress=False)
    return load.power["facility_kw"]


def main() -> int:
    FIGURES.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    load = campus_load_kw()
    print(f"facility year: {time.perf_counter() - t0:.0f} s; peak {load.max():.0f} kW, "
          f"mean {load.mean():.0f} kW, energy {load.sum() / 1000:.0f} MWh", file=sys.stderr)
    pv = mg.pv_availability(index=load.index)
    costs = assumed_costs()
    generator = mg.Generator(emission_kg_per_kwh=0.45)
    carbon = mg.Carbon(grid_kg_per_kwh=0.38)
    results = {}
    for label, limit in LIMITS_KW.items():
        s = mg.size(load, pv_availability=pv, costs=costs, generator=generator,
                    import_limit_kw=limit, carbon=carbon)
        results[label] = s
        print(label, json.dumps(s.summary()), file=sys.stderr)
    # what a 4-hour step does to the 60 MW case
    agg = mg.coarsen(load, pv, freq="4h")
    coarse = mg.size(agg.load_kw, pv_availability=agg.pv_availability, costs=costs,
                     generator=generator, import_limit_kw=LIMITS_KW["60 MW"], carbon=carbon)
    fine = results["60 MW"]

    print("| import limit | PV [MWp] | battery [MWh / MW] | generator [MW] | cost [M USD/yr] "
          "| LCOE [USD/MWh] | CO2 [kt/yr] | build [s] | solve [s] |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, s in results.items():
        print(f"| {label} | {s.pv_kwp / 1e3:.1f} | {s.battery_kwh / 1e3:.1f} / "
              f"{s.battery_kw / 1e3:.1f} | {s.generator_kw / 1e3:.1f} | "
              f"{s.total_annual_cost_usd / 1e6:.2f} | {s.lcoe_usd_per_mwh:.1f} | "
              f"{s.emissions_t_per_year / 1e3:.1f} | {s.build_time_s:.2f} | {s.solve_time_s:.1f} |")
    print()
    print("| term [M USD/yr] | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for term in fine.annual_cost_usd:
        row = [results[lb].annual_cost_usd[term] / 1e6 for lb in results]
        if any(abs(v) > 1e-6 for v in row):
            print(f"| {term} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    print()
    print(f"4-hour steps, 60 MW: peak lost {agg.peak_error_kw:.0f} kW "
          f"({agg.peak_error_fraction:.2%}), LDC RMSE {agg.duration_curve_rmse_kw:.0f} kW, "
          f"energy error {agg.energy_error_kwh:.3g} kWh; cost "
          f"{coarse.total_annual_cost_usd / 1e6:.2f} vs {fine.total_annual_cost_usd / 1e6:.2f} "
          f"M USD/yr; battery {coarse.battery_kwh / 1e3:.1f} vs {fine.battery_kwh / 1e3:.1f} MWh; "
          f"generator {coarse.generator_kw / 1e3:.1f} vs {fine.generator_kw / 1e3:.1f} MW; "
          f"solve {coarse.solve_time_s:.1f} vs {fine.solve_time_s:.1f} s")

    week = pd.Timestamp("2025-07-14", tz="UTC")
    figures = {
        "microgrid_dispatch_week.png": plot_dispatch_week(results["40 MW"], week),
        "microgrid_soc.png": plot_soc(results["40 MW"], week),
        "microgrid_import_duration.png": plot_import_duration(results),
        "microgrid_cost_breakdown.png": plot_cost_breakdown(results),
    }
    for name, fig in figures.items():
        fig.savefig(FIGURES / name, dpi=90)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
