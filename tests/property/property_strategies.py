"""Shared Hypothesis settings and strategies of the property tests (issue 14, class 9).

Every property test feeds random and hostile values to one public entry point and accepts
exactly two outcomes: a clear aiload error (an ``InputError``, a ``ValueError`` subclass,
whose message names what was wrong) or a result that passes its own invariants.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from aiload.errors import AiloadError

#: fast and repeatable: no example database written into the work tree, no deadline flakes
#: on a loaded 2-core machine; each module picks its max_examples to keep the folder < 60 s
FAST = settings(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)



def fast(max_examples: int) -> settings:
    """:data:`FAST` with a given number of examples."""
    return settings(FAST, max_examples=max_examples)


#: numbers a user or a damaged file may give: ordinary, huge, tiny, negative, NaN, ±inf
hostile_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 1e308, 5e-324]),
)

#: anything at all that may land in a numeric field
hostile_values = st.one_of(
    hostile_floats,
    st.integers(min_value=-(10**12), max_value=10**12),
    st.booleans(),
    st.none(),
    st.text(max_size=6),
)


def assert_clear_error(err: BaseException, *, input_error: bool = True) -> None:
    """The failure is aiload's own with a message of some substance; a ValueError (an
    InputError) unless ``input_error=False`` (e.g. an infeasible sizing)."""
    assert isinstance(err, AiloadError), repr(err)
    assert isinstance(err, ValueError) or not input_error, repr(err)
    assert len(str(err)) > 20, repr(err)
