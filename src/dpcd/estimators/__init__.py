"""scikit-learn compatible estimators over the DP-CD, DP-GCD, DP-SGD and DP-SCD
solvers (:mod:`dpcd.estimators.linear`), and :class:`PrivateSearch`, the
private hyperparameter search over them (:mod:`dpcd.estimators.private_search`).

Thin facades in the skglm manner, with one fit path: an estimator validates
its input and the settings every algorithm shares, then hands the data, with
its privacy budget, to the same algorithm spec the workflow runs
(:mod:`dpcd.algorithms`): the spec's ``prepare`` builds the datafit + penalty
pair and what the algorithm needs (smoothness constants, bounds, record norms,
clip units: :mod:`dpcd.algorithms.prepare`), its ``run`` calibrates the noise
through :mod:`dpcd.privacy` and runs the numba kernel.  So a model fitted here
and a workflow run with the same settings and seed spend the same budget the
same way.

Privacy notes (see docs/method/privacy.md)
------------------------------------------
* The guarantee is (ε, δ)-DP for ``coef_`` and ``intercept_`` under the
  ``neighbouring`` relation (default replace-one, with ``n_samples``
  public), the same for every solver so that two models at one ε compare
  like for like; the full account is ``privacy_ledger_``.  Per solver
  (:mod:`dpcd.privacy.cd`, ``gcd``, ``sgd``, ``scd``): dp_cd, dp_cd_p, dp_gcd
  and primal_dp_scd run under replace-one only (means over a public n); dp_sgd's clipped sum
  has sensitivity 2C under replace-one (Poisson batches, PLD accountant), C
  under add-or-remove-one or the zero record; dp_scd runs under replace-one
  (sensitivity 2√2·C) or the zero record (√2·C, the paper's); seq_dp_scd
  under both with Poisson batches, Lemma 5 at L_max (``"auto"``: the
  probability of a larger batch, at most 1 % of δ, charged to δ; see
  docs/method/dp_scd_release.md).  ``neighbouring="paper"``
  calibrates each solver under its paper's relation (DP-SGD
  add-or-remove-one, DP-SCD the zero record), the protocols the published
  tables mix.
* Private by default: the default solver ``dp_cd_p`` releases its
  smoothness constants privately (``smoothness_fraction`` of ε), relative to
  ``bounds``, a public bound on ``|x_ij|`` stated by the user (diffprivlib's
  ``bounds``); without one, half of that share first releases a bound
  (:mod:`dpcd.privacy.bounds`).  The classifier's label set is public when
  ``classes`` is given or the labels follow the {0, 1} or {-1, 1} convention.
* A fit that reads anything off the data without noise emits
  :class:`dpcd.PrivacyLeakWarning` naming each, also listed in
  ``privacy_ledger_.nonprivate_inputs``: ``exact_smoothness`` (``dp_cd``,
  ``dp_gcd``: the M_j set the steps and clipping thresholds),
  ``global_smoothness`` (``dp_sgd``: the step ``step / beta``) and
  ``label_set`` (classifier: ``classes_`` read off ``y``).
* An all-zero column is neither refused nor named: with private constants
  its constant is a noisy release like any column's (clamped to
  ``[floor b_j, b_j]`` of its bound); with exact ones (already non-private)
  it takes the constant of the public bound if given, else the largest.
* ``fit_intercept=True`` appends a constant feature equal to 1 and fits its
  coefficient like any other: its smoothness constant is known without
  looking at the data, nothing is centred, so it costs no privacy beyond one
  more coordinate in the calibration.  As in liblinear, the intercept is then
  penalised like the other coefficients.
* ``history_`` (objective per pass) is a diagnostic computed on the training
  data *without noise*; it is not covered by the guarantee.
* DP-SCD solvers (``dp_scd``, ``seq_dp_scd``, ``primal_dp_scd``) need records
  of ℓ2 norm at most 1 (their sensitivities, Lemmas 1, 4, 5, assume it).  With
  ``normalize_rows=True`` (default) each row — intercept column included — is
  divided by its own norm (for ``primal_dp_scd`` by ``norm · sqrt(n_samples)``,
  so that every column has norm <= 1 as Lemma 4 needs; ``n_samples`` is
  public).  This is a per-record transformation: it reads no other record,
  so it costs no privacy; ``predict`` applies the same map to new rows, so
  the model is ``f(x) = wᵀx / ‖x‖`` with the penalty ``(alpha/2)‖w‖²`` for
  all three solvers (primal fits ``w·sqrt(n)`` with ``alpha/n``).  With
  ``normalize_rows=False`` rows (or, primal, columns) of norm > 1 are refused.
* Sparse X (scipy) is kept sparse by ``dp_cd``, ``dp_cd_p``, ``dp_gcd`` and
  ``dp_sgd`` (their kernels read only the stored entries); the DP-SCD
  solvers densify it.
  The penalty must be ``"l2"`` (the paper's (λ/2)‖θ‖²); ``step`` is unused.
  The regressor's ``alpha`` is on scikit-learn's scale (½-mean squares), so
  the paper's ridge with λ is ``alpha = λ``.

Scales, as scikit-learn reads them
----------------------------------
* Regressor: ``(1/2n)‖Xw + b − y‖² + alpha·R(w)`` with scikit-learn's
  ``R`` (l1: ``‖w‖₁``; l2: ``½‖w‖²``; elastic net: ``l1_ratio‖w‖₁ +
  (1 − l1_ratio)/2 ‖w‖²``): ``alpha`` is ``Lasso``'s and ``ElasticNet``'s;
  ``Ridge(alpha=a)`` is ``penalty="l2", alpha=a / n_samples``.
* Classifier: ``(1/n)Σ log(1 + exp(−y(xᵀw + b))) + alpha·R(w)``:
  ``alpha`` is ``SGDClassifier(loss="log_loss")``'s;
  ``LogisticRegression(C=c)`` is ``penalty="l2", alpha=1 / (n_samples c)``.
* ``clip`` is relative (DP-CD, DP-GCD): coordinate j's threshold is
  ``clip · g · sqrt(M_j / c)``, ``clip · g`` times the (private, for
  ``dp_cd_p``) root mean square of feature j, with ``g`` the loss's gradient
  at a unit margin (1, logistic) or residual (2, squares), so one default
  fits standardised data of any scale; ``step`` multiplies the coordinate
  steps ``1 / M_j``.

scikit-learn's ``check_estimator``
----------------------------------
``tests/test_estimators.py`` runs every check of
``sklearn.utils.estimator_checks`` on large-ε configurations of each solver
(all pass) and on the default configurations (ε = 1), for which the checks in
:data:`EXPECTED_FAILED_CHECKS` are expected to fail, each with its reason.
"""

from dpcd.estimators.linear import (
    EXPECTED_FAILED_CHECKS,
    RULES,
    SCD_SOLVERS,
    SOLVERS,
    DPCoordinateDescentClassifier,
    DPCoordinateDescentRegressor,
)
from dpcd.estimators.private_search import PrivateSearch

__all__ = ["DPCoordinateDescentClassifier", "DPCoordinateDescentRegressor",
           "EXPECTED_FAILED_CHECKS", "PrivateSearch", "RULES", "SCD_SOLVERS", "SOLVERS"]
