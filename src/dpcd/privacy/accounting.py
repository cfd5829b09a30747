"""DpEvents for each release pattern, and numerical noise calibration.

Every noise multiplier in the project comes from :func:`calibrate_multiplier`,
a search (:func:`search`: Newton-secant steps on log ε in log z, where
``dp_accounting.mechanism_calibration`` runs Brent's method) over the noise
multiplier ``z`` of a ``dp_accounting`` event, for a target ε at a given δ.  No RDP or PLD formula is
written here: the accountants compute them.

Event specs
-----------
An event is described by a small hashable *spec* tuple, so calibrations can be
cached (a sweep asks for the same (n, passes, ε, δ) thousands of times):

``("gaussian", count)``
    ``count`` Gaussian releases, ``SelfComposed(Gaussian(z), count)``.
``("laplace", count)``
    ``count`` Laplace releases, ``SelfComposed(Laplace(z), count)``.
``("poisson_gaussian", q, steps)``
    ``SelfComposed(PoissonSampled(q, Gaussian(z)), steps)`` (the order the
    PLD accountant needs, see STYLE.md section 5).
``("wor_gaussian", n, batch_size, steps)``
    ``SelfComposed(SampledWithoutReplacement(n, batch_size, Gaussian(z)),
    steps)``, fixed-size batches drawn without replacement.
``("pure_pair", steps)``
    ``steps`` iterations of two pure ε′-DP releases with ε′ = 1/z (DP-GCD's
    report-noisy-max selection and Laplace gradient entry):
    ``Composed(SelfComposed(RandomizedResponse(2/(1+e^ε′), 2), steps),
    SelfComposed(Laplace(z), steps))``. Every ε′-DP mechanism is a
    post-processing of binary randomized response with parameter ε′ (Kairouz,
    Oh, Viswanath 2015), so its Rényi divergences are at most the latter's
    (the composition :mod:`dpcd.privacy.gcd` calls ``"rdp"``); replace-one
    only (dp_accounting's RDP accountant accounts randomized response under
    ``REPLACE_ONE``), RDP only.
``("pure_rr_pair", steps)``
    Secure DP-GCD's ``steps`` iterations (discrete report-noisy-max and a
    discrete Laplace entry on a grid, each ε′-DP with ε′ = 1/z): both
    releases accounted as binary randomized response at ε′ (the dominating
    ε′-DP mechanism, as ``pure_pair``'s selection is),
    ``SelfComposed(RandomizedResponse(2/(1+e^ε′), 2), 2·steps)``;
    replace-one, RDP only (:mod:`dpcd.privacy.gcd`'s ``"rdp"`` composition
    in the secure mode).
``("smoothness_gaussian", z_smooth, count_smooth, eps_bound, steps)``
    DP-CD with privately estimated smoothness constants as one release
    (a private-search candidate, :mod:`dpcd.tuning.candidates`): the Laplace
    release of ``count_smooth`` clipped smoothness means, each of noise
    multiplier ``z_smooth`` (scale / its replace-one sensitivity b_j/n,
    :mod:`dpcd.privacy.smoothness`), preceded, when ``eps_bound`` > 0, by
    the ``eps_bound``-DP release of a feature bound (exponential mechanism,
    :mod:`dpcd.privacy.bounds`, accounted as binary randomized response at
    ``eps_bound`` as ``pure_pair`` is), then ``steps`` Gaussian steps of
    multiplier ``z``: ``Composed([RandomizedResponse(2/(1+e^eps_bound), 2)?,
    SelfComposed(Laplace(z_smooth), count_smooth), SelfComposed(Gaussian(z),
    steps)])``; replace-one (DP-CD's relation), RDP only.

Neighbouring relations and sensitivity normalisation
----------------------------------------------------
``z`` is always *noise std (or Laplace scale) / sensitivity*, where the
sensitivity is computed under the run's relation (see :data:`RELATIONS`):

* Unsampled Gaussian/Laplace: the run's relation is replace-one and the
  sensitivity is the replace-one sensitivity.  The pair of output
  distributions is then two Gaussians (Laplaces) whose means are at most one
  noise-unit apart, which is exactly what ``dp_accounting`` accounts under
  ``ADD_OR_REMOVE_ONE``; we therefore compose unsampled events in an
  ``ADD_OR_REMOVE_ONE`` accountant.  (The PLD accountant under ``REPLACE_ONE``
  would shift by *two* units, because it reads the sensitivity as a bound on
  one record's contribution; the RDP accountant ignores the relation for
  Gaussians.  Normalising ourselves keeps both accountants consistent.)
* Poisson sampling: add-or-remove-one (or replace-with-zero-record,
  ``REPLACE_SPECIAL``), sensitivity = bound on one record's contribution.
  Both accountants support it.
* Poisson sampling under replace-one: PLD only (``dp_accounting``'s RDP
  accountant refuses it).  The PLD accountant then compares
  ``q·N(−1, z²) + (1−q)·N(0, z²)`` with ``q·N(+1, z²) + (1−q)·N(0, z²)``
  (``privacy_loss_mechanism.AdditiveNoisePrivacyLoss``, REPLACE adjacency):
  ``z`` is relative to the bound r on the norm of one record's contribution
  *around zero* (r = C for a clipped gradient), half the replace-one
  sensitivity 2r.  Callers scale the noise by r, not 2r
  (:data:`POISSON_REPLACE_ONE_UNIT`).
* Sampling without replacement: replace-one, sensitivity = replace-one
  sensitivity of the batch statistic; RDP only (Wang et al. 2019, Thm 27).
"""

