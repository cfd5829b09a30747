"""The warnings a fit gives: it read something off the data without noise
(:class:`PrivacyLeakWarning`), or its defaults do not suit it
(:class:`DefaultsWarning`, raised by :mod:`dpcd.estimators.checks`)."""
import warnings


class PrivacyLeakWarning(UserWarning):
    """A fit used quantities computed from the data without noise.

    Each is named in the message and in ``privacy_ledger_.nonprivate_inputs``;
    the (ε, δ) guarantee does not cover what they reveal (as diffprivlib's
    warning of the same name).
    """


class DefaultsWarning(UserWarning):
    """The estimator's defaults do not suit this fit (noise too large for the
    data and budget, or data not scaled as the defaults assume); the message
    names the setting to change (:mod:`dpcd.estimators.checks`)."""


def warn_nonprivate(names, stacklevel=3):
    """Warn once, naming every non-private input in ``names`` (if any)."""
    names = sorted(set(names))
    if names:
        warnings.warn(
            f"the fit used non-private input(s) {', '.join(names)}: computed from "
            "the data without noise, not covered by the (epsilon, delta) guarantee",
            PrivacyLeakWarning, stacklevel=stacklevel)
