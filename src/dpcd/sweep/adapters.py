"""One function per solver: calibrate its noise, run its kernel, return its ledger.

Each adapter takes the shared :class:`~dpcd.sweep.problem.SweepProblem`, one
configuration and one seed; it is the only place where a configuration's
privacy budget meets a solver. Calibrations are cached inside
:mod:`dpcd.privacy`, so a sweep pays for each (passes, epsilon) once.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpcd import privacy, solvers
from dpcd.solvers.dp_gcd import PENALTY_NAMES


@dataclass(frozen=True)
class Budget:
    """The privacy settings of one run: target epsilon, delta, accountant and
    neighbouring relation (``"paper"``: each solver's paper's own) and noise
    mode (``"secure"``: see :mod:`dpcd.privacy.secure`)."""

    epsilon: float
    delta: float
    accountant: str = "auto"
    neighbouring: str = "replace_one"
    noise: str = "fast"


def _calibrate_dp_cd(problem, config, clip, epsilon, budget):
    """DP-CD's calibration, and in secure mode its grid and exact sampler."""
    accountant = budget.accountant
    if budget.noise == "secure":
        accountant = privacy.secure.check_accountant(accountant)
    calibration = privacy.calibrate_dp_cd(
        problem.n_samples, problem.n_features, config["passes"], clip,
        epsilon, budget.delta, accountant=accountant, relation=budget.neighbouring,
    )
    if budget.noise != "secure":
        return calibration, None
    secure = privacy.secure.secure_dp_cd(calibration, problem.n_samples)
    return secure.calibration, secure


def run_cd(problem, config, seed, budget, private_smoothness=None):
    """Non-private randomized proximal CD (DP-CD's kernel, no noise, no clipping)."""
    p = problem.n_features
    result = solvers.dp_cd(
        problem.X_cols, problem.y, problem.datafit, problem.penalty,
        smoothness=problem.smoothness, step=config["step"],
        clip=np.full(p, np.inf), noise_scales=np.zeros(p),
        passes=config["passes"], seed=seed, check_input=False,
    )
    return result, None


def run_dp_cd(problem, config, seed, budget, private_smoothness=None):
    """DP-CD (Mangold et al. 2022, Algorithm 1) with exact smoothness constants."""
    smoothness = problem.smoothness
    clip = solvers.coordinate_clip(smoothness, config["clip"])
    calibration, secure = _calibrate_dp_cd(problem, config, clip, budget.epsilon, budget)
    result = solvers.dp_cd(
        problem.X_cols, problem.y, problem.datafit, problem.penalty,
        smoothness=smoothness, step=config["step"], clip=clip,
        noise_scales=calibration.noise_scales, passes=config["passes"], seed=seed, check_input=False,
        secure=secure,
    )
    return result, calibration.ledger.add_nonprivate_input("exact_smoothness")


def run_dp_cd_p(problem, config, seed, budget, private_smoothness=None):
    """DP-CD with private smoothness constants (Section 5.2, Appendix F).

    ``private_smoothness`` holds the estimate released for this seed and its
    ledger line; optimisation gets the rest of epsilon, and both lines add up.
    """
    if private_smoothness is None:
        raise ValueError("dp_cd_p needs the private smoothness estimate of its seed")
    smoothness = np.asarray(private_smoothness["smoothness"], dtype=np.float64)
    fraction = private_smoothness["smoothness_fraction"]
    clip = solvers.coordinate_clip(smoothness, config["clip"])
    calibration, secure = _calibrate_dp_cd(problem, config, clip,
                                           (1.0 - fraction) * budget.epsilon, budget)
    result = solvers.dp_cd(
        problem.X_cols, problem.y, problem.datafit, problem.penalty,
        smoothness=smoothness, step=config["step"], clip=clip,
        noise_scales=calibration.noise_scales, passes=config["passes"], seed=seed, check_input=False,
        secure=secure,
    )
    estimate_ledger = privacy.Ledger.from_dict(private_smoothness["ledger"])
    ledger = privacy.Ledger.combine([estimate_ledger, calibration.ledger])
    return result, ledger


def run_dp_sgd(problem, config, seed, budget, private_smoothness=None):
    """Proximal DP-SGD with Poisson-sampled batches (the papers' baseline),
    calibrated under ``budget.neighbouring`` (sensitivity C, or 2C replace-one)."""
    return run_dp_sgd_many(problem, [config], [seed], [budget])[0]


