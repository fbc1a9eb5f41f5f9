"""Small helpers shared by the data-set modules."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state as _sk_check_random_state

RandomStateLike = int | np.random.RandomState | np.random.Generator | None


def check_random_state(
    random_state: RandomStateLike,
) -> np.random.RandomState | np.random.Generator:
    """Turn ``random_state`` into a random number generator.

    Parameters
    ----------
    random_state : int, RandomState instance, Generator instance or None
        An ``int`` or ``None`` gives a ``RandomState`` as in scikit-learn (``None``: the global
        one); a ``RandomState`` or a ``numpy.random.Generator`` is returned as is.

    Returns
    -------
    rng : RandomState or Generator
        Both offer the ``permutation``, ``choice`` and ``standard_normal`` methods used here.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    return _sk_check_random_state(random_state)
