"""The registry of algorithm specs: the built-in ones and those registered from
outside the package.

A user's own solver is one module that calls :func:`register` with its
:class:`~dpcd.algorithms.base.Algorithm` (see docs/add_your_own_solver.md). The
workflow imports the modules its config lists under ``algorithms`` (passed to
every job in the environment variable ``DPCD_ALGORITHMS``); an installed package
can instead declare an entry point in the group ``dpcd.algorithms``. Both are
loaded on the first look-up.
"""
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

from dpcd.algorithms.base import Algorithm

ENV = "DPCD_ALGORITHMS"  # modules (or .py files) to import, separated by os.pathsep
ENTRY_POINTS = "dpcd.algorithms"

_SPECS = {}
_BUILTIN = set()
_loaded = set()


def register(spec, replace=False):
    """Register an algorithm spec under its name.

    Parameters
    ----------
    spec : Algorithm
        The spec; ``spec.name`` becomes a solver name of configs and estimators.
    replace : bool, default=False
        Replace an algorithm registered from outside under the same name
        (a module imported twice re-registers itself: that is always allowed).

    Returns
    -------
    spec : Algorithm
    """
    if not isinstance(spec, Algorithm):
        raise TypeError(f"register() takes a dpcd.algorithms.Algorithm, got {spec!r}")
    if spec.name in _BUILTIN:
        raise ValueError(f"solver {spec.name!r} is built into dpcd; choose another name")
    old = _SPECS.get(spec.name)
    if old is not None and not replace and _origin(old.run) != _origin(spec.run):
        raise ValueError(f"solver {spec.name!r} is already registered "
                         f"(by {old.run.__module__}); pass replace=True to replace it")
    _SPECS[spec.name] = spec
    return spec


def _origin(run):
    """Where ``run`` is defined: the same file imported twice (by name and by
    path) re-registers the same algorithm."""
    code = getattr(run, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else repr(run)


def _register_builtin(spec):
    _SPECS[spec.name] = spec
    _BUILTIN.add(spec.name)


def load(modules=None):
    """Import the algorithms of ``modules`` (module names or paths of ``.py``
    files; default: ``$DPCD_ALGORITHMS``) and of the ``dpcd.algorithms`` entry
    points, each once."""
    if modules is None:
        modules = [m for m in os.environ.get(ENV, "").split(os.pathsep) if m]
    for module in modules:
        if module in _loaded:
            continue
        _import(module)
        _loaded.add(module)
    if ENTRY_POINTS not in _loaded:
        _loaded.add(ENTRY_POINTS)
        for entry in importlib.metadata.entry_points(group=ENTRY_POINTS):
            entry.load()


def _import(module):
    if not module.endswith(".py"):
        importlib.import_module(module)
        return
    path = Path(module).resolve()
    if not path.is_file():
        raise ValueError(f"algorithms: no file {module!r}")
    # its directory goes on sys.path, as for a script: its siblings (a kernel
    # module) import by name
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    name = f"dpcd_user_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)


def get(name):
    """The spec of solver ``name``, or ValueError naming the known ones."""
    if name not in _SPECS:
        load()
    try:
        return _SPECS[name]
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; known: {sorted(_SPECS)} (a solver "
                         f"from outside dpcd: list its module in ${ENV})") from None


def names(private=None, builtin=None, secure=None):
    """Registered solver names in registration order (built-in first).

    ``private``/``builtin``/``secure`` (runs in the secure noise mode): only
    those that are (True) or are not (False).
    """
    load()
    return tuple(name for name, spec in _SPECS.items()
                 if (private is None or spec.private == private)
                 and (builtin is None or (name in _BUILTIN) == builtin)
                 and (secure is None or (spec.private and spec.privacy.secure) == secure))


def plan_facts():
    """What the workflow planner (``dpcd.plan``, which imports no dpcd) reads
    of every registered algorithm: name -> ``private``, ``step_cost_ns``,
    ``family`` (the kernel family its warm-up compiles, None without one) and,
    for a private one, ``secure``, ``private_candidate``, ``private_refusal``,
    ``sampling``, ``relations`` ({sampling: relations}) and ``pld_only``
    ([relation, sampling] pairs), plain data."""
    load()
    facts = {}
    for name, spec in _SPECS.items():
        runtime = spec.runtime
        facts[name] = {"private": spec.private, "step_cost_ns": dict(runtime.step_cost_ns),
                       "family": None if runtime.warm is None else _family(spec)}
        privacy = spec.privacy
        if privacy is None:
            continue
        relations = {} if privacy.relations is None else privacy.relations.by_sampling
        facts[name].update(
            secure=privacy.secure, private_candidate=privacy.candidate,
            private_refusal=privacy.refusal, sampling=privacy.sampling,
            relations={sampling: list(rels) for sampling, rels in relations.items()},
            pld_only=[list(pair) for pair in privacy.pld_only])
    return facts


def check_secure(name, setting):
    """Refuse the secure noise mode for solver ``name`` unless its spec runs in
    it (:attr:`Privacy.secure <dpcd.algorithms.Privacy>`); the error names
    ``setting`` and the solvers that do."""
    if not get(name).private or not get(name).privacy.secure:
        raise ValueError(f"{setting} covers solver {' or '.join(names(secure=True))}, "
                         f"not {name!r}")


def _family(spec):
    """The kernel family of ``spec``: its runtime's, else its own name."""
    return spec.runtime.family or spec.name


def warmup(names_or_families=None):
    """Compile (or load from the numba cache) the kernels of solvers or kernel
    families, each family once through its specs' ``runtime.warm``, and the
    reference stage's solvers as the family ``"reference"``.

    Parameters
    ----------
    names_or_families : iterable of str, optional
        Solver names or kernel families; every family if None.

    Returns
    -------
    list of str
        The families warmed, sorted.
    """
    from dpcd.solvers.warmup import reference

    load()
    warm = {"reference": reference}
    for spec in _SPECS.values():
        if spec.runtime.warm is not None:
            warm.setdefault(_family(spec), spec.runtime.warm)
    if names_or_families is None:
        families = set(warm)
    else:
        families = set()
        for name in names_or_families:
            if name not in warm:
                spec = get(name)  # ValueError naming the known solvers
                name = _family(spec)
            if name in warm:
                families.add(name)
    for family in sorted(families):
        warm[family]()
    return sorted(families)
