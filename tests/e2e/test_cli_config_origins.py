"""Configuration errors named as the user wrote them, by every command, in-process.

``main(argv)`` runs in this process (the ``cli_main`` fixture): each error here is
met while the arguments and the configuration are read, before any store opens.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

TYPO = {"MEMORY_SUMMARY_CLI_SESIONS": "3"}
SAID = (
    "memory-summary: error: MEMORY_SUMMARY_CLI_SESIONS='3' is invalid; allowed: a "
    "known variable (did you mean MEMORY_SUMMARY_CLI_SESSIONS?)\n"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions"],
        ["stats", "--json"],
        ["inspect", "s0"],
        ["compress", "s0"],
        ["clear", "--all"],
        ["demo", "--quiet"],
        ["config", "check"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_misspelled_variable_stops_every_command_the_same_way(cli_main, argv):
    code, out, err = cli_main(*argv, env=TYPO)

    assert (code, out, err) == (3, "", SAID)


def _option_help(out: str, option: str) -> str:
    (line,) = [line for line in out.splitlines() if line.lstrip().startswith(option)]
    return " ".join(line.split())


def test_help_says_a_configured_default_is_invalid_or_shows_it(cli_main):
    env = {"MEMORY_SUMMARY_CLI_SESSIONS": "0", "MEMORY_SUMMARY_CLI_TURNS": "5"}

    code, out, err = cli_main("demo", "--help", env=env)

    assert (code, err) == (0, "")
    assert _option_help(out, "--sessions") == (
        "--sessions SESSIONS concurrent sessions (50); configured "
        "MEMORY_SUMMARY_CLI_SESSIONS=0 is invalid; allowed: 1..10000 (a command "
        "with this option stops until it is fixed)"
    )
    assert _option_help(out, "--turns").endswith(
        "(40); default here: 5 (from MEMORY_SUMMARY_CLI_TURNS)"
    )
    assert _option_help(out, "--seed").endswith("conversation seed (7)")


def test_help_names_a_configured_value_of_the_file_with_its_key(cli_main, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[memory_summary.cli]\ndb = 5\ntimeout = 9\n", encoding="utf-8")

    code, out, _ = cli_main("compress", "--config", str(config), "--help")

    assert code == 0
    assert "configured cli.db=5 is invalid; allowed: str" in _option_help(out, "--db")
    assert "default here: 9 (from cli.timeout)" in _option_help(out, "--timeout")


def test_a_camel_case_key_is_named_as_written(cli_main, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("keepRecent = -1\nsummaryLlm = 3\n", encoding="utf-8")

    code, _, err = cli_main("config", "check", str(config))

    assert code == 3
    assert err.splitlines() == [
        "memory-summary: error: summaryLlm=3 is invalid; allowed: one of the known "
        "keys (did you mean 'summaryLLM'?)",
        "memory-summary: error: keepRecent=-1 is invalid; allowed: int >= 0",
    ]


def test_a_rule_between_fields_names_the_variable_that_broke_it(cli_main):
    code, _, err = cli_main("config", "check", env={"MEMORY_SUMMARY_KEEP_RECENT": "40"})

    assert code == 3
    assert err.startswith(
        "memory-summary: error: MEMORY_SUMMARY_KEEP_RECENT=40 is invalid; allowed: "
        "an int < threshold=30 "
    )
    assert err.endswith(
        "; involved: MEMORY_SUMMARY_KEEP_RECENT=40, threshold=30 (the default)\n"
    )


def test_a_rule_between_fields_names_each_fields_origin(cli_main, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("threshold = 10\n", encoding="utf-8")
    env = {"MEMORY_SUMMARY_KEEP_RECENT": "40"}

    code, _, err = cli_main("inspect", "s0", "--config", str(config), env=env)

    assert code == 3
    assert err.startswith("memory-summary: error: threshold=10 is invalid")
    assert err.endswith(
        f"; involved: threshold=10 in {config}, MEMORY_SUMMARY_KEEP_RECENT=40\n"
    )
