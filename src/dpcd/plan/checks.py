"""The planner's checks of a whole configuration, before anything runs (each
search mode checks its own settings: :meth:`.search.Search.check`)."""


def check_plan(plan, searches, check_solvers=None):
    """Refuse a configuration the workflow cannot run, naming the setting.

    Parameters
    ----------
    plan : dpcd.plan.Plan
    searches : dict
        Search mode name -> its :class:`~.search.Search` subclass.
    check_solvers : callable, optional
        ``check_solvers(config)``: every solver entry against its algorithm's
        spec (run when dpcd is importable; the jobs check again otherwise).
    """
    config = plan.config
    for name in config["experiments"]:
        plan.experiment(name)
    if "summary" in config["experiments"]:
        raise ValueError(
            "config: experiments.summary: the name is reserved for the summary "
            "across experiments"
        )
    for name, exp in config["experiments"].items():
        mode = exp.get("search", "grid")
        if mode not in searches:
            raise ValueError(
                f"config: experiments.{name}.search: unknown value {mode!r}; "
                f"known: {sorted(searches)}"
            )
        searches[mode](plan, name).check()
    for mode, search in searches.items():
        search.check_all(plan, [name for name, exp in config["experiments"].items()
                                if exp.get("search", "grid") == mode])
    if plan.registry is not None:
        for key, dataset in config["datasets"].items():
            if dataset["source"] not in plan.registry:
                raise ValueError(
                    f"config: datasets.{key}.source: unknown registry entry "
                    f"{dataset['source']!r}; known: {sorted(plan.registry)}"
                )
    if check_solvers is not None:
        check_solvers(config)