from __future__ import annotations

import functools
import math

from dpcd.privacy import cache

# dp_accounting is imported where it is used, not here: importing it pulls in
# scipy.signal and scipy.stats (1.1 s), and every workflow job imports this
# package while most only read calibrations from the cache.

# Relations a ledger can state, and dp_accounting's name for them
# (members of ``dp_accounting.NeighboringRelation``).
RELATIONS = {
    "replace_one": "REPLACE_ONE",
    "add_or_remove_one": "ADD_OR_REMOVE_ONE",
    "replace_special": "REPLACE_SPECIAL",
}


def neighboring_relation(name: str):
    """``dp_accounting.NeighboringRelation`` member ``name`` (e.g. ``"REPLACE_ONE"``)."""
    import dp_accounting

    return getattr(dp_accounting.NeighboringRelation, name)


ACCOUNTANTS = ("rdp", "pld")

# Under replace-one with Poisson sampling the PLD accountant's unit is one
# record's contribution, i.e. this fraction of the replace-one sensitivity
# (see the module docstring); every other (event, relation) pair's unit is
# the sensitivity itself.
POISSON_REPLACE_ONE_UNIT = 0.5


# Under Poisson replace-one PLD is the only accountant (no RDP answer to fall
# back on when the discretisation's pessimism adds up), so its interval
# shrinks with the number of compositions: 1e-3 up to 10^4 steps, then
# 1e-3·100/√steps. At 1.03 M steps (California, 50 passes at batch 1) the ε of
# z = 0.9667 is 1.45 at 1e-3, 0.62 at 1e-4 and 0.59 at 3e-5 (all valid upper
# bounds), and one evaluation takes 0.9 s at 1e-4.
PLD_REPLACE_ONE_STEPS = 1.0e4


def pld_interval(spec: tuple, relation: str) -> float:
    """PLD discretisation interval of ``spec`` under ``relation``."""
    if sensitivity_unit(spec, relation) == 1.0:
        return PLD_DISCRETIZATION
    return PLD_DISCRETIZATION * min(1.0, math.sqrt(PLD_REPLACE_ONE_STEPS / spec[-1]))


def sensitivity_unit(spec: tuple, relation: str) -> float:
    """Fraction of the ℓ2 sensitivity under ``relation`` that one unit of the
    noise multiplier of ``spec`` stands for: noise std = z · unit · sensitivity."""
    if spec[0] == "poisson_gaussian" and relation == "replace_one":
        return POISSON_REPLACE_ONE_UNIT
    return 1.0

# PLD discretisation of the privacy-loss values.  The PLD accountant is
# pessimistic (an upper bound on ε) at any interval; 1e-3 keeps one DP-SGD
# evaluation with thousands of steps well under a second, and the calibrated
# noise still meets the target within 2 % when re-checked at 1e-4
# (tests/test_privacy_calibration.py::test_dp_sgd_poisson_round_trip).
PLD_DISCRETIZATION = 1e-3
# The PLD search for z stops within this fraction of the bracket's top (RDP's
# at 1e-6): at that discretisation ε_PLD(z) is a step function, not even
# monotone at finer scales (z = 0.6419 gave ε 0.977 and z = 0.6433 gave 0.990
# on Electricity's 20-pass DP-SGD), so Brent's last ~10 halvings (a third of a
# 20-second calibration) only chose among equally valid answers. The search
# now ends when its bracket is narrower than 0.1 % of z (26 -> 17 PLD
# evaluations there; every answer still meets the target, re-checked).
PLD_Z_TOLERANCE = 1e-3


