"""Check the built distributions before they are published.

    python3 tools/check_packages.py DIST    # DIST holds every package's wheel and sdist

``nox -s package`` runs it after building (and after ``twine check
--strict``, which checks that each long description renders). For each of the
five distributions, a wheel and an sdist must be in ``DIST``, and each must:

* carry ``LICENSE``, the repository's Apache-2.0 text, byte for byte;
* declare ``License-Expression: Apache-2.0``, a project URL, and the
  version of ``VERSION``, pinning the other NineToothed packages at it;
* have a long description that stands alone: no link relative to the
  repository (``../../README.md`` works on GitHub, nowhere else);

and every copy of the version in the repository must agree with ``VERSION``
(``tools/version.py``). Exits 1, naming each problem.
"""

from __future__ import annotations

import email.parser
import re
import sys
import tarfile
import zipfile
from email.message import Message
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import version  # noqa: E402  (the repository root is put on the path above)

__all__ = ["DISTRIBUTIONS", "check_archive", "check_folder", "relative_links"]

ROOT = Path(__file__).resolve().parents[1]

DISTRIBUTIONS = ("nt-core", "nt-triton", "nt-torch", "nt-paddle", "nt-jax")

LINK = re.compile(r"\]\(([^)\s]+)\)|\bhref=\"([^\"]+)\"")


def relative_links(markdown: str) -> list[str]:
    """The link targets of ``markdown`` that are neither absolute URLs nor anchors."""
    targets = [a or b for a, b in LINK.findall(markdown)]
    return [t for t in targets if not re.match(r"(https?:|mailto:|#)", t)]


def _members(archive: Path) -> dict[str, bytes]:
    """Every file of a wheel or an sdist, by its path inside."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            return {name: wheel.read(name) for name in wheel.namelist()}
    with tarfile.open(archive) as sdist:
        return {
            member.name: sdist.extractfile(member).read()  # type: ignore[union-attr]
            for member in sdist.getmembers()
            if member.isfile()
        }


def _metadata(members: dict[str, bytes], wheel: bool) -> Message:
    name = next(
        n for n in members if n.endswith(".dist-info/METADATA" if wheel else "/PKG-INFO")
        and n.count("/") == 1
    )  # fmt: skip
    return email.parser.Parser().parsestr(members[name].decode())


def check_archive(archive: Path, expected_version: str, license_text: bytes) -> list[str]:
    """What is wrong with one wheel or sdist (empty: nothing)."""
    wheel = archive.suffix == ".whl"
    members = _members(archive)
    problems = []
    licenses = [n for n in members if n.rsplit("/", 1)[-1] == "LICENSE"]
    if not any(members[n] == license_text for n in licenses):
        found = ", ".join(licenses) or "none"
        problems.append(f"no LICENSE identical to the repository's (LICENSE files: {found})")
    metadata = _metadata(members, wheel)
    if metadata.get("License-Expression") != "Apache-2.0":
        problems.append(f"License-Expression is {metadata.get('License-Expression')!r}")
    if metadata.get("Version") != expected_version:
        problems.append(f"version {metadata.get('Version')}, VERSION says {expected_version}")
    if not metadata.get_all("Project-URL"):
        problems.append("no Project-URL")
    for requirement in metadata.get_all("Requires-Dist") or []:
        pinned = re.match(r"(nt-core|nt-triton)\s*==\s*(\S+)", requirement)
        if requirement.startswith(("nt-core", "nt-triton")) and (
            not pinned or pinned[2] != expected_version
        ):
            problems.append(f"requires {requirement!r}, not the version {expected_version}")
    for link in relative_links(metadata.get_payload()):  # type: ignore[arg-type]
        problems.append(f"its long description links to {link!r}, which breaks off GitHub")
    return [f"{archive.name}: {problem}" for problem in problems]


def check_folder(folder: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with the distributions in ``folder`` and the repository's versions."""
    expected = version.read_version(root)
    license_text = (root / "LICENSE").read_bytes()
    problems = list(version.mismatches(root))
    for distribution in DISTRIBUTIONS:
        stem = distribution.replace("-", "_")
        for kind, pattern in (("wheel", f"{stem}-*.whl"), ("sdist", f"{stem}-*.tar.gz")):
            archives = sorted(folder.glob(pattern))
            if len(archives) != 1:
                problems.append(
                    f"{distribution}: expected one {kind} in {folder}, found {len(archives)}"
                )
            for archive in archives:
                problems += check_archive(archive, expected, license_text)
    return problems


def main(argv: list[str]) -> int:
    """Check ``argv[0]`` (default ``dist``); returns the exit status."""
    folder = Path(argv[0]) if argv else ROOT / "dist"
    problems = check_folder(folder)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"{len(DISTRIBUTIONS)} wheels and sdists in {folder}: licence, metadata and version")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
