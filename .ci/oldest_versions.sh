#!/usr/bin/env bash
# The oldest versions dpcd allows (.ci/oldest.txt: pyproject.toml's lower
# bounds, pinned), installed alone in a venv of their own as `make install`
# would (no test extras but pytest), pass the estimator and workflow smoke
# tests: an estimator logged to MLflow and loaded back, a real tiny workflow
# run, MLflow ingestion, `snakemake --report`.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${DPCD_OLDEST_VENV:-${TMPDIR:-/tmp}/dpcd-oldest}
start=$SECONDS
echo "Oldest allowed versions (.ci/oldest.txt) in $venv" >&2
rm -rf "$venv"
python3 -m venv "$venv"
timeout 300 "$venv/bin/python" -m pip install --quiet --upgrade pip
timeout 900 "$venv/bin/python" -m pip install --quiet -c .ci/oldest.txt -e . pytest
"$venv/bin/python" -m pip freeze --exclude-editable |
    grep -i -f <(sed -n 's/^\([A-Za-z0-9_.-]*\)==.*/^\1==/p' .ci/oldest.txt) >&2 || true
echo "installed in $((SECONDS - start)) s" >&2

# Their own numba cache (compiled by another numba, the suite's would not load).
export NUMBA_CACHE_DIR="$venv/numba_cache"
timeout 1200 "$venv/bin/python" -m pytest -q -p no:cacheprovider -k "not dpscd" \
    "tests/test_estimators.py::test_regressor_matches_lasso" \
    "tests/test_estimator_mlflow.py::test_a_fitted_estimator_is_logged_and_loaded_back_with_its_ledger" \
    "tests/workflow/test_workdirs.py::test_dry_run_in_a_working_directory_of_its_own" \
    "tests/workflow/test_workflow.py::test_mlflow_runs_carry_params_curves_and_budget" \
    "tests/workflow/test_user_view.py::test_report_has_every_figure_table_and_the_summary"
echo "oldest versions: smoke tests passed in $((SECONDS - start)) s" >&2
