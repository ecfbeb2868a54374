"""The summarizers: OpenAI-compatible, Anthropic and the offline extractive one."""
