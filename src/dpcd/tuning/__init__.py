"""Private hyperparameter selection (Papernot & Steinke, ICLR 2022): repeat-and-select.

Run a random number K of private *candidates* and release only the best: each
candidate trains a model with hyperparameters drawn at random (independently
of the data) and releases a noisy *score* of it; the candidate with the best
noisy score is released (model and score), every other output is discarded.
If K follows a truncated negative binomial (TNB) or Poisson distribution,
the whole release is Rényi-DP with the bounds of Papernot & Steinke
(arXiv 2110.03620, Theorems 2 and 6), which ``dp_accounting``'s RDP
accountant implements as ``RepeatAndSelectDpEvent(event, mean, shape)``.

The workflow's ``search: private`` and :class:`dpcd.PrivateSearch` share
every part; each module imports only those listed before it:

* :mod:`.draws`: the law of K, the configurations drawn, every stream of a
  search (from its seed, never the data);
* :mod:`.scores`: the candidates' score, its sensitivity and its noise;
* :mod:`.candidates`: which trainings can be candidates (the one rule) and
  their ``dp_accounting`` events;
* :mod:`.calibration`: the noise of the whole release for a target (ε, δ),
  data-free;
* :mod:`.settings`: a search's settings;
* :mod:`.release`: what goes out (the model, its noisy score, the ledger with
  the law of K) and what never does (K, the candidates, the noise's seed);
* :mod:`.search`: the library search the estimator runs;
* :mod:`.workflow`: one selection seed's searches, the ``solve-private`` job.
"""
