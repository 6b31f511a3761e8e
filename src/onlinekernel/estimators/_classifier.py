"""DSGClassifier: kernel classification by doubly stochastic gradients."""
import functools
from types import MethodType

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from onlinekernel.integrations import dask as _dask
from onlinekernel.estimators import _docs
from onlinekernel.estimators._base import BaseDSG, dask_rows, transactional


_PROBABILITY_LINKS = ("logistic", "softmax")


class _with_probabilities:
    """A method only for losses with a probability link (``hasattr`` is False otherwise).

    Like scikit-learn's ``available_if``, but the AttributeError says why
    and which loss to choose instead.
    """

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        try:
            loss = obj.loss_ if hasattr(obj, "loss_") else obj._resolve_base_loss()
        except Exception as exc:  # a bad loss parameter: fit says what is wrong
            raise AttributeError(f"{self.fn.__name__} depends on the loss, and loss="
                                 f"{obj.loss!r} is not usable: {exc}") from exc
        if getattr(loss, "link", None) not in _PROBABILITY_LINKS:
            raise AttributeError(
                f"{type(obj).__name__} with the {getattr(loss, 'name', None) or loss!r} loss "
                f"has no {self.fn.__name__}: its scores are margins, not probabilities. "
                f"Use loss='logistic' (multinomial for more classes), or calibrate the "
                f"scores with sklearn.calibration.CalibratedClassifierCV")
        return MethodType(self.fn, obj)


