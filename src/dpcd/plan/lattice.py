"""Lattice arithmetic of the staged search, and its stages' names: a leaf
that the planner (how many configurations each stage runs) and the sweep
(which ones; the search replayed) both read.

Standard library only; it imports nothing of dpcd.
"""

import itertools
import math

# The staged search's stages, in order (a configuration runs only some of them:
# dpcd.plan.staged.Staged.stages).
SCREEN, REFINE, PROMOTE, CONFIRM = STAGES = ("screen", "refine", "promote", "confirm")

# The widest spacing of a staged screen's lattice, in decades: a geomspace
# axis finer than that is coarsened by search_stride at most up to it (a
# stride of 3 takes every 3rd of DP-CD's 100 thresholds over 9 decades, every
# 2nd of its 10 steps over 3; DP-SGD's 10 steps over 6 decades are not
# strided). Replayed from exhaustive DP-CD runs (docs/method/search.md): a
# lattice 2 or 3 decades apart missed the grid's best in 11-13 of 100 cells
# (a bump in the objective between the F(0) plateau of tiny thresholds and the
# best valley), 1 decade apart in 4 of 20, 0.67 decades apart in none of 20.
LATTICE_DECADES = 0.7


def axis_stride(entry, stride):
    """The stride of a staged screen along one geomspace axis
    ``{"geomspace": [start, stop, num]}``: ``stride``, at most what keeps the
    lattice's spacing within :data:`LATTICE_DECADES` (1 on an axis with fewer
    than 3 values or spaced wider)."""
    start, stop, num = entry["geomspace"]
    num = int(num)
    if num < 3:
        return 1
    decades = abs(math.log10(stop / start)) / (num - 1)
    return max(1, min(stride, int(LATTICE_DECADES / decades + 1e-9)))


def coarse_indices(num, stride):
    """Positions on an axis of ``num`` values that a coarse lattice of stride
    ``stride`` keeps: every ``stride``-th, the last always included."""
    kept = list(range(0, num, stride))
    return kept if kept[-1] == num - 1 else kept + [num - 1]


def prefix_passes(passes, fidelity):
    """The passes a multi-fidelity screen runs of a configuration's ``passes``
    (``search_fidelity``): the fraction ``fidelity`` of them, rounded to whole
    passes (at least one) when ``passes`` is whole; all of them at 1."""
    if fidelity >= 1:
        return passes
    if float(passes).is_integer():
        return min(passes, max(1, int(fidelity * passes + 0.5)))
    return fidelity * passes


def grid_size(grid):
    """Configurations of a solver entry's grid (axes: lists and geomspaces;
    scalars are constants), per epsilon and passes."""
    size = 1
    for value in grid.values():
        if isinstance(value, dict):
            size *= int(value["geomspace"][2])
        elif isinstance(value, list):
            size *= len(value)
    return size


def geomspace_axes(grid):
    """The geomspace axes of a solver entry's grid (the ones a stride coarsens)."""
    return [value for value in grid.values() if isinstance(value, dict)]


def coarse_size(grid, stride):
    """Configurations per (epsilon, passes) on the coarse lattice of ``stride``."""
    axes = [(int(v["geomspace"][2]), axis_stride(v, stride)) for v in geomspace_axes(grid)]
    full = grid_size(grid)
    other = full // math.prod(num for num, _ in axes) if axes else full
    return other * math.prod(len(coarse_indices(num, k)) for num, k in axes)


def refine_bound(grid, stride, kept):
    """At most how many configurations per (epsilon, passes) the refine runs
    around ``kept`` screened ones: their boxes of full-resolution neighbours
    (fewer where boxes overlap or reach past the grid's ends), never more than
    the grid leaves off the lattice."""
    axes = [(int(v["geomspace"][2]), axis_stride(v, stride)) for v in geomspace_axes(grid)]
    box = math.prod(min(2 * k - 1, num) for num, k in axes)
    return min(grid_size(grid) - coarse_size(grid, stride), kept * (box - 1))


def refine_least(grid, stride):
    """At least how many configurations per (epsilon, passes) the refine runs:
    the off-lattice configurations of the box of one kept lattice point, the
    point whose box holds fewest (at a grid's end, a box can hold none on an
    axis whose last two positions are both on the lattice)."""
    axes = [(int(v["geomspace"][2]), axis_stride(v, stride)) for v in geomspace_axes(grid)]
    lattices = [coarse_indices(num, k) for num, k in axes]
    fewest = None
    for point in itertools.product(*lattices):
        box = [[q for q in range(num) if abs(q - p) <= k - 1] for (num, k), p in zip(axes, point)]
        off = (math.prod(map(len, box))
               - math.prod(len(set(b) & set(on)) for b, on in zip(box, lattices)))
        fewest = off if fewest is None else min(fewest, off)
    return fewest or 0


class Lattice:
    """Where a solver's configurations sit on a staged screen's coarse lattice:
    which ones the screen runs (:meth:`coarse`) and which full-resolution
    neighbours of kept ones the refine runs (:meth:`neighbours`).

    Parameters
    ----------
    grid : dict
        The solver entry's grid: its ``{"geomspace": ...}`` entries are the
        coarsened axes; list axes (batch sizes, rules) are kept whole.
    axes : dict
        Axis name -> the values its entry expands to (the sweep's grid axes).
    stride : int
        ``search_stride``: every stride-th value of each geomspace axis, at
        most :data:`LATTICE_DECADES` apart (:func:`axis_stride`); 1 keeps every
        configuration.
    """

    def __init__(self, grid, axes, stride):
        # geomspace axis -> ({value: position}, its stride, its lattice positions)
        self.positions = {}
        for name, entry in sorted(grid.items()):
            if isinstance(entry, dict):
                k = axis_stride(entry, stride)
                values = axes[name]
                self.positions[name] = ({value: i for i, value in enumerate(values)}, k,
                                        set(coarse_indices(len(values), k)))

    def holds(self, config):
        """Whether ``config`` is on the lattice."""
        return all(axis[config[name]] in lattice
                   for name, (axis, _, lattice) in self.positions.items())

    def coarse(self, configs):
        """The configurations on the lattice, in their order."""
        return [config for config in configs if self.holds(config)]

    def neighbours(self, configs, kept):
        """The full-resolution neighbours of the ``kept`` configurations, in the
        order of ``configs``.

        A configuration is a neighbour of a kept one when every other setting
        (epsilon, passes, list axes) is the same and on every geomspace axis its
        position is within the axis's stride - 1 of the kept one's: the box
        between the kept configuration's coarse neighbours. Configurations on
        the lattice (the screen ran them) are left out.
        """
        positions = self.positions

        def rest(config):
            return tuple((k, v) for k, v in sorted(config.items()) if k not in positions)

        boxes = {}
        for config in kept:
            boxes.setdefault(rest(config), []).append(
                {n: positions[n][0][config[n]] for n in positions})
        out = []
        for config in configs:
            centres = boxes.get(rest(config))
            if centres is None or self.holds(config):
                continue
            at = {n: positions[n][0][config[n]] for n in positions}
            if any(all(abs(at[n] - centre[n]) <= positions[n][1] - 1 for n in positions)
                   for centre in centres):
                out.append(config)
        return out