def make_event(spec: tuple, z: float):
    """Return the ``dp_accounting`` event of ``spec`` with noise multiplier ``z``."""
    from dp_accounting import dp_event

    kind = spec[0]
    if kind == "gaussian":
        return dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), int(spec[1]))
    if kind == "laplace":
        return dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(z), int(spec[1]))
    if kind == "poisson_gaussian":
        _, q, steps = spec
        return dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(float(q), dp_event.GaussianDpEvent(z)), int(steps)
        )
    if kind in ("pure_pair", "pure_rr_pair"):
        eps_step = 1.0 / z
        rr = 0.0 if eps_step > 700.0 else 2.0 / (1.0 + math.exp(eps_step))
        select = dp_event.RandomizedResponseDpEvent(rr, 2)
        if kind == "pure_rr_pair":  # 2T randomized responses (one RDP evaluation)
            return dp_event.SelfComposedDpEvent(select, 2 * int(spec[1]))
        return dp_event.ComposedDpEvent([
            dp_event.SelfComposedDpEvent(select, int(spec[1])),
            dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(z), int(spec[1])),
        ])
    if kind == "smoothness_gaussian":
        _, z_smooth, count_smooth, eps_bound, steps = spec
        events = [dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(float(z_smooth)),
                                               int(count_smooth)),
                  dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), int(steps))]
        if eps_bound > 0:
            rr = 0.0 if eps_bound > 700.0 else 2.0 / (1.0 + math.exp(float(eps_bound)))
            events.insert(0, dp_event.RandomizedResponseDpEvent(rr, 2))
        return dp_event.ComposedDpEvent(events)
    if kind == "wor_gaussian":
        _, n, batch, steps = spec
        return dp_event.SelfComposedDpEvent(
            dp_event.SampledWithoutReplacementDpEvent(
                int(n), int(batch), dp_event.GaussianDpEvent(z)
            ),
            int(steps),
        )
    raise ValueError(f"unknown event spec {spec!r}")


def accountant_relation(spec: tuple, relation: str, kind: str):
    """Name of the ``dp_accounting.NeighboringRelation`` to account ``spec`` under
    ``relation`` (a name, so that checking a run needs no dp_accounting import).

    Raises ``ValueError`` when the pair (event, relation) or the accountant
    ``kind`` is not supported (instead of silently accounting something else).
    """
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {', '.join(RELATIONS)}; got {relation!r}")
    if kind not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {', '.join(ACCOUNTANTS)}; got {kind!r}")
    event_kind = spec[0]
    if event_kind in ("gaussian", "laplace"):
        # Sensitivity-normalised unsampled release (see module docstring).
        return "ADD_OR_REMOVE_ONE"
    if event_kind == "poisson_gaussian":
        if relation == "replace_one" and kind != "pld":
            raise ValueError(
                "accountant: Poisson sampling under replace_one is supported by the "
                "pld accountant only"
            )
        return RELATIONS[relation]
    if event_kind in ("pure_pair", "pure_rr_pair"):
        if relation != "replace_one" or kind != "rdp":
            raise ValueError("relation: pure-DP pairs (DP-GCD) are accounted under "
                             "replace_one by the rdp accountant only")
        return "REPLACE_ONE"
    if event_kind == "smoothness_gaussian":
        if relation != "replace_one" or kind != "rdp":
            raise ValueError("relation: DP-CD with private smoothness constants is "
                             "accounted under replace_one by the rdp accountant only")
        return "REPLACE_ONE"
    if event_kind == "wor_gaussian":
        if relation != "replace_one":
            raise ValueError(
                "relation: sampling without replacement is accounted under replace_one only"
            )
        if kind != "rdp":
            raise ValueError(
                "accountant: sampling without replacement is supported by the rdp accountant only"
            )
        return "REPLACE_ONE"
    raise ValueError(f"unknown event spec {spec!r}")


def supported_accountants(spec: tuple, relation: str) -> tuple[str, ...]:
    """Accountants able to account ``spec`` under ``relation`` (may be empty)."""
    out = []
    for kind in ACCOUNTANTS:
        try:
            accountant_relation(spec, relation, kind)
        except ValueError:
            continue
        out.append(kind)
    return tuple(out)


def new_accountant(kind: str, rel: str, discretization: float | None = None):
    """Return an empty accountant of ``kind`` (``"rdp"`` or ``"pld"``) for the
    relation named ``rel`` (see :func:`accountant_relation`), PLD with the
    interval ``discretization`` (default :data:`PLD_DISCRETIZATION`)."""
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    rel = neighboring_relation(rel)
    if kind == "rdp":
        return rdp_privacy_accountant.RdpAccountant(neighboring_relation=rel)
    return pld_privacy_accountant.PLDAccountant(
        neighboring_relation=rel,
        value_discretization_interval=discretization or PLD_DISCRETIZATION,
    )


