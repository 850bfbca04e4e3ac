"""aiload scenarios: scenario files, the runner, the ``aiload`` command line, reports, sweeps."""

from aiload._version import __version__

__all__ = ["__version__"]
