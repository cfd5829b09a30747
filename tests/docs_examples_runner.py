"""Run the Python examples of documentation pages as a reader pastes them.

``python tests/docs_examples_runner.py OUT.json PAGE.json``: PAGE.json lists
``{"page": ..., "cwd": ..., "blocks": [[line, code], ...]}``; each page's
blocks run in order in one namespace (a reader's session), in its own working
directory with that directory first on ``sys.path`` (as ``python`` run there
has it). OUT.json maps each page to None or the traceback of the block that
failed. One process for every page: dpcd, numba's cache and MLflow load once.
"""
import json
import os
import sys
import traceback
import warnings


def run_page(page):
    """None, or the traceback of the first block of ``page`` that raises."""
    namespace = {"__name__": "__main__"}
    os.chdir(page["cwd"])
    sys.path.insert(0, page["cwd"])
    try:
        for line, code in page["blocks"]:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # PrivacyLeakWarning is documented
                    exec(compile(code, f"{page['page']}:{line}", "exec"), namespace)
            except BaseException:  # noqa: BLE001 - reported with the page and line
                return traceback.format_exc(limit=-6)
        return None
    finally:
        sys.path.remove(page["cwd"])


def main(out, pages):
    results = {page["page"]: run_page(page) for page in json.loads(open(pages).read())}
    with open(out, "w") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    main(*sys.argv[1:])