def epsilon_of(spec: tuple, z: float, delta: float, kind: str, relation: str) -> float:
    """ε at ``delta`` of ``spec`` with noise multiplier ``z`` under accountant ``kind``."""
    return _epsilon(spec, float(z), float(delta), kind, relation,
                    pld_interval(spec, relation) if kind == "pld" else None)


# A search evaluates some z more than once (its bracket's ends, Brent's ends, the
# final check), and one PLD evaluation of millions of compositions can take
# seconds: evaluations are memoised, keyed by the PLD discretisation too.
@functools.lru_cache(maxsize=65536)
def _epsilon(spec, z, delta, kind, relation, discretization):
    rel = accountant_relation(spec, relation, kind)
    if kind == "pld" and spec[0] == "poisson_gaussian" and spec[1] > 0 and z > 0:
        return _poisson_pld_epsilon(spec, z, delta, rel, discretization)
    accountant = new_accountant(kind, rel, discretization)
    event = make_event(spec, z)
    if not accountant.supports(event):  # defensive: the matrix above says it does
        raise ValueError(f"accountant {kind} does not support {event}")
    return float(accountant.compose(event).get_epsilon(delta))



def _poisson_pld_epsilon(spec, z, delta, rel, discretization):
    """``PLDAccountant``'s ε of ``spec`` (``poisson_gaussian``), bit for bit,
    without its cost of deciding how to self-compose.

    The accountant builds the one-step PLD and self-composes it ``steps``
    times; a one-step PMF of at most 1000 points is sparse, and
    ``SparsePLDPmf.self_compose`` first computes ``size ** steps`` as a
    Python integer (millions of digits: 5 s at 3.5 M steps) only to find it
    above 1000 and self-compose the dense PMF instead. The same dense PMF
    is handed to the same self-composition here, after the same size rule
    evaluated on ``min(steps, 10)`` (2^10 > 1000: the same answer whenever
    size >= 2); tests/test_privacy_calibration.py checks the ε against the
    accountant's.
    """
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from dp_accounting.pld import privacy_loss_mechanism as plm

    _, q, steps = spec
    steps = int(steps)
    if rel == "REPLACE_ONE" and 0 < q < 1:
        # from_gaussian_mechanism's replace-one PLD, its connect-the-dots
        # deltas computed on the whole grid of losses at once (below)
        loss = _replace_loss_class()(
            z, sensitivity=1, pessimistic_estimate=True, log_mass_truncation_bound=-50,
            sampling_prob=float(q), adjacency_type=plm.AdjacencyType.REPLACE)
        single = pld_lib.PrivacyLossDistribution(
            pld_lib._create_pld_pmf_from_monotone_privacy_loss(  # pylint: disable=protected-access
                loss, pessimistic_estimate=True,
                value_discretization_interval=discretization, use_connect_dots=True))
    else:
        single = pld_lib.from_gaussian_mechanism(
            standard_deviation=z, value_discretization_interval=discretization,
            sampling_prob=float(q), neighboring_relation=neighboring_relation(rel))
    limit = pld_pmf._MAX_PMF_SPARSE_SIZE  # the accountant's sparse/dense threshold
    cut = limit.bit_length()  # 2^cut > limit

    def dense(pmf):  # what SparsePLDPmf.self_compose would self-compose
        if isinstance(pmf, pld_pmf.SparsePLDPmf) and pmf.size ** min(steps, cut) <= limit:
            return pmf
        return pmf.to_dense_pmf()

    # pylint: disable=protected-access (the one-step PLD's two PMFs)
    remove = dense(single._pmf_remove)
    add = None if single._symmetric else dense(single._pmf_add)
    composed = pld_lib.PrivacyLossDistribution(remove, add).self_compose(steps)
    # the accountant composes onto its empty PLD (a tail truncation of 1e-15)
    return float(pld_lib.identity(discretization).compose(composed).get_epsilon_for_delta(delta))

