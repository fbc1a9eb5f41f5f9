"""Losses (datafits) of multi-task models, all under one scaling convention.

For tasks ``t = 1..m`` with ``n_t`` rows each, ``W`` of shape ``(d, m)`` and intercepts ``b``
of shape ``(m,)``::

    F(W, b) = sum_t (1 / n_t) * sum_{i in task t} ell(y_i, x_i^T w_t + b_t)
              + (alpha_l2 / 2) * ||W||_F^2

with ``ell`` one of

* :class:`Squared`:       ``0.5 * (y - z)**2``
* :class:`Logistic`:      ``log(1 + exp(-y z))``, ``y in {-1, +1}``
* :class:`SquaredHinge`:  ``max(0, 1 - y z)**2`` (LIBLINEAR's L2-loss SVM)
* :class:`Hinge`:         ``max(0, 1 - y z)`` (value and a subgradient only)
* :class:`Multinomial`:   ``log sum_k exp(z_k) - z_y`` over ``K > 2`` classes, one score per
  (task, class) column (:mod:`multitask.losses.multinomial`)
* :class:`Poisson`, :class:`Gamma`, :class:`Tweedie`: half the unit deviance of the Tweedie
  family of power 1, 2 or ``p`` in ``[1, 2]`` with the log link ``mu = exp(z)``
  (scikit-learn's GLMs; :mod:`multitask.losses.glm`)
* :class:`Huber`:         Huber's loss with its scale fitted per task, as ``HuberRegressor``
  (:mod:`multitask.losses.huber`)
* :class:`Pinball`:       the quantile regression loss ``tau (y - z) + max(0, z - y)``
  (:mod:`multitask.losses.quantile`)

and an optional ridge term ``alpha_l2 >= 0`` (the elastic-net term of MALSAR's ``rho_L2`` and
RMTL's ``Lam2``), which every model can add to its penalty this way. With a shared design
(``n_t = n``) the squared loss is ``||Y - X W||_F^2 / (2 n)``, the datafit of scikit-learn's
``MultiTaskLasso``. Intercepts are never penalized; the squared loss eliminates them exactly by
centring each task (``b_t = mean(y_t) - mean(X_t) w_t``), the other losses keep them as
variables of the solver (``center=True`` centres the features of each task first, which keeps
first-order methods well conditioned; the model is the same).

Row weights (``sample_weight``, and the pairs of a shared design whose target is missing)
generalize the convention: with ``w_i >= 0`` the weight of row ``i`` and ``W_t = sum_{i in t}
w_i`` the loss of task ``t`` is ``(1 / W_t) sum_{i in t} w_i ell(y_i, x_i^T w_t + b_t)``, and
every datafit reads the normalized weights ``w_i / W_t`` from one place,
:attr:`~multitask.data.MultiTaskData.row_weights` (``1 / n_t`` without weights). Repeating row
``i`` ``k_i`` times gives ``n_t' = sum_{i in t} k_i`` rows and the loss ``(1 / n_t') sum_i k_i
ell_i``: exactly the weighted loss with ``w_i = k_i``; a zero weight drops the row; weights
that are constant within a task change nothing (the penalty keeps its scale). Everything the
datafits derive from the data is weighted alike (centring, Gram matrices, ``X_t^T y_t``,
Lipschitz constants, the scales of the optimality measure, the starting intercepts).

Every datafit declares what it offers in :attr:`Datafit.capabilities` (see
:data:`DATAFIT_CAPABILITIES`); solvers check those declarations, never the class.

The package holds one module per family: :mod:`~multitask.losses.base` (the protocol),
:mod:`~multitask.losses.squared`, :mod:`~multitask.losses.classification` (two classes),
:mod:`~multitask.losses.glm` (Poisson, Gamma, Tweedie: log link), :mod:`~multitask.losses.huber`
(Huber with a fitted scale), :mod:`~multitask.losses.quantile` (the pinball loss),
:mod:`~multitask.losses.grams` (per-task Gram matrices); :mod:`~multitask.losses.registry`
keeps the losses by name (:func:`register_loss`, :func:`get_datafit`).
"""

from multitask.losses.base import DATAFIT_CAPABILITIES, Datafit, DualPoint
from multitask.losses.classification import Hinge, Logistic, SquaredHinge
from multitask.losses.glm import Gamma, Poisson, Tweedie
from multitask.losses.grams import max_scaled_eigenvalue
from multitask.losses.huber import Huber
from multitask.losses.multinomial import Multinomial
from multitask.losses.quantile import Pinball
from multitask.losses.registry import LOSSES, get_datafit, register_loss
from multitask.losses.squared import GRAM_NONZEROS_PER_ENTRY, GRAM_ROWS_PER_FEATURE, Squared

__all__ = [
    "DATAFIT_CAPABILITIES",
    "GRAM_NONZEROS_PER_ENTRY",
    "GRAM_ROWS_PER_FEATURE",
    "LOSSES",
    "Datafit",
    "DualPoint",
    "Gamma",
    "Hinge",
    "Huber",
    "Logistic",
    "Multinomial",
    "Pinball",
    "Poisson",
    "Squared",
    "SquaredHinge",
    "Tweedie",
    "get_datafit",
    "max_scaled_eigenvalue",
    "register_loss",
]
