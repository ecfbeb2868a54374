"""The history indexes of the SQL stores: SQLite FTS5 and PostgreSQL ``tsvector``."""