@_docs.fill
class DSGClassifier(ClassifierMixin, BaseDSG):
    r"""Kernel classifier trained by doubly stochastic functional gradients.

    Learns :math:`f(x) = b + \sum_j \sum_k \alpha_{jk} \phi_{\omega_{jk}}(x)`
    minimising :math:`E[\ell(f(x), y)] + \frac{\alpha}{2}\|f\|_{\mathcal H}^2`
    (Dai et al., 2014).  Each step takes a mini-batch of ``batch_size`` rows
    and a block of ``block_size`` random features regenerated from
    ``(seed_, j)``: while fewer than ``max_blocks`` blocks exist the step adds
    one; once the budget is full it reuses the existing blocks (by default it
    moves all of them: a functional gradient step projected on the budget's
    features; see ``reuse``), so the cost of a step stops growing.  Older
    coefficients shrink by ``1 - step * alpha``.

    Binary problems use one output.  For more classes, losses of the logistic
    family switch to the native multinomial loss and margin losses (hinge,
    squared hinge) train one output per class (one-vs-rest).

    Parameters
    ----------
    loss : str or loss object, default="logistic"
        A registered loss name (see :func:`onlinekernel.available_losses`),
        a compiled loss or an :class:`onlinekernel.Loss` instance.  The
        logistic loss (multinomial beyond two classes) is the default: it
        gives ``predict_proba``, and its batch solver (Newton-CG) converges
        in a few steps at any ``alpha``, where the hinge loss's dual
        coordinate descent slows down as ``alpha * n`` gets small.
    kernel : str or CyFeatureMap, default="gaussian"
        A registered feature-map name or a feature-map instance (its own
        parameters are used as they are).
    gamma : "scale", "auto" or float, default="scale"
        Kernel bandwidth for maps that take one; ``"scale"`` uses
        ``1 / (n_features * X.var())`` of the first data seen (``fit``: all
        of X; ``partial_fit``: the first batch), as in ``SVC``.
        ``"auto"``: where ``fit`` runs a batch solver on a new model, the
        multiple of ``"scale"`` (each power of two from 1/16 to 16) of least
        held-out error of a small model of the same loss and solver (1,024
        features, at most 4,000 training rows, its penalty from ``alpha``,
        ``"auto"`` included; scored on up to 2,000 of a quarter of the rows
        held out by content, the mean of two such splits on sets of up to
        2,000 rows); the model is then the one ``gamma=gamma_`` gives.
        Elsewhere (``solver="sgd"``, ``partial_fit``, dask collections, a
        map fitted on data or given as an object) it is ``"scale"``.  The
        regressor defaults to it (see :class:`DSGRegressor`); the classifier
        does not, by measurement (full training sets of
        ``benchmarks/quality.py``, test error): a9a 16.3 % -> 14.9 % and w8a
        within its tolerance, but magic04 12.4 % -> 13.2 %, ijcnn1 2.1 % ->
        2.5 %, covtype_binary_sub20k 18.4 % -> 20.9 %, usps 6.1 % -> 6.2 %:
        at the default ``alpha`` the small model prefers too smooth a kernel.
    {{map_params}}
    loss_params : dict, default=None
        Parameters of the loss named by ``loss`` (``{"delta": 2.0}`` for
        ``"huber"``); a loss object carries its own, which a grid search
        sets by nested names (``loss__delta``).
    input_scaling : (mean, scale) or None, default=None
        A fixed standardisation that is part of the model: every ``X``
        given to ``fit``, ``partial_fit`` and ``predict`` is first mapped to
        ``(X - mean) / scale`` column by column, so a model file carries its
        input scaling (the command line's ``--standardize`` sets it from a
        first pass over the file).  To learn a scaling in Python, a
        ``StandardScaler`` in a ``Pipeline`` is the usual way.
    alpha : float or "auto", default=1e-6
        Regularisation strength :math:`\nu` of the RKHS norm: ``fit``
        minimises the mean loss plus ``alpha / 2`` times the squared norm
        (an SVC's ``C`` on ``n`` rows is ``alpha = 1 / (C n)``).  Each
        stochastic step shrinks the coefficients by ``1 - step * alpha``.
        The default stays a number by measurement (the full training sets of
        seven classification sets of ``benchmarks/quality.py``, one
        thread): ``"auto"`` gained a9a (16.35 % -> 15.24 %) but lost ijcnn1
        (2.10 % -> 2.30 %, its test rows differ from its training rows) and
        magic04 (12.38 % -> 12.99 %), and took 1.1 to 4.6 times as long
        (letter 262 s where 1e-6 takes 78 s); the regressors, whose Cholesky
        path costs little, default to ``"auto"``.
        ``"auto"``: where ``fit`` runs a batch solver, the penalty of least
        error (classifiers; the mean loss for regressors) on about
        ``validation_fraction`` of the rows held out, over ``10^-k`` for
        ``k = 2 .. 10``, strongest first, each solve warm-started from the
        last, stopping one past the best, then the half-decade next to the
        best (beyond 10,000 training rows, on a subsample of that many, the
        penalty then scaled to all rows as an SVM's ``C`` is: ``alpha``
        times the rows is kept); the model is then fitted on all rows with
        it.  The held-out
        rows are chosen by a seeded hash of their content, so copies of a
        row fall on one side and a weight ``w`` stays ``w`` copies of the
        row.  It costs a few solves more than one penalty (those at strong
        penalties converge fast).  With ``solver="sgd"``, in ``partial_fit``,
        on dask collections, or when no row (or every row) is held out, no
        path runs and ``"auto"`` is 1e-6.  The penalty used is ``alpha_``.
    fit_intercept : bool, default=True
        Learn an unpenalised intercept.
    batch_size : int, default=32
        Rows per training step.
    block_size : int, default=256
        Random features per block (``F``), at most 2**20.  The model has
        ``max_blocks * block_size`` random features (``n_random_features_``
        after fitting); scikit-learn's ``RBFSampler(n_components=N)``
        corresponds to ``n_components=N``.
    max_blocks : int or None, default=16
        Feature budget in blocks; ``None`` grows one block per step without
        bound (plain DSG, cost per step growing with the step count).
    n_components : int or None, default=None
        The feature budget as a number of random features, as scikit-learn's
        ``RBFSampler(n_components=N)`` and ``Nystroem(n_components=N)``
        take it.  The features come in whole blocks, so ``N`` is rounded up
        to a multiple of ``block_size``: the budget is
        ``ceil(N / block_size)`` blocks, in place of ``max_blocks`` (which
        is then ignored); ``n_components=1024, block_size=256`` is 4 blocks
        and 1,024 features, ``n_components=1000`` the same 4 blocks.
        ``None``: the budget is ``max_blocks * block_size``.
        ``n_random_features_`` reaches it once the budget is full (a batch
        solver's ``fit`` uses all of it).
    max_model_bytes : int or None, default=None
        A cap on the model's memory in bytes, for a model that grows with
        the data (``max_blocks=None``: Dai et al.'s unbounded DSG, one new
        block per step): the budget becomes the most blocks whose learned
        state fits, ``max_model_bytes // (2 * block_size * n_outputs *
        itemsize)`` (the coefficients and their running average, 4 KiB per
        block of 256 features for one output in float64); with
        ``max_blocks`` or ``n_components`` also given, the smaller budget
        wins.  At the cap the model stops growing and keeps learning as
        ``reuse`` says: by default every step moves all of its blocks, so
        the time per row stops growing; ``reuse="none"`` replaces the
        oldest block instead (a model of the most recent steps).  The
        blocks' random parameters live in the block cache, bounded by
        ``cache_bytes``.  ``None``: no byte cap.
    learning_rate : {"inverse", "invsqrt", "constant", "pegasos"}, default="invsqrt"
        Step schedule: ``eta0 / (1 + (t-1)/t0)``, ``eta0 / sqrt(1 + (t-1)/t0)``,
        ``eta0`` or ``1 / (alpha t)``.
    eta0 : float, default=64.0
        Initial step.  It multiplies the *mean* gradient of a mini-batch, so
        each row moves its own prediction by about ``step / batch_size``
        times its gradient.  With the default preconditioned update (see
        ``precondition``) about 2 per row is right (``eta0 = 2 *
        batch_size``); the plain update (``precondition=False``) with
        losses of bounded gradient (hinge, logistic, multinomial) learns
        well with ``eta0`` around ``8 * batch_size``.  Losses whose gradient
        grows with the error (squared_hinge, squared, huber with a large
        delta) need steps of at most about 1 (e.g.
        ``learning_rate="constant", eta0=1.0``, the DSGRegressor default).
    t0 : float, default=100.0
        Time scale of the step decay, in steps.
    eta_min : float, default=0.0
        Floor of the step schedule: a decaying schedule (``"inverse"``,
        ``"invsqrt"``, ``"pegasos"``) never goes below it, so the model
        keeps adapting on a stream whose concept changes (drift) instead of
        freezing as its steps vanish.  In the units of ``eta0`` (a step per
        full batch); 0 is the plain schedule.  It applies to the stochastic
        steps (``partial_fit``, ``fit`` with ``solver="sgd"``).
    forgetting : float, default=0.0
        Fraction of the coefficients forgotten per row learned, in
        ``[0, 1)``: each step multiplies them by ``(1 - forgetting) **
        rows`` besides the penalty's shrink, so a row's contribution fades
        geometrically with the rows learned after it (half-life ``log(2) /
        forgetting`` rows), whatever the step size.  Under a full budget
        with ``reuse="none"`` the block a step overwrites is the oldest,
        which forgetting has also made the smallest.  For drifting streams;
        0 remembers everything (the stationary default).  The intercept is
        not forgotten.
    solver : {"auto", "sgd", "cholesky", "newton-cg", "lbfgs", "dual-cd", "svrg", "sarah"}, default="auto"
        How ``fit`` trains (``partial_fit`` always takes stochastic steps).
        ``"sgd"``: epochs of doubly stochastic gradient steps under the
        stopping rule below.  The others minimise the same regularised risk
        on the full budget of ``max_blocks * block_size`` random features to
        ``tol`` (:mod:`onlinekernel.solvers`): ``"cholesky"`` for the squared
        loss (one streamed pass, then a Cholesky solve: kernel ridge on the
        features), ``"newton-cg"`` and ``"lbfgs"`` for smooth losses
        (logistic, multinomial, squared hinge, Huber), ``"dual-cd"`` for
        piecewise-linear ones (hinge, quantile, epsilon-insensitive), and
        ``"svrg"`` and ``"sarah"``, variance-reduced stochastic gradients
        on mini-batches of rows, for smooth and squared losses (an
        iteration is an epoch: one full gradient and ``n / 16`` inner
        steps; :mod:`onlinekernel.solvers.variance_reduced`).
        ``"auto"`` picks the batch solver for the loss when it fits in
        ``max_memory``, else ``"sgd"``.  The batch solvers ignore the step
        parameters (``learning_rate``, ``eta0``, ``t0``, ``batch_size``,
        ``reuse``, ``precondition``, ``average``, ...).
    max_iter : int, default=1000
        Most iterations of ``fit``: epochs of ``"sgd"``, Newton steps,
        L-BFGS steps, coordinate-descent epochs or epochs of ``"svrg"`` and
        ``"sarah"``.  Hitting it warns
        (``ConvergenceWarning``).
    tol : float or None, default=1e-4
        Stopping tolerance.  Batch solvers: the gradient norm relative to
        its value at the zero model, whatever the start (``"dual-cd"``: the
        relative duality gap).
        ``"sgd"``: stop when the score has not improved by ``tol`` for
        ``n_iter_no_change`` epochs (scikit-learn's ``SGDClassifier`` rule);
        ``None`` runs all ``max_iter`` epochs.
    n_iter_no_change : int, default=5
        Epochs without improvement before ``"sgd"`` stops.
    early_stopping : bool, default=False
        ``"sgd"``: score the loss on ``validation_fraction`` of the rows
        held out (a seeded split) instead of the training objective.
    validation_fraction : float, default=0.1
        The held-out share for ``early_stopping``.
    max_memory : int, default=2**32
        Bytes a batch solver may use (4 GiB): the ``n x M`` feature matrix of
        the iterative solvers (float32 when ``tol >= 1e-6`` and, for Nystrom
        features, when the landmarks' factor keeps float32 rounding within
        ``tol``; see :func:`onlinekernel.solvers.feature_dtype`) with their
        working arrays, the ``M x M`` matrices of ``"cholesky"``.  Larger
        problems regenerate features on every pass or, under ``"auto"``,
        train by ``"sgd"``.
    shuffle : bool, default=True
        Shuffle the rows before each epoch of ``fit`` (seeded by the model).
    average : bool, int or "polynomial", default="polynomial"
        Polyak-Ruppert averaging: predict with the running mean of the
        iterates (coefficients and intercept) instead of the last one.
        ``True`` averages from the first step, an integer ``n`` from step
        ``n + 1``, ``False`` not at all (the last iterate).
        ``"polynomial"`` weighs the ``n``-th averaged iterate
        ``(1 + eta) / (n + eta)`` with ``eta = 3`` (polynomial-decay
        averaging, Shamir & Zhang 2013): the late iterates count most, and
        the early, large steps fade with no starting step to choose.  With
        the ``"invsqrt"`` schedule (the defaults) it learns more from one
        pass over a stream than the last iterate of the ``"inverse"``
        schedule, the defaults before 2026-12-04 (``partial_fit`` on chunks
        of 10,000 shuffled rows, one pass, test error: MNIST 4.04 % against
        5.00 %, ijcnn1 4.11 % against 5.20 %, letter 9.86 % against
        11.68 %, usps 8.92 % against 9.82 %, a9a 15.67 % against 16.10 %;
        pendigits and magic04 the same to 0.03 pp), and from epochs of
        ``solver="sgd"`` (``benchmarks/sgd_schedules.py``: 50,000 rows at
        most, test error: ijcnn1 1.94 %
        against 2.81 %, letter 3.94 % against 6.08 %, magic04 12.57 %
        against 13.12 %, pendigits 2.40 % against 2.34 %; in fewer epochs),
        at the same cost a step.  Its costs: the model keeps the average
        besides the iterate it goes on learning from, which doubles a
        stochastically trained model's file; a prediction comes from the
        average, so a one-row step cannot start from the one-row prediction
        just made (test-then-train computes the row's features twice); and
        the average holds on to part of the past in a stream that drifts.
        For drifting streams ``learning_rate="inverse", average=False``
        with a drift reaction or ``forgetting`` is the better setting
        (:class:`~onlinekernel.integrations.river.RiverClassifier`'s
        defaults).  With the 1/t schedule the last iterate is already a
        weighted average, and averaging the early, large steps in costs
        accuracy (measured with ``average=True``: ijcnn1 96.2 % to 91.7 %,
        letter 94.8 % to 90.5 %, covtype 79.0 % to 78.7 %).  The batch
        solvers ignore it.
    reuse : {"all", "uniform", "check", "none"}, default="all"
        What a step does with the blocks it has (Li & Póczos, 2016), once
        the budget is full:

        - ``"all"`` moves every block by its share of the functional
          gradient step, ``-step / (B F n_blocks) Phi_j^T G`` (the
          expectation of UDSG's update);
        - ``"uniform"`` (UDSG) moves one block, drawn uniformly from the
          model's seed and step count (reproducible), by the full DSG step
          ``-step / (B F) Phi_j^T G``;
        - ``"check"`` (CDSG) computes for every block the largest safe step
          of the paper's eq. 9 (see :mod:`onlinekernel.solvers.reuse` for its
          mini-batch, block form) and moves the best block by it when it is
          at least the DSG step; otherwise the step adds a new block.  At
          the full budget it always moves the best block, by its safe step
          (which may be smaller than the DSG step, or zero);
        - ``"none"`` never reuses: at the full budget a step overwrites the
          oldest block (slot ``t mod max_blocks``) with the DSG step on that
          slot's features, so the model is the sum of the last
          ``max_blocks`` steps.  The slot keeps its random features because
          a block's features are fixed by its position (``(seed_, j)``,
          which prediction, the block cache and model files rely on); within
          any ``max_blocks`` consecutive steps the features are still
          distinct, independent draws, as DSG needs.

        Once the budget is full every mode evaluates each block once per
        step, so the cost of a step stays constant.  Measured at the
        default budget (``benchmarks/reuse.py``; ijcnn1, letter, covtype,
        3 passes): ``"all"`` is the most accurate (96.2 %, 94.8 %,
        79.0 %); ``"uniform"`` is 0.7 to 3.4 points behind (95.5 %,
        91.4 %, 76.3 %) but needs one preconditioned solve per step where
        ``"all"`` needs one per block; ``"check"`` is far behind with a
        small budget (81.2 %, 56.2 %, 74.4 %: at the full budget it only
        moves blocks the gradient points against) and is for large or
        unbounded budgets, where it adds fewer blocks than DSG (with
        ``max_blocks=None``, 202 instead of 250 blocks on ijcnn1 at 92.6 %
        instead of 91.0 %); ``"none"`` keeps only the last ``max_blocks``
        steps (90.4 %, 12.4 %, 64.1 %): a baseline, or a forgetting
        learner for drifting streams with a large budget.
    reuse_schedule : (int, int), default=(1, 0)
        ``(G, U)`` (UDSG's schedule): before the budget is full, ``"all"``
        and ``"uniform"`` take ``G`` steps that add a block, then ``U``
        steps that reuse, in turn (step ``t``, counted over the model's
        life, adds a block when ``t mod (G + U) < G``); the default reuses
        only once the budget is full.  ``"check"`` decides by itself and
        ``"none"`` never reuses, so both ignore it.
    precondition : "auto", "eigenpro", bool or float, default="auto"
        ``"eigenpro"``: once the budget is full, step on all features at
        once along the gradient with its top 160 eigen-directions (of the
        features' covariance, estimated once from 2,000 rows of the first
        call with more than 320 rows) damped, so that larger steps stay
        stable (EigenPro, Ma & Belkin 2017; the step and the damping are
        those of :class:`onlinekernel.solvers.eigenpro.EigenPro`);
        ``learning_rate``, ``eta0`` and ``t0`` then apply only to the steps
        that grow the budget.  It needs batches of several hundred rows
        (``batch_size=512``), a finite ``max_blocks``, ``reuse="all"`` and
        ``reuse_schedule=(1, 0)``, and keeps ``M x 160`` coefficients of the
        preconditioner in the model (its file included).  It pairs with the
        last iterate of the ``"inverse"`` schedule (``learning_rate="inverse",
        average=False``, the defaults before 2026-12-04), for which the
        figures below were measured: on top of the averaged ``"invsqrt"``
        defaults one pass over MNIST gave 7.24 % (float64) and 6.13 %
        (float32) against 4.71 % and 4.53 % (``benchmarks/one_pass.py``,
        2026-12-04).  Measured against the defaults of then,
        ``partial_fit`` over chunks of 10,000 shuffled rows,
        ``batch_size=512``, test error or RMSE after one and two passes:
        kin40k (:class:`DSGRegressor`) 0.344 and 0.310 against 0.614 and
        0.532, cadata 59.6k against 64.5k (one pass), MNIST (pixels in
        [0, 1]) 4.71 % and 3.66 % against 5.00 % and 4.71 %, ijcnn1 4.18 %
        and 3.06 % against 3.76 % and 3.35 % (worse after one pass); on
        ijcnn1's rows in file order (not shuffled) 6.95 % against 6.15 %.
        A step costs about what a default step costs per row; estimating the
        spectrum adds 1 to 2 s at 4,096 features.  The eigenvalues come from
        LAPACK: a seeded run is the same on one machine, and within rounding
        on another.

        ``True`` or a ridge: solve each block's update against the block's
        feature covariance on the batch, as the DSG reference code does:
        ``-(step / B^2) (Phi_j^T Phi_j / B + lam I)^{-1} Phi_j^T G`` with
        ridge ``lam`` (``True``: 1.0; a float: that ridge; the features have
        unit second moment, so ``lam`` is relative to 1).  On the batch this
        moves each row's output by about ``step / B`` times its own gradient,
        without the cross-talk between similar rows of the plain step.  Each
        updated block costs a Cholesky solve of size ``min(B, F)``.
        ``"auto"`` preconditions wherever the solve runs: not with
        ``reuse="check"`` (its safe step is derived for the plain step),
        not for a one-hot map (``"binning"``: the solve would run on dense
        rows of ``block_size`` values, where its steps gather and scatter
        by bin) and, in float32 models, only when ``batch_size <= block_size``.
        ``False`` gives the plain DSG step (fastest).

        The defaults (``"auto"`` with ``batch_size=32, eta0=64``) come from
        measurements (``benchmarks/defaults.py``, then the same data sets
        standardised, one seed): the previous defaults (plain steps,
        ``batch_size=64, eta0=512``) against these, test error after 5
        epochs: pendigits 2.80 -> 2.37 %, letter 8.64 -> 6.94 %, usps
        7.87 -> 7.13 %, ijcnn1 8.73 -> 5.40 %, a9a 19.5 -> 16.3 %; the
        validation error of covtype swung between 21 and 44 % from epoch to
        epoch with the old defaults and stays at 20-21.6 % with these, and
        magic04 at 12.7-13.9 %; one pass over ijcnn1: 91.9 -> 97.8 %.  The
        fit takes 1.4 to 1.9 times as long.  What sets the preconditioned
        step is ``eta0 / batch_size``, the factor by which each row's output
        moves along its own gradient: ``eta0=512`` with ``batch_size=32``
        (16) overshoots -- a 480-row, one-epoch fit fell to 38 % -- while
        with ``batch_size=64`` (8) it gave MNIST 2.91 % after 5 epochs
        against 3.50 % for the defaults of that time (measured on
        828729f); ratios from 2 (the default) to 8 are the range to tune.
    projection : bool, default=False
        End every step by projecting the function onto the ball of radius
        ``1 / sqrt(alpha)`` (Pegasos; pairs with
        ``learning_rate="pegasos"``; needs ``alpha > 0``).  The norm is that
        of the model's kernel approximation
        ``k_M(x, x') = (1/M) sum_m phi_m(x) phi_m(x')`` over its ``M``
        random features: ``f = sum_m coef_m phi_m`` has
        ``|f|^2 = M |coef_|^2``.  The projection rescales the global scale
        (O(1)); the norm is tracked through each update at the update's own
        cost and recomputed once per training call.
    random_state : int, RandomState or None, default=None
        Seeds the model: the random features and the shuffling.
    warm_start : bool, default=False
        Continue from the current model in ``fit``: its random features,
        classes and loss are kept, so ``X`` must have the same number of
        features and ``y`` only known labels.  Continuing a model
        (``partial_fit``, or ``fit`` with ``warm_start``) after
        ``set_params`` changed a parameter it was built with (``loss``,
        ``loss_params``, ``kernel``, ``kernel_params``, ``gamma``,
        ``degree``, ``coef0``, ``block_size``) raises a ValueError; the
        others (``alpha``, the step, ``batch_size``, a larger
        ``max_blocks`` or ``n_components``, ``dtype``, which converts the
        model, ...) take effect on the next call.  A budget below the
        model's blocks raises a ValueError.
    cache_bytes : int, default=64 MiB
        Memory budget for materialised blocks; blocks beyond it are
        regenerated whenever used, and a UserWarning says so when the
        budget's ``max_blocks`` do not fit (a block holds
        ``block_size * (n_features + 1)`` numbers of the model's dtype for
        the Gaussian map: 0.8 MB in float32 at 784 inputs).  With sparse
        input, a cached block of a map with stored frequencies also keeps
        them transposed for the sparse product, up to twice this budget.
    dtype : {"float64", "float32"}, default="float64"
        Precision of the random features (a Nystrom map's kernel values
        too), the coefficients and the block cache (the loss, intercept and
        step sizes stay in double).
        ``"float32"`` halves the model's memory and runs the feature kernels
        faster; see :doc:`/benchmarks` for the measured trade-off.  Changing
        it on a fitted model converts the coefficients at the next training
        call.
    n_jobs : int or None, default=None
        Threads of the compiled loops (``None``: 1, ``-1``: every core).
        Prediction splits the rows, a training step splits the blocks; every
        output is computed by one thread in a fixed order, so the results do
        not depend on ``n_jobs``.
    verbose : int, default=0
        Progress of ``fit`` on standard output, in the format of
        scikit-learn's ``SGDClassifier``: 0 prints nothing; 1 or more
        prints, after each epoch of ``"sgd"``, ``-- Epoch n``, a line with
        the norm of the function (its RKHS norm, ``sqrt(M) |coef_|``), the
        intercept (``Bias``), the blocks, the steps taken (``T``) and the
        objective (the validation loss with ``early_stopping``; with
        ``tol=None`` computed for this line alone, one prediction pass per
        epoch), and the training time so far; after each iteration of a
        batch solver, ``-- Iteration n (solver)`` with its objective and
        its relative gradient norm (``"newton-cg"``, also the
        conjugate-gradient iterations and the step length; ``"lbfgs"``;
        ``"cholesky"``, one line; ``"svrg"`` and ``"sarah"``, also the step
        and the effective passes over the rows) or duality gap
        (``"dual-cd"``, per output), then the time; last, a line saying how the fit ended.
        ``partial_fit`` prints nothing.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    coef_ : ndarray of shape (n_random_features_, n_outputs)
        Coefficients of the random features.
    intercept_ : ndarray of shape (n_outputs,)
        The intercept.
    n_random_features_ : int
        The current number of random features (``n_blocks_ * block_size``).
    {{step_attributes}}
    gamma_ : float or None
        The bandwidth used (``gamma="scale"`` resolved).
    loss_ : loss object
        The loss trained (the multinomial loss for logistic on > 2 classes).
    feature_map_ : CyFeatureMap
        The feature map, bound to ``n_features_in_``.
    n_features_in_ : int
        Number of input features.
    solver_ : str
        The solver the last ``fit`` ran (``"auto"`` resolved).
    alpha_ : float
        The penalty the model was trained with (``alpha="auto"`` resolved).
    n_iter_ : int
        Iterations of the last ``fit``: epochs of ``"sgd"``, Newton steps,
        L-BFGS steps or coordinate-descent epochs.

    Examples
    --------
    >>> from onlinekernel import DSGClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 2))
    >>> y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.0, "in", "out")
    >>> clf = DSGClassifier(loss="logistic", random_state=0).fit(X, y)
    >>> float(clf.score(X, y)) > 0.9
    True
    >>> clf.predict_proba(X[:1]).shape
    (1, 2)
    """
    _y_numeric = False

    def __init__(self, loss="logistic", kernel="gaussian", *, gamma="scale", degree=3,
                 coef0=0.0, kernel_params=None, loss_params=None, input_scaling=None,
                 alpha=1e-6, fit_intercept=True, batch_size=32, block_size=256, max_blocks=16,
                 n_components=None,
                 max_model_bytes=None, learning_rate="invsqrt", eta0=64.0, t0=100.0,
                 eta_min=0.0, forgetting=0.0,
                 solver="auto", max_iter=1000, tol=1e-4, n_iter_no_change=5,
                 early_stopping=False, validation_fraction=0.1, max_memory=2 ** 32,
                 shuffle=True, average="polynomial", reuse="all",
                 reuse_schedule=(1, 0), precondition="auto", projection=False,
                 random_state=None, warm_start=False, cache_bytes=64 * 2 ** 20,
                 dtype="float64", n_jobs=None, verbose=0):
        self._store_params(locals())

    def _prepare_targets(self, y, fitting, classes=None):
        check_classification_targets(y)
        if fitting:
            if classes is not None:
                classes = np.unique(np.asarray(classes))
                unknown = np.setdiff1d(np.unique(y), classes)
                if unknown.size:
                    raise ValueError(f"labels {unknown.tolist()} are not in classes "
                                     f"{classes.tolist()}")
            else:
                classes = np.unique(y)
            if classes.shape[0] < 2:
                raise ValueError(f"DSGClassifier needs at least 2 classes; got "
                                 f"{classes.shape[0]} class: {classes.tolist()}")
            loss = self._resolve_loss(classes.shape[0])
        else:
            if classes is not None and not np.array_equal(np.unique(classes), self.classes_):
                raise ValueError(f"classes {np.unique(classes).tolist()} differ from the "
                                 f"classes of the first call {self.classes_.tolist()}")
            classes, loss = self.classes_, self.loss_
        Y, K = self._encode(classes, loss, y)
        self._stage(classes_=classes)  # published with the coefficients
        return loss, Y, K

    @staticmethod
    def _encode(classes, loss, y):
        """The loss's targets of labels ``y`` and the number of outputs."""
        idx = np.searchsorted(classes, y)
        np.minimum(idx, classes.shape[0] - 1, out=idx)  # a label above them all: compared next
        bad = classes[idx] != y
        if bad.any():
            raise ValueError(f"labels {np.unique(y[bad]).tolist()} are not among the classes "
                             f"{classes.tolist()} of the model (fixed by the first call to "
                             f"partial_fit, or by fit when warm_start=True)")
        return _label_targets(idx, classes.shape[0], loss.target_encoding)

    def _validation_error(self, loss, Y, U, sw):
        """``(weighted error rate, weighted mean loss)`` of raw outputs ``U`` on targets ``Y``.

        ``Y`` is :meth:`_encode`'s: class indices, or +-1 margins (one
        column for two classes, one per class otherwise).
        """
        w = sw / sw.sum()
        if loss.target_encoding == "class_index":
            wrong = np.argmax(U, axis=1) != Y[:, 0]
        elif Y.shape[1] == 1:
            wrong = (U[:, 0] > 0) != (Y[:, 0] > 0)
        else:
            wrong = np.argmax(U, axis=1) != np.argmax(Y, axis=1)
        return (float(w @ wrong),) + super()._validation_error(loss, Y, U, sw)

    def _dask_targets(self, y, fitting):
        """``(loss, encode, K)`` for the labels of a dask collection, found on the workers.

        ``encode`` turns a partition's labels into the loss's targets (it
        runs on the workers).
        """
        loss, _, K = self._prepare_targets(_dask.unique_labels(y), fitting)
        return loss, functools.partial(_encoded, self._staged_or_fitted("classes_"), loss), K

    def _fast_targets(self, y):
        return fast_labels(self.classes_, self.loss_, y)

    def _resolve_loss(self, n_classes):
        loss = self._resolve_base_loss()
        if n_classes > 2:
            loss = loss.multiclass_loss()
        if loss.target_encoding not in ("margin", "real", "class_index"):
            raise ValueError(f"loss {loss!r} has an unknown target_encoding "
                             f"{loss.target_encoding!r}")
        return loss

    def with_new_class(self, label):
        """A copy of the fitted classifier with one more class, ``label``, appended.

        For a stream that meets a label it was not told of (the River
        adapter's ``learn_one``).  The scores of the known classes are
        kept: a single output ``f`` becomes ``(-a f, a f)`` (``a = 1/2`` for
        a softmax loss, which keeps the odds; ``1`` for one-vs-rest), more
        outputs are kept as they are.  The new class's output has zero
        coefficients and the smallest intercept of the others.  The copy
        shares the block cache (it has the same seed and map); this model
        is unchanged.

        Parameters
        ----------
        label : scalar
            The new class, appended to ``classes_`` (so ``classes_`` stays
            sorted when it sorts after the known ones).

        Returns
        -------
        DSGClassifier
            The widened copy.

        Examples
        --------
        >>> from onlinekernel import DSGClassifier
        >>> X = np.random.default_rng(1).normal(size=(90, 2))
        >>> y = np.digitize(X[:, 0], [-0.5, 0.5])  # labels 0, 1 and 2
        >>> wider = DSGClassifier(random_state=0).fit(X, y).with_new_class(3)
        >>> wider.classes_, wider.decision_function(X[:2]).shape
        (array([0, 1, 2, 3]), (2, 4))
        """
        check_is_fitted(self, "_coef")
        K = self.classes_.shape[0]
        if np.isin(label, self.classes_).any():
            raise ValueError(f"{label!r} is already a class of the model")
        loss = self._resolve_loss(K + 1)
        n_old = self._n_outputs
        T = np.zeros((n_old, K + 1))
        if n_old == 1:
            a = 0.5 if loss.target_encoding == "class_index" else 1.0
            T[0, 0], T[0, 1] = -a, a
        else:
            T[:, :n_old] = np.eye(n_old)
        state = dict(self.__dict__)
        for key in ("_coef", "_coef_avg"):
            state[key] = np.ascontiguousarray(state[key] @ T)
        for key in ("_intercept", "_intercept_avg"):
            b = state[key] @ T
            b[K] = b[:K].min()
            state[key] = b
        state.update(classes_=np.append(self.classes_, label), loss_=loss, _n_outputs=K + 1)
        new = type(self).__new__(type(self))
        new.__dict__.update(state)
        return new

    @transactional
    @_docs.doc(_docs.PARTIAL_FIT, "X", "y", "classes", "sample_weight", body=(
        "Batches of ``batch_size`` rows give one step each, so feeding data in\n"
        "batches of ``batch_size`` gives the same model as ``fit`` with\n"
        "``solver=\"sgd\", max_iter=1, tol=None, shuffle=False``."))
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        if (not hasattr(self, "_coef") and classes is None
                and _dask.is_dask_collection(y)):
            classes = _dask.unique_labels(y)  # a dask collection's labels: all there are
        if not hasattr(self, "_coef") and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit")
        return self._partial_fit(X, y, sample_weight, classes=classes)

    @dask_rows
    def decision_function(self, X):
        """Raw scores: shape ``(n,)`` for two classes, ``(n, n_classes)`` otherwise."""
        return self._scores(X)[0]

    def _scores(self, X):
        # scores and classes of one snapshot of the model (see _outputs)
        raw, st = self._outputs(X)
        if st["classes_"].shape[0] == 2:
            raw = raw[:, 1] - raw[:, 0] if raw.shape[1] == 2 else raw[:, 0]
        return raw, st

    @dask_rows
    def predict(self, X):
        """Predicted class labels."""
        scores, st = self._scores(X)
        if scores.ndim == 1:
            return st["classes_"][(scores > 0).astype(int)]
        return st["classes_"][np.argmax(scores, axis=1)]

    @_with_probabilities
    @dask_rows
    def predict_proba(self, X):
        """Class probabilities (losses with a logistic or softmax link)."""
        raw, st = self._outputs(X)
        return probabilities(raw, st["loss_"].link)

    @_with_probabilities
    @dask_rows
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


