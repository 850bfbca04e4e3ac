"""Plots of a dynamic result: COI and machine frequency, facility-bus voltage, facility power."""

from __future__ import annotations

__all__ = ["plot_result"]


def plot_result(result, *, ax=None, machines: bool = True, limits=None):
    """Three stacked panels sharing the time axis; returns the matplotlib Figure.

    ``ax``: three Axes to draw on (else a new figure); ``machines``: draw each machine's
    frequency thinly behind the COI frequency; ``limits``: a
    :class:`~grid.dynamics.results.FrequencyLimits` drawn as dashed lines.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(3, 1, sharex=True, figsize=(8, 7.5), constrained_layout=True)
    else:
        fig = ax[0].figure
    f = result.frequency_hz
    t = f.index.to_numpy()
    if machines:
        for c in f.columns[1:]:
            ax[0].plot(t, f[c].to_numpy(), lw=0.6, alpha=0.5, color="0.6")
    ax[0].plot(t, f["coi"].to_numpy(), lw=1.6, color="C0", label="centre of inertia")
    if limits is not None:
        for lim in (limits.f_min_hz, limits.f_max_hz):
            if lim is not None:
                ax[0].axhline(lim, ls="--", lw=0.8, color="C3")
    ax[0].set_ylabel("frequency [Hz]")
    ax[0].legend(loc="best", fontsize=8)
    v = result.facility_voltage_pu()
    for c in v:
        ax[1].plot(t, v[c].to_numpy(), lw=1.2, label=c)
    ax[1].set_ylabel("facility-bus voltage [pu]")
    ax[1].legend(loc="best", fontsize=8)
    p = result.facility_mw
    for c in p:
        ax[2].plot(t, p[c].to_numpy(), lw=1.2, label=c)
    ax[2].set_ylabel("facility power [MW]")
    ax[2].set_xlabel("time [s]")
    title = f"{result.case}: " + ", ".join(type(e).__name__ for e in result.events) \
        if result.events else result.case
    ax[0].set_title(title)
    return fig
