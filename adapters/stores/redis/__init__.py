"""The Redis store: the whole compression-store contract on one Redis server."""