def probabilities(raw, link):
    """Class probabilities of raw outputs ``(n, K)`` under a ``"logistic"`` or ``"softmax"`` link."""
    if link == "softmax":
        p = np.exp(raw - raw.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)
    p = 0.5 * (1.0 + np.tanh(0.5 * raw))  # the sigmoid, without overflow
    if p.shape[1] == 1:
        return np.concatenate((1.0 - p, p), axis=1)
    return p / np.maximum(p.sum(axis=1, keepdims=True), np.finfo(float).tiny)


def fast_labels(classes, loss, y):
    """The loss's targets of a 1-d ndarray of labels ``y`` of a fitted classifier, or None.

    For the one-row path of ``partial_fit``: integer or boolean labels of
    ``classes``' kind are encoded directly (each must equal one of
    ``classes`` exactly, so the target-type checks of the first call are not
    repeated); anything else returns None and takes the full validation.
    """
    if y.dtype.kind != classes.dtype.kind or y.dtype.kind not in "iub":
        return None
    if y.shape[0] == 1:
        # one row (a stream's call): its class by one look-up, not five numpy calls
        try:
            i = classes.tolist().index(y.item())
        except ValueError:
            return None  # not a class: the full validation names it
        return _label_targets(slice(i, i + 1), classes.shape[0], loss.target_encoding)[0]
    return DSGClassifier._encode(classes, loss, y)[0]