@functools.cache
def _replace_loss_class():
    """``GaussianPrivacyLoss`` whose replace-one ``get_delta_for_epsilon``
    inverts the privacy loss of every ε of its grid in one numpy expression.

    dp_accounting inverts it point by point in Python
    (``_inverse_privacy_loss_replace``, its ``log_sinh`` and ``asinh_exp``):
    70 % of an evaluation's time, tens of thousands of points for millions of
    steps. This is the same formula, term for term, on arrays (numpy's
    ``logaddexp``; ``math``'s ``exp`` and ``log1p``), so the same floats:
    tests/test_privacy_calibration.py checks the cut points, the deltas and
    the ε against dp_accounting's, bit for bit. z is unchanged.
    """
    import numpy as np
    from dp_accounting.pld import privacy_loss_mechanism as plm

    class ReplaceGaussianLoss(plm.GaussianPrivacyLoss):
        def get_delta_for_epsilon(self, epsilon):
            if np.ndim(epsilon) == 0:  # a scalar: dp_accounting's own
                return super().get_delta_for_epsilon(epsilon)
            epsilons = np.asarray(epsilon, dtype=float)
            x = self.inverse_privacy_losses(epsilons)
            deltas = self.mu_upper_cdf(x) - np.exp(epsilons + self.mu_lower_log_cdf(x))
            return np.clip(deltas, 0, 1)

        def inverse_privacy_losses(self, epsilons):
            """``_inverse_privacy_loss_replace`` of each of ``epsilons``."""
            half = np.abs(epsilons) / 2
            log_alpha = (0.5 * (self.sensitivity / self._standard_deviation) ** 2
                         + math.log1p(-self.sampling_prob) - math.log(self.sampling_prob))
            # math's exp and log1p, as dp_accounting's (numpy's own may be SIMD
            # code that differs in the last bit); log1p(-1) at 0 masked below
            log1p = [math.log1p(-math.exp(v)) if v else 0.0 for v in (-2 * half).tolist()]
            log_sinh = np.where(half == 0, 0.0, half + np.array(log1p) - math.log(2))
            term = log_alpha + log_sinh  # log(sinh(|ε|/2)·alpha)
            sign = np.where(epsilons >= 0, 1.0, -1.0)
            asinh = -sign * np.logaddexp(0.5 * np.logaddexp(0, 2 * term), term)
            x = self._standard_deviation ** 2 / self.sensitivity * (asinh - epsilons / 2)
            return np.where(epsilons == 0, 0.0, x)

    return ReplaceGaussianLoss


# Above this ε the privacy-loss range, hence the PLD array, becomes huge.
PLD_MAX_EPSILON = 20.0

# The searches stop within these fractions of z above the smallest z that
# meets the target. At PLD's discretisation ε_PLD(z) is a step function, not
# even monotone at finer scales (z = 0.6419 gave ε 0.977 and z = 0.6433 gave
# 0.990 on Electricity's 20-pass DP-SGD), so a finer search than 0.1 % would
# only choose among equally valid answers; RDP's ε is smooth and cheap.
PLD_Z_TOLERANCE = 1e-3
RDP_Z_TOLERANCE = 1e-6
# The add-or-remove RDP answer only starts the PLD search of a Poisson
# replace-one event (no RDP there): a coarse one does.
RDP_START_TOLERANCE = 1e-2
# The smallest z a search evaluates: below it the answer is refused (no
# meaningful privacy under RDP; a privacy-loss range PLD cannot hold).
Z_FLOOR = {"rdp": 1e-3, "pld": 1e-2}
# A search step moves z by at most this factor: a PLD evaluation far from
# its answer is slow (far below: a huge privacy-loss range; far above:
# dp_accounting's sparse self-composition of millions of steps).
MAX_STEP = {"rdp": 4.0, "pld": 2.0}
# |log(ε / target)| beyond which a point is too far from the answer for its
# slope to mean anything (ε capped at 0 or inf, or RDP's floor at huge z).
_FAR = 30.0
# Never reached on the paper's events (3 to 5 evaluations); a bound, not a tolerance.
MAX_EVALUATIONS = 40
# The PLD search of an event that RDP also accounts starts this far below
# the RDP answer: the DP-SGD answers of the DP-CD paper's datasets are 0.64
# to 0.97 x z_RDP when PLD wins, and the search then never evaluates above
# the probe (where, at a few hundred points per step, one evaluation of
# millions of steps takes seconds: 7 s for Electricity's 50-pass DP-SGD at
# z = 0.95, 0.02 s at z = 0.9).
PLD_PROBE = 0.75


def initial_guess(spec: tuple, epsilon: float, delta: float) -> float:
    """A start for the search of ``spec``'s z: the single-Gaussian bound of
    its sampled sensitivity, scaled by sqrt(number of releases)."""
    count = spec[-1]
    q = spec[1] if spec[0] == "poisson_gaussian" else (
        spec[2] / spec[1] if spec[0] == "wor_gaussian" else 1.0)
    return q * math.sqrt(2 * count * math.log(1.25 / delta)) / epsilon


