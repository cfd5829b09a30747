"""Names of a package that load their module on first use (PEP 562), so that
a job importing the package for one light name never pays for a heavy one."""

import importlib
import sys
import types


def lazy_names(package, names):
    """The ``__getattr__`` of ``package``: ``names`` maps each name to the
    module that defines it, imported when the name is first read."""

    def __getattr__(name):
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def issparse(X):
    """``scipy.sparse.issparse(X)`` without importing scipy.sparse (0.3 s of
    a job's start-up): a sparse matrix exists only once it is imported, so a
    job on dense data never loads it."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def lazy_package(package, names):
    """Make ``package`` (its ``__name__``) load ``names`` as :func:`lazy_names`
    does, where a name may also be a submodule's (``dpcd.solvers.dp_cd``, the
    module, and its function ``dp_cd``): importing the submodule, which sets it
    as the package's attribute, leaves the name to the function."""

    class LazyPackage(types.ModuleType):
        def __setattr__(self, name, value):
            if not (name in names and isinstance(value, types.ModuleType)):
                super().__setattr__(name, value)

    module = sys.modules[package]
    module.__getattr__ = lazy_names(package, names)
    module.__class__ = LazyPackage
