"""dpcd: differentially private coordinate descent.

Numba solvers for DP-CD (Mangold et al., ICML 2022), DP-GCD (Mangold et al.,
AISTATS 2023) and DP-SCD (Damaskinos et al., AAAI 2021), their privacy
accounting through dp-accounting, and a Snakemake workflow that tracks every
run and its privacy budget in MLflow.
"""

__version__ = "0.1.0"

from dpcd.leak import DefaultsWarning, PrivacyLeakWarning  # noqa: E402

__all__ = ["DefaultsWarning", "PrivacyLeakWarning", "PrivateSearch", "__version__"]


def __getattr__(name):  # PrivateSearch pulls in sklearn and numba: imported when asked for
    if name == "PrivateSearch":
        from dpcd.estimators.private_search import PrivateSearch
        return PrivateSearch
    raise AttributeError(f"module 'dpcd' has no attribute {name!r}")
