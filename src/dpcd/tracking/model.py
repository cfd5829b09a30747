"""A fitted estimator's release as an MLflow model.

:func:`log_estimator` logs what a fit releases (its coefficients, in a copy
of the estimator, and its privacy ledger as the model's metadata) with MLflow's
scikit-learn flavour, and the training data as the run's input: an MLflow
dataset of name, digest and shape, no rows. :func:`load_estimator` loads the
model back with its ledger.

What a release leaves out (docs/method/privacy.md): ``history_``,
the objective per pass computed on the training data without noise, and the
``random_state`` the noise came from. The digest is a hash of the training
data, not covered by the guarantee (whoever holds a candidate dataset can
check it): it goes on the run, the researcher's record, not in the model.
Loading needs MLflow's ``MLFLOW_ALLOW_PICKLE_DESERIALIZATION=true``, as every
scikit-learn model does.
"""
import contextlib
import copy

import mlflow
import numpy as np
import scipy.sparse as sp
import sklearn
import skops.io
from mlflow.models import ModelSignature
from mlflow.types import Schema, TensorSpec
from sklearn.utils.validation import check_is_fitted

import dpcd
from dpcd.privacy import Ledger

#: Fitted attributes the logged model leaves out: ``history_`` is computed
#: from the data without noise; the ledger is the model's metadata instead.
NOT_RELEASED = ("history_", "privacy_ledger_")

#: The model's metadata key holding the ledger (``Ledger.to_dict()``).
LEDGER_KEY = "privacy_ledger"


def release(model):
    """A copy of the fitted ``model`` without :data:`NOT_RELEASED` and with
    ``random_state=None``: what its ledger covers."""
    check_is_fitted(model, "privacy_ledger_")
    released = copy.deepcopy(model)
    for name in NOT_RELEASED:
        if hasattr(released, name):
            delattr(released, name)
    if "random_state" in released.get_params(deep=False):
        released.set_params(random_state=None)
    return released


def log_estimator(model, X=None, y=None, *, name="model", dataset_name="training",
                  source=None):
    """Log a fitted dpcd estimator as an MLflow model, with its ledger.

    In the active run, or in a new one (ended on return) when none is active.

    Parameters
    ----------
    model : fitted dpcd estimator
        Any estimator with ``privacy_ledger_`` (the regressor, the
        classifier, :class:`dpcd.PrivateSearch`).
    X, y : array-like, optional
        The training data: logged as the run's input (``mlflow.log_input``,
        context ``"training"``) by digest, shape and ``source``, never its rows.
    name : str, default="model"
        The model's name in the run.
    dataset_name : str, default="training"
    source : str, optional
        Where the data came from (a path or URI), recorded with the dataset.

    Returns
    -------
    mlflow.models.model.ModelInfo
        ``model_uri`` loads it back (:func:`load_estimator`); ``metadata``
        holds the ledger.
    """
    released = release(model)
    ledger = model.privacy_ledger_
    signature = ModelSignature(inputs=Schema(
        [TensorSpec(np.dtype("float64"), (-1, model.n_features_in_))]))
    requirements = [f"dpcd=={dpcd.__version__}", f"scikit-learn=={sklearn.__version__}"]
    # MLflow saves with skops, which loads only the types it is told to trust: dpcd's own
    untrusted = skops.io.get_untrusted_types(data=skops.io.dumps(released))
    trusted = [name for name in untrusted if name.startswith("dpcd.")]
    with (mlflow.start_run() if mlflow.active_run() is None else contextlib.nullcontext()):
        if X is not None:
            features = X.toarray() if sp.issparse(X) else np.asarray(X)
            dataset = mlflow.data.from_numpy(
                features, targets=None if y is None else np.asarray(y),
                name=dataset_name, source=source)
            mlflow.log_input(dataset, context="training")
        return mlflow.sklearn.log_model(
            released, name=name, signature=signature, pip_requirements=requirements,
            serialization_format="skops", skops_trusted_types=trusted,
            metadata={LEDGER_KEY: ledger.to_dict()})


def load_estimator(model_uri):
    """The estimator logged by :func:`log_estimator` at ``model_uri``, its
    ``privacy_ledger_`` read from the model's metadata.

    MLflow loads a scikit-learn model only with the environment variable
    ``MLFLOW_ALLOW_PICKLE_DESERIALIZATION=true`` (loading can run code from
    the artifact: load only models from a store you trust).
    """
    model = mlflow.sklearn.load_model(model_uri)
    metadata = mlflow.models.get_model_info(model_uri).metadata or {}
    if LEDGER_KEY not in metadata:
        raise ValueError(f"{model_uri}: not a dpcd release (no {LEDGER_KEY!r} in its metadata)")
    model.privacy_ledger_ = Ledger.from_dict(metadata[LEDGER_KEY])
    return model

