"""Summary quality: real-conversation benchmarks and their scoring rules.

``locomo`` reads LoCoMo conversations and ``matching`` decides whether a text contains
an answer. Nothing here is needed to use the library.
"""