@functools.lru_cache(maxsize=64)
def _target_table(n_classes, encoding):
    """Row ``i``: the one target of class ``i`` -- its index, or its margin of the two
    classes' one output (read-only, shared)."""
    if encoding == "class_index":
        table = np.arange(n_classes, dtype=np.float64)[:, None]
    else:
        table = np.array([[-1.0], [1.0]])
    table.setflags(write=False)
    return table


def _label_targets(idx, n_classes, encoding):
    """The targets (a new C-contiguous array) of the class indices ``idx`` (an array, or a
    slice) under the loss's ``encoding`` -- class indices, or +-1 margins (one column for
    two classes, one per class otherwise) -- and the number of outputs."""
    if encoding != "class_index" and n_classes > 2:
        # a column per class, +1 in the label's: built (a K x K table would grow with K^2)
        rows = np.arange(idx.start, idx.stop) if isinstance(idx, slice) else idx
        Y = np.full((rows.shape[0], n_classes), -1.0)
        Y[np.arange(rows.shape[0]), rows] = 1.0
        return Y, n_classes
    table = _target_table(n_classes, encoding)
    # a slice is a view of the shared table: copied (numpy's fancy indexing copies already)
    Y = table[idx].copy() if isinstance(idx, slice) else table[idx]
    return Y, (n_classes if encoding == "class_index" else 1)


def _encoded(classes, loss, y):
    """The loss's targets of labels ``y`` (a partition's, on a dask worker)."""
    return DSGClassifier._encode(classes, loss, y)[0]
