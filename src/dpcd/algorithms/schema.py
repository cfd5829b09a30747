"""The config schema's solver section, generated from the specs, and the check
of a config's solver entries against them.

``workflow/schemas/config.schema.yaml`` holds the built-in algorithms' entries
as :func:`solvers_schema` generates them (``tests/test_algorithms.py`` checks
that they are equal, so they cannot drift). An algorithm registered from
outside the package is checked by :func:`check_solvers` when the workflow
plans, against its own generated entry.
"""
import copy

from dpcd.algorithms.registry import _BUILTIN, _SPECS, check_secure, get


def solvers_schema(builtin=True):
    """``experiments.<name>.solvers.properties``: solver name -> its grid's schema."""
    return {name: spec.grid_schema() for name, spec in _SPECS.items()
            if not builtin or name in _BUILTIN}


def variant_schema():
    """``$defs/variant``: a named variant of a built-in solver (its grid's keys,
    the union over the solvers, without defaults)."""
    properties = {"solver": {"enum": [name for name in _SPECS if name in _BUILTIN]},
                  "passes": {"$ref": "#/$defs/passes"}}
    for name in _SPECS:
        if name not in _BUILTIN:
            continue
        for hp in _SPECS[name].hyperparameters:
            schema = {k: v for k, v in hp.schema.items()
                      if k not in ("default", "description", "minItems")}
            properties.setdefault(hp.name, schema)
    return {
        "type": "object",
        "description": (
            "A named variant of a solver (several curves of one solver in one "
            "experiment, e.g. DP-GCD's three rules): `solver` names the solver run, the "
            "other keys are its grid as for that solver. The entry's name labels its "
            "runs, tables and curves."),
        "additionalProperties": False,
        "required": ["solver"],
        "properties": properties,
    }


def check_entry(name, entry, defs):
    """Validate one solver entry of an experiment against its algorithm's
    generated schema, filling its defaults (an algorithm from outside the
    package; the config schema already checked the built-in ones).

    Parameters
    ----------
    name : str
        The entry's name: a solver, or a variant's label when ``entry`` names
        its ``solver``.
    entry : dict
        The entry (modified in place: defaults set).
    defs : dict
        The config schema's ``$defs`` (grid, passes, ...).

    Returns
    -------
    spec : Algorithm
    """
    import jsonschema

    entry = entry if entry is not None else {}
    spec = get(entry.get("solver", name))
    schema = {"$defs": defs, **spec.grid_schema()}
    if "solver" in entry:
        schema["properties"] = {**schema["properties"], "solver": {"const": spec.name}}
    try:
        jsonschema.Draft202012Validator(schema).validate(entry)
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path)
        raise ValueError(f"solver {name}{'.' + where if where else ''}: {exc.message}") \
            from None
    for key, value in schema["properties"].items():
        if "default" in value and key not in entry:
            entry[key] = copy.deepcopy(value["default"])
    return spec


def check_solvers(config, defs):
    """Check every experiment's solver entries when the workflow plans: the name
    is a registered algorithm, an outside algorithm's grid matches its spec
    (defaults filled in), the algorithm supports the experiment's (loss,
    penalty), can be calibrated under its neighbouring relation and, with
    ``privacy.noise: secure``, runs in the secure noise mode."""
    for exp_name, exp in config["experiments"].items():
        for name, entry in exp["solvers"].items():
            entry = entry if entry is not None else {}
            exp["solvers"][name] = entry
            solver = entry.get("solver", name)
            where = f"config: experiments.{exp_name}.solvers.{name}"
            try:
                spec = get(solver)
                if solver not in _BUILTIN:
                    check_entry(name, entry, defs)
                spec.check_problem(exp["problem"]["loss"], exp["problem"]["penalty"])
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            try:
                spec.check_neighbouring(exp["privacy"].get("neighbouring", "replace_one"),
                                        entry.get("sampling"))
            except ValueError as exc:
                raise ValueError(f"config: experiments.{exp_name}.privacy.neighbouring, "
                                 f"solver {name}: {exc}") from None
            if exp["privacy"].get("noise", "fast") == "secure":
                check_secure(solver, f"config: experiments.{exp_name}.privacy.noise: "
                                     f"'secure' (solver {name})")
