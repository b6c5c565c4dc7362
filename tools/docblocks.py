"""The code blocks of the project's Markdown, read and run as a reader would run them.

Every fenced block names its language, and what may be done with it is said
by HTML comments on the lines just above its fence (a reader never sees them):

* ```` ```python ```` blocks run, in page order, in one namespace per page, in
  a fresh working folder (the page's); each is written to a file first, so
  that kernels defined in it have source (``ninetoothed.make`` reads the
  application's).
* ```` ```sh ```` blocks run in bash (``-e -o pipefail``) in that folder, with
  the test environment's ``python`` and ``ninetoothed`` first on ``PATH``,
  ``TRITON_INTERPRET`` unset (a command that needs the interpreter says so)
  and a cache of the page's own (``NINETOOTHED_CACHE_DIR``).
* ```` ```text ```` blocks are output or layouts: nothing to run.
* ``<!-- file: NAME -->``: the block is the file ``NAME`` of the working
  folder (later blocks import it or run it); it is not run itself.
* ``<!-- picture: NAME.png -->``: a Python block that draws ``NAME.png`` in
  the working folder, in a namespace of its own (so the site's build can run
  it alone, beside the page's files: see ``tools/mkdocs_hooks.py``).
* ``<!-- output -->``: a text block that is what the shell block just before it
  prints, exactly, line for line (``…`` in a line matches any text, a line of ``…``
  alone any number of lines); checked
  whenever that block runs.
* ``<!-- gpu -->``: runs only in a GPU run (``NT_TEST_GPU=1``).
* ``<!-- cpu: REASON -->``: runs only outside a GPU run; the reason is required.
* ``<!-- needs: paddle -->``: runs only where the module imports (the CPU
  test environment has every framework; a GPU machine may lack one).
* ``<!-- not run: REASON -->``: never run; the reason is required.

``tests/docs/test_code_blocks.py`` runs every page; ``check`` lists what is
wrong with a page's markers without running anything.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "LANGUAGES",
    "Block",
    "BlockFailed",
    "check",
    "draw_pictures",
    "parse",
    "run_page",
    "write_files",
]

LANGUAGES = {
    "python": "run in the page's namespace",
    "sh": "run in bash",
    "text": "output or a layout, never run",
    "c": "C source: only as a file block, or not run",
    "cpp": "C++ source: only as a file block, or not run",
    "toml": "configuration: only as a file block, or not run",
    "cmake": "CMake: only as a file block, or not run",
}
"""The languages a fence may name, and what happens to each."""

RUNNABLE = {"python", "sh"}
MARKS = {"cpu", "file", "picture", "gpu", "needs", "not run", "output"}

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MARK = re.compile(r"^\s*<!--\s*(?P<key>[a-z ]+?)\s*(?::\s*(?P<value>.*?))?\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a Markdown file."""

    page: Path
    line: int
    """The line of the opening fence (1-based): the code starts on the next."""
    language: str
    code: str
    marks: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """``path:line``, as editors and tracebacks write it."""
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        """Whether the block is run at all (on some machine)."""
        return self.language in RUNNABLE and not {"file", "not run"} & self.marks.keys()


class BlockFailed(AssertionError):
    """A block that failed, with where it is and what it printed."""


