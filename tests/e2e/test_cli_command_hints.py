"""Options given before the command: where they go, or that a command is missing.

In-process (the ``cli_main`` fixture): argparse stops before any store opens.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

COMMANDS = "commands: config, demo, inspect, compress, clear, sessions, stats"


@pytest.mark.parametrize(
    "argv", [["--db", "X"], ["--db", "stats"], ["--db"], ["--json", "--limit", "3"]]
)
def test_options_without_a_command_say_the_command_is_missing(cli_main, argv):
    code, out, err = cli_main(*argv)

    assert (code, out) == (2, "")
    assert f"error: a command is missing: {argv[0]} is an option of a command" in err
    assert err.rstrip().endswith(COMMANDS)
    assert "invalid choice" not in err


@pytest.mark.parametrize(
    ("argv", "fixed"),
    [
        (["--db", "stats", "sessions"], "sessions --db stats"),
        (["--db=stats", "sessions", "--json"], "sessions --db=stats --json"),
        (
            ["--limit", "3", "--db", "x y", "inspect", "s0"],
            "inspect --limit 3 --db 'x y' s0",
        ),
        (["--json", "config", "check"], "config check --json"),
        (["--seed", "-3", "demo"], "demo --seed -3"),
    ],
)
def test_an_option_before_the_command_keeps_its_value(cli_main, argv, fixed):
    code, _, err = cli_main(*argv)

    assert code == 2
    option = argv[0].partition("=")[0]
    said = f"error: {option} is an option of the command, so it goes after it: "
    assert said in err
    assert err.rstrip().endswith(f" {fixed}")


def test_an_option_no_command_has_is_unrecognized(cli_main):
    code, _, err = cli_main("--bogus", "sessions")

    assert code == 2
    assert "unrecognized arguments: --bogus" in err


@pytest.mark.parametrize(
    ("argv", "fixed"),
    [
        (["--li", "3", "sessions"], "sessions --li 3"),
        (["--lim=3", "--js", "stats"], "stats --lim=3 --js"),
        (["--quiet", "--see", "-3", "demo"], "demo --quiet --see -3"),
    ],
)
def test_an_abbreviated_option_before_the_command_gets_the_hint(cli_main, argv, fixed):
    code, _, err = cli_main(*argv)

    assert code == 2
    assert "is an option of the command, so it goes after it: " in err
    assert err.rstrip().endswith(f" {fixed}")
    assert "invalid choice" not in err


def test_an_ambiguous_prefix_before_the_command_is_said(cli_main):
    code, _, err = cli_main("--d", "X", "sessions")

    assert code == 2
    assert "error: --d is ambiguous for `sessions` (it could be --db, --dsn)" in err
    assert "invalid choice" not in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--db", "X", "config", "check"], "--db is not an option of `config check`"),
        (
            ["--json", "--db=X", "config", "check"],
            "--db is not an option of `config check`",
        ),
        (["--limit", "3", "demo"], "--limit is not an option of `demo`"),
        (["--db", "--json", "sessions"], "--db needs a value"),
        (["--json", "--limit", "--db", "x", "stats"], "--limit needs a value"),
    ],
)
def test_no_hint_suggests_a_line_the_command_refuses(cli_main, argv, said):
    code, _, err = cli_main(*argv)

    assert code == 2
    assert f"error: {said}" in err
    assert "so it goes after it" not in err


def test_config_before_config_check_is_not_an_option_of_it(cli_main, tmp_path):
    (tmp_path / "t.toml").write_text("")

    code, _, err = cli_main("--config", "t.toml", "config", "check")

    assert code == 2
    assert "error: --config is not an option of `config check`" in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["demo", "\x1b[2J\x1b]52;c;cHduZWQ=\x07"], "\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07"),
        (["sessions", "--nope", "\u202eevil\r"], "--nope \\u202eevil\\x0d"),
        (["sessions", "--d=\x9b6n"], "ambiguous option: --d=\\x9b6n could match"),
        (
            ["sessions", "--nope", "x\nmemory-summary: done: 0 sessions removed"],
            "--nope x\\x0amemory-summary: done",
        ),
    ],
)
def test_argparse_usage_errors_show_what_was_typed_inert(cli_main, argv, said):
    """argparse wrote unrecognized and ambiguous arguments as typed: an escape
    sequence there cleared the screen or wrote the clipboard (OSC 52)."""
    from tests.property.test_terminal_text import acts_on_terminal

    code, out, err = cli_main(*argv)

    assert (code, out) == (2, "")
    assert said in err
    assert not [c for c in err if c != "\n" and acts_on_terminal(c)]
    assert not [
        line for line in err.splitlines() if line.startswith("memory-summary: done")
    ]
