"""DP-SCD calibration (Damaskinos et al. 2021): dual, seqDP-SCD and primal.

Sensitivities (ℓ2):

* DP-SCD (dual, Lemma 1): the [α; v] update of one mini-batch, rows of X of
  unit norm, each |ζ_i| ≤ C: one record's contribution has norm ≤ √2·C.
  Replacing a record by the zero record moves the update by at most √2·C
  (the paper's relation, ``replace_special``, Poisson sampling); replacing
  it by any record by at most 2√2·C (``replace_one``: without replacement,
  or Poisson through PLD with unit √2·C).  Not under add-or-remove-one: θ =
  v/(λN) and the dual variables are indexed by a public N.
* seqDP-SCD and primal DP-SCD (Lemmas 5, 4): 2·C·√(L(L+1)) = S(L); the
  proofs only use |ζ| ≤ C and unit norms on both datasets, so the bound holds
  under replace-one as well as for the zero record.  seqDP-SCD runs Poisson
  batches at a stated L_max (``max_batch_size``, default ``"auto"``; the
  probability of a larger batch is charged to δ): a batch holding the
  differing record moves the released state by at most S(L_max) from the
  state without it, so the zero record has sensitivity S(L_max) and
  replace-one the Poisson replace-one pair of PLD with unit S(L_max)
  (sensitivity 2·S(L_max)).  Fixed-size batches without replacement are an
  explicit opt-in whose ledger carries ``release_model_unproven``.  Primal
  (every record, q = 1) is replace-one only (public N).
* DP-SCD releases θ = v/(λN) only (α internal): docs/method/dp_scd_release.md.
"""

from __future__ import annotations

import math

from dpcd.privacy import accounting, secure
from dpcd.privacy.calibrate import (
    SAMPLINGS,
    Calibration,
    Relations,
    accounted_spec,
    budget_line,
    check_common,
    sampled_calibration,
    sampled_mechanism,
    sampled_spec,
)
from dpcd.privacy.ledger import BudgetLine, Ledger
from dpcd.privacy.validation import (
    check_batch_size,
    check_choice,
    check_clip,
    check_passes,
    check_positive_int,
)

_SCD_N = "the dual variables and theta = v/(lambda N) use a public N"
# Its paper's relation first: the zero record with Poisson sampling; any
# sampling without replacement, replace-one.
DP_SCD_RELATIONS = Relations(  # dual and seqDP-SCD
    {"poisson": ("replace_special", "replace_one"), "without_replacement": ("replace_one",)},
    _SCD_N)
PRIMAL_DP_SCD_RELATIONS = Relations({"none": ("replace_one",)}, _SCD_N)
# The record sampling of dual and seqDP-SCD unless configured otherwise, under
# every relation: Poisson batches (seq at a stated L_max, ``max_batch_size``,
# "auto" by default), the only sampling whose theta-release is proven
# (docs/method/dp_scd_release.md).
SCD_SAMPLING = "poisson"
SCD_VARIANTS = ("dual", "seq", "primal")
# With max_batch_size="auto": the smallest L_max whose tail probability is at
# most this share of delta.
SCD_TAIL_SHARE = 0.01


def dp_scd_sensitivity(clip: float, batch_size: int, variant: str, relation: str) -> float:
    """ℓ2 sensitivity of one DP-SCD mini-batch update (Lemmas 1, 4, 5).

    ``dual``: √2·C for the zero record (``replace_special``), 2√2·C under
    ``replace_one``.  ``seq``/``primal``: 2·C·√(L(L+1)) under both, with L
    the number of records (seq) or coordinates (primal) the batch holds.
    """
    check_choice(variant, "variant", SCD_VARIANTS)
    if variant == "dual":
        return (math.sqrt(2.0) if relation != "replace_one" else 2.0 * math.sqrt(2.0)) * clip
    return 2.0 * clip * math.sqrt(batch_size * (batch_size + 1.0))


def poisson_batch_tail(n: int, batch_size: int, steps: int, max_batch_size: int) -> float:
    """Probability bound that some Poisson batch holds L_max others besides a record.

    ``steps · P(Binomial(n − 1, L/n) ≥ L_max)`` (union bound): outside this
    event every batch that holds a given record holds at most L_max records,
    so Lemma 5 with L_max bounds each seqDP-SCD step
    (docs/method/dp_scd_release.md, section 4).
    """
    from scipy import stats

    tail = float(stats.binom.sf(max_batch_size - 1, n - 1, batch_size / n))
    return min(1.0, steps * tail)


