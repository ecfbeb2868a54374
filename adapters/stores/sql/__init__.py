"""One SQL core over a thin driver face, spelled for SQLite and PostgreSQL."""