def search(gap, starts, slope, rtol, floor, max_step):
    """The smallest evaluated ``z`` with ``gap(z) <= 0`` once it is within
    ``rtol`` (relative) of the root of ``gap``, a decreasing function of z.

    ``gap(z)`` is ``log(ε(z) / target)``, close to linear in ``u = log z``
    (ε is about c/z for large z, steeper where sampling amplifies), so
    interpolation on u lands within 0.1 % in a few evaluations: a Newton
    step with the guess ``slope`` of d gap / du, then the secant through the
    last two points, then inverse quadratic interpolation through the last
    three (the interpolations of Brent's method, which the accountants'
    own calibration runs on z itself). Each step aims half a tolerance
    inside the feasible side, so the last evaluation usually both meets the
    target and ends the search. ``starts`` are evaluated in order until one
    meets the target (a probe below a known answer, then the answer). A step
    moves z by at most a factor ``max_step``, stays inside the bracket once
    there is one (bisecting when interpolation leaves it or stalls), and
    never goes below ``floor``: a z at the floor that meets the target
    raises ``ValueError``. The z returned was evaluated and meets the target.
    """
    lo = hi = width = None  # (u, g): largest u that misses, smallest that meets
    points = []  # every (u, g) near the answer, in order
    queue = [math.log(z) for z in starts]
    u = queue.pop(0)
    for _ in range(MAX_EVALUATIONS):
        g = gap(math.exp(u))
        if g <= 0 and math.exp(u) <= floor * (1 + 1e-9):
            raise ValueError(f"noise multiplier <= {floor} meets the target")
        if g > 0 and (lo is None or u > lo[0]):
            lo = (u, g)
        if g <= 0 and (hi is None or u < hi[0]):
            hi = (u, g)
        if abs(g) < _FAR and all(u != p[0] for p in points):
            points.append((u, g))
        if g > 0 and queue:
            u = queue.pop(0)
            continue
        queue = []
        if len(points) >= 2:
            (u1, g1), (u2, g2) = points[-2:]
            secant = (g2 - g1) / (u2 - u1)
            slope = secant if secant < 0 else slope
        if hi and ((lo and hi[0] - lo[0] <= rtol) or -hi[1] <= -slope * rtol):
            return math.exp(hi[0])
        aim = 0.5 * rtol * slope
        step = math.log(max_step)
        if abs(g) >= _FAR:  # ε = 0 or inf, capped, or RDP's floor: no slope to trust
            nxt = u + (step if g > 0 else -step)
        else:
            nxt = _interpolate(points[-3:], aim) if len(points) >= 3 else None
            if nxt is None:
                nxt = u + (aim - g) / slope
        nxt = min(max(nxt, u - step, math.log(floor)), u + step)
        if lo and hi and hi[0] > lo[0]:
            # bisect when interpolation leaves the bracket, or when neither
            # the bracket nor the gap halved in the last step (a stalling end)
            stalled = (width is not None and hi[0] - lo[0] > 0.5 * width
                       and len(points) >= 2 and abs(points[-1][1]) > 0.5 * abs(points[-2][1]))
            width = hi[0] - lo[0]
            if stalled or not lo[0] < nxt < hi[0]:
                nxt = 0.5 * (lo[0] + hi[0])
        elif lo and hi:  # ε not monotone at this scale: hi meets the target
            return math.exp(hi[0])
        u = nxt
    raise RuntimeError(f"calibration did not converge in {MAX_EVALUATIONS} evaluations")


def _interpolate(points, aim):
    """Inverse quadratic interpolation: the u where the parabola u(g) through
    three (u, g) points takes g = ``aim``; None if two g coincide."""
    (u0, g0), (u1, g1), (u2, g2) = points
    if len({g0, g1, g2}) < 3:
        return None
    return (u0 * (aim - g1) * (aim - g2) / ((g0 - g1) * (g0 - g2))
            + u1 * (aim - g0) * (aim - g2) / ((g1 - g0) * (g1 - g2))
            + u2 * (aim - g0) * (aim - g1) / ((g2 - g0) * (g2 - g1)))


def _pld_wins(spec, epsilon, delta, relation, z_rdp):
    """Whether some ``z`` ≤ ``z_rdp`` meets ``epsilon`` under PLD: the probe
    below ``z_rdp`` first, ``z_rdp`` itself only when the probe misses."""
    return any(epsilon_of(spec, z, delta, "pld", relation) <= epsilon
               for z in (PLD_PROBE * z_rdp, z_rdp))


