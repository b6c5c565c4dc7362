"""The Markdown block runner itself (``tools/docblocks.py``): what it runs, and how it fails."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tools import docblocks
from tools.docblocks import BlockFailed

FENCE = "```"


def page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(textwrap.dedent(text).replace("'''", FENCE))
    return path


def test_blocks_share_a_page_namespace_and_see_the_page_s_files(tmp_path: Path) -> None:
    path = page(
        tmp_path,
        """
        Save this as `shout.py`:

        <!-- file: shout.py -->
        '''python
        def shout(text):
            return text.upper()
        '''

        '''python
        from shout import shout

        word = shout("tooth")
        '''

        '''python
        assert word == "TOOTH"
        '''

        '''sh
        python -c "import shout; print(shout.shout('x'))" > out.txt
        test "$(cat out.txt)" = X
        '''

        '''text
        X
        '''
        """,
    )
    folder = tmp_path / "work"
    folder.mkdir()
    ran = docblocks.run_page(path, folder)
    assert [block.language for block in ran] == ["python", "python", "sh"]
    assert (folder / "shout.py").read_text().startswith("def shout")


def test_a_failing_python_block_is_reported_at_the_page_s_line(tmp_path: Path) -> None:
    path = page(
        tmp_path,
        """
        '''python
        x = 1
        y = x / 0
        '''
        """,
    )
    with pytest.raises(BlockFailed) as failed:
        docblocks.run_page(path, tmp_path)
    message = str(failed.value)
    assert message.startswith(f"{path}:2: the python block failed:")
    assert "line 4" in message and "ZeroDivisionError" in message


def test_a_failing_shell_block_shows_its_command_and_output(tmp_path: Path) -> None:
    path = page(tmp_path, "'''sh\necho about to fail\nfalse\necho never\n'''\n")
    with pytest.raises(BlockFailed) as failed:
        docblocks.run_page(path, tmp_path)
    message = str(failed.value)
    assert message.startswith(f"{path}:1: the sh block exited with status 1")
    assert "  $ false" in message and message.endswith("\n  about to fail")


def test_an_output_block_is_what_the_command_before_it_prints(tmp_path: Path) -> None:
    text = """
        '''sh
        echo "kernel 'add' (add.py:kernel)"
        echo "generated source: /tmp/x/add_kernel_0123.py"
        '''

        <!-- output -->
        '''text
        kernel 'add' (add.py:kernel)
        generated source: …/add_kernel_….py
        '''
        """
    docblocks.run_page(page(tmp_path, text), tmp_path)
    drifted = text.replace("kernel 'add' (add.py", "kernel 'sum' (add.py", 2)
    with pytest.raises(BlockFailed, match="printed, instead:\n  kernel 'add'"):
        docblocks.run_page(
            page(tmp_path, drifted.replace("echo \"kernel 'sum'", "echo \"kernel 'add'")), tmp_path
        )
    longer = text.replace('echo "generated', 'echo extra\necho "generated')
    with pytest.raises(BlockFailed, match="printed, instead"):
        docblocks.run_page(page(tmp_path, longer), tmp_path)


def test_a_line_of_an_ellipsis_alone_matches_any_number_of_lines(tmp_path: Path) -> None:
    text = """
        '''sh
        echo "configurations (3):"; echo "  A=1"; echo "  A=2"; echo "  A=3"; echo "in use"
        '''

        <!-- output -->
        '''text
        configurations (…):
          A=…
        …
        in use
        '''
        """
    docblocks.run_page(page(tmp_path, text), tmp_path)
    one = text.replace('; echo "  A=2"; echo "  A=3"', "")
    docblocks.run_page(page(tmp_path, one), tmp_path)  # none: the ellipsis line takes no line
    with pytest.raises(BlockFailed, match="printed, instead"):  # the lines around it still count
        docblocks.run_page(page(tmp_path, text.replace('; echo "in use"', "")), tmp_path)


def test_python_in_shell_blocks_is_the_test_s_interpreter(tmp_path: Path) -> None:
    path = page(tmp_path, "'''sh\npython -c 'import sys; print(sys.prefix)' > prefix.txt\n'''\n")
    docblocks.run_page(path, tmp_path)
    assert (tmp_path / "prefix.txt").read_text().strip() == sys.prefix  # so its packages too


def test_shell_blocks_run_without_the_interpreter_unless_they_ask(tmp_path: Path) -> None:
    path = page(tmp_path, "'''sh\ntest -z \"${TRITON_INTERPRET:-}\"\n'''\n")
    docblocks.run_page(path, tmp_path)  # the test suite's TRITON_INTERPRET=1 is not passed on


def test_marked_blocks_are_skipped_and_gpu_blocks_run_on_the_gpu(tmp_path: Path) -> None:
    path = page(
        tmp_path,
        """
        <!-- not run: installs packages -->
        '''sh
        exit 1
        '''

        <!-- gpu -->
        '''python
        ran_on_gpu = True
        open("gpu.txt", "w").close()
        '''
        """,
    )
    assert docblocks.run_page(path, tmp_path) == []
    assert not (tmp_path / "gpu.txt").exists()
    assert len(docblocks.run_page(path, tmp_path, gpu=True)) == 1
    assert (tmp_path / "gpu.txt").exists()


def test_a_cpu_block_runs_outside_a_gpu_run_only(tmp_path: Path) -> None:
    text = """
        <!-- cpu: the interpreter's example -->
        '''sh
        touch cpu.txt
        '''
        """
    path = page(tmp_path, text)
    assert docblocks.run_page(path, tmp_path, gpu=True) == []
    assert not (tmp_path / "cpu.txt").exists()
    assert len(docblocks.run_page(path, tmp_path)) == 1
    assert (tmp_path / "cpu.txt").exists()
    unexplained = page(tmp_path, text.replace("cpu: the interpreter's example", "cpu"))
    assert "'cpu' needs a reason" in "\n".join(docblocks.check(docblocks.parse(unexplained)))


def test_a_block_needing_a_missing_module_is_left_out(tmp_path: Path) -> None:
    path = page(
        tmp_path,
        """
        <!-- needs: no_such_module_here -->
        '''python
        import no_such_module_here
        '''

        <!-- needs: json -->
        '''python
        import json
        '''
        """,
    )
    assert [block.line for block in docblocks.run_page(path, tmp_path)] == [8]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("'''\nprint(1)\n'''\n", "a fence must name its language"),
        ("'''pycon\n>>> 1\n'''\n", "a fence must name its language"),
        ("<!-- not run -->\n'''sh\nls\n'''\n", "'not run' needs a reason"),
        ("<!-- skip: why -->\n'''sh\nls\n'''\n", "unknown mark 'skip'"),
        ("<!-- needs: a b -->\n'''sh\nls\n'''\n", "'needs' names a module"),
        ("<!-- output -->\n'''sh\nls\n'''\n", "an output is a text block"),
        ("'''c\nint x;\n'''\n", "a c block is a file or not run"),
        ("<!-- picture: a.svg -->\n'''python\npass\n'''\n", "a picture is a python block"),
    ],
)
def test_unclear_blocks_are_refused_before_anything_runs(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = page(tmp_path, text)
    assert problem in "\n".join(docblocks.check(docblocks.parse(path)))
    with pytest.raises(BlockFailed, match=problem):
        docblocks.run_page(path, tmp_path)


def test_a_picture_block_runs_alone_and_must_draw_its_picture(tmp_path: Path) -> None:
    path = page(
        tmp_path,
        """
        '''python
        shared = 1
        '''

        <!-- picture: drawn.png -->
        '''python
        assert "shared" not in globals()  # pictures are drawn by the site's build, alone
        open("drawn.png", "wb").close()
        '''
        """,
    )
    docblocks.run_page(path, tmp_path)
    assert [p.name for p in docblocks.draw_pictures(path, tmp_path)] == ["drawn.png"]
    (tmp_path / "drawn.png").unlink()
    lazy = page(tmp_path, "<!-- picture: missing.png -->\n'''python\npass\n'''\n")
    with pytest.raises(BlockFailed, match="drew no missing.png"):
        docblocks.run_page(lazy, tmp_path)


def test_applications_in_blocks_have_source_and_page_modules_are_forgotten(
    tmp_path: Path,
) -> None:
    # ninetoothed.make reads an application's source: a block's functions must have one.
    path = page(
        tmp_path,
        """
        <!-- file: helper_module_of_a_page.py -->
        '''python
        VALUE = 1
        '''

        '''python
        import inspect
        import helper_module_of_a_page

        def application(x):
            return x

        assert "return x" in inspect.getsource(application)
        '''
        """,
    )
    docblocks.run_page(path, tmp_path)
    import sys

    assert "helper_module_of_a_page" not in sys.modules
