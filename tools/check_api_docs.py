"""Check that the built API reference documents every public name.

Run after ``mkdocs build`` (``nox -s docs`` does): for each name in the
``__all__`` of ``ninetoothed`` and of the framework packages, the site must
have a heading whose id ends with that name (mkdocstrings names headings by
their full path, e.g. ``ninetoothed.runtime.make.make``).  Reads ``__all__`` from the
sources, so nothing is imported.  Exits non-zero naming what is missing.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "ninetoothed": ROOT / "packages/nt-core/src/ninetoothed/__init__.py",
    "nt_triton": ROOT / "packages/nt-triton/src/nt_triton/__init__.py",
    "nt_torch": ROOT / "packages/nt-torch/src/nt_torch/__init__.py",
    "nt_paddle": ROOT / "packages/nt-paddle/src/nt_paddle/__init__.py",
    "nt_jax": ROOT / "packages/nt-jax/src/nt_jax/__init__.py",
}


def public_names(init: Path) -> list[str]:
    """The strings of ``__all__`` in a package's ``__init__.py``."""
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [ast.literal_eval(element) for element in node.value.elts]  # type: ignore[attr-defined]
    return []


def main(site: Path) -> int:
    """Report the public names without a heading in ``site``; 1 if any."""
    ids = set()
    for page in site.rglob("*.html"):
        ids |= set(re.findall(r'id="([\w.]+)"', page.read_text()))
    missing = []
    for package, init in PACKAGES.items():
        for name in public_names(init):
            if name == "__version__":
                continue
            # The framework packages re-export ninetoothed's make and jit.
            homes = (package, "ninetoothed")
            if not any(i.startswith(homes) and i.split(".")[-1] == name for i in ids):
                missing.append(f"{package}.{name}")
    if missing:
        print("API reference lacks: " + ", ".join(missing), file=sys.stderr)
        return 1
    print(f"API reference documents every public name of {', '.join(PACKAGES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "site"))
