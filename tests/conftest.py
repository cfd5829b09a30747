"""Suite-wide collection order for pytest-xdist (``make test`` runs ``-n auto --dist loadgroup``)."""

import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group markers
def pytest_collection_modifyitems(items):
    """Keep the workflow tests that share an expensive fixture on one worker.

    A finished run of the tiny workflow (session fixture) and each module's
    workflow fixture would otherwise be built once per worker that runs one of
    their tests. Those groups also go first, so they do not form the tail.
    """
    rank = {}
    for item in items:
        if "tests/workflow/" not in item.nodeid:
            rank[item.nodeid] = 2
            continue
        shared = "finished_workdir" in getattr(item, "fixturenames", ())
        item.add_marker(pytest.mark.xdist_group("finished_workdir" if shared else item.module.__name__))
        rank[item.nodeid] = 0 if shared else 1
    items.sort(key=lambda item: rank[item.nodeid])  # stable: order kept within a rank
