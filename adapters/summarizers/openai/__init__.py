"""The summarizer on OpenAI-compatible endpoints (extra ``openai``)."""
