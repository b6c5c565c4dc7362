"""One version for all five packages: the ``VERSION`` file, copied where Python needs it.

    python3 tools/version.py            # check every copy against VERSION (exit 1 naming each)
    python3 tools/version.py set 0.2.0  # write 0.2.0 into VERSION and every copy

The packages are released together and pin one another exactly
(``nt-torch`` needs ``nt-core==<version>``), and each says its version twice:
in its ``pyproject.toml`` (static, so that any build front-end reads it
without running code) and in its ``__version__``.  This file finds every such
place; ``python3 dev.py package`` and the test suite fail while one differs.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PLACES", "Place", "mismatches", "read_version", "set_version"]

ROOT = Path(__file__).resolve().parents[1]

VERSION_NUMBER = r"(?P<version>[0-9][0-9A-Za-z.+-]*)"


@dataclass(frozen=True)
class Place:
    """A file and the pattern of the version in it (every match must hold the version)."""

    path: str
    pattern: str

    def versions(self, root: Path) -> list[str]:
        """The versions this place holds (an empty list: the pattern no longer matches)."""
        text = (root / self.path).read_text()
        return [match["version"] for match in re.finditer(self.pattern, text, re.MULTILINE)]

    def write(self, root: Path, version: str) -> None:
        """Put ``version`` into every match."""
        path = root / self.path

        def replace(match: re.Match[str]) -> str:
            start, end = match.span("version")
            return (
                match.group(0)[: start - match.start()]
                + version
                + match.group(0)[end - match.start() :]
            )

        path.write_text(re.sub(self.pattern, replace, path.read_text(), flags=re.MULTILINE))


def _places() -> list[Place]:
    places = []
    for package in ("nt-core", "nt-triton", "nt-torch", "nt-paddle", "nt-jax"):
        pyproject = f"packages/{package}/pyproject.toml"
        places.append(Place(pyproject, rf'^version = "{VERSION_NUMBER}"$'))
        if package not in ("nt-core",):
            places.append(Place(pyproject, rf'"nt-core=={VERSION_NUMBER}"'))
        if package not in ("nt-core", "nt-triton"):
            places.append(Place(pyproject, rf'"nt-triton=={VERSION_NUMBER}"'))
    places.append(
        Place(
            "packages/nt-core/src/ninetoothed/__init__.py", rf'^__version__ = "{VERSION_NUMBER}"$'
        )
    )
    places.append(
        Place("packages/nt-triton/src/nt_triton/_version.py", rf'^VERSION = "{VERSION_NUMBER}"$')
    )
    for package in ("nt_torch", "nt_paddle", "nt_jax"):
        module = f"packages/{package.replace('_', '-')}/src/{package}/__init__.py"
        places.append(Place(module, rf'^__version__ = "{VERSION_NUMBER}"$'))
    return places


PLACES = _places()
"""Every copy of the version, besides ``VERSION`` itself."""


def read_version(root: Path = ROOT) -> str:
    """The version: the ``VERSION`` file's one line."""
    return (root / "VERSION").read_text().strip()


def mismatches(root: Path = ROOT) -> list[str]:
    """``path: holds X, VERSION says Y`` for every copy that differs (empty: none)."""
    version = read_version(root)
    problems = []
    for place in PLACES:
        found = place.versions(root)
        if not found:
            problems.append(f"{place.path}: no version where {place.pattern!r} expects one")
        for other in found:
            if other != version:
                problems.append(f"{place.path}: holds {other}, VERSION says {version}")
    return problems


def set_version(version: str, root: Path = ROOT) -> None:
    """Write ``version`` into ``VERSION`` and every copy."""
    if not re.fullmatch(VERSION_NUMBER, version):
        raise ValueError(f"not a version number: {version!r}")
    (root / "VERSION").write_text(version + "\n")
    for place in PLACES:
        place.write(root, version)


def main(argv: list[str]) -> int:
    """Check (no argument) or ``set VERSION``; returns the exit status."""
    if argv[:1] == ["set"] and len(argv) == 2:
        set_version(argv[1])
        print(f"version {argv[1]} written into VERSION and {len(PLACES)} places")
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    problems = mismatches()
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"every package is at version {read_version()}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
