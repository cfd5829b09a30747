"""Which configurations a solve job runs: its stage's share of the spec's grid
(:mod:`dpcd.sweep.staged`), a non-private solver's at the first epsilon only,
cut round-robin into the spec's chunks."""

from dpcd import algorithms
from dpcd.sweep import staged
from dpcd.sweep.grid import epsilons_of, expanded_grid


def _chunk_slice(chunk, n_chunks):
    """Chunk ``chunk`` of ``n_chunks``, round-robin so that chunks cost about the same."""
    if not 0 <= chunk < n_chunks:
        raise ValueError(f"chunk {chunk} is outside [0, {n_chunks})")
    return slice(chunk, None, n_chunks)


def chunk_of(items, chunk, n_chunks):
    """The items of one chunk (round-robin, so chunks cost about the same)."""
    return items[_chunk_slice(chunk, n_chunks)]


def chunk_runs(spec, chunk):
    """What chunk ``chunk`` of a solve spec runs.

    A non-private solver runs at the first epsilon only: its runs are the same
    at every epsilon (:func:`dpcd.streams.stream_identity`), and stand for its
    runs at the others (a staged search keeps the same ones at every epsilon).

    Returns
    -------
    configs : list of dict
        The configurations the chunk runs.
    also_at : list of float
        The other epsilons their runs stand for (none for a private solver).
    """
    part = _chunk_slice(chunk, spec["chunks"])
    epsilons = epsilons_of(spec["privacy"])
    axes, configs = expanded_grid(spec["solver"], spec["grid"], spec["passes"], epsilons)
    # staged search: the screen's lattice, the refine's neighbours, the confirm's kept
    configs = staged.stage_configurations(spec, configs, axes)
    if algorithms.get(spec.get("adapter", spec["solver"])).private:
        return configs[part], []
    at_first = [config for config in configs if config["epsilon"] == axes["epsilon"][0]]
    return at_first[part], axes["epsilon"][1:]
