"""Summary quality: real-conversation benchmarks, planted facts and their scoring rules.

``locomo`` reads LoCoMo conversations, ``replay`` drives them through the engine,
``benchmark`` scores and reports them, and ``matching`` decides whether a text contains
an answer; ``synthetic`` writes conversations in LoCoMo's shape. ``facts`` plants facts
in generated conversations and scores how many the final summary keeps
(``hard_facts``: a harder generator). ``command`` runs both from
``benchmarks/quality.py`` and ``benchmarks/facts.py``; ``text_table`` prints their
tables. The scripts import this package from their own folder, and the tests by the
same name (``pythonpath`` in pyproject's pytest options): one name, one module.

Nothing here is needed to use the library, and nothing here ships in its wheel: the
measure users run on their own summaries is ``memory_summary.domain.redundancy``.
"""