def _max_batch_size(max_batch_size, n, batch_size, steps, delta):
    """L_max as an int in [L, n], ``"auto"`` resolved (see :func:`calibrate_dp_scd`)."""
    if max_batch_size == "auto":
        target = SCD_TAIL_SHARE * delta
        lo, hi = batch_size, n  # the tail is 0 at n: P(Bin(n - 1) >= n) = 0
        while lo < hi:
            mid = (lo + hi) // 2
            if poisson_batch_tail(n, batch_size, steps, mid) <= target:
                hi = mid
            else:
                lo = mid + 1
        return lo
    max_batch_size = check_positive_int(max_batch_size, "max_batch_size")
    if not batch_size <= max_batch_size <= n:
        raise ValueError(f"max_batch_size must be in [batch_size, n] = [{batch_size}, {n}], "
                         f"got {max_batch_size}")
    return max_batch_size


def calibrate_dp_scd(n, p, batch_size, clip, epsilon, delta, iterations=None, passes=None,
                     variant="dual", sampling=None, accountant="auto",
                     relation=None, max_batch_size=None) -> Calibration:
    """Calibrate DP-SCD (Damaskinos et al. 2021) and its seq/primal variants.

    The released quantity is θ = v/(λN) (``released: theta`` in the ledger);
    the noise is calibrated on the [α_B; v] (or [θ_B; v]) update as in the
    paper, with α (or v) internal state: see docs/method/dp_scd_release.md.

    Parameters
    ----------
    n, p : int
        Records N and features.
    batch_size : int
        Mini-batch size L (records for dual/seq, coordinates for primal).
    clip : float
        Update scaling bound C (Step 8).
    iterations, passes : optional
        T mini-batches; or passes, giving T = ceil(passes·n/L) (dual, seq) or
        ceil(passes·p/L) (primal).  Exactly one must be given.
    variant : {"dual", "seq", "primal"}
    sampling : {"poisson", "without_replacement", "none"}, optional
        The sampling of records the solver performs (default
        :data:`SCD_SAMPLING`: Poisson for dual and seq).  ``"poisson"``:
        the zero record (the paper's) or replace-one through PLD, both proven
        for the θ-release; ``"without_replacement"`` (exactly L records):
        replace-one, RDP only, an explicit opt-in whose ledger carries the
        caveat ``release_model_unproven`` (docs/method/dp_scd_release.md,
        section 6).  Primal touches all records every step (q = 1):
        ``"none"`` only.
    relation : {"replace_one", "replace_special", "paper"}, optional
        None or ``"paper"``: the zero record with Poisson sampling, replace-one
        otherwise.  Dual and seq with Poisson also run under
        ``"replace_one"`` (PLD only); the rest is refused (see the module
        docstring).
    max_batch_size : int or "auto", optional
        seqDP-SCD with Poisson batches only: L_max, ``"auto"`` when not
        given.  The noise follows Lemma 5 at L_max, and the probability that
        some batch holding the differing record holds more than L_max records
        (:func:`poisson_batch_tail`) is charged to δ (a budget line
        ``batch_size_tail``).  ``"auto"``: the smallest L_max whose tail is
        at most 1 % of δ.

    Returns
    -------
    Calibration
        ``noise_scales`` is the std of the Gaussian noise added to every
        entry of the concatenated [α_B; v] (or [θ_B; v]) update.

    Raises
    ------
    ValueError
        Among others, for a relation the variant and sampling are not
        calibrated under (:data:`DP_SCD_RELATIONS`), or an L_max whose tail
        probability is not below δ.
    """
    n, epsilon, delta, accountant = check_common(n, epsilon, delta, accountant)
    check_choice(variant, "variant", SCD_VARIANTS)
    p = check_positive_int(p, "p")
    clip = float(check_clip(clip))
    algorithm = {"dual": "dp_scd", "seq": "seq_dp_scd", "primal": "primal_dp_scd"}[variant]
    if sampling is None:
        sampling = "none" if variant == "primal" else SCD_SAMPLING
    if variant == "primal":
        batch_size = check_positive_int(batch_size, "batch_size")
        if batch_size > p:
            raise ValueError(f"batch_size must be <= p = {p} for primal DP-SCD, got {batch_size}")
        if sampling != "none":
            raise ValueError("sampling: primal DP-SCD uses every record each step (q = 1); "
                             "sampling must be 'none'")
    else:
        batch_size = check_batch_size(batch_size, n)
        check_choice(sampling, "sampling", SAMPLINGS)
    relations = PRIMAL_DP_SCD_RELATIONS if variant == "primal" else DP_SCD_RELATIONS
    relation = relations.resolve(relation, algorithm, sampling)
    if max_batch_size is not None and not (variant == "seq" and sampling == "poisson"):
        raise ValueError("max_batch_size: only seqDP-SCD with Poisson batches has one (the "
                         f"other samplings and variants do not depend on it); got {variant} "
                         f"with sampling={sampling!r}")
    if variant == "seq" and sampling == "poisson" and max_batch_size is None:
        # Lemma 5 at the expected L does not bound the batches Poisson draws
        max_batch_size = "auto"
    if (iterations is None) == (passes is None):
        raise ValueError("iterations: give exactly one of iterations or passes")
    if iterations is not None:
        steps = check_positive_int(iterations, "iterations")
    else:
        size = p if variant == "primal" else n
        steps = int(math.ceil(check_passes(passes) * size / batch_size))
    if sampling == "none":
        spec, q = ("gaussian", steps), 1.0
    else:
        spec, q = sampled_spec(n, batch_size, steps, sampling), batch_size / n
    sens_batch, tail, extra = batch_size, 0.0, {}
    if max_batch_size is not None:
        sens_batch = _max_batch_size(max_batch_size, n, batch_size, steps, delta)
        tail = poisson_batch_tail(n, batch_size, steps, sens_batch)
        if not tail < delta:
            raise ValueError(f"max_batch_size: L_max = {sens_batch} leaves a tail probability "
                             f"{tail:.3g} >= delta = {delta}; raise it")
        extra = {"max_batch_size": sens_batch, "delta_tail": tail}
    spec = accounted_spec(spec, epsilon, relation)
    z, achieved, used = sampled_calibration(spec, epsilon, delta - tail, accountant, relation)
    sens = dp_scd_sensitivity(clip, sens_batch, variant, relation)
    if variant == "seq" and sampling == "poisson" and relation == "replace_one":
        # S(L_max) bounds the shift from the state without the record, on
        # either dataset: the Poisson replace-one pair's unit (section 8)
        sens = 2.0 * sens
    lemma = {"dual": "Lemma 1", "seq": "Lemma 5", "primal": "Lemma 4"}[variant]
    note = f"{variant} DP-SCD, {lemma}, unit-norm records, C={clip:g}"
    if max_batch_size is not None:
        note += f", L_max={sens_batch} (tail {tail:.3g} charged to delta)"
    caveats = ()
    if sampling == "without_replacement":
        # fixed-size batches: a record drawn pushes another out, whose hidden
        # alpha then lags; theta-only release is not reduced to this accounting
        note += ("; theta released with alpha internal: the reduction to this accounting "
                 "is not established (docs/method/dp_scd_release.md, section 6)")
        caveats = ("release_model_unproven",)
    mech = sampled_mechanism("minibatch_update", spec, relation, z, sens, steps, sampling, q,
                              note, released="theta")
    budget = [budget_line("optimisation", used, epsilon, achieved, delta - tail, spec, z)]
    if max_batch_size is not None:
        budget.append(BudgetLine(group="batch_size_tail", accountant="binomial_tail",
                                 epsilon_target=0.0, epsilon_achieved=0.0, delta=tail))
    ledger = Ledger(algorithm=algorithm, neighbouring=relation, accountant=used,
                    epsilon_target=epsilon, epsilon_achieved=achieved, delta=delta,
                    mechanisms=[mech], budget=budget, caveats=caveats)
    return Calibration(noise_multiplier=mech.noise_multiplier, noise_scales=mech.noise_scale,
                       ledger=ledger, epsilon_achieved=achieved, steps=steps,
                       sampling=sampling, sampling_rate=q, extra=extra)


