"""The model of ``multitask fit`` from its command line: the class by name, the
``--param`` and ``--grid`` values checked against the model's parameters, the loss options,
the model selection around it, and the score it chose by in words."""

from __future__ import annotations

import ast
import os

from multitask.cli_files import CLIError


def _model_classes(aliases: bool = True) -> dict[str, type]:
    """The model classes by name; without ``aliases``, not the deprecated spellings (a class
    that subclasses the class it renames, under a name that differs from it by case only)."""
    import multitask.estimators as E

    classes = {n: getattr(E, n) for n in E.__all__ if n != "MultiTaskCV"}
    if aliases:
        return classes
    return {n: c for n, c in classes.items() if n not in _deprecated_aliases(classes)}


def _deprecated_aliases(classes: dict[str, type]) -> set[str]:
    """The names of ``classes`` that are a deprecated spelling of another: same name up to
    case, and a subclass of it (``MultitaskKernelClassifier`` of
    ``MultiTaskKernelClassifier``)."""
    return {n for n, c in classes.items()
            if any(o != n and o.lower() == n.lower() and issubclass(c, classes[o])
                   and c is not classes[o] for o in classes)}


def _model_name(typed: str, classes: dict[str, type]) -> str | None:
    """The class a ``--model`` name means: the name as typed; else the one name equal to it up
    to case, a class rather than its deprecated spelling (``multitaskkernelclassifier`` is
    ``MultiTaskKernelClassifier``)."""
    if typed in classes:
        return typed
    aliases = _deprecated_aliases(classes)
    matches = [n for n in classes if n.lower() == typed.lower()]
    preferred = [n for n in matches if n not in aliases] or matches
    return preferred[0] if preferred else None


def _parse_value(text: str):
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    if low in ("inf", "+inf", "infinity"):
        return float("inf")
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parse_params(items, valid: set[str], model: str, multi: bool = False) -> dict:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CLIError(f"parameter {item!r} must be written key=value.")
        if key not in valid:
            raise CLIError(f"{model} has no parameter {key!r} (parameters: "
                           f"{', '.join(sorted(valid))}).")
        if multi:
            out[key] = [_parse_value(v) for v in value.split(",") if v.strip()]
            if not out[key]:
                raise CLIError(f"--grid {key}= has no values.")
        else:
            out[key] = _parse_value(value)
    return out


def _check_param_types(params: dict, defaults: dict, model: str) -> dict:
    """Check ``--param`` values against the kind of the defaults (booleans, integers, numbers).

    ``max_iter=1.5`` or ``max_iter=none`` is a one-line error here rather than a ``TypeError``
    deep in a solver; a whole float such as ``max_iter=1e4`` becomes the integer 10000.
    Parameters whose default is a string or None take any value (the model checks them).
    """
    out = {}
    for key, value in params.items():
        default = defaults.get(key)
        kind = None
        if isinstance(default, bool):
            kind = "true or false" if not isinstance(value, bool) else None
        elif isinstance(default, int):
            if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                kind = "an integer"
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                kind = "a number"
        if kind is not None:
            raise CLIError(f"--param {key}={value!r}: {model}'s {key} must be {kind} (default "
                           f"{default!r}).")
        out[key] = value
    return out


def _make_model(args):
    classes = _model_classes()
    name = _model_name(args.model, classes)
    if name is None:
        raise CLIError(f"unknown model {args.model!r}; choose from "
                       f"{', '.join(_model_classes(aliases=False))} (multitask fit "
                       "--list-models).")
    cls = classes[name]
    est = cls()
    defaults = est.get_params(deep=False)
    valid = set(defaults)
    params = _parse_params(args.param, valid, name)
    for fixed in ("task_column", "warm_start"):
        if fixed in params:
            raise CLIError(f"--param {fixed} is set by the command line, not by hand.")
    est.set_params(**_check_param_types(params, defaults, name))
    est.set_params(**_loss_options(args, defaults, params, name))
    if not args.cv:
        if args.grid:
            raise CLIError("--grid needs --cv.")
        return name, est
    from multitask.model_selection import MultiTaskCV

    grid = _parse_params(args.grid, valid, name, multi=True) or None
    if grid:
        grid = {k: [_check_param_types({k: v}, defaults, name)[k] for v in values]
                for k, values in grid.items()}
    progress = None if args.quiet else _progress(name)
    n_jobs = args.n_jobs
    if n_jobs is not None and n_jobs > (os.cpu_count() or 1):
        n_jobs = os.cpu_count() or 1  # more workers than CPUs only add start-up time
    return name, MultiTaskCV(est, param_grid=grid, cv=args.cv_folds, scoring=args.scoring,
                             n_alphas=args.n_alphas, alpha_ratio=args.alpha_ratio,
                             n_jobs=n_jobs, callback=progress,
                             random_state=args.random_state)


