"""Every code block of the project's Markdown runs, as a reader would run it.

The pages are the README, CONTRIBUTING, CHANGELOG, each package's README (its
long description on a package index) and everything under ``docs/``.  How a
block is run, or why it is not, is said by comments above its fence
(``tools/docblocks.py``).  On the CPU kernels run in Triton's interpreter
(this test suite's default); blocks marked ``gpu`` run only in the GPU run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.base import ON_GPU

from tools import docblocks

ROOT = Path(__file__).resolve().parents[2]

PAGES = sorted(
    [
        *(ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")),
        *ROOT.glob("packages/*/README.md"),
        *(ROOT / "docs").rglob("*.md"),
    ]
)


def test_the_pages_are_found() -> None:
    names = {str(page.relative_to(ROOT)) for page in PAGES}
    assert {"README.md", "docs/index.md", "packages/nt-torch/README.md"} <= names
    assert all(page.is_file() for page in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_block_says_what_it_is(page: Path) -> None:
    assert docblocks.check(docblocks.parse(page)) == []


@pytest.mark.parametrize(
    "page",
    [page for page in PAGES if any(block.runs for block in docblocks.parse(page))],
    ids=lambda page: str(page.relative_to(ROOT)),
)
def test_the_page_s_blocks_run(page: Path, tmp_path: Path) -> None:
    ran = docblocks.run_page(page, tmp_path, gpu=ON_GPU)
    assert ran or not ON_GPU, f"{page}: no block ran"
