"""The packages are ready to publish: licence, metadata, one version, standalone descriptions.

``nox -s package`` builds the wheels and sdists and checks them with
``tools/check_packages.py``; these tests check the sources that build them,
and that the checker catches what it is for.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from tools import check_packages, version

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+")

ROOT = Path(__file__).resolve().parents[1]
LICENSE = (ROOT / "LICENSE").read_bytes()


@pytest.mark.parametrize("distribution", check_packages.DISTRIBUTIONS)
def test_each_package_declares_its_licence_and_carries_the_text(distribution: str) -> None:
    folder = ROOT / "packages" / distribution
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert (folder / "LICENSE").read_bytes() == LICENSE  # a copy: sdists hold no file outside
    assert project["urls"]
    assert any(c.startswith("Development Status") for c in project["classifiers"])


def test_the_licence_is_apache_2_0() -> None:
    text = LICENSE.decode()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text


@pytest.mark.parametrize("distribution", check_packages.DISTRIBUTIONS)
def test_each_long_description_stands_alone(distribution: str) -> None:
    readme = (ROOT / "packages" / distribution / "README.md").read_text()
    assert check_packages.relative_links(readme) == []


def test_relative_links_are_found() -> None:
    text = "[home](../../README.md), [the web](https://x.org), [here](#install), "
    text += '<a href="docs/cache.md">cache</a>'
    assert check_packages.relative_links(text) == ["../../README.md", "docs/cache.md"]


def test_every_copy_of_the_version_agrees_and_is_known_to_the_tool() -> None:
    assert version.mismatches() == []
    # Every place in the packages' sources that spells the version is one the tool writes.
    current = version.read_version()
    known = {place.path for place in version.PLACES}
    sources = [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("packages/*/src/**/*.py")]
    spelled = {
        str(path.relative_to(ROOT)) for path in sources if f'"{current}"' in path.read_text()
        or f"=={current}" in path.read_text()
    }  # fmt: skip
    assert spelled == known


def copy_version_places(destination: Path) -> Path:
    """The files that hold the version, copied into ``destination`` (same relative paths)."""
    for path in {"VERSION", *(place.path for place in version.PLACES)}:
        (destination / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, destination / path)
    return destination


def test_setting_the_version_writes_every_copy(tmp_path: Path) -> None:
    root = copy_version_places(tmp_path)
    version.set_version("2.3.4", root)
    assert version.read_version(root) == "2.3.4"
    assert version.mismatches(root) == []
    for place in version.PLACES:
        assert set(place.versions(root)) == {"2.3.4"}, place.path
    torch_project = tomllib.loads((root / "packages/nt-torch/pyproject.toml").read_text())
    assert torch_project["project"]["dependencies"][:2] == ["nt-core==2.3.4", "nt-triton==2.3.4"]
    with pytest.raises(ValueError, match="not a version number"):
        version.set_version("two", root)


def test_a_copy_that_drifts_is_named(tmp_path: Path) -> None:
    root = copy_version_places(tmp_path)
    pyproject = root / "packages/nt-jax/pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"nt-core==0.1.0"', '"nt-core==0.0.9"'))
    (root / "packages/nt-paddle/src/nt_paddle/__init__.py").write_text("VERSION_GONE = 1\n")
    expected = version.read_version(root)
    assert version.mismatches(root) == [
        f"packages/nt-jax/pyproject.toml: holds 0.0.9, VERSION says {expected}",
        "packages/nt-paddle/src/nt_paddle/__init__.py: no version where "
        "'^__version__ = \"(?P<version>[0-9][0-9A-Za-z.+-]*)\"$' expects one",
    ]


def wheel(path: Path, files: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return path


METADATA = """\
Metadata-Version: 2.4
Name: nt-torch
Version: {version}
License-Expression: {licence}
Project-URL: Upstream, https://github.com/InfiniTensor/ninetoothed
Requires-Dist: nt-core=={version}
Requires-Dist: nt-triton=={pinned}
Requires-Dist: torch

# nt-torch

{description}
"""


def metadata(version: str = "0.1.0", **fields: str) -> str:
    values = {"version": version, "licence": "Apache-2.0", "pinned": version, "description": ""}
    return METADATA.format(**{**values, **fields})


def test_a_good_wheel_passes(tmp_path: Path) -> None:
    files = {
        "nt_torch-0.1.0.dist-info/METADATA": metadata(),
        "nt_torch-0.1.0.dist-info/licenses/LICENSE": LICENSE,
    }
    archive = wheel(tmp_path / "nt_torch-0.1.0-py3-none-any.whl", files)
    assert check_packages.check_archive(archive, "0.1.0", LICENSE) == []


def test_the_checker_names_what_a_wheel_lacks(tmp_path: Path) -> None:
    files = {
        "nt_torch-0.1.0.dist-info/METADATA": metadata(
            licence="MIT", pinned="0.0.1", description="[up](../../README.md)"
        ),
        "nt_torch-0.1.0.dist-info/licenses/LICENSE": b"another licence",
    }
    archive = wheel(tmp_path / "nt_torch-0.1.0-py3-none-any.whl", files)
    problems = check_packages.check_archive(archive, "0.1.0", LICENSE)
    assert [problem.split(": ", 1)[1].split(" ")[0] for problem in problems] == [
        "no",  # LICENSE identical to the repository's
        "License-Expression",
        "requires",
        "its",  # long description links to '../../README.md'
    ]
    assert "'nt-triton==0.0.1'" in problems[2] and "'../../README.md'" in problems[3]


def test_an_sdist_is_read_too(tmp_path: Path) -> None:
    path = tmp_path / "nt_torch-0.1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, content in (("nt_torch-0.1.0/PKG-INFO", metadata(version="0.2.0").encode()),):
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    problems = check_packages.check_archive(path, "0.1.0", LICENSE)
    assert any("no LICENSE" in problem for problem in problems)
    assert any("version 0.2.0, VERSION says 0.1.0" in problem for problem in problems)


def test_a_folder_missing_a_distribution_is_reported(tmp_path: Path) -> None:
    problems = check_packages.check_folder(tmp_path)
    assert "nt-core: expected one wheel in" in problems[0]
    assert len(problems) == 2 * len(check_packages.DISTRIBUTIONS)


def test_ci_builds_and_checks_the_packages() -> None:
    steps = (ROOT / ".ci/run").read_text().splitlines()
    assert steps[-3:] == ["python3 dev.py tests", "python3 dev.py docs", "python3 dev.py package"]
