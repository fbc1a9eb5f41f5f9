"""The pieces of text the docstrings of a model's regressor and classifier share: the loss
term of the objective each minimizes and the classifier's ``loss`` parameter, put together
by :func:`pair_doc`."""

from __future__ import annotations

__all__ = ["CLASSIFICATION_LOSS", "CLASSIFIER_LOSS_PARAM", "REGRESSION_LOSS", "pair_doc"]

#: The loss term of a regressor's objective: half the mean squared error of each task.
REGRESSION_LOSS = "sum_t 1/(2 n_t) ||X_t w_t + b_t - y_t||^2"
#: The loss term of a classifier's objective: the mean loss ``ell`` of each task.
CLASSIFICATION_LOSS = "sum_t (1/n_t) sum_i ell(y_i, x_i^T w_t + b_t)"
#: The ``loss`` parameter of a classifier of the logistic and squared hinge losses.
CLASSIFIER_LOSS_PARAM = '''    loss : {"logistic", "squared_hinge"}, default="logistic"
        ``log(1 + exp(-y z))`` or ``max(0, 1 - y z)^2``, labels mapped to -1/+1 per task.
'''


def pair_doc(title: str, template: str, *, classifier: bool, loss_param: str | None = None,
             examples: str = "", **fields: object) -> str:
    """The docstring of the regressor or the classifier of a model: the line ``title``, then
    ``template`` formatted with ``{loss}`` (:data:`REGRESSION_LOSS` or
    :data:`CLASSIFICATION_LOSS`), ``{loss_param}`` (nothing for a regressor;
    ``loss_param``, by default :data:`CLASSIFIER_LOSS_PARAM`, for a classifier) and
    ``fields``, then ``examples``."""
    if classifier:
        loss = CLASSIFICATION_LOSS
        loss_param = CLASSIFIER_LOSS_PARAM if loss_param is None else loss_param
    else:
        loss, loss_param = REGRESSION_LOSS, ""
    return f"{title}\n" + template.format(loss=loss, loss_param=loss_param, **fields) + examples
