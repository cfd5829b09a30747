"""Suite-wide collection order for pytest-xdist.

``make test`` runs ``-n auto --dist loadfile --no-loadscope-reorder``: each test
file goes to one worker, so a module's workflow fixture is built once, and the
files go out in collection order. The workflow files (minutes each) go first,
so that they do not form the tail of the run; among them, those that do not
need the shared finished run (tests/workflow/conftest.py) go first, to build
their own while one worker builds the shared one.
"""


def pytest_collection_modifyitems(items):
    def path(item):
        return item.nodeid.split("::")[0]

    shared = {path(item) for item in items if "finished_workdir" in getattr(item, "fixturenames", ())}

    def rank(item):
        if not path(item).startswith("tests/workflow/"):
            return 2
        return 1 if path(item) in shared else 0

    items.sort(key=rank)  # stable: files keep their order within a rank
