"""The ``ninetoothed`` command: subcommands come from plugins, through a hook."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

import ninetoothed
from ninetoothed import cli
from ninetoothed.runtime import plugins
from ninetoothed.runtime.hookspecs import hookimpl


class GreetingPlugin:
    """A plugin adding ``ninetoothed greet [--name NAME]``, which exits with status 3."""

    @hookimpl
    def ninetoothed_cli_commands(
        self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
    ) -> None:
        greet = subparsers.add_parser("greet", help="say hello")
        greet.add_argument("--name", default="world")
        greet.set_defaults(handler=self.greet)

    @staticmethod
    def greet(arguments: argparse.Namespace) -> int:
        print(f"hello, {arguments.name}")
        return 3


@pytest.fixture
def greeting() -> Iterator[None]:
    plugin = GreetingPlugin()
    plugins.register(plugin, name="greeting")
    yield
    plugins.unregister(plugin)


def test_a_plugin_adds_a_command_and_its_handler_gives_the_status(
    greeting: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["greet", "--name", "tooth"]) == 3
    assert capsys.readouterr().out == "hello, tooth\n"


def test_the_help_lists_the_plugins_commands(
    greeting: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    assert "greet" in capsys.readouterr().out


def test_no_command_prints_the_help_and_fails(
    greeting: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([]) == 2
    assert "greet" in capsys.readouterr().err


def test_an_unknown_command_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["no-such-command"])
    assert exited.value.code == 2
    assert "no-such-command" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out.strip() == f"ninetoothed {ninetoothed.__version__}"