def run_dp_sgd_many(problem, configs, seeds, budgets):
    """:func:`run_dp_sgd` for several configurations, ``seeds[k]`` the seed of
    ``configs[k]``: kernel calls per batch size (:func:`dpcd.solvers.dp_sgd_many`
    with one seed per run: no shared draws), each run bit for bit the run
    alone; its ``time`` is an amortised share of the call.

    Returns
    -------
    list of (SolverResult, Ledger)
        In the order of ``configs``.
    """
    out = [None] * len(configs)
    by_batch = {}
    for index, config in enumerate(configs):
        by_batch.setdefault(int(config.get("batch_size", 1)), []).append(index)
    # hinge has no smoothness constant: the step is the learning rate itself
    beta = 1.0 if problem.global_smoothness is None else problem.global_smoothness
    for batch_size, indices in by_batch.items():
        calibrations = [
            privacy.calibrate_dp_sgd(
                problem.n_samples, batch_size, configs[i]["passes"], configs[i]["clip"],
                budgets[i].epsilon, budgets[i].delta, accountant=budgets[i].accountant,
                relation=budgets[i].neighbouring)
            for i in indices]
        results = solvers.dp_sgd_many(
            problem.X_rows, problem.y, problem.datafit, problem.penalty,
            steps=[configs[i]["step"] for i in indices],
            clips=[configs[i]["clip"] for i in indices],
            noise_scales=[c.noise_scales for c in calibrations],
            passes=[configs[i]["passes"] for i in indices],
            seeds=[seeds[i] for i in indices], batch_size=batch_size,
            global_smoothness=beta, check_input=False,
        )
        for i, result, calibration in zip(indices, results, calibrations):
            ledger = calibration.ledger
            if problem.global_smoothness is not None:
                ledger = ledger.add_nonprivate_input("global_smoothness")
            out[i] = (result, ledger)
    return out


def calibrate_dp_gcd_config(problem, config, budget):
    """Noise of one DP-GCD configuration (Mangold et al. 2023, Theorem 4.2 / App. C).

    ``config``: ``passes`` (= iterations T, an integer), ``clip`` (C, split
    into C_j as DP-CD does) and ``rule`` (default ``"gs_r"``, the rule of the
    paper's experiments).  ``budget.accountant == "paper"`` selects the
    paper's calibration (``mode="paper"``, advanced composition), which the
    ledger's mechanism note and accountant name record.  The selection scale
    and where its noise goes depend on the rule and the penalty
    (:func:`dpcd.privacy.gcd.calibrate_dp_gcd`).
    """
    iterations = config["passes"]
    if int(iterations) != iterations or iterations < 1:
        raise ValueError(f"DP-GCD passes are iterations: an integer >= 1, got {iterations!r}")
    pcode = problem.penalty.code
    if pcode not in PENALTY_NAMES:
        raise ValueError(f"DP-GCD supports no, L1 and L2 penalties, got {problem.penalty!r}")
    clip = solvers.coordinate_clip(problem.smoothness, config["clip"])
    return privacy.calibrate_dp_gcd(
        problem.n_samples, problem.n_features, int(iterations), clip,
        budget.epsilon, budget.delta, accountant=budget.accountant,
        smoothness=problem.smoothness, rule=config.get("rule", "gs_r"),
        penalty=PENALTY_NAMES[pcode], alpha=float(problem.penalty.params[0]),
        relation=budget.neighbouring,
    )


def run_dp_gcd(problem, config, seed, budget, private_smoothness=None):
    """DP-GCD (Mangold et al. 2023, Algorithm 1 / Appendix C) with exact smoothness.

    One pass is one DP-GCD iteration.  Sparse ``problem.X`` is handed over as
    is (the solver walks it in CSC), dense X column-major.
    """
    calibration = calibrate_dp_gcd_config(problem, config, budget)
    X = problem.X if sp.issparse(problem.X) else problem.X_fortran
    result = solvers.dp_gcd(
        X, problem.y, problem.datafit, problem.penalty,
        smoothness=problem.smoothness, step=config["step"],
        clip=solvers.coordinate_clip(problem.smoothness, config["clip"]),
        selection_scales=calibration.extra["selection_scales"],
        noise_scales=calibration.noise_scales, iterations=int(config["passes"]),
        seed=seed, rule=config.get("rule", "gs_r"),
        selection_noise=calibration.extra["selection_noise"], check_input=False,
    )
    return result, calibration.ledger.add_nonprivate_input("exact_smoothness")
# ---------------------------------------------------------------- DP-SCD
# Damaskinos et al. 2021.  Config keys: passes (epochs), clip (C),
# batch_size (L), sampling (optional: "poisson" or "without_replacement",
# default per solver and relation: privacy.default_sampling; primal uses every
# record: "none"), max_batch_size (seqDP-SCD with Poisson batches: L_max or "auto").
def _scd_sampling(config, variant, budget):
    if variant == "primal":
        return "none"
    solver = "seq_dp_scd" if variant == "seq" else "dp_scd"
    return config.get("sampling", privacy.default_sampling(solver, budget.neighbouring))


def _calibrate_scd(problem, config, budget, variant):
    return privacy.calibrate_dp_scd(
        problem.n_samples, problem.n_features, int(config["batch_size"]), config["clip"],
        budget.epsilon, budget.delta, passes=config["passes"], variant=variant,
        sampling=_scd_sampling(config, variant, budget), accountant=budget.accountant,
        relation=budget.neighbouring,
        max_batch_size=config.get("max_batch_size"),
    )


