"""The summarizer on Anthropic's Messages API (extra ``anthropic``)."""
