"""The staged search's solve stages: which configurations each one runs.

``search: staged`` (config) screens the grid on the first seed, a select job
keeps the best few per (solver, epsilon, passes)
(:func:`dpcd.report.search.keep_best`) and writes them to a CSV, and the
confirm jobs run those on every seed. With ``search_stride`` k > 1 the search
goes coarse to fine: the screen runs the coarse lattice only (every k-th value
of each geomspace axis, both ends included: :func:`coarse_configurations`),
a select keeps ``search_refine`` per group, the refine runs the kept ones'
full-resolution neighbours (:func:`refine_configurations`), and a second
select keeps ``search_keep`` of screen and refine together for the confirm.
A spec names its stage, its ``stride`` and the selection CSV it reads
(``selection``); :func:`stage_configurations` reads them.
"""

import csv

from dpcd.plan import axis_stride, coarse_indices
from dpcd.sweep.grid import expand_grid
from dpcd.streams import config_id


def read_selection(path, solvers):
    """The ``config_id`` of the rows of ``solvers`` in a selection file."""
    with open(path, newline="") as fh:
        return {row["config_id"] for row in csv.DictReader(fh) if row["solver"] in solvers}


def _kept(configs, keep, path):
    """The configurations of ``configs`` whose ids are in ``keep``, in grid order.

    Raises
    ------
    ValueError
        If ``keep`` holds a configuration of these solvers that is not in
        ``configs`` (a grid edited after the selection ran): the stage would
        silently run less than was selected.
    """
    ids = {config_id(config): config for config in configs}
    missing = set(keep) - set(ids)
    if missing:
        raise ValueError(
            f"{path}: {len(missing)} selected configurations are not in this grid "
            f"(edited after the screen ran?); rerun the select rule"
        )
    return [config for cid, config in ids.items() if cid in keep]


def selected(configs, path):
    """The configurations of ``configs`` (one solver's grid) that the selection
    file kept, in grid order (see :func:`_kept` for the error raised)."""
    return _kept(configs, read_selection(path, {c["solver"] for c in configs}), path)


def _positions(grid, stride):
    """Geomspace axis -> ({value: position}, its stride, its lattice positions):
    the axes the stride coarsens (:func:`dpcd.plan.axis_stride`)."""
    out = {}
    for name, entry in sorted(grid.items()):
        if isinstance(entry, dict):
            k = axis_stride(entry, stride)
            values = expand_grid(entry)
            out[name] = ({value: i for i, value in enumerate(values)}, k,
                         set(coarse_indices(len(values), k)))
    return out


def _on_lattice(config, positions):
    return all(axis[config[name]] in lattice for name, (axis, _, lattice) in positions.items())


def coarse_configurations(configs, grid, stride):
    """The configurations on the coarse lattice of stride ``stride``, in grid order.

    Parameters
    ----------
    configs : list of dict
        One solver's configurations (:func:`dpcd.sweep.grid.configurations`).
    grid : dict
        Its grid: the ``{"geomspace": ...}`` entries are the coarsened axes;
        list axes (batch sizes, rules) are kept whole.
    stride : int
        ``search_stride``: every stride-th value of each geomspace axis, at
        most :data:`dpcd.plan.LATTICE_DECADES` apart; 1 keeps every configuration.
    """
    positions = _positions(grid, stride)
    return [config for config in configs if _on_lattice(config, positions)]


def refine_configurations(configs, grid, stride, keep, path="selection"):
    """The full-resolution neighbours of the kept configurations, in grid order.

    A configuration is a neighbour of a kept one when every other setting
    (epsilon, passes, list axes) is the same and on every geomspace axis its
    position is within the axis's stride - 1 of the kept one's: the box
    between the kept configuration's coarse neighbours. Configurations on the coarse
    lattice (the screen ran them) are left out.

    Parameters
    ----------
    configs, grid, stride
        As for :func:`coarse_configurations`.
    keep : set of str
        ``config_id`` of the kept configurations (on the coarse lattice).
    path : str
        Where ``keep`` was read from, for the error message.
    """
    positions = _positions(grid, stride)
    boxes = {}
    for config in _kept(configs, keep, path):
        rest = tuple((k, v) for k, v in sorted(config.items()) if k not in positions)
        boxes.setdefault(rest, []).append({n: positions[n][0][config[n]] for n in positions})
    out = []
    for config in configs:
        rest = tuple((k, v) for k, v in sorted(config.items()) if k not in positions)
        if rest not in boxes or _on_lattice(config, positions):
            continue
        at = {n: positions[n][0][config[n]] for n in positions}
        if any(all(abs(at[n] - centre[n]) <= positions[n][1] - 1 for n in positions)
               for centre in boxes[rest]):
            out.append(config)
    return out


def stage_configurations(spec, configs):
    """The configurations of one solver's grid that the spec's stage runs.

    ``screen``: the coarse lattice of ``stride`` (default 1: all); ``refine``:
    the neighbours of the selection file's configurations; ``confirm``: the
    selection file's configurations; ``grid``: all.
    """
    stage, stride = spec.get("stage", "grid"), spec.get("stride", 1)
    if stage == "screen":
        return coarse_configurations(configs, spec["grid"], stride)
    if stage == "refine":
        keep = read_selection(spec["selection"], {spec["solver"]})
        return refine_configurations(configs, spec["grid"], stride, keep, spec["selection"])
    if "selection" in spec:
        return selected(configs, spec["selection"])
    return configs