def calibrate_dp_scd(problem, config, budget):
    """Noise of dual DP-SCD (Algorithm 1, Lemma 1) for one configuration."""
    return _calibrate_scd(problem, config, budget, "dual")


def calibrate_seq_dp_scd(problem, config, budget):
    """Noise of seqDP-SCD (Algorithm 3, Lemma 5) for one configuration."""
    return _calibrate_scd(problem, config, budget, "seq")


def calibrate_primal_dp_scd(problem, config, budget):
    """Noise of primal DP-SCD (Algorithm 2, Lemma 4) for one configuration."""
    return _calibrate_scd(problem, config, budget, "primal")


def _run_scd(problem, config, seed, budget, variant, calibrator):
    calibration = calibrator(problem, config, budget)
    sampling = _scd_sampling(config, variant, budget)
    # the solver samples as the budget was accounted, or does not run
    privacy.check_sampling(calibration, sampling)
    X = problem.X_fortran if variant == "primal" else problem.X_c
    result = solvers.dp_scd(
        X, problem.y, problem.datafit, problem.penalty, clip=config["clip"],
        noise_scale=calibration.noise_scales, passes=config["passes"],
        batch_size=int(config["batch_size"]), seed=seed, variant=variant,
        sampling=sampling, check_input=False,
    )
    return result, calibration.ledger


def run_dp_scd(problem, config, seed, budget, private_smoothness=None):
    """Dual DP-SCD (Damaskinos et al. 2021, Algorithm 1); rows of X of norm <= 1."""
    return _run_scd(problem, config, seed, budget, "dual", calibrate_dp_scd)


def run_seq_dp_scd(problem, config, seed, budget, private_smoothness=None):
    """seqDP-SCD (Algorithm 3): sequential updates within the batch, Lemma 5's noise."""
    return _run_scd(problem, config, seed, budget, "seq", calibrate_seq_dp_scd)


def run_primal_dp_scd(problem, config, seed, budget, private_smoothness=None):
    """Primal DP-SCD (Algorithm 2): L coordinates per step, every record; columns of norm <= 1."""
    return _run_scd(problem, config, seed, budget, "primal", calibrate_primal_dp_scd)


def run_scd(problem, config, seed, budget, private_smoothness=None):
    """Non-private SCD/SDCA: sequential dual updates in random order, no scaling, no noise."""
    result = solvers.scd(problem.X_c, problem.y, problem.datafit, problem.penalty,
                         passes=config["passes"], seed=seed, check_input=False)
    return result, None


def run_sgd(problem, config, seed, budget, private_smoothness=None):
    """Non-private SGD: DP-SGD's kernel with no noise and no clipping.

    ``step`` is the learning rate η itself (``global_smoothness=1``), as in
    the DP-SCD paper's SGD; ``batch_size`` (default 1) is the expected batch
    of the Poisson sampling.  Works for the hinge loss (subgradient).
    """
    result = solvers.dp_sgd(
        problem.X_rows, problem.y, problem.datafit, problem.penalty,
        step=config["step"], clip=np.inf, noise_scale=0.0, passes=config["passes"],
        seed=seed, batch_size=int(config.get("batch_size", 1)), global_smoothness=1.0,
        check_input=False,
    )
    return result, None


ADAPTERS = {
    "cd": run_cd,
    "dp_cd": run_dp_cd,
    "dp_cd_p": run_dp_cd_p,
    "dp_gcd": run_dp_gcd,
    "dp_sgd": run_dp_sgd,
    "dp_scd": run_dp_scd,
    "seq_dp_scd": run_seq_dp_scd,
    "primal_dp_scd": run_primal_dp_scd,
    "scd": run_scd,
    "sgd": run_sgd,
}

# Calibrators of the DP-SCD solvers (to be merged with the other solvers'
# calibrators when the adapters are split into calibrate + run).
SCD_CALIBRATORS = {
    "dp_scd": calibrate_dp_scd,
    "seq_dp_scd": calibrate_seq_dp_scd,
    "primal_dp_scd": calibrate_primal_dp_scd,
}

# Solvers whose runs of one replicate seed run together, each on its own
# streams (see run_dp_sgd_many): same results, shared kernel calls.
MANY = {"dp_sgd": run_dp_sgd_many}

# Solvers that release nothing private and read no budget: their runs at two
# epsilons are the same run (same streams; dpcd.sweep.run.stream_identity).
NONPRIVATE_ADAPTERS = frozenset({"cd", "scd", "sgd"})

# Hyperparameters that index a configuration (columns of the tidy table).
HYPERPARAMETERS = ("step", "clip", "batch_size")


def get_adapter(name):
    """Return the adapter of solver ``name`` or raise naming the known ones."""
    try:
        return ADAPTERS[name]
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; known: {sorted(ADAPTERS)}") from None
