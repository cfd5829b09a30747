"""Compile every solver kernel once (into ``NUMBA_CACHE_DIR``)."""
import numpy as np


def warmup():
    """Compile (or load from the numba cache) every kernel on a tiny problem.

    The workflow calls this once, in a single job, with a project-local
    ``NUMBA_CACHE_DIR`` before solver jobs run in parallel, so that parallel
    jobs never write the same cache entry at once (numba/numba#4807).

    Returns
    -------
    names : list of str
        The solvers that were run.
    """
    from dpcd.problems import make_problem
    import scipy.sparse as sp

    from dpcd.solvers.dp_cd import dp_cd
    from dpcd.solvers.dp_gcd import dp_gcd
    from dpcd.solvers.dp_scd import dp_scd, scd
    from dpcd.solvers.dp_sgd import _INNER_MIN_RUNS, dp_sgd, dp_sgd_many
    from dpcd.solvers.reference import reference_solve

    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3))
    y = np.sign(rng.standard_normal(8))
    y[y == 0] = 1.0
    for loss in ("squares", "logistic"):
        datafit, penalty = make_problem(loss, "l1", 0.01)
        M = datafit.coordinate_smoothness(X)
        for design in (X, sp.csc_matrix(X)):  # dense and sparse (CSC) DP-CD
            dp_cd(design, y, datafit, penalty, smoothness=M, step=1.0, clip=1.0,
                  noise_scales=0.1, passes=2, seed=0)
            dp_cd(design, y, datafit, penalty, smoothness=M, step=1.0, clip=1.0,
                  noise_scales=0.1, passes=2, seed=0, averaging=True)
        for design in (X, sp.csr_matrix(X)):  # dense and sparse (CSR) DP-SGD
            dp_sgd(design, y, datafit, penalty, step=0.1, clip=1.0, noise_scale=0.1,
                   passes=1, seed=0)
            # a sweep's calls of many runs take the runs-inner kernel
            dp_sgd_many(design, y, datafit, penalty, steps=[0.1] * _INNER_MIN_RUNS,
                        clips=1.0, noise_scales=0.1, passes=1, seed=0)
        reference_solve(X, y, datafit, penalty, max_iter=10)
        for design in (X, sp.csc_matrix(X)):  # dense and sparse CSC kernels
            dp_gcd(design, y, datafit, penalty, smoothness=M, step=1.0, clip=1.0,
                   selection_scales=0.1, noise_scales=0.1, iterations=2, seed=0)
    Xu = X / np.linalg.norm(X, axis=1, keepdims=True)
    for loss in ("squares", "logistic", "hinge"):
        datafit, penalty = make_problem(loss, "l2", 0.01)
        for variant, sampling in (("dual", "poisson"), ("seq", "without_replacement")):
            dp_scd(Xu, y, datafit, penalty, clip=1.0, noise_scale=0.1, passes=1,
                   batch_size=2, seed=0, variant=variant, sampling=sampling)
        if loss != "hinge":
            dp_scd(np.asfortranarray(Xu / np.sqrt(len(y))), y, datafit, penalty, clip=1.0,
                   noise_scale=0.1, passes=1, batch_size=2, seed=0, variant="primal",
                   sampling="none")
        scd(Xu, y, datafit, penalty, passes=1, seed=0)
        if loss == "hinge":
            dp_sgd(X, y, datafit, penalty, step=0.1, clip=1.0, noise_scale=0.1, passes=1,
                   seed=0, global_smoothness=1.0)
    return ["dp_cd", "dp_gcd", "dp_sgd", "dp_scd", "reference_solve"]
