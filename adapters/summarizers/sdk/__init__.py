"""What the SDK summarizers share: call limits, bounded retries, streams."""