@functools.lru_cache(maxsize=4096)
def _calibrate(spec: tuple, epsilon: float, delta: float, kind: str, relation: str,
               rtol: float | None = None):
    """Smallest ``z`` with ε(z) ≤ ``epsilon`` under one accountant, within
    ``rtol`` (default the accountant's tolerance), its ε, and the slope of
    log ε in log z there (cached).

    RDP starts from :func:`initial_guess`. PLD starts from the RDP answer:
    at :data:`PLD_PROBE` times it, then at it (PLD is at least as tight as
    RDP in most regimes, and this keeps PLD away from tiny z, whose
    privacy-loss range would not fit in memory). Under Poisson replace-one
    there is no RDP answer: the start is the larger of the add-or-remove
    RDP answer and twice :func:`initial_guess` (one record's contribution
    can move the sampled sum by twice its radius), seldom below the answer.
    """
    accountant_relation(spec, relation, kind)
    if kind == "pld" and epsilon > PLD_MAX_EPSILON:
        raise ValueError(f"epsilon: the pld accountant is limited to epsilon <= {PLD_MAX_EPSILON}")
    slopes = []

    def gap(z):
        e = epsilon_of(spec, z, delta, kind, relation)
        # same sign as ε - epsilon; ε = 0 or inf (far from the answer) capped
        return min(max(math.log(max(e, 1e-300) / epsilon), -700.0), 700.0)

    if kind == "rdp":
        rtol = rtol or RDP_Z_TOLERANCE
        starts, slope = (max(2 * Z_FLOOR["rdp"], initial_guess(spec, epsilon, delta)),), -1.0
    elif sensitivity_unit(spec, relation) != 1.0:
        z_rdp, _, slope = _calibrate(spec, epsilon, delta, "rdp", "add_or_remove_one",
                                     RDP_START_TOLERANCE)
        starts = (max(z_rdp, 2 * initial_guess(spec, epsilon, delta)),)
    else:
        z_rdp, _, slope = _calibrate(spec, epsilon, delta, "rdp", relation)
        starts = (PLD_PROBE * z_rdp, z_rdp)
    rtol = rtol or PLD_Z_TOLERANCE

    def recorded(z):
        g = gap(z)
        slopes.append((math.log(z), g))
        if kind == "pld" and not _monotone(slopes):
            raise _NotMonotone  # no evaluation more: the former search decides
        return g

    try:
        try:
            z = search(recorded, starts, slope, rtol, Z_FLOOR[kind], MAX_STEP[kind])
        except _NotMonotone:
            z = _brent_pld(spec, epsilon, delta, relation)
    except ValueError:
        if kind == "rdp":
            raise ValueError(
                f"epsilon={epsilon} is so large that noise multiplier < {Z_FLOOR[kind]} "
                "suffices; refusing to calibrate (no meaningful privacy)") from None
        raise ValueError(f"epsilon={epsilon}: noise multiplier below {Z_FLOOR[kind]}, "
                         "use the rdp accountant") from None
    achieved = epsilon_of(spec, z, delta, kind, relation)
    if achieved > epsilon:  # unreachable; never return a z that misses the target
        raise RuntimeError(f"calibration overshoot: {achieved} > {epsilon}")
    return float(z), achieved, _local_slope(slopes, math.log(z))


class _NotMonotone(Exception):
    """ε_PLD rose with z among a search's evaluations."""


def _monotone(points):
    """Whether the evaluated log-gaps decrease with z, as ε does."""
    gaps = [g for _, g in sorted(points)]
    return all(b <= a for a, b in zip(gaps, gaps[1:]))


# Below a PLD probe that meets the target, :func:`_brent_pld`'s bracket steps
# down by this factor until one misses.
PLD_STEP_DOWN = 0.9