def _units(n, p, batch_size, steps, epsilon, variant, sampling, relation, sens_batch, clip):
    """The sensitivity the calibration's multiplier is relative to, in units of
    C (``noise std = z·units·C``), and the accounted spec it depends on."""
    if sampling == "none":
        spec = ("gaussian", steps)
    else:
        spec = accounted_spec(sampled_spec(n, batch_size, steps, sampling), epsilon, relation)
    sens = dp_scd_sensitivity(1.0, sens_batch, variant, relation)
    if variant == "seq" and sampling == "poisson" and relation == "replace_one":
        sens = 2.0 * sens  # as calibrate_dp_scd
    return accounting.sensitivity_unit(spec, relation) * sens, spec


def secure_dp_scd(n, p, batch_size, clip, epsilon, delta, iterations=None, passes=None,
                  variant="dual", sampling=None, accountant="auto", relation=None,
                  max_batch_size=None):
    """DP-SCD's secure calibration: every update rounded to the grid C/m, integer
    sums, exact discrete Gaussian noise on α_B (θ_B) and v
    (:func:`dpcd.privacy.secure.secure_lattice`, docs/secure_noise.md).

    One record's (primal: one coordinate's) contribution to the
    ``[α_B; v]`` update, ``[ζ/γ; ζ x/γ]`` in grid steps (``d = p + 1``
    entries; primal ``n + 1``), is rounded entry by entry, so the rounding
    moves it by at most ``√d/2``. The contributions rounded differently
    between neighbours: dual, the differing record's (twice when replace-one
    is accounted without amplification); seq, every record of the batches
    compared (Lemma 5's correlated updates), ``2·L_max`` per radius; primal,
    the ``L`` coordinates' on both datasets, ``2L``. A run draws at most
    ``T·(n + p)`` discrete Gaussians (every record in a batch; primal
    ``T·(L + n)``).

    Parameters and their checks as :func:`calibrate_dp_scd`; the accountant
    must be one the secure mode accepts (:func:`dpcd.privacy.secure.check_accountant`).

    Returns
    -------
    dpcd.privacy.secure.LatticeGaussian
        Its ``calibration`` (noise ``s·C/m`` on every entry, the secure
        ledger) and the kernel's grid and integer scale.
    """
    accountant = secure.check_accountant(accountant)
    kwargs = dict(iterations=iterations, passes=passes, variant=variant, sampling=sampling,
                  accountant=accountant, relation=relation)
    fast = calibrate_dp_scd(n, p, batch_size, clip, epsilon, delta,
                            max_batch_size=max_batch_size, **kwargs)
    mech = fast.ledger.mechanisms[0]
    sampling, relation, steps = fast.sampling, mech.relation, int(fast.steps)
    # seq with Poisson batches: L_max fixed at the target's, whatever the slack
    l_max = fast.extra.get("max_batch_size")
    sens_batch = batch_size if l_max is None else l_max
    units, spec = _units(n, p, batch_size, steps, epsilon, variant, sampling, relation,
                         sens_batch, clip)
    radius = {"dual": math.sqrt(2.0), "seq": dp_scd_sensitivity(1.0, sens_batch, "seq", ""),
              "primal": dp_scd_sensitivity(1.0, batch_size, "primal", "")}[variant]
    per_radius = {"dual": 1, "seq": 2 * sens_batch, "primal": 2 * batch_size}[variant]
    records = per_radius * int(round(units / radius))

    def calibrate(eps, dlt):
        if _units(n, p, batch_size, steps, eps, variant, sampling, relation, sens_batch,
                  clip)[1] != spec:
            raise ValueError(f"noise='secure': epsilon={epsilon:g} is too near the pld "
                             f"accountant's limit {accounting.PLD_MAX_EPSILON:g}")
        return calibrate_dp_scd(n, p, batch_size, clip, eps, dlt, max_batch_size=l_max,
                                **kwargs)

    primal = variant == "primal"
    return secure.secure_lattice(
        calibrate, epsilon, delta, clip=float(clip), units=units,
        dim=(n if primal else p) + 1,
        draws_per_step=(batch_size + n) if primal else (n + p),
        terms=batch_size if primal else n, records=records)
