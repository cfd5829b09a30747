"""The documentation: the MkDocs site builds strictly, and what it documents
cannot drift from the code (the config schema's keys, the citation file)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _mkdocs_build(config, site_dir):
    """``mkdocs build --strict`` of ``config`` into ``site_dir``; the completed process."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
         "--site-dir", str(site_dir)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )


def test_docs_build_strictly(tmp_path):
    """Every page, link, anchor and API docstring of the site, as `mkdocs build
    --strict` sees them: any warning fails the build."""
    done = _mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-5000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    # the API page is generated from the docstrings, not empty headings
    for name in ("dpcd.estimators.DPCoordinateDescentRegressor", "dpcd.privacy.Ledger",
                 "dpcd.privacy.calibrate_dp_cd", "dpcd.solvers.dp_cd.dp_cd"):
        assert f'id="{name}"' in api, name


def _site_copy(tmp_path):
    """mkdocs.yml and docs/ copied under ``tmp_path``, the API page's sources
    still read from this checkout's src/."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    config["docs_dir"] = str(docs)
    plugin = next(p for p in config["plugins"] if isinstance(p, dict) and "mkdocstrings" in p)
    plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT / "src")]
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True))
    return path, docs


def test_docs_build_fails_on_a_broken_link_not_on_a_page_outside_the_nav(tmp_path):
    """A page not yet in the nav builds (pages arrive before their nav entry);
    a link to a missing page or anchor fails the strict build, naming it."""
    config, docs = _site_copy(tmp_path)
    (docs / "unlisted.md").write_text("# Unlisted\n\nSee [the results](results.md).\n")
    done = _mkdocs_build(config, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-5000:]
    assert (tmp_path / "site" / "unlisted" / "index.html").exists()

    (docs / "unlisted.md").write_text(
        "# Unlisted\n\nSee [nothing](missing_page.md) and [no anchor](results.md#no-such-anchor).\n")
    done = _mkdocs_build(config, tmp_path / "site")
    assert done.returncode != 0
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert any("missing_page.md" in line for line in warnings), done.stderr[-5000:]
    assert any("no-such-anchor" in line for line in warnings), done.stderr[-5000:]
