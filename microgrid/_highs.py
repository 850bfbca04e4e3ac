"""HiGHS without its banner on the user's standard output.

HiGHS prints a two-line banner ("Running HiGHS ...") to the process's standard output, from
C++, when the first ``Highs`` object of a process is made — before any option can turn output
off. :func:`silence_banner` makes that first object with file descriptor 1 pointing at the
null device, so the banner never reaches a user's stdout (``aiload run -q``, a pipeline that
reads stdout); every later ``Highs`` prints nothing with ``output_flag`` off.
"""

from __future__ import annotations

import os
import sys
import threading

_lock = threading.Lock()
_done = False


def silence_banner() -> None:
    """Make the process's first ``highspy.Highs`` with stdout on the null device (once)."""
    global _done
    with _lock:
        if _done:
            return
        import highspy  # noqa: PLC0415

        sys.stdout.flush()
        try:
            saved = os.dup(1)
        except OSError:  # no file descriptor 1 (a daemon): nothing to protect
            highspy.Highs()
            _done = True
            return
        try:
            with open(os.devnull, "w", encoding="utf-8") as null:
                os.dup2(null.fileno(), 1)
                try:
                    highspy.Highs()
                finally:
                    os.dup2(saved, 1)
        finally:
            os.close(saved)
        _done = True
