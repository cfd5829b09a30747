"""Run identities and seed entropy: what makes two runs different releases, and
the seeds their streams come from.

One leaf (numpy and the standard library only) read by the sweep, private
tuning and the estimators, so that a run of the workflow and a fit of an
estimator key their randomness by the same rule (:func:`run_entropy`).
"""

import hashlib
import json

import numpy as np


def config_id(config):
    """Short stable hash of a configuration (the same on every machine)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def run_seed(base_seed, seed_index):
    """Integer seed of replicate ``seed_index``, spawned from ``base_seed``.

    The replicate seeds are common to every configuration (the ``seed`` column
    of the tables); each run's noise and sampling streams come from this seed
    *and* the run's identity (:func:`run_entropy`), so differently configured
    runs draw independent randomness.
    """
    state = np.random.SeedSequence([base_seed, seed_index]).generate_state(1)
    return int(state[0])


def identity_words(identity):
    """Eight 32-bit words of a stable digest of ``identity`` (a JSON-able dict).

    SHA-256 of the canonical JSON (sorted keys, no spaces; floats as Python
    writes them): the same on every machine and in every process, unlike
    ``hash()``, which Python salts per process.
    """
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).digest()
    return [int(word) for word in np.frombuffer(digest, dtype="<u4")]


def run_identity(experiment, config, stream="run"):
    """What makes a run (or one of its releases) a different release from another.

    Parameters
    ----------
    experiment : str
        The experiment (cell of the study): its dataset, problem and budget.
    config : dict
        The configuration (:func:`dpcd.sweep.grid.configurations`: solver,
        epsilon, passes, hyperparameters) or, for a release shared by several
        configurations (DP-CD-P's smoothness estimate), the settings that
        release depends on.
    stream : str, default="run"
        Which release of the run (``"run"``: the solver's sampling and noise;
        ``"private_smoothness"``: DP-CD-P's estimate).

    Returns
    -------
    dict
    """
    return {"experiment": experiment, "stream": stream, **config}


def run_entropy(seed, identity):
    """Entropy of a run's ``numpy.random.SeedSequence``: its seed and its identity.

    The rule: **releases that are compared or combined must be independent.**
    Runs that differ in any setting (solver, epsilon, passes, step, clipping
    threshold, batch size, experiment, ...) are compared by the tables and
    combined by a selection, so each composes with the others only if its
    randomness is its own. Every run therefore seeds its streams from
    ``[seed, *digest(identity)]``: the replicate seed (shared by the
    configurations of a sweep, recorded in the tables) followed by the eight
    words of :func:`identity_words`. Two runs that differ only in sigma (or
    epsilon) thus draw independent batches and noise, and the same
    configuration with the same seed gives the same result bit for bit.
    Private search candidates rely on this rule.

    A recorded seed makes a run's noise subtractable by anyone who has it:
    seeds are for reproducing research, not for releasing models
    (docs/method/randomness.md).

    Parameters
    ----------
    seed : int or sequence of int
        The replicate seed (or a ``SeedSequence`` entropy list).
    identity : dict
        JSON-serialisable settings of the release (:func:`run_identity`).

    Returns
    -------
    list of int
        Entropy for ``numpy.random.SeedSequence`` (what solvers take as ``seed``).
    """
    words = [int(s) for s in np.atleast_1d(np.asarray(seed, dtype=object))]
    if any(w < 0 for w in words):
        raise ValueError(f"seed must be >= 0, got {seed!r}")
    return words + identity_words(identity)


def stream_identity(experiment, config, private=True):
    """What a run's streams are keyed by (:func:`run_identity`): the experiment
    and the configuration, without epsilon for a solver that reads no budget
    (``private`` False: a non-private algorithm), whose runs at two epsilons
    are then one run."""
    if not private:
        config = {k: v for k, v in config.items() if k != "epsilon"}
    return run_identity(experiment, config)


def run_entropies(seed, experiment, configs, private=True):
    """The entropy (:func:`run_entropy`) of each configuration's run on the
    replicate seed ``seed``, keyed by :func:`stream_identity`."""
    return [run_entropy(seed, stream_identity(experiment, config, private))
            for config in configs]


# Spawn-key branch of the fresh seeds: a SeedSequence with this spawn_key is a
# child no selection seed's SeedSequence (spawn_key ()) can be.
FRESH_BRANCH = 1
# Selection seeds are 32-bit words (< 2**32); fresh seeds are shifted to
# [2**32, 2**33), so no fresh seed can equal a selection seed, whatever the hash.
FRESH_OFFSET = 2**32


def fresh_cell(experiment, config):
    """The cell of a table a configuration belongs to: experiment, solver,
    epsilon and passes (the rows of the selection and fresh tables)."""
    return {"experiment": experiment, "solver": config["solver"],
            "epsilon": float(config["epsilon"]), "passes": config["passes"]}


def fresh_seed(base_seed, seed_index, cell=None):
    """Integer seed of fresh run ``seed_index`` of ``cell``, disjoint from :func:`run_seed`.

    Used to re-run selected configurations on seeds they were not selected on.
    Disjoint by construction: drawn from the branch ``spawn_key=(FRESH_BRANCH,)``
    of ``SeedSequence([base_seed, seed_index, *digest(cell)])``, then shifted
    above every 32-bit selection seed. Each cell (:func:`fresh_cell`) gets its
    own seeds, so the fresh re-runs of two cells are independent releases.
    Different indices give different seeds (checked).
    """
    words = [] if cell is None else identity_words(cell)
    entropy = np.random.SeedSequence([base_seed, seed_index, *words],
                                     spawn_key=(FRESH_BRANCH,))
    return FRESH_OFFSET + int(entropy.generate_state(1)[0])


def fresh_seeds(base_seed, n_seeds, cell=None):
    """The first ``n_seeds`` fresh seeds of ``cell`` (see :func:`fresh_seed`), all distinct."""
    seeds = [fresh_seed(base_seed, k, cell) for k in range(n_seeds)]
    if len(set(seeds)) != len(seeds):  # a 32-bit collision: never seen, but checked
        raise ValueError(f"fresh seeds of base_seed {base_seed} collide: {seeds}")
    return seeds