#: The parameter each loss takes, as given on the command line.
_LOSS_OPTION = {"power": "tweedie", "epsilon": "huber", "quantile": "quantile"}

#: The losses with a log link, the only ones an exposure goes with (counts, sizes).
_EXPOSURE_LOSSES = ("poisson", "gamma", "tweedie")


def _loss_options(args, defaults: dict, params: dict, name: str) -> dict:
    """The model's ``loss`` and its own parameter from ``--loss``, ``--power``, ``--epsilon``
    and ``--quantile``, checked against the model's parameters: a model without a ``loss``,
    a loss given twice (``--loss`` and ``--param loss=``), or an option of another loss (e.g.
    ``--power`` without ``--loss tweedie``) is refused, naming it. The values themselves are
    checked by the model at fit."""
    loss = getattr(args, "loss", None)
    out = {}
    if loss is not None:
        if "loss" not in defaults:
            raise CLIError(f"--loss {loss}: {name} has no loss parameter.")
        if "loss" in params:
            raise CLIError("give the loss once: --loss or --param loss=, not both.")
        out["loss"] = loss
    chosen = out.get("loss", params.get("loss", defaults.get("loss")))
    for option, own in _LOSS_OPTION.items():
        value = getattr(args, option, None)
        if value is None:
            continue
        if option not in defaults:
            raise CLIError(f"--{option}: {name} has no {option} parameter (a regressor's "
                           f"--loss {own} takes it).")
        if chosen != own:
            raise CLIError(f"--{option} goes with --loss {own}, not with the loss "
                           f"{chosen!r}.")
        if option in params:
            raise CLIError(f"give {option} once: --{option} or --param {option}=, not both.")
        out[option] = value
    return out


def _model_loss(est) -> str | None:
    """The loss of a model (the model inside a search), None for a model without one."""
    inner = getattr(est, "estimator", est)
    return inner.get_params(deep=False).get("loss")


def _scoring_words(est, scoring) -> str:
    """The score the cross-validation chose by, in words (the fit's output and the model
    file's metadata): the library's default follows the loss
    (:func:`multitask.model_selection.loss_scorer`)."""
    from multitask.model_selection import LossScorer, get_scorer

    if scoring is not None:
        return str(scoring)
    inner = getattr(est, "estimator", est)
    scorer = get_scorer(None, inner)
    if isinstance(scorer, LossScorer):
        return f"minus the {scorer.name}"
    name = getattr(scorer, "__name__", "")
    if name == "classifier_scorer":
        return ("minus the log-loss" if len(getattr(est, "classes_", ())) > 2
                else "the mean task ROC AUC")
    return {"nmse_scorer": "-nMSE"}.get(name, name or repr(scorer))


def _missing_targets(args, est, name: str) -> str:
    """``"ignore"`` when missing targets are targets not observed (``--missing-targets
    ignore``, or ``--param missing_targets=ignore``), set on the model; else ``"error"``."""
    inner = getattr(est, "estimator", est)  # the model inside MultiTaskCV
    params = inner.get_params(deep=False)
    if getattr(args, "missing_targets", "error") == "ignore":
        if "missing_targets" not in params:
            raise CLIError(f"--missing-targets ignore: {name} cannot leave missing targets "
                           "out.")
        inner.set_params(missing_targets="ignore")
    return "ignore" if params.get("missing_targets") == "ignore" or getattr(
        args, "missing_targets", "error") == "ignore" else "error"


def _progress(label: str):
    """The CV's progress display (:mod:`multitask.progress`: a bar on a terminal, a few lines
    on stderr otherwise)."""
    from multitask.progress import progress

    return progress(label=f"{label} cross-validation")

