"""The automatic solver choice, pinned: what ``solver="auto"`` builds for every linear model
on a table of data sets reaching each branch of the rule (``tests/solver_choice_cases.py``).

A change of this table is a change of the library's defaults: it comes with the measurement
that motivates it (``benchmarks/bench_auto_solver.py``, ``benchmarks/bench_auto_choice.py``:
every solver against ``"auto"`` on a grid of shapes), never as a side effect of a refactor.
Regenerate an entry only after such a measurement; a changed entry says what it was and the
benchmark point behind the change (``# was ...``).
"""

from __future__ import annotations

import pytest
from solver_choice_cases import CASES, MODELS, describe_choice

#: ``"model|case"`` -> the chosen solver (``describe_choice``).
PINNED = {
    "CappedL1Classifier(loss='logistic')|shared_small": 'multistage[fista]',
    "CappedL1Classifier(loss='logistic')|shared_wide": 'multistage[fista]',
    "CappedL1Classifier(loss='logistic')|sparse_long": 'multistage[fista]',
    "CappedL1Classifier(loss='logistic')|tasks_d40": 'multistage[fista]',
    "CappedL1Classifier(loss='logistic')|tasks_raw": 'multistage[fista]',
    "CappedL1Classifier(loss='logistic')|tasks_raw_tall": 'multistage[fista]',
    "CappedL1Classifier(loss='logistic')|tasks_small": 'multistage[fista]',
    "CappedL1Classifier(loss='logistic')|tasks_wide": 'multistage[fista]',
    'CappedL1Classifier|shared_small': 'multistage[fista]',
    'CappedL1Classifier|shared_wide': 'multistage[fista]',
    'CappedL1Classifier|sparse_long': 'multistage[fista]',
    'CappedL1Classifier|tasks_d40': 'multistage[fista]',
    'CappedL1Classifier|tasks_raw': 'multistage[fista]',
    'CappedL1Classifier|tasks_raw_tall': 'multistage[fista]',
    'CappedL1Classifier|tasks_small': 'multistage[fista]',
    'CappedL1Classifier|tasks_wide': 'multistage[fista]',
    'CappedL1Regressor|shared_small': 'multistage[bcd]',
    'CappedL1Regressor|shared_wide': 'multistage[fista]',
    'CappedL1Regressor|sparse_long': 'multistage[fista]',
    'CappedL1Regressor|tasks_d40': 'multistage[bcd]',
    'CappedL1Regressor|tasks_raw': 'multistage[bcd]',
    'CappedL1Regressor|tasks_raw_tall': 'multistage[bcd]',
    'CappedL1Regressor|tasks_small': 'multistage[bcd]',
    'CappedL1Regressor|tasks_wide': 'multistage[fista]',
    # was multistage: the same accelerated gradient, now named as the inner solver
    "CappedTraceClassifier(loss='squared_hinge')|shared_small": 'multistage[fista]',
    "CappedTraceClassifier(loss='squared_hinge')|shared_wide": 'multistage[fista]',
    "CappedTraceClassifier(loss='squared_hinge')|sparse_long": 'multistage[fista]',
    "CappedTraceClassifier(loss='squared_hinge')|tasks_d40": 'multistage[fista]',
    "CappedTraceClassifier(loss='squared_hinge')|tasks_raw": 'multistage[fista]',
    "CappedTraceClassifier(loss='squared_hinge')|tasks_raw_tall": 'multistage[fista]',
    "CappedTraceClassifier(loss='squared_hinge')|tasks_small": 'multistage[fista]',
    "CappedTraceClassifier(loss='squared_hinge')|tasks_wide": 'multistage[fista]',
    # capped trace, squared loss: stages by ADMM where the loss is quadratic (issue 32;
    # bench_cv_two_param --data school: CPU ratio to L21Regressor 132 -> 81); the
    # others keep accelerated gradient, now named as the multi-stage solver's inner one
    'CappedTraceClassifier|shared_small': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceClassifier|shared_wide': 'multistage[fista]',  # was multistage (fista)
    'CappedTraceClassifier|sparse_long': 'multistage[fista]',  # was multistage (fista)
    'CappedTraceClassifier|tasks_d40': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceClassifier|tasks_raw': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceClassifier|tasks_raw_tall': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceClassifier|tasks_small': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceClassifier|tasks_wide': 'multistage[fista]',  # was multistage (fista)
    'CappedTraceRegressor|shared_small': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceRegressor|shared_wide': 'multistage[fista]',  # was multistage (fista)
    'CappedTraceRegressor|sparse_long': 'multistage[fista]',  # was multistage (fista)
    'CappedTraceRegressor|tasks_d40': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceRegressor|tasks_raw': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceRegressor|tasks_raw_tall': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceRegressor|tasks_small': 'multistage[admm]',  # was multistage (fista)
    'CappedTraceRegressor|tasks_wide': 'multistage[fista]',  # was multistage (fista)
    'ClusteredMTLClassifier|shared_small': 'fista',
    'ClusteredMTLClassifier|shared_wide': 'fista',
    'ClusteredMTLClassifier|sparse_long': 'fista',
    'ClusteredMTLClassifier|tasks_d40': 'fista',
    'ClusteredMTLClassifier|tasks_raw': 'mm',
    'ClusteredMTLClassifier|tasks_raw_tall': 'mm',
    'ClusteredMTLClassifier|tasks_small': 'fista',
    'ClusteredMTLClassifier|tasks_wide': 'fista',
    'ClusteredMTLRegressor|shared_small': 'admm',  # was fista: "spectral" penalty, issue 32
    'ClusteredMTLRegressor|shared_wide': 'fista',
    'ClusteredMTLRegressor|sparse_long': 'ladm',  # was fista: "spectral" penalty, issue 32
    'ClusteredMTLRegressor|tasks_d40': 'admm',  # was fista: "spectral" penalty, issue 32
    'ClusteredMTLRegressor|tasks_raw': 'admm',
    'ClusteredMTLRegressor|tasks_raw_tall': 'admm',
    'ClusteredMTLRegressor|tasks_small': 'admm',  # was fista: "spectral" penalty, issue 32
    'ClusteredMTLRegressor|tasks_wide': 'fista',
    'ConvexASOClassifier|shared_small': 'fista',
    'ConvexASOClassifier|shared_wide': 'fista',
    'ConvexASOClassifier|sparse_long': 'fista',
    'ConvexASOClassifier|tasks_d40': 'fista',
    'ConvexASOClassifier|tasks_raw': 'mm',
    'ConvexASOClassifier|tasks_raw_tall': 'mm',
    'ConvexASOClassifier|tasks_small': 'fista',
    'ConvexASOClassifier|tasks_wide': 'fista',
    'ConvexASORegressor|shared_small': 'admm',  # was fista: "spectral" penalty, issue 32
    'ConvexASORegressor|shared_wide': 'fista',
    'ConvexASORegressor|sparse_long': 'ladm',  # was fista: "spectral" penalty, issue 32
    'ConvexASORegressor|tasks_d40': 'admm',  # was fista: "spectral" penalty, issue 32
    'ConvexASORegressor|tasks_raw': 'admm',
    'ConvexASORegressor|tasks_raw_tall': 'admm',
    'ConvexASORegressor|tasks_small': 'admm',  # was fista: "spectral" penalty, issue 32
    'ConvexASORegressor|tasks_wide': 'fista',
    "DirtyModelClassifier(loss='squared_hinge')|shared_small": 'newton(hand_over=50)',
    # was 'fista': working sets added to the dirty model's solvers (bench_auto_choice
    # "DirtyModel m=10 d=300": 3 to 30 times ahead of fista at 0.1 and 0.5 of the tops)
    "DirtyModelClassifier(loss='squared_hinge')|shared_wide": 'working_set[auto]->fista,gram=True',
    "DirtyModelClassifier(loss='squared_hinge')|sparse_long": 'newton(hand_over=50)',  # was fista
    "DirtyModelClassifier(loss='squared_hinge')|tasks_d40": 'newton(hand_over=50)',  # was fista
    "DirtyModelClassifier(loss='squared_hinge')|tasks_raw": 'newton(hand_over=50)',
    "DirtyModelClassifier(loss='squared_hinge')|tasks_raw_tall": 'newton(hand_over=50)',
    "DirtyModelClassifier(loss='squared_hinge')|tasks_small": 'newton(hand_over=50)',
    "DirtyModelClassifier(loss='squared_hinge')|tasks_wide": 'fista',
    'DirtyModelClassifier|shared_small': 'newton(hand_over=50)',
    # was 'fista': working sets added to the dirty model's solvers (bench_auto_choice
    # "DirtyModel m=10 d=300": 3 to 30 times ahead of fista at 0.1 and 0.5 of the tops)
    'DirtyModelClassifier|shared_wide': 'working_set[auto]->fista,gram=True',
    'DirtyModelClassifier|sparse_long': 'newton(hand_over=50)',  # was fista
    'DirtyModelClassifier|tasks_d40': 'newton(hand_over=50)',  # was fista
    'DirtyModelClassifier|tasks_raw': 'newton(hand_over=50)',
    'DirtyModelClassifier|tasks_raw_tall': 'newton(hand_over=50)',
    'DirtyModelClassifier|tasks_small': 'newton(hand_over=50)',
    'DirtyModelClassifier|tasks_wide': 'fista',
    'DirtyModelRegressor|shared_small': 'bcd',
    # was 'fista': working sets added to the dirty model's solvers (bench_auto_choice
    # "DirtyModel m=10 d=300": 3 to 30 times ahead of fista at 0.1 and 0.5 of the tops)
    'DirtyModelRegressor|shared_wide': 'working_set[auto]->fista,gram=True',
    'DirtyModelRegressor|sparse_long': 'fista',
    'DirtyModelRegressor|tasks_d40': 'admm',  # was bcd: DIRTY_MIN_FEATURES
    'DirtyModelRegressor|tasks_raw': 'bcd',
    'DirtyModelRegressor|tasks_raw_tall': 'bcd',
    'DirtyModelRegressor|tasks_small': 'bcd',
    'DirtyModelRegressor|tasks_wide': 'fista',
    'FusedSparseGroupLassoClassifier|shared_small': 'newton(hand_over=50)',
    # was 'fista': working sets added to the model's solvers (bench_auto_choice --grid others
    # --shapes 10x300 100x300 10x10000: taken at 0.5 alpha_max, even to 20 times ahead)
    'FusedSparseGroupLassoClassifier|shared_wide': 'working_set[auto]->fista,gram=True',
    'FusedSparseGroupLassoClassifier|sparse_long': 'newton(hand_over=50)',  # was fista
    'FusedSparseGroupLassoClassifier|tasks_d40': 'newton(hand_over=50)',  # was fista
    'FusedSparseGroupLassoClassifier|tasks_raw': 'newton(hand_over=50)',
    'FusedSparseGroupLassoClassifier|tasks_raw_tall': 'newton(hand_over=50)',
    'FusedSparseGroupLassoClassifier|tasks_small': 'newton(hand_over=50)',
    'FusedSparseGroupLassoClassifier|tasks_wide': 'fista',
    'FusedSparseGroupLassoRegressor|shared_small': 'bcd',
    # was 'fista': working sets added to the model's solvers (bench_auto_choice --grid others
    # --shapes 10x300 100x300 10x10000: taken at 0.5 alpha_max, even to 20 times ahead)
    'FusedSparseGroupLassoRegressor|shared_wide': 'working_set[auto]->fista,gram=True',
    'FusedSparseGroupLassoRegressor|sparse_long': 'fista',
    'FusedSparseGroupLassoRegressor|tasks_d40': 'bcd',
    'FusedSparseGroupLassoRegressor|tasks_raw': 'bcd',
    'FusedSparseGroupLassoRegressor|tasks_raw_tall': 'bcd',
    'FusedSparseGroupLassoRegressor|tasks_small': 'bcd',
    'FusedSparseGroupLassoRegressor|tasks_wide': 'fista',
    'GraphRegularizedClassifier|shared_small': 'newton(hand_over=50)',
    # was 'fista': working sets added to the model's solvers (bench_auto_choice --grid others
    # --shapes 10x300 100x300 10x10000: taken at 0.5 alpha_max, even to 20 times ahead)
    'GraphRegularizedClassifier|shared_wide': 'working_set[auto]->fista,gram=True',
    'GraphRegularizedClassifier|sparse_long': 'newton(hand_over=50)',  # was fista
    'GraphRegularizedClassifier|tasks_d40': 'newton(hand_over=50)',  # was fista
    'GraphRegularizedClassifier|tasks_raw': 'newton(hand_over=50)',
    'GraphRegularizedClassifier|tasks_raw_tall': 'newton(hand_over=50)',
    'GraphRegularizedClassifier|tasks_small': 'newton(hand_over=50)',
    'GraphRegularizedClassifier|tasks_wide': 'fista',
    'GraphRegularizedRegressor|shared_small': 'bcd',
    # was 'fista': working sets added to the model's solvers (bench_auto_choice --grid others
    # --shapes 10x300 100x300 10x10000: taken at 0.5 alpha_max, even to 20 times ahead)
    'GraphRegularizedRegressor|shared_wide': 'working_set[auto]->fista,gram=True',
    'GraphRegularizedRegressor|sparse_long': 'fista',
    'GraphRegularizedRegressor|tasks_d40': 'bcd',
    # was bcd: active_newton for features of spread curvatures, after a head start of bcd
    # (bench_certified.py --sweep, temporal, raw School, MALSAR's example: 18.8x -> 4.1x
    # L21; bcd converges within the head start here: 1.85 ms, bcd 1.70 ms)
    'GraphRegularizedRegressor|tasks_raw': 'active_newton',
    'GraphRegularizedRegressor|tasks_raw_tall': 'active_newton',  # was bcd (as above)
    'GraphRegularizedRegressor|tasks_small': 'bcd',
    'GraphRegularizedRegressor|tasks_wide': 'fista',
    'IndependentLassoClassifier|shared_small': 'newton(hand_over=50)',
    # was working_set[auto]->fista,gram=True (on par)
    'IndependentLassoClassifier|shared_wide': 'fista',
    'IndependentLassoClassifier|sparse_long': 'newton(hand_over=50)',  # was fista
    'IndependentLassoClassifier|tasks_d40': 'newton(hand_over=50)',  # was fista
    'IndependentLassoClassifier|tasks_raw': 'newton(hand_over=50)',
    'IndependentLassoClassifier|tasks_raw_tall': 'newton(hand_over=50)',
    'IndependentLassoClassifier|tasks_small': 'newton(hand_over=50)',
    # was working sets: bench_auto_choice "IndependentLasso m=10 d=300 a=0.01"
    'IndependentLassoClassifier|tasks_wide': 'fista',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    'IndependentLassoRegressor|shared_small': 'task_cd',
    # was fista: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    'IndependentLassoRegressor|shared_wide': 'task_cd',
    'IndependentLassoRegressor|sparse_long': 'fista',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    'IndependentLassoRegressor|tasks_d40': 'task_cd',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    'IndependentLassoRegressor|tasks_raw': 'task_cd',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    'IndependentLassoRegressor|tasks_raw_tall': 'task_cd',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    'IndependentLassoRegressor|tasks_small': 'task_cd',
    # was fista: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    'IndependentLassoRegressor|tasks_wide': 'task_cd',
    # a pure ridge with the logistic loss: truncated Newton ahead of proximal Newton and
    # accelerated gradient on features of one scale (issue 32's fourth round,
    # bench_auto_choice --only IndependentRidge Pooled); the raw-scale cases keep Newton
    'IndependentRidgeClassifier|shared_small': 'newton_cg',  # was newton(hand_over=50)
    'IndependentRidgeClassifier|shared_wide': 'newton_cg',  # was fista
    'IndependentRidgeClassifier|sparse_long': 'newton_cg',  # was newton(hand_over=50)
    'IndependentRidgeClassifier|tasks_d40': 'newton_cg',  # was newton(hand_over=50)
    'IndependentRidgeClassifier|tasks_raw': 'newton(hand_over=50)',
    'IndependentRidgeClassifier|tasks_raw_tall': 'newton(hand_over=50)',
    'IndependentRidgeClassifier|tasks_small': 'newton_cg',  # was newton(hand_over=50)
    'IndependentRidgeClassifier|tasks_wide': 'newton_cg',  # was fista
    'IndependentRidgeRegressor|shared_small': 'exact',
    'IndependentRidgeRegressor|shared_wide': 'fista',
    'IndependentRidgeRegressor|sparse_long': 'fista',
    'IndependentRidgeRegressor|tasks_d40': 'exact',
    'IndependentRidgeRegressor|tasks_raw': 'exact',
    'IndependentRidgeRegressor|tasks_raw_tall': 'exact',
    'IndependentRidgeRegressor|tasks_small': 'exact',
    'IndependentRidgeRegressor|tasks_wide': 'fista',
    "L1InfClassifier(loss='logistic')|shared_small": 'fista',
    "L1InfClassifier(loss='logistic')|shared_wide": 'fista',
    "L1InfClassifier(loss='logistic')|sparse_long": 'fista',
    "L1InfClassifier(loss='logistic')|tasks_d40": 'fista',
    "L1InfClassifier(loss='logistic')|tasks_raw": 'fista',
    "L1InfClassifier(loss='logistic')|tasks_raw_tall": 'fista',
    "L1InfClassifier(loss='logistic')|tasks_small": 'fista',
    "L1InfClassifier(loss='logistic')|tasks_wide": 'fista',
    "L1InfClassifier(loss='squared_hinge')|shared_small": 'fista',
    "L1InfClassifier(loss='squared_hinge')|shared_wide": 'fista',
    "L1InfClassifier(loss='squared_hinge')|sparse_long": 'fista',
    "L1InfClassifier(loss='squared_hinge')|tasks_d40": 'fista',
    "L1InfClassifier(loss='squared_hinge')|tasks_raw": 'fista',
    "L1InfClassifier(loss='squared_hinge')|tasks_raw_tall": 'fista',
    "L1InfClassifier(loss='squared_hinge')|tasks_small": 'fista',
    "L1InfClassifier(loss='squared_hinge')|tasks_wide": 'fista',
    'L1InfClassifier|shared_small': 'lp',
    'L1InfClassifier|shared_wide': 'lp',
    'L1InfClassifier|sparse_long': 'lp',
    'L1InfClassifier|tasks_d40': 'lp',
    'L1InfClassifier|tasks_raw': 'lp',
    'L1InfClassifier|tasks_raw_tall': 'lp',
    'L1InfClassifier|tasks_small': 'lp',
    'L1InfClassifier|tasks_wide': 'lp',
    'L1InfRegressor|shared_small': 'fista',
    'L1InfRegressor|shared_wide': 'fista',
    'L1InfRegressor|sparse_long': 'fista',
    'L1InfRegressor|tasks_d40': 'fista',
    'L1InfRegressor|tasks_raw': 'fista',
    'L1InfRegressor|tasks_raw_tall': 'fista',
    'L1InfRegressor|tasks_small': 'fista',
    'L1InfRegressor|tasks_wide': 'fista',
    "L21Classifier(loss='squared_hinge')|shared_small": 'newton(hand_over=50)',
    "L21Classifier(loss='squared_hinge')|shared_wide": 'working_set[auto]->fista,gram=True',
    "L21Classifier(loss='squared_hinge')|sparse_long": 'newton(hand_over=50)',  # was fista
    "L21Classifier(loss='squared_hinge')|tasks_d40": 'newton(hand_over=50)',  # was fista
    "L21Classifier(loss='squared_hinge')|tasks_raw": 'newton(hand_over=50)',
    "L21Classifier(loss='squared_hinge')|tasks_raw_tall": 'newton(hand_over=50)',
    "L21Classifier(loss='squared_hinge')|tasks_small": 'newton(hand_over=50)',
    # was working sets: bench_auto_choice "IndependentLasso m=10 d=300 a=0.01"
    "L21Classifier(loss='squared_hinge')|tasks_wide": 'fista',
    'L21Classifier|shared_small': 'newton(hand_over=50)',
    'L21Classifier|shared_wide': 'working_set[auto]->fista,gram=True',
    'L21Classifier|sparse_long': 'newton(hand_over=50)',  # was fista
    'L21Classifier|tasks_d40': 'newton(hand_over=50)',  # was fista
    'L21Classifier|tasks_raw': 'newton(hand_over=50)',
    'L21Classifier|tasks_raw_tall': 'newton(hand_over=50)',
    'L21Classifier|tasks_small': 'newton(hand_over=50)',
    # was working sets: bench_auto_choice "IndependentLasso m=10 d=300 a=0.01"
    'L21Classifier|tasks_wide': 'fista',
    'L21Regressor|shared_small': 'bcd',
    'L21Regressor|shared_wide': 'working_set[auto]->cd,gram=False',
    'L21Regressor|sparse_long': 'fista',
    # was 'fista': bench_auto_choice "L21 squared m=10 d=40" (bcd ahead of fista)
    'L21Regressor|tasks_d40': 'bcd',
    'L21Regressor|tasks_raw': 'admm',
    'L21Regressor|tasks_raw_tall': 'admm',
    # was 'fista': bench_auto_choice "L21 squared m=10 d=40" (bcd ahead of fista)
    'L21Regressor|tasks_small': 'bcd',
    # was working sets: bench_auto_choice "IndependentLasso m=10 d=300 a=0.01"
    'L21Regressor|tasks_wide': 'fista',
    'MeanRegularizedClassifier|shared_small': 'newton(hand_over=50)',
    'MeanRegularizedClassifier|shared_wide': 'fista',
    'MeanRegularizedClassifier|sparse_long': 'newton(hand_over=50)',  # was fista
    'MeanRegularizedClassifier|tasks_d40': 'newton(hand_over=50)',  # was fista
    'MeanRegularizedClassifier|tasks_raw': 'newton(hand_over=50)',
    'MeanRegularizedClassifier|tasks_raw_tall': 'newton(hand_over=50)',
    'MeanRegularizedClassifier|tasks_small': 'newton(hand_over=50)',
    'MeanRegularizedClassifier|tasks_wide': 'fista',
    'MeanRegularizedRegressor|shared_small': 'exact',
    'MeanRegularizedRegressor|shared_wide': 'fista',
    'MeanRegularizedRegressor|sparse_long': 'fista',
    'MeanRegularizedRegressor|tasks_d40': 'exact',
    'MeanRegularizedRegressor|tasks_raw': 'exact',
    'MeanRegularizedRegressor|tasks_raw_tall': 'exact',
    'MeanRegularizedRegressor|tasks_small': 'exact',
    'MeanRegularizedRegressor|tasks_wide': 'fista',
    "MultiTaskClassifier(penalty='l1')|shared_small": 'newton(hand_over=50)',
    # was working_set[auto]->fista,gram=True (on par)
    "MultiTaskClassifier(penalty='l1')|shared_wide": 'fista',
    "MultiTaskClassifier(penalty='l1')|sparse_long": 'newton(hand_over=50)',  # was fista
    "MultiTaskClassifier(penalty='l1')|tasks_d40": 'newton(hand_over=50)',  # was fista
    "MultiTaskClassifier(penalty='l1')|tasks_raw": 'newton(hand_over=50)',
    "MultiTaskClassifier(penalty='l1')|tasks_raw_tall": 'newton(hand_over=50)',
    "MultiTaskClassifier(penalty='l1')|tasks_small": 'newton(hand_over=50)',
    # was working sets: bench_auto_choice "IndependentLasso m=10 d=300 a=0.01"
    "MultiTaskClassifier(penalty='l1')|tasks_wide": 'fista',
    "MultiTaskClassifier(penalty='l21')|shared_small": 'newton(hand_over=50)',
    "MultiTaskClassifier(penalty='l21')|shared_wide": 'working_set[auto]->fista,gram=True',
    "MultiTaskClassifier(penalty='l21')|sparse_long": 'newton(hand_over=50)',  # was fista
    "MultiTaskClassifier(penalty='l21')|tasks_d40": 'newton(hand_over=50)',  # was fista
    "MultiTaskClassifier(penalty='l21')|tasks_raw": 'newton(hand_over=50)',
    "MultiTaskClassifier(penalty='l21')|tasks_raw_tall": 'newton(hand_over=50)',
    "MultiTaskClassifier(penalty='l21')|tasks_small": 'newton(hand_over=50)',
    # was working sets: bench_auto_choice "IndependentLasso m=10 d=300 a=0.01"
    "MultiTaskClassifier(penalty='l21')|tasks_wide": 'fista',
    # was 'fista': bench_auto_choice "TraceNorm logistic m=10 d=10" (newton_admm ahead)
    'MultiTaskClassifier|shared_small': 'newton_admm',
    'MultiTaskClassifier|shared_wide': 'fista',
    'MultiTaskClassifier|sparse_long': 'fista',
    'MultiTaskClassifier|tasks_d40': 'fista',
    # was 'mm': bench_auto_choice "TraceNorm logistic m=10 d=10" (newton_admm ahead)
    'MultiTaskClassifier|tasks_raw': 'newton_admm',
    # was 'mm': bench_auto_choice "TraceNorm logistic m=10 d=10" (newton_admm ahead)
    'MultiTaskClassifier|tasks_raw_tall': 'newton_admm',
    # was 'fista': bench_auto_choice "TraceNorm logistic m=10 d=10" (newton_admm ahead)
    'MultiTaskClassifier|tasks_small': 'newton_admm',
    'MultiTaskClassifier|tasks_wide': 'fista',
    "MultiTaskRegressor(penalty='column_l2')|shared_small": 'fista',
    "MultiTaskRegressor(penalty='column_l2')|shared_wide": 'fista',
    "MultiTaskRegressor(penalty='column_l2')|sparse_long": 'fista',
    "MultiTaskRegressor(penalty='column_l2')|tasks_d40": 'fista',
    "MultiTaskRegressor(penalty='column_l2')|tasks_raw": 'admm',
    "MultiTaskRegressor(penalty='column_l2')|tasks_raw_tall": 'admm',
    "MultiTaskRegressor(penalty='column_l2')|tasks_small": 'fista',
    "MultiTaskRegressor(penalty='column_l2')|tasks_wide": 'fista',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    "MultiTaskRegressor(penalty='l1')|shared_small": 'task_cd',
    # was fista: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    "MultiTaskRegressor(penalty='l1')|shared_wide": 'task_cd',
    "MultiTaskRegressor(penalty='l1')|sparse_long": 'fista',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    "MultiTaskRegressor(penalty='l1')|tasks_d40": 'task_cd',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    "MultiTaskRegressor(penalty='l1')|tasks_raw": 'task_cd',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    "MultiTaskRegressor(penalty='l1')|tasks_raw_tall": 'task_cd',
    # was bcd: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    "MultiTaskRegressor(penalty='l1')|tasks_small": 'task_cd',
    # was fista: bench_auto_choice --only IndependentLasso (docs/scale.md, "task by task")
    "MultiTaskRegressor(penalty='l1')|tasks_wide": 'task_cd',
    "MultiTaskRegressor(penalty='l21')|shared_small": 'bcd',
    "MultiTaskRegressor(penalty='l21')|shared_wide": 'working_set[auto]->cd,gram=False',
    "MultiTaskRegressor(penalty='l21')|sparse_long": 'fista',
    # was 'fista': bench_auto_choice "L21 squared m=10 d=40" (bcd ahead of fista)
    "MultiTaskRegressor(penalty='l21')|tasks_d40": 'bcd',
    "MultiTaskRegressor(penalty='l21')|tasks_raw": 'admm',
    "MultiTaskRegressor(penalty='l21')|tasks_raw_tall": 'admm',
    # was 'fista': bench_auto_choice "L21 squared m=10 d=40" (bcd ahead of fista)
    "MultiTaskRegressor(penalty='l21')|tasks_small": 'bcd',
    # was working sets: bench_auto_choice "IndependentLasso m=10 d=300 a=0.01"
    "MultiTaskRegressor(penalty='l21')|tasks_wide": 'fista',
    "MultiTaskRegressor(penalty='ridge')|shared_small": 'exact',
    "MultiTaskRegressor(penalty='ridge')|shared_wide": 'fista',
    "MultiTaskRegressor(penalty='ridge')|sparse_long": 'fista',
    "MultiTaskRegressor(penalty='ridge')|tasks_d40": 'exact',
    "MultiTaskRegressor(penalty='ridge')|tasks_raw": 'exact',
    "MultiTaskRegressor(penalty='ridge')|tasks_raw_tall": 'exact',
    "MultiTaskRegressor(penalty='ridge')|tasks_small": 'exact',
    "MultiTaskRegressor(penalty='ridge')|tasks_wide": 'fista',
    # was 'fista': bench_auto_choice "TraceNorm squared m=10 d=10" (admm ahead of fista)
    'MultiTaskRegressor|shared_small': 'admm',
    'MultiTaskRegressor|shared_wide': 'fista',
    'MultiTaskRegressor|sparse_long': 'fista',
    # was 'fista': bench_auto_choice "TraceNorm squared m=10 d=10" (admm ahead of fista)
    'MultiTaskRegressor|tasks_d40': 'admm',
    'MultiTaskRegressor|tasks_raw': 'admm',
    'MultiTaskRegressor|tasks_raw_tall': 'admm',
    # was 'fista': bench_auto_choice "TraceNorm squared m=10 d=10" (admm ahead of fista)
    'MultiTaskRegressor|tasks_small': 'admm',
    'MultiTaskRegressor|tasks_wide': 'fista',
    # truncated Newton: as the independent ridge (issue 32's fourth round)
    'PooledClassifier|shared_small': 'newton_cg',  # was newton(hand_over=50)
    'PooledClassifier|shared_wide': 'newton_cg',  # was fista
    'PooledClassifier|sparse_long': 'newton_cg',  # was newton(hand_over=50)
    'PooledClassifier|tasks_d40': 'newton_cg',  # was newton(hand_over=50)
    'PooledClassifier|tasks_raw': 'newton(hand_over=50)',
    'PooledClassifier|tasks_raw_tall': 'newton(hand_over=50)',
    'PooledClassifier|tasks_small': 'newton_cg',  # was newton(hand_over=50)
    'PooledClassifier|tasks_wide': 'newton_cg',  # was fista
    'PooledRegressor|shared_small': 'exact',
    'PooledRegressor|shared_wide': 'fista',
    'PooledRegressor|sparse_long': 'fista',
    'PooledRegressor|tasks_d40': 'exact',
    'PooledRegressor|tasks_raw': 'exact',
    'PooledRegressor|tasks_raw_tall': 'exact',
    'PooledRegressor|tasks_small': 'exact',
    'PooledRegressor|tasks_wide': 'fista',
    # split models: no majorization-minimization on tasks of fewer than 2 d rows, Newton-ADMM
    # up to 64 features on few tasks (issue 32's fourth round, bench_auto_choice --only
    # RobustFeatureLearning RobustMTL SparseLowRank)
    'RobustFeatureLearningClassifier|shared_small': 'newton_admm',
    'RobustFeatureLearningClassifier|shared_wide': 'fista',  # was mm
    'RobustFeatureLearningClassifier|sparse_long': 'newton_admm',  # was mm
    'RobustFeatureLearningClassifier|tasks_d40': 'newton_admm',  # was mm
    'RobustFeatureLearningClassifier|tasks_raw': 'newton_admm',
    'RobustFeatureLearningClassifier|tasks_raw_tall': 'newton_admm',
    'RobustFeatureLearningClassifier|tasks_small': 'newton_admm',
    'RobustFeatureLearningClassifier|tasks_wide': 'fista',  # was mm
    # was mm: bench_certified --sweep --models rmtfl (ADMM certifies every sweep point)
    'RobustFeatureLearningRegressor|shared_small': 'admm',
    'RobustFeatureLearningRegressor|shared_wide': 'fista',  # was mm
    'RobustFeatureLearningRegressor|sparse_long': 'fista',  # was mm
    # was mm: bench_certified --sweep --models rmtfl (ADMM certifies every sweep point)
    'RobustFeatureLearningRegressor|tasks_d40': 'admm',
    # was mm: bench_certified --sweep --models rmtfl (ADMM certifies every sweep point)
    'RobustFeatureLearningRegressor|tasks_raw': 'admm',
    # was mm: bench_certified --sweep --models rmtfl (ADMM certifies every sweep point)
    'RobustFeatureLearningRegressor|tasks_raw_tall': 'admm',
    # was mm: bench_certified --sweep --models rmtfl (ADMM certifies every sweep point)
    'RobustFeatureLearningRegressor|tasks_small': 'admm',
    'RobustFeatureLearningRegressor|tasks_wide': 'fista',  # was mm
    'RobustMTLClassifier(n_groups=2)|shared_small': 'dc(ladm)',
    'RobustMTLClassifier(n_groups=2)|shared_wide': 'dc(ladm)',
    'RobustMTLClassifier(n_groups=2)|sparse_long': 'dc(ladm)',
    'RobustMTLClassifier(n_groups=2)|tasks_d40': 'dc(ladm)',
    'RobustMTLClassifier(n_groups=2)|tasks_raw': 'dc(ladm)',
    'RobustMTLClassifier(n_groups=2)|tasks_raw_tall': 'dc(ladm)',
    'RobustMTLClassifier(n_groups=2)|tasks_small': 'dc(ladm)',
    'RobustMTLClassifier(n_groups=2)|tasks_wide': 'dc(ladm)',
    'RobustMTLClassifier|shared_small': 'newton_admm',
    'RobustMTLClassifier|shared_wide': 'ladm',  # was mm
    'RobustMTLClassifier|sparse_long': 'newton_admm',  # was mm
    'RobustMTLClassifier|tasks_d40': 'newton_admm',  # was mm
    'RobustMTLClassifier|tasks_raw': 'newton_admm',
    'RobustMTLClassifier|tasks_raw_tall': 'newton_admm',
    'RobustMTLClassifier|tasks_small': 'newton_admm',
    'RobustMTLClassifier|tasks_wide': 'ladm',  # was mm
    "RobustMTLRegressor(formulation='constrained')|shared_small": 'ladm',
    "RobustMTLRegressor(formulation='constrained')|shared_wide": 'ladm',
    "RobustMTLRegressor(formulation='constrained')|sparse_long": 'ladm',
    "RobustMTLRegressor(formulation='constrained')|tasks_d40": 'ladm',
    "RobustMTLRegressor(formulation='constrained')|tasks_raw": 'ladm',
    "RobustMTLRegressor(formulation='constrained')|tasks_raw_tall": 'ladm',
    "RobustMTLRegressor(formulation='constrained')|tasks_small": 'ladm',
    "RobustMTLRegressor(formulation='constrained')|tasks_wide": 'ladm',
    'RobustMTLRegressor(n_groups=2)|shared_small': 'dc(ladm)',
    'RobustMTLRegressor(n_groups=2)|shared_wide': 'dc(ladm)',
    'RobustMTLRegressor(n_groups=2)|sparse_long': 'dc(ladm)',
    'RobustMTLRegressor(n_groups=2)|tasks_d40': 'dc(ladm)',
    'RobustMTLRegressor(n_groups=2)|tasks_raw': 'dc(ladm)',
    'RobustMTLRegressor(n_groups=2)|tasks_raw_tall': 'dc(ladm)',
    'RobustMTLRegressor(n_groups=2)|tasks_small': 'dc(ladm)',
    'RobustMTLRegressor(n_groups=2)|tasks_wide': 'dc(ladm)',
    'RobustMTLRegressor|shared_small': 'admm',
    'RobustMTLRegressor|shared_wide': 'ladm',  # was mm
    'RobustMTLRegressor|sparse_long': 'ladm',  # was mm
    'RobustMTLRegressor|tasks_d40': 'admm',
    'RobustMTLRegressor|tasks_raw': 'admm',
    'RobustMTLRegressor|tasks_raw_tall': 'admm',
    'RobustMTLRegressor|tasks_small': 'admm',
    'RobustMTLRegressor|tasks_wide': 'ladm',  # was mm
    "SparseLowRankClassifier(loss='squared_hinge')|shared_small": 'newton_admm',
    "SparseLowRankClassifier(loss='squared_hinge')|shared_wide": 'ladm',  # was mm
    "SparseLowRankClassifier(loss='squared_hinge')|sparse_long": 'newton_admm',  # was mm
    "SparseLowRankClassifier(loss='squared_hinge')|tasks_d40": 'newton_admm',  # was mm
    "SparseLowRankClassifier(loss='squared_hinge')|tasks_raw": 'newton_admm',
    "SparseLowRankClassifier(loss='squared_hinge')|tasks_raw_tall": 'newton_admm',
    "SparseLowRankClassifier(loss='squared_hinge')|tasks_small": 'newton_admm',
    "SparseLowRankClassifier(loss='squared_hinge')|tasks_wide": 'ladm',  # was mm
    'SparseLowRankClassifier|shared_small': 'newton_admm',
    'SparseLowRankClassifier|shared_wide': 'fista',  # was mm
    'SparseLowRankClassifier|sparse_long': 'newton_admm',  # was mm
    'SparseLowRankClassifier|tasks_d40': 'newton_admm',  # was mm
    'SparseLowRankClassifier|tasks_raw': 'newton_admm',
    'SparseLowRankClassifier|tasks_raw_tall': 'newton_admm',
    'SparseLowRankClassifier|tasks_small': 'newton_admm',
    'SparseLowRankClassifier|tasks_wide': 'fista',  # was mm
    'SparseLowRankRegressor|shared_small': 'admm',
    'SparseLowRankRegressor|shared_wide': 'ladm',  # was mm
    'SparseLowRankRegressor|sparse_long': 'ladm',  # was mm
    'SparseLowRankRegressor|tasks_d40': 'admm',
    'SparseLowRankRegressor|tasks_raw': 'admm',
    'SparseLowRankRegressor|tasks_raw_tall': 'admm',
    'SparseLowRankRegressor|tasks_small': 'admm',
    'SparseLowRankRegressor|tasks_wide': 'ladm',  # was mm
    'TaskRelationshipClassifier|shared_small': 'fista',
    'TaskRelationshipClassifier|shared_wide': 'fista',
    'TaskRelationshipClassifier|sparse_long': 'fista',
    'TaskRelationshipClassifier|tasks_d40': 'fista',
    'TaskRelationshipClassifier|tasks_raw': 'mm',
    'TaskRelationshipClassifier|tasks_raw_tall': 'mm',
    'TaskRelationshipClassifier|tasks_small': 'fista',
    'TaskRelationshipClassifier|tasks_wide': 'fista',
    'TaskRelationshipRegressor|shared_small': 'admm',  # was fista: "spectral" penalty, issue 32
    'TaskRelationshipRegressor|shared_wide': 'fista',
    'TaskRelationshipRegressor|sparse_long': 'ladm',  # was fista: "spectral" penalty, issue 32
    'TaskRelationshipRegressor|tasks_d40': 'admm',  # was fista: "spectral" penalty, issue 32
    'TaskRelationshipRegressor|tasks_raw': 'admm',
    'TaskRelationshipRegressor|tasks_raw_tall': 'admm',
    'TaskRelationshipRegressor|tasks_small': 'admm',  # was fista: "spectral" penalty, issue 32
    'TaskRelationshipRegressor|tasks_wide': 'fista',
    'TemporalGroupLassoClassifier|shared_small': 'newton(hand_over=50)',
    # was 'fista': working sets added to the model's solvers (bench_auto_choice --grid others
    # --shapes 10x300 100x300 10x10000: taken at 0.5 alpha_max, even to 20 times ahead)
    'TemporalGroupLassoClassifier|shared_wide': 'working_set[auto]->fista,gram=True',
    'TemporalGroupLassoClassifier|sparse_long': 'newton(hand_over=50)',  # was fista
    'TemporalGroupLassoClassifier|tasks_d40': 'newton(hand_over=50)',  # was fista
    'TemporalGroupLassoClassifier|tasks_raw': 'newton(hand_over=50)',
    'TemporalGroupLassoClassifier|tasks_raw_tall': 'newton(hand_over=50)',
    'TemporalGroupLassoClassifier|tasks_small': 'newton(hand_over=50)',
    'TemporalGroupLassoClassifier|tasks_wide': 'fista',
    'TemporalGroupLassoRegressor|shared_small': 'bcd',
    # was 'fista': working sets added to the model's solvers (bench_auto_choice --grid others
    # --shapes 10x300 100x300 10x10000: taken at 0.5 alpha_max, even to 20 times ahead)
    'TemporalGroupLassoRegressor|shared_wide': 'working_set[auto]->fista,gram=True',
    'TemporalGroupLassoRegressor|sparse_long': 'fista',
    'TemporalGroupLassoRegressor|tasks_d40': 'bcd',
    'TemporalGroupLassoRegressor|tasks_raw': 'active_newton',  # was bcd (as above)
    'TemporalGroupLassoRegressor|tasks_raw_tall': 'active_newton',  # was bcd (as above)
    'TemporalGroupLassoRegressor|tasks_small': 'bcd',
    'TemporalGroupLassoRegressor|tasks_wide': 'fista',
    "TraceNormClassifier(loss='squared_hinge')|shared_small": 'fista',
    "TraceNormClassifier(loss='squared_hinge')|shared_wide": 'fista',
    "TraceNormClassifier(loss='squared_hinge')|sparse_long": 'fista',
    "TraceNormClassifier(loss='squared_hinge')|tasks_d40": 'fista',
    "TraceNormClassifier(loss='squared_hinge')|tasks_raw": 'mm',
    "TraceNormClassifier(loss='squared_hinge')|tasks_raw_tall": 'mm',
    "TraceNormClassifier(loss='squared_hinge')|tasks_small": 'fista',
    "TraceNormClassifier(loss='squared_hinge')|tasks_wide": 'fista',
    # was 'fista': bench_auto_choice "TraceNorm logistic m=10 d=10" (newton_admm ahead)
    'TraceNormClassifier|shared_small': 'newton_admm',
    'TraceNormClassifier|shared_wide': 'fista',
    'TraceNormClassifier|sparse_long': 'fista',
    'TraceNormClassifier|tasks_d40': 'fista',
    # was 'mm': bench_auto_choice "TraceNorm logistic m=10 d=10" (newton_admm ahead)
    'TraceNormClassifier|tasks_raw': 'newton_admm',
    # was 'mm': bench_auto_choice "TraceNorm logistic m=10 d=10" (newton_admm ahead)
    'TraceNormClassifier|tasks_raw_tall': 'newton_admm',
    # was 'fista': bench_auto_choice "TraceNorm logistic m=10 d=10" (newton_admm ahead)
    'TraceNormClassifier|tasks_small': 'newton_admm',
    'TraceNormClassifier|tasks_wide': 'fista',
    # was 'fista': bench_auto_choice "TraceNorm squared m=10 d=10" (admm ahead of fista)
    'TraceNormRegressor|shared_small': 'admm',
    'TraceNormRegressor|shared_wide': 'fista',
    'TraceNormRegressor|sparse_long': 'fista',
    # was 'fista': bench_auto_choice "TraceNorm squared m=10 d=10" (admm ahead of fista)
    'TraceNormRegressor|tasks_d40': 'admm',
    'TraceNormRegressor|tasks_raw': 'admm',
    'TraceNormRegressor|tasks_raw_tall': 'admm',
    # was 'fista': bench_auto_choice "TraceNorm squared m=10 d=10" (admm ahead of fista)
    'TraceNormRegressor|tasks_small': 'admm',
    'TraceNormRegressor|tasks_wide': 'fista',
}


def test_the_table_covers_every_model_and_case():
    assert set(PINNED) == {f"{m}|{c}" for m in MODELS for c in CASES}


@pytest.mark.parametrize("key", sorted(PINNED))
def test_auto_choice_is_pinned(key):
    model, case_name = key.split("|")
    assert describe_choice(model, case_name) == PINNED[key]