def _brent_pld(spec, epsilon, delta, relation):
    """The PLD answer of Brent's method (``scipy.optimize.brentq`` on
    ``log(ε(z) / epsilon)`` to within :data:`PLD_Z_TOLERANCE` of the
    bracket's top, the smallest evaluated z that meets the target), from a
    bracket stepped from the RDP answer: the search before interpolation
    on log z, kept for the events whose ε_PLD is not monotone at the scale
    of the search (millions of steps at δ ≈ 1e-9: ε 1.06 at z = 0.6734, 3.5
    at 0.6811, 0.79 at 0.6851 on Electricity's 50-pass DP-SGD). There every
    search finds another of many valid answers several % apart, and this
    one keeps the answer, and so the tables, that it always gave.
    """
    from scipy import optimize

    # the RDP answer exactly as that search computed it: brentq on ε - epsilon
    # over [1e-3, the first of initial_guess x 2^k that meets it], then the
    # feasible side of the root (its PLD evaluations are that sensitive)
    start = "add_or_remove_one" if sensitivity_unit(spec, relation) != 1.0 else relation

    def rdp_gap(z):
        return epsilon_of(spec, z, delta, "rdp", start) - epsilon

    top = max(2 * Z_FLOOR["rdp"], initial_guess(spec, epsilon, delta))
    while rdp_gap(top) > 0:
        top *= 2
    root = optimize.brentq(rdp_gap, Z_FLOOR["rdp"], top, xtol=RDP_Z_TOLERANCE * top)
    z_rdp = next((x for x in (root, root + RDP_Z_TOLERANCE * top) if rdp_gap(x) <= 0), top)
    met = []

    def log_gap(z):
        e = epsilon_of(spec, z, delta, "pld", relation)
        if e <= epsilon:
            met.append(z)
        return min(max(math.log(max(e, 1e-300) / epsilon), -700.0), 700.0)

    lo = PLD_PROBE * z_rdp
    if log_gap(lo) > 0:  # the answer is above the probe
        hi = z_rdp
        while log_gap(hi) > 0:
            lo, hi = hi, 2 * hi
    else:
        while True:
            hi, lo = lo, lo * PLD_STEP_DOWN
            if lo < Z_FLOOR["pld"]:
                raise ValueError("noise multiplier below the floor")
            if log_gap(lo) > 0:
                break
    optimize.brentq(log_gap, lo, hi, xtol=PLD_Z_TOLERANCE * hi)
    return min(met)


def _local_slope(points, u):
    """Secant slope of the two evaluated points nearest ``u`` (-1 if none)."""
    near = sorted((p for p in points if abs(p[1]) < 700), key=lambda p: abs(p[0] - u))[:2]
    if len(near) == 2 and near[0][0] != near[1][0]:
        s = (near[0][1] - near[1][1]) / (near[0][0] - near[1][0])
        if s < 0:
            return s
    return -1.0


def calibrate_multiplier(spec: tuple, epsilon: float, delta: float,
                         accountant: str = "auto", relation: str = "replace_one"):
    """Calibrate the noise multiplier of ``spec`` to (``epsilon``, ``delta``).

    Parameters
    ----------
    spec : tuple
        Event spec (see module docstring).
    epsilon, delta : float
        Target budget.
    accountant : {"auto", "rdp", "pld"}
        ``"auto"`` calibrates with every accountant that supports ``spec``
        and keeps the smallest noise multiplier (all are valid upper bounds
        on ε, so the smallest noise is the tightest valid one).
    relation : str
        Neighbouring relation of the run (see :data:`RELATIONS`).

    Returns
    -------
    z : float
        Noise multiplier.
    epsilon_achieved : float
        ε at ``delta`` of the returned ``z`` (≤ ``epsilon``).
    accountant : str
        Accountant actually used.
    """
    if accountant == "auto":
        kinds = supported_accountants(spec, relation)
        if epsilon > PLD_MAX_EPSILON and len(kinds) > 1:
            kinds = tuple(k for k in kinds if k != "pld")
        if not kinds:
            # Re-raise the specific reason.
            accountant_relation(spec, relation, "rdp")
    else:
        accountant_relation(spec, relation, accountant)
        kinds = (accountant,)
    inputs = {"spec": list(spec), "epsilon": float(epsilon), "delta": float(delta),
              "accountants": list(kinds), "relation": relation,
              "pld_discretization": pld_interval(spec, relation)}
    z, achieved, used = cache.cached(
        "calibrate_multiplier", inputs,
        lambda: list(_tightest(spec, float(epsilon), float(delta), kinds, relation)))
    return float(z), float(achieved), used


@functools.lru_cache(maxsize=4096)
def _tightest(spec, epsilon, delta, kinds, relation):
    """The smallest noise multiplier over the accountants ``kinds``.

    RDP is calibrated first (seconds even for millions of compositions).  PLD
    is calibrated only if it can win (:func:`_pld_wins`): ε_PLD decreases in
    z, so when ε_PLD(z_RDP) already exceeds the target the PLD answer is larger
    than z_RDP.  That happens for long runs, where the pessimistic
    discretisation of the privacy loss adds up over millions of compositions
    (DP-SGD at batch 1 on Electricity: 50 passes are 2.3 M steps), and skips a
    PLD search that costs minutes there.
    """
    results = []
    if "rdp" in kinds:
        results.append((*_calibrate(spec, epsilon, delta, "rdp", relation)[:2], "rdp"))
    if "pld" in kinds:
        if not results or _pld_wins(spec, epsilon, delta, relation, results[0][0]):
            results.append((*_calibrate(spec, epsilon, delta, "pld", relation)[:2], "pld"))
    return min(results, key=lambda r: r[0])
