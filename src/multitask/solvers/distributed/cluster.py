"""The client's side of the Dask cluster: finding the client, waiting on futures, scattering.

Shared by the data input (:mod:`multitask.solvers.distributed.blocks`), the distributed
datafit, the solver and the estimator glue; Dask itself is imported only when a client is
looked up (it is an optional dependency).
"""

from __future__ import annotations

__all__ = ["future_result", "get_client", "scatter_unique"]


def get_client(client=None):
    """``client``, or the current ``dask.distributed`` client.

    Raises
    ------
    ValueError
        When dask.distributed is not installed or no client is running.
    """
    if client is not None:
        return client
    try:
        from distributed import get_client as current_client
    except ImportError:  # pragma: no cover - optional dependency
        raise ValueError("Distributed fitting needs dask.distributed "
                         "(pip install 'multitask[distributed]').") from None
    try:
        return current_client()
    except ValueError:
        raise ValueError("Distributed fitting needs a running dask.distributed Client: create "
                         "one first (distributed.Client(...)) or pass client=.") from None


def future_result(fut):
    """The value of a future (an actor call's answer): ``fut.result()``."""
    return fut.result()


def scatter_unique(client, data, **kwargs):
    """``client.scatter(data, hash=False, ...)``: futures under fresh random keys.

    ``Client.scatter`` names the data by a hash of their content by default, and recent Dask
    tokenizes any picklable object deterministically, so scattering equal data again (the
    same estimator copy for ``predict`` then ``predict_proba``, the same blocks for two fits
    in a row) returns the key of the earlier futures. When those were just dropped, their
    release travels on the client's batched stream while the new scatter goes through a
    direct call to the scheduler, which may arrive first: the scheduler then forgets the key
    that the new futures share, and whatever depends on them is cancelled with "lost
    dependencies". Fresh keys have no earlier holder to release them.
    """
    return client.scatter(data, hash=False, **kwargs)
