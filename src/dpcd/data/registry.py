"""The dataset registry: sources, checksums, formats, licences, papers.

The table itself is ``registry.yaml`` next to this module (readable, shipped
with the package); this module loads and queries it.
"""

import functools
import os

REGISTRY_PATH = os.path.join(os.path.dirname(__file__), "registry.yaml")
# Tests (and a lab with private sources) may substitute a registry file; the
# workflow's jobs inherit the variable.
REGISTRY_ENV = "DPCD_DATA_REGISTRY"


@functools.lru_cache(maxsize=None)
def _load(path):
    import yaml  # here: every job imports this package, few read the registry

    with open(path) as fh:
        return yaml.safe_load(fh)


def registry():
    """Return the registry as ``{name: entry}`` (a fresh copy)."""
    import copy

    return copy.deepcopy(_load(os.environ.get(REGISTRY_ENV) or REGISTRY_PATH))


def get_entry(name):
    """Return the registry entry called ``name``.

    Raises
    ------
    ValueError
        If ``name`` is not a registered dataset; the message lists known names.
    """
    reg = registry()
    if name not in reg:
        raise ValueError(
            f"unknown dataset {name!r}; known datasets: {', '.join(sorted(reg))}"
        )
    entry = reg[name]
    entry["name"] = name
    return entry


def generated_sources():
    """Return the sorted names of generated sources."""
    return sorted(k for k, v in registry().items() if "generator" in v)


def checksum_status(file_spec):
    """Describe how a file's integrity is established: verified or pinned."""
    if file_spec.get("sha256"):
        return "verified (sha256 recorded)"
    if file_spec.get("md5") or file_spec.get("openml_id"):
        return "pinned on first use (sha256); md5 from OpenML checked on download"
    return "pinned on first use (sha256)"


def format_table(reg=None):
    """Render the registry as a plain-text table for ``dpcd data list``."""
    reg = registry() if reg is None else reg
    lines = []
    for name in sorted(reg):
        e = reg[name]
        kind = "generated" if "generator" in e else e.get("loader", "?")
        lines.append(f"{name}  [{e['task']}, {kind}]  {e.get('title', '')}")
        lines.append(f"    papers: {'; '.join(e.get('papers', []))}")
        if "generator" in e:
            lines.append(f"    defaults: {e.get('defaults')}")
        for f in e.get("files", []):
            url = f.get("url") or f"OpenML data {f.get('openml_id')} (URL from its description)"
            lines.append(f"    {f['name']}: {url}")
            lines.append(f"        checksum: {checksum_status(f)}")
        if "licence" in e:
            lines.append(f"    licence: {e['licence']}")
        if "citation" in e:
            lines.append(f"    cite: {e['citation']}")
    return "\n".join(lines)
