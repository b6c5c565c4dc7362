"""The documentation site's build fails on any warning: a broken link, a page left out.

``nox -s docs`` builds the site with the command its ``MKDOCS_BUILD`` names.
Here that very command builds a small site made with the project's own
``mkdocs.yml`` (its validation settings, its theme; a three-page navigation
and no API reference): it must pass as made, and fail once a page links to a
missing one, or once a page is left out of the navigation.  Runs where mkdocs
is installed (``nox -s docs`` runs this file); skipped elsewhere, saying so.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML comes with mkdocs: run by nox -s docs")
pytest.importorskip("mkdocs", reason="mkdocs is installed by nox -s docs, which runs this test")

ROOT = Path(__file__).resolve().parents[2]


def docs_build_command() -> list[str]:
    """``MKDOCS_BUILD`` as noxfile.py defines it (read, not imported: nox may be absent)."""
    for node in ast.parse((ROOT / "noxfile.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "MKDOCS_BUILD" for target in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError("noxfile.py defines no MKDOCS_BUILD")


def site(tmp_path: Path) -> Path:
    """A small site with the project's configuration: three pages, each in the navigation."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config.update(
        docs_dir="docs",
        site_dir="site",
        plugins=["search"],
        nav=[{"Home": "index.md"}, {"Guide": "guide.md"}, {"Tutorial": "tutorial.md"}],
    )
    config.pop("hooks", None)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nRead [the guide](guide.md).\n")
    (docs / "guide.md").write_text("# Guide\n\nThen [the tutorial](tutorial.md#steps).\n")
    (docs / "tutorial.md").write_text("# Tutorial\n\n## Steps\n\nBack [home](index.md).\n")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return tmp_path


def build(folder: Path) -> subprocess.CompletedProcess[str]:
    command = docs_build_command()
    executable = Path(sys.executable).parent / command[0]
    return subprocess.run(
        [str(executable) if executable.exists() else command[0], *command[1:]],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_docs_session_builds_strictly_and_shows_its_warnings() -> None:
    command = docs_build_command()
    assert command[:2] == ["mkdocs", "build"] and "--strict" in command
    assert "--quiet" not in command and "-q" not in command


def test_the_small_site_builds(tmp_path: Path) -> None:
    result = build(site(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "tutorial" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    folder = site(tmp_path)
    (folder / "docs" / "guide.md").write_text("# Guide\n\nSee [the missing page](missing.md).\n")
    result = build(folder)
    assert result.returncode != 0
    assert "missing.md" in result.stderr and "not found" in result.stderr


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    folder = site(tmp_path)
    (folder / "docs" / "guide.md").write_text("# Guide\n\nSee [a part](tutorial.md#nowhere).\n")
    result = build(folder)
    assert result.returncode != 0 and "nowhere" in result.stderr


def test_a_page_left_out_of_the_navigation_fails_the_build(tmp_path: Path) -> None:
    folder = site(tmp_path)
    (folder / "docs" / "orphan.md").write_text("# Orphan\n\nNo page lists me.\n")
    result = build(folder)
    assert result.returncode != 0
    assert "orphan.md" in result.stderr and "not included in the" in result.stderr
