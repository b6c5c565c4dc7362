"""The documentation site's build hook: draws the pages' pictures as the site is built.

A page's ``<!-- picture: NAME.png -->`` block (``tools/docblocks.py``) is code
that draws ``NAME.png`` with ``ninetoothed.visualization``, usually from the
arrangement of a file the page defines. Before the pages are read, this hook
runs every such block (beside its page's file blocks, in a temporary folder)
and adds the picture to the site next to its page, so a picture is never
older than the code it shows, and a picture that cannot be drawn fails the
build. It needs nt-core, nt-triton and matplotlib (``nox -s docs`` installs
them); it runs no kernel.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import docblocks  # noqa: E402  (the repository root is put on the path above)

__all__ = ["on_files", "on_post_build"]

log = logging.getLogger("mkdocs.hooks.pictures")

_drawing = tempfile.TemporaryDirectory(prefix="ninetoothed-pictures-")


def on_files(files: Files, config: Any) -> Files:
    """Draw every page's pictures and add them to the site beside their pages."""
    docs = Path(config["docs_dir"])
    root = Path(_drawing.name)
    os.environ.setdefault("NINETOOTHED_CACHE_DIR", str(root / "cache"))
    drawn = 0
    for page in sorted(docs.rglob("*.md")):
        if not any("picture" in block.marks for block in docblocks.parse(page)):
            continue
        folder = root / page.relative_to(docs).with_suffix("")
        folder.mkdir(parents=True, exist_ok=True)
        try:
            pictures = docblocks.draw_pictures(page, folder)
        except docblocks.BlockFailed as error:
            raise PluginError(f"cannot draw the pictures of {page}: {error}") from None
        for picture in pictures:
            if not picture.is_file():
                raise PluginError(f"{page}: the block for {picture.name} drew nothing")
            uri = (page.parent / picture.name).relative_to(docs).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(picture)))
            drawn += 1
    log.info("drew %d pictures", drawn)
    return files


def on_post_build(config: Any) -> None:
    """Forget the drawings' temporary folder (the site has copies)."""
    _drawing.cleanup()
