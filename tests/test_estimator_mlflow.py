"""What scikit-learn and MLflow users expect of the estimators: scikit-learn's
loss name, a binary classifier that says so, and a fitted model logged as an
MLflow model with its ledger and loaded back (real MLflow, SQLite in tmp)."""
import mlflow
import numpy as np
import pytest
from sklearn.datasets import make_classification

from dpcd.estimators import DPCoordinateDescentClassifier
from dpcd.tracking import load_estimator, log_estimator


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=120, n_features=4, random_state=0)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh SQLite store as the fluent API's tracking URI, with an experiment."""
    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "true")  # MLflow's own gate
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    mlflow.set_experiment("release")
    yield
    mlflow.set_tracking_uri(previous)


def test_log_loss_is_scikit_learns_name_for_the_logistic_loss(data):
    X, y = data
    model = DPCoordinateDescentClassifier(loss="log_loss", bounds=3.0, random_state=0)
    assert model.get_params()["loss"] == DPCoordinateDescentClassifier().loss == "log_loss"
    old = DPCoordinateDescentClassifier(loss="log", bounds=3.0, random_state=0).fit(X, y)
    model.fit(X, y)
    np.testing.assert_array_equal(model.coef_, old.coef_)  # one loss, two names
    assert model.predict_proba(X).shape == (len(y), 2)
    hinge = DPCoordinateDescentClassifier(loss="hinge")
    assert not hasattr(hinge, "predict_proba")
    with pytest.raises(ValueError, match="loss"):
        DPCoordinateDescentClassifier(loss="logistic").fit(X, y)


def test_the_classifier_says_it_is_binary(data):
    X, y = data
    model = DPCoordinateDescentClassifier()
    assert model.__sklearn_tags__().classifier_tags.multi_class is False
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        model.fit(X, np.arange(len(y)) % 3)


def test_a_fitted_estimator_is_logged_and_loaded_back_with_its_ledger(data, store):
    X, y = data
    model = DPCoordinateDescentClassifier(epsilon=2.0, bounds=3.0, random_state=0).fit(X, y)
    info = log_estimator(model, X, y, source="make_classification")
    assert mlflow.active_run() is None  # the run it started is ended
    loaded = load_estimator(info.model_uri)
    run = mlflow.get_run(info.run_id)
    artifacts = mlflow.artifacts.list_artifacts(run_id=info.run_id)
    # the ledger is the model's metadata and comes back with the model
    assert info.metadata["privacy_ledger"] == model.privacy_ledger_.to_dict()
    assert loaded.privacy_ledger_ == model.privacy_ledger_
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    # the release leaves out the noiseless objective and the seed of the noise
    assert not hasattr(loaded, "history_") and hasattr(model, "history_")
    assert loaded.random_state is None and model.random_state == 0
    # the data is the run's input by digest and shape, never its rows
    (dataset_input,) = run.inputs.dataset_inputs
    dataset = dataset_input.dataset
    assert dataset.digest == mlflow.data.from_numpy(X, targets=y).digest
    assert '"features_shape": [120, 4]' in dataset.profile
    assert {tag.key: tag.value for tag in dataset_input.tags}["mlflow.data.context"] == "training"
    assert artifacts == []  # nothing but the model, which is stored apart in MLflow 3


def test_load_estimator_refuses_a_model_without_a_ledger(data, store):
    from sklearn.linear_model import LogisticRegression

    X, y = data
    with mlflow.start_run():
        info = mlflow.sklearn.log_model(LogisticRegression().fit(X, y), name="model")
    with pytest.raises(ValueError, match="not a dpcd release"):
        load_estimator(info.model_uri)
