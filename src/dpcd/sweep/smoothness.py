"""DP-CD-P's private smoothness constants in a sweep: drawn per (epsilon,
seed) by the private smoothness stage, read back per run."""

import numpy as np

from dpcd import privacy
from dpcd.problems import make_problem
from dpcd.streams import run_entropy, run_identity


def private_smoothness_estimates(X, loss, fraction, epsilons, seeds, experiment,
                                 noise="fast"):
    """Private smoothness constants per (epsilon, seed index), DP-CD Appendix F.

    The estimate of seed ``seeds[k]`` at ``epsilon`` draws its Laplace noise
    from ``SeedSequence(run_entropy(seeds[k], identity))``, the identity
    holding the experiment, epsilon and the smoothness fraction
    (:func:`dpcd.streams.run_identity`, stream ``"private_smoothness"``):
    the estimates at two epsilons (and of two experiments) are independent
    releases. The configurations of one (epsilon, seed) share theirs; each
    run's ledger counts it, so runs combined are over-counted, never under.
    The selection runs pass the replicate seeds, the fresh re-runs their own
    (:func:`dpcd.streams.fresh_seeds`), so their estimates are new releases.
    ``noise="secure"``: exact discrete Laplace noise from the OS instead (the
    seeds are then unused).

    Returns
    -------
    dict
        ``{"smoothness_fraction", "estimates": [{epsilon, seed_index, seed,
        smoothness, ledger}, ...]}`` (what the private smoothness stage writes).
    """
    datafit, _ = make_problem(loss, "none", 0.0)
    estimates = []
    for epsilon in epsilons:
        identity = run_identity(experiment, {"epsilon": float(epsilon),
                                             "smoothness_fraction": float(fraction)},
                                stream="private_smoothness")
        for seed_index, seed in enumerate(seeds):
            seq = np.random.SeedSequence(run_entropy(seed, identity))
            # The paper's crude bounds: twice each feature's largest magnitude.
            smoothness, ledger = privacy.estimate_smoothness(
                datafit, X, fraction * epsilon, np.random.default_rng(seq), noise=noise)
            estimates.append({
                "epsilon": float(epsilon),
                "seed_index": seed_index,
                "seed": int(seed),
                "smoothness": np.asarray(smoothness).tolist(),
                "ledger": ledger.to_dict(),
            })
    return {"smoothness_fraction": fraction, "estimates": estimates}


def run_estimates(estimates, configs, seed_indices):
    """The estimate each run (configuration, seed index) reads, as the solvers
    take it: ``[[estimate of seed k for k in seed_indices] per configuration]``,
    or None without estimates."""
    if estimates is None:
        return None
    return [[_estimate(estimates, config["epsilon"], k) for k in seed_indices]
            for config in configs]


def _estimate(estimates, epsilon, seed_index):
    for entry in estimates["estimates"]:
        if entry["epsilon"] == epsilon and entry["seed_index"] == seed_index:
            return {**entry, "smoothness_fraction": estimates["smoothness_fraction"]}
    raise ValueError(
        f"no private smoothness estimate for epsilon={epsilon}, seed {seed_index}"
    )
