"""The documentation: the MkDocs site builds strictly, and what it documents
cannot drift from the code (the config schema's keys, the citation file)."""

import shutil
import subprocess
import sys
from pathlib import Path

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


# --- config/README.md documents every key of the config schema ---------------
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
CONFIG_README = ROOT / "config" / "README.md"


def _schema_keys(schema):
    """(parent, name, node) for every property the schema defines, walking
    nested objects, ``$ref`` to ``$defs``, ``oneOf`` and ``additionalProperties``."""
    defs = schema.get("$defs", {})
    found, seen = [], set()

    def walk(node, parent):
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if ref is not None:
            name = ref.rsplit("/", 1)[-1]
            if (name, parent) not in seen:
                seen.add((name, parent))
                walk(defs[name], parent)
        for name, child in node.get("properties", {}).items():
            found.append((parent, name, child))
            walk(child, name)
        for key in ("additionalProperties", "items"):
            walk(node.get(key), parent)
        for child in node.get("oneOf", []):
            walk(child, parent)

    walk(schema, None)
    return found


def _table_rows(text):
    """Markdown table rows as lists of cells."""
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.lstrip().startswith("|")]


def _flow(value):
    """A default as the README writes it: YAML flow style (``null``, ``[1.0]``)."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...").strip()


def test_config_readme_names_every_schema_key():
    """Every property of the schema (top level, mlflow/data/report, datasets,
    experiments and their problem/privacy/alpha_grid, every solver and its keys,
    variants, figures) appears in config/README.md in code."""
    import re

    keys = _schema_keys(yaml.safe_load(SCHEMA.read_text()))
    assert len(keys) > 60  # the walk reaches the solvers' keys
    text = CONFIG_README.read_text()
    fences = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    code = " ".join(fences + inline)
    missing = sorted({f"{parent}.{name}" for parent, name, _ in keys
                      if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", code)})
    assert not missing, f"config/README.md does not document {missing}"


def test_config_readme_gives_every_schema_default():
    """Each default of the schema is in the README's row of its key, or in its
    parent's row as `key` (default `value`) (the solvers' table)."""
    rows = _table_rows(CONFIG_README.read_text())
    checked = 0
    for parent, name, node in _schema_keys(yaml.safe_load(SCHEMA.read_text())):
        if "default" not in node or "properties" in node:
            continue  # no default, or a section (its own keys' defaults are checked)
        value = _flow(node["default"])
        own = [row for row in rows if row[0] == f"`{name}`"]
        in_parent = [row for row in rows if row[0] == f"`{parent}`"]
        ok = (any(f"`{value}`" in " ".join(row[1:]) for row in own)
              or any(f"`{name}` (default `{value}`" in " ".join(row[1:]) for row in in_parent))
        assert ok, f"config/README.md: default {value} of {parent}.{name} not in its row"
        checked += 1
    assert checked >= 20


# --- config/paper/: short headers, every file in docs/papers.md ----------------
PAPER_CONFIGS = sorted((ROOT / "config" / "paper").glob("*.yaml"))


def test_paper_config_headers_are_short():
    """A paper config's header (its leading comments) says what it reproduces,
    the paper's open choices and the command, in at most 30 lines; run logs
    belong in docs/papers.md."""
    assert len(PAPER_CONFIGS) >= 14
    for path in PAPER_CONFIGS:
        lines = path.read_text().splitlines()
        header = lines[:lines.index("")]
        assert all(line.startswith("#") for line in header), path.name
        assert len(header) <= 30, f"{path.name}: {len(header)} header lines"


def test_papers_page_measures_every_paper_config():
    """docs/papers.md's "Measured" table has one row per config/paper/*.yaml."""
    text = (ROOT / "docs" / "papers.md").read_text()
    section = text.split("\n## Measured\n", 1)[1].split("\n## ", 1)[0]
    table = section.split("\n### ", 1)[0]  # the configs' table, before any subsection
    rows = [row[0].strip("`") for row in _table_rows(table)[2:]]
    assert sorted(rows) == [path.name for path in PAPER_CONFIGS]


# --- CITATION.cff, LICENSE -------------------------------------------------------
CFF_SCHEMA = ROOT / "tests" / "data" / "cff" / "schema-1.2.0.json"


def _cff_errors(document):
    """Validation errors of a CFF document against the CFF 1.2.0 JSON Schema
    (a copy in tests/data/cff: nothing is fetched), dates as the YAML strings."""
    import datetime
    import json

    import jsonschema

    def plain(value):  # YAML reads 2021-05-01 as a date; CFF's schema wants the string
        if isinstance(value, datetime.date):
            return value.isoformat()
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    schema = json.loads(CFF_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(
        schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(plain(document))]


def test_citation_cff_is_valid_cff_1_2_0():
    document = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert document["cff-version"] == "1.2.0"
    assert _cff_errors(document) == []
    # the validator does reject what CFF forbids
    broken = {k: v for k, v in document.items() if k != "authors"}
    assert any("authors" in error for error in _cff_errors(broken))
    assert _cff_errors({**document, "references": [{"type": "paper", "title": "x"}]})


def test_citation_cites_the_three_papers_and_agrees_with_pyproject():
    import tomllib

    document = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert document["version"] == project["version"]
    assert document["license"] == project["license"] == "BSD-3-Clause"
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
    cited = {(ref["authors"][0]["family-names"], ref["year"]): ref["title"]
             for ref in document["references"]}
    assert cited == {
        ("Damaskinos", 2021): "Differentially Private Stochastic Coordinate Descent",
        ("Mangold", 2022):
            "Differentially Private Coordinate Descent for Composite Empirical Risk Minimization",
        ("Mangold", 2023):
            "High-Dimensional Private Empirical Risk Minimization by Greedy Coordinate Descent",
    }


def test_changelog_has_unreleased_and_the_current_version():
    """Keep a Changelog: an Unreleased section first, then one per version,
    the one pyproject.toml declares among them."""
    import re
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)
    assert headings[0] == "Unreleased"
    assert version in headings[1:]
