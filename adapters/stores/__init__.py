"""The stores: in memory, SQL (SQLite and PostgreSQL) and Redis, and what they share."""