def parse(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, with the marks written just above each."""
    lines = page.read_text().splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = [
            line[len(indent) :] if line.startswith(indent) else line
            for line in lines[index + 1 : end]
        ]
        language = opening["info"].strip().split(" ")[0]
        blocks.append(
            Block(page, index + 1, language, "\n".join(body) + "\n", _marks(lines, index))
        )
        index = end + 1
    return blocks


def _marks(lines: list[str], fence: int) -> dict[str, str]:
    """The ``<!-- key: value -->`` comments on the lines just above line ``fence``."""
    marks = {}
    index = fence - 1
    while index >= 0 and (mark := MARK.match(lines[index])):
        marks[mark["key"]] = mark["value"] or ""
        index -= 1
    return marks


def check(blocks: list[Block]) -> list[str]:
    """What is wrong with the blocks' languages and marks (empty: nothing)."""
    problems = []
    for block in blocks:
        where = block.where
        if block.language not in LANGUAGES:
            known = ", ".join(LANGUAGES)
            problems.append(
                f"{where}: a fence must name its language ({known}), got {block.language!r}"
            )
        for key in block.marks.keys() - MARKS:
            problems.append(f"{where}: unknown mark {key!r} (known: {', '.join(sorted(MARKS))})")
        if "not run" in block.marks and not block.marks["not run"]:
            problems.append(f"{where}: 'not run' needs a reason (<!-- not run: why -->)")
        if "cpu" in block.marks and not block.marks["cpu"]:
            problems.append(f"{where}: 'cpu' needs a reason (<!-- cpu: why not on a GPU -->)")
        if "output" in block.marks and block.language != "text":
            problems.append(f"{where}: an output is a text block")
        if "needs" in block.marks and not block.marks["needs"].isidentifier():
            problems.append(f"{where}: 'needs' names a module (<!-- needs: paddle -->)")
        if "file" in block.marks and not block.marks["file"]:
            problems.append(f"{where}: 'file' needs a file name (<!-- file: add.py -->)")
        if "picture" in block.marks and (
            block.language != "python" or not block.marks["picture"].endswith(".png")
        ):
            problems.append(f"{where}: a picture is a python block naming a .png")
        if (
            block.language in LANGUAGES.keys() - RUNNABLE - {"text"}
            and not {"file", "not run"} & block.marks.keys()
        ):
            problems.append(f"{where}: a {block.language} block is a file or not run (say why)")
    return problems


def write_files(blocks: list[Block], folder: Path) -> None:
    """Write the page's file blocks into ``folder``."""
    for block in blocks:
        if "file" in block.marks:
            path = folder / block.marks["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.code)


def run_page(page: Path, folder: Path, *, gpu: bool = False) -> list[Block]:
    """Run ``page``'s blocks in ``folder`` as the module docstring says; returns those run.

    Raises :class:`BlockFailed` at the first block that fails, naming its line.
    """
    blocks = parse(page)
    problems = check(blocks)
    if problems:
        raise BlockFailed("\n".join(problems))
    write_files(blocks, folder)
    namespace: dict[str, object] = {"__name__": "__main__"}
    ran = []
    printed: str | None = None  # the last shell block's output, for an output block
    with _inside(folder):
        for block in blocks:
            if "output" in block.marks:
                if printed is not None:
                    _compare(block, printed)
                continue
            printed = None
            elsewhere = ("gpu" in block.marks and not gpu) or ("cpu" in block.marks and gpu)
            if not block.runs or elsewhere or _missing(block):
                continue
            if block.language == "sh":
                printed = _run_shell(block, folder)
            elif "picture" in block.marks:
                _run_python(block, folder, {"__name__": "__main__"})
                if not (folder / block.marks["picture"]).is_file():
                    raise BlockFailed(f"{block.where}: drew no {block.marks['picture']}")
            else:
                _run_python(block, folder, namespace)
            ran.append(block)
    return ran


def _compare(block: Block, printed: str) -> None:
    """Check a shell block's output against the output block after it (``…`` in a line:
    any text; a line that is ``…`` alone: any number of lines, none included)."""
    pattern = "".join(
        r"(?:[^\n]*\n)*"
        if line.strip() == "…"
        else "[^\n]*".join(map(re.escape, line.split("…"))) + "\n"
        for line in block.code.rstrip().splitlines()
    )
    actual = printed.rstrip() + "\n"
    if not re.fullmatch(pattern, actual):
        shown = textwrap.indent(actual.rstrip(), "  ")
        raise BlockFailed(f"{block.where}: the command above printed, instead:\n{shown}")


def draw_pictures(page: Path, folder: Path) -> list[Path]:
    """Run only ``page``'s picture blocks (beside its files) in ``folder``; the pictures drawn."""
    blocks = parse(page)
    write_files(blocks, folder)
    drawn = []
    with _inside(folder):
        for block in blocks:
            if "picture" in block.marks:
                _run_python(block, folder, {"__name__": "__main__"})
                drawn.append(folder / block.marks["picture"])
    return drawn


def _missing(block: Block) -> bool:
    """Whether the block needs a module this environment does not have."""
    needed = block.marks.get("needs")
    return needed is not None and importlib.util.find_spec(needed) is None


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """Work in ``folder`` (current directory, first on the import path), then undo it all:
    the modules imported from it are forgotten, so another page's ``add.py`` is its own."""
    cwd, path, environment = os.getcwd(), list(sys.path), dict(os.environ)
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    os.environ.setdefault("MPLBACKEND", "Agg")  # pictures are files, never windows
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = path
        os.environ.clear()
        os.environ.update(environment)
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", None) or "").startswith(str(folder)):
                del sys.modules[name]


def _run_python(block: Block, folder: Path, namespace: dict[str, object]) -> None:
    """Execute a Python block from a file whose line numbers are the page's."""
    path = folder / f"{block.page.name}-line-{block.line}.py"
    # Blank lines before the code: a traceback's line number is the page's line number.
    path.write_text("\n" * block.line + block.code)
    namespace["__file__"] = str(path)
    try:
        exec(compile(path.read_text(), str(path), "exec"), namespace)
    except BaseException as error:  # SystemExit too: a block must not end the run
        shown = "".join(traceback.format_exception(error))
        raise BlockFailed(f"{block.where}: the python block failed:\n{shown}") from None


def _run_shell(block: Block, folder: Path) -> str:
    """Run a shell block with the test environment's tools first on the path; its stdout."""
    environment = dict(os.environ)
    environment.pop("TRITON_INTERPRET", None)  # commands that need it say so themselves
    # `python` is this interpreter (a machine may have only `python3`), and the
    # scripts installed beside it (`ninetoothed`) come next.
    shims = folder / ".bin"
    shims.mkdir(exist_ok=True)
    python = shims / "python"
    if not python.exists():  # a script, not a link: a venv's python must keep its path
        python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        python.chmod(0o755)
    scripts = str(Path(sys.executable).parent)
    environment["PATH"] = os.pathsep.join([str(shims), scripts, environment.get("PATH", "")])
    environment["NINETOOTHED_CACHE_DIR"] = str(folder / ".cache")
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        output = textwrap.indent((result.stdout + result.stderr).rstrip(), "  ")
        raise BlockFailed(
            f"{block.where}: the sh block exited with status {result.returncode}:\n"
            f"{textwrap.indent(block.code.rstrip(), '  $ ')}\n{output}"
        )
    return result.stdout
