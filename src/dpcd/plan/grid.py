"""``search: grid``: every configuration on every seed, in one stage."""

from .search import Search


class Grid(Search):
    """Every configuration of the grid on every seed (stage ``grid``)."""

    mode = "grid"

    def stages(self):
        return ("grid",)

    def folder(self, stage):
        return ""  # the paths of finished workdirs
