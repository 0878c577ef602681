"""``omoide bench`` and ``omoide eval`` without omoide-bench installed: the commands exist
and say how to install it; with it installed, its real commands are the ones run."""

from __future__ import annotations

import argparse

import pytest

from omoide.commands._tool_stubs import add_missing_tool_commands


def _subparsers() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:  # type: ignore[type-arg]
    parser = argparse.ArgumentParser(prog="omoide")
    return parser, parser.add_subparsers(dest="command")


@pytest.mark.parametrize("argv", [["bench", "scale", "--people", "3"], ["eval", "--help"],
                                  ["bench"]])
def test_a_tooling_command_without_its_distribution_says_how_to_install_it(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    parser, sub = _subparsers()
    add_missing_tool_commands(sub)
    args = parser.parse_args(argv)
    assert args.handler(args) == 1
    err = capsys.readouterr().err
    assert f"omoide {argv[0]} needs the omoide-bench distribution" in err
    assert "pip install -e tools/bench" in err


def test_a_command_a_plugin_added_is_left_alone() -> None:
    _, sub = _subparsers()
    real = sub.add_parser("bench")
    add_missing_tool_commands(sub)
    assert sub.choices["bench"] is real and "eval" in sub.choices


def test_with_omoide_bench_installed_its_commands_are_the_real_ones() -> None:
    pytest.importorskip("omoide_bench")
    from omoide.cli import build_parser

    args = build_parser().parse_args(["bench", "pipeline", "--turns", "1"])
    assert args.handler.__module__.startswith("omoide_bench.")
