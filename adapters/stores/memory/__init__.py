"""The in-memory store and archive, the reference every other store must match."""
