"""``fit_new_tasks`` and the population model of unseen tasks, as methods every estimator
inherits (:class:`NewTaskMethods`): the glue between an estimator and
:mod:`multitask.estimators.new_tasks` (the strength, the new rows, the appended attributes)
and the new-task prior of the fitted penalty
(:func:`~multitask.penalties.new_task.new_task_prior`)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

import multitask.estimators.new_tasks as _new_tasks
from multitask.data import MultiTaskData
from multitask.estimators.inputs import is_distributed
from multitask.losses import get_datafit
from multitask.penalties.base import Penalty
from multitask.penalties.new_task import ColumnPrior, new_task_prior


class NewTaskMethods:
    """``fit_new_tasks`` and ``unknown_tasks="population"`` of every estimator, a mixin of
    :class:`~multitask.estimators.estimator.MultiTaskEstimator` (whose
    ``_check_linear_structure``, ``_scores`` and penalty hooks it calls)."""

    def fit_new_tasks(self, X, y, task=None, sample_weight=None, *, strength="auto"):
        """Learn tasks the model has not seen from their rows; the fitted tasks are unchanged.

        Each new task ``t`` solves, alone, the small problem its fitted structure gives it
        (:mod:`multitask.estimators.new_tasks`)::

            min_{w, b}  (1 / n_t) sum_{i in t} ell(y_i, x_i^T w + b)
                        + c_t [(alpha_l2 / 2) ||w||^2 + R(w)]

        where ``R`` is the new-task prior of the model's penalty at the fitted weights
        (:func:`multitask.penalties.new_task.new_task_prior`: the learned subspace of the
        low-rank models, the shared support and feature weights of the joint-sparsity models,
        the mean task of the mean-regularized and graph models, the nearest cluster of
        clustered MTL, the learned task covariance of MTRL; the pooled model gives every new
        task its population model) and ``b`` is unpenalized, as in ``fit``. ``ell`` is the
        model's loss with its parameter (every ``loss=`` of the regressors; the Huber loss
        fits each new task's scale too, appended to ``scale_``); the problems without a closed
        form go to the solver the library chooses for the loss and the prior. The new tasks are
        appended: ``tasks_``, ``coef_``, ``intercept_`` (and ``coef_variable_``, the
        components of split models, the arrays of ``solver_result_``) gain one entry per new
        task, and the rows of the fitted tasks stay bitwise equal. Attributes that describe
        the learned structure (``M_``, ``laplacian_``, ``task_covariance_``, ranks, ...) keep
        describing the tasks of fit, whose sizes are ``fit_task_sizes_``; the structure of a
        later call is that of the tasks of fit, never of tasks added since.

        Why not ``partial_fit``: scikit-learn's ``partial_fit`` continues training on more
        rows of the same problem (and meta-estimators call it that way); this method never
        changes a fitted task and refuses a task id the model has, so it has its own name.
        It works in place and returns ``self``, as ``fit`` and ``partial_fit`` do (copy the
        model first, ``copy.deepcopy(model)``, to keep the original).

        Parameters
        ----------
        X : array-like (n, d), sparse matrix, or list of per-task arrays
            The new tasks' rows, in any of ``fit``'s formats, with the fitted features.
        y : array-like (n,), (n, m_new), or list of arrays
            Their targets (for classifiers, labels among ``classes_``, both classes in each
            new task).
        task : array-like (n,), optional
            Task id of each row (long format): ids the model does not have, of the type of
            ``tasks_``. Without it (per-task lists, a shared design's target columns, or one
            task's rows) the new tasks are numbered after the model's largest integer id.
        sample_weight : array-like, optional
            Row weights, as in ``fit``.
        strength : {"auto", "scaled", "fitted", "cv"} or float, default="auto"
            ``c_t``: ``"scaled"`` is ``nbar / n_t`` (``nbar`` the mean size of the fitted
            tasks: the prior weighs against the new task's rows as it did against a typical
            fitted task's, so a task with few rows is shrunk more towards the structure);
            ``"fitted"`` is 1 (the fitted objective's own conditional on the new column);
            ``"cv"`` multiplies ``"scaled"`` by the factor of
            :data:`~multitask.estimators.new_tasks.CV_GRID` with the lowest held-out loss in
            a cross-validation on the new rows, pooled over the new tasks (each needs
            :data:`~multitask.estimators.new_tasks.CV_MIN_ROWS` rows); ``"auto"`` is ``"cv"``
            where the new-task problem has a closed form (the squared loss with a Gaussian
            prior: ridge, mean-regularized, trace norm, capped trace, l2,1, MTRL, cASO) and
            the rows allow it (:func:`~multitask.estimators.new_tasks.cv_applies`); with the
            squared loss and fewer rows, ``"scaled"`` or the population model, whichever
            has the lower expected error (:func:`~multitask.estimators.new_tasks.
            compare_with_population`); ``"scaled"`` otherwise; a number is ``c_t`` itself.
            Constraint sets (the l1,inf and per-task balls) have no strength. Each task
            added records its ``c_t`` in ``new_task_strength_`` (NaN: the population model)
            and how it was chosen in ``new_task_strength_rule_``.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            A task id the model has, ids of another type than ``tasks_``, the wrong number of
            features, labels outside ``classes_``, an unknown ``strength``, or input that
            ``fit`` would refuse.
        NotImplementedError
            For a model whose penalty has no new-task rule (the temporal models).
        """
        self._check_linear_structure("fit_new_tasks")
        check_is_fitted(self, "coef_")
        loss = self._loss_name()
        if loss not in self._new_task_losses:
            raise ValueError(
                f"fit_new_tasks does not handle the {loss!r} loss yet (its new-task problems "
                f"are solved for the losses {list(self._new_task_losses)}): refit "
                f"{type(self).__name__} with the new tasks' rows.")
        if is_distributed(X):
            raise ValueError("fit_new_tasks takes in-memory data (the new tasks' rows), not Dask "
                             "collections or TaskBlocks.")
        rule = _new_tasks._check_strength(strength)
        # the hyper-parameters validated and the prior built once per fit (cached beside the
        # model; dropped on a refit or a change of what the prior is read from)
        structure = _new_tasks.fitted_structure(self)
        data, positional = _new_tasks.convert_new_rows(self, X, y, task, sample_weight)
        labels = _new_tasks.new_task_labels(self, data, positional)
        fit = _new_tasks.fit_new_task_columns(self, data, structure.prior, rule,
                                              structure.nbar)
        _new_tasks.append_new_tasks(self, labels, fit)
        self._append_loss_state(data, fit)
        return self

    def _append_loss_state(self, data: MultiTaskData, fit) -> None:
        """Append the new tasks' entries to the fitted attributes of the loss (the Huber
        loss's ``scale_``); none by default."""

    def _new_task_prior(self) -> ColumnPrior:
        """The prior a new task gets from the fitted structure: the penalty's rule
        (:func:`~multitask.penalties.new_task.new_task_prior`) at the fitted variable of the
        tasks of fit, with :meth:`_new_task_context`."""
        m = _new_tasks.n_fit_tasks(self)
        V = np.asarray(self.coef_variable_)[..., :m]
        return new_task_prior(self._fitted_penalty(), V, **self._new_task_context())

    def _new_task_context(self) -> dict:
        """What the penalty's new-task rule needs besides the fitted variable (see
        :func:`~multitask.penalties.new_task.new_task_prior`); nothing by default."""
        return {}

    def _fitted_penalty(self) -> Penalty:
        """The model's penalty for the tasks of fit, rebuilt from the hyper-parameters (as
        ``fit`` built it from the data: only the tasks' number and labels and the number of
        features are read, so a placeholder data set of that shape stands in)."""
        m = _new_tasks.n_fit_tasks(self)
        d = int(self.n_features_in_)
        shape = MultiTaskData(np.zeros((m, d)), np.zeros(m), np.arange(m + 1, dtype=np.int64),
                              np.asarray(self.tasks_)[:m], False)
        return self._make_penalty(get_datafit("squared", shape, False))

    def _scores_or_population(self, X, task, unknown_tasks):
        """``_scores``, or, with ``unknown_tasks="population"``, rows of tasks the model has
        not seen scored by the population model (:func:`~multitask.estimators.new_tasks.
        population_model`)."""
        if _new_tasks.check_unknown_tasks(unknown_tasks) == "error":
            return self._scores(X, task)
        self._check_linear_structure("unknown_tasks='population'")
        check_is_fitted(self, "coef_")
        if is_distributed(X):
            raise ValueError("unknown_tasks='population' is not supported with Dask "
                             "collections or TaskBlocks.")
        return _new_tasks.population_scores(self, X, task)
