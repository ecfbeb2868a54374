"""The offline, deterministic summarizer that extracts instead of writing."""
