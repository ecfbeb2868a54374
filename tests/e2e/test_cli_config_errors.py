"""Configuration errors the console script reports: all at once, named by origin."""

from __future__ import annotations

import contextlib

import pytest

from tests.e2e.test_cli import run

pytestmark = pytest.mark.e2e


def _store(path):
    from memory_summary import Message
    from memory_summary.adapters import SqliteStore

    with contextlib.closing(SqliteStore(path)) as store:
        store.save_message("s1", Message("user", "hello"))
    return path


def _errors(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if "error:" in line]


def test_a_type_error_in_the_cli_table_does_not_hide_the_range_errors(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        "[memory_summary.cli]\nsessions = -1\nworkers = 0\ndb = 5\n", encoding="utf-8"
    )

    checked = run("config", "check", str(path))
    demo = run("demo", "--config", str(path), "--db", str(tmp_path / "d.sqlite3"))

    for result in (checked, demo):
        assert result.returncode == 3, result.stderr
        assert len(_errors(result)) == 3, result.stderr
        for part in ("cli.db=5", "cli.sessions=-1", "cli.workers=0"):
            assert part in result.stderr
    assert not (tmp_path / "d.sqlite3").exists()


def test_an_error_from_a_variable_names_the_variable(tmp_path):
    cli = run("config", "check", env={"MEMORY_SUMMARY_CLI_SESSIONS": "0"})
    field = run("config", "check", env={"MEMORY_SUMMARY_THRESHOLD": "abc"})

    assert cli.returncode == field.returncode == 3
    assert "MEMORY_SUMMARY_CLI_SESSIONS=0 is invalid; allowed: 1..10000" in cli.stderr
    assert "MEMORY_SUMMARY_THRESHOLD='abc' is invalid" in field.stderr


def test_a_bad_default_stops_only_the_commands_that_have_the_option(tmp_path):
    db = _store(tmp_path / "chat.sqlite3")
    env = {"MEMORY_SUMMARY_CLI_SESSIONS": "0"}

    sessions = run("sessions", "--db", str(db), env=env)
    demo = run("demo", "--db", str(tmp_path / "new.sqlite3"), env=env)
    config = tmp_path / "c.toml"
    config.write_text("[memory_summary.cli]\nsesions = 3\n", encoding="utf-8")
    typo = run("sessions", "--db", str(db), "--config", str(config))

    assert sessions.returncode == 0, sessions.stderr
    assert "s1" in sessions.stdout
    assert demo.returncode == 3
    assert "MEMORY_SUMMARY_CLI_SESSIONS=0" in demo.stderr
    assert typo.returncode == 3  # a name no option has stops every command
    assert "cli.sesions=3 is invalid" in typo.stderr
    assert "did you mean 'sessions'?" in typo.stderr


def test_config_check_names_the_variables_that_override_only_when_set():
    plain = run("config", "check")
    overridden = run("config", "check", env={"MEMORY_SUMMARY_KEEP_RECENT": "5"})

    assert "(defaults, no variable set)" in plain.stdout
    assert "MEMORY_SUMMARY_*" not in plain.stdout
    assert "(defaults, with MEMORY_SUMMARY_KEEP_RECENT)" in overridden.stdout


@pytest.mark.parametrize("types", ["memory", "history,notes"])
def test_clear_skips_another_sources_types(tmp_path, types):
    db = _store(tmp_path / "chat.sqlite3")

    result = run("clear", "s1", "--db", str(db), "--types", types)

    assert result.returncode == 0, result.stderr
    assert "skipped" in result.stdout


@pytest.mark.parametrize("types", ["summaries", "Summary", "summry", "memory,sumary"])
def test_clear_refuses_a_misspelled_summary_type(tmp_path, types):
    db = _store(tmp_path / "chat.sqlite3")

    result = run("clear", "s1", "--db", str(db), "--types", types)

    assert result.returncode == 2
    assert "did you mean 'summary'?" in result.stderr


def test_an_option_before_the_command_says_where_it_goes(tmp_path):
    result = run("--db", "X", "sessions")

    assert result.returncode == 2
    assert "invalid choice" not in result.stderr
    assert "--db is an option of the command, so it goes after it" in result.stderr
    assert "sessions --db X" in result.stderr


@pytest.mark.parametrize("command", ["inspect", "compress"])
def test_every_command_describes_itself_in_its_help(command):
    result = run(command, "--help")

    assert result.returncode == 0
    described = result.stdout.split("\n\n")[1]
    assert not described.lstrip().startswith("positional arguments")


def test_a_control_character_in_a_variable_name_is_shown_inert(cli_main):
    code, _, err = cli_main("sessions", env={"MEMORY_SUMMARY_A\x1b[2JB": "1"})

    assert code == 3
    assert "\x1b" not in err
    assert "error: MEMORY_SUMMARY_A\\x1b[2JB='1' is invalid" in err


def test_a_control_character_in_a_config_file_key_is_shown_inert(cli_main, tmp_path):
    (tmp_path / "k.toml").write_text('"a\\u001b]52;c;eA==\\u0007b" = 1\n')

    code, _, err = cli_main("config", "check", "k.toml")

    assert code == 3
    assert "\x1b" not in err
    assert "\x07" not in err
    assert "error: a\\x1b]52;c;eA==\\x07b=1 is invalid" in err
