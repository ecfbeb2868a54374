"""The words that mark a date or a quantity: one lexicon for every reader of facts.

The pinned facts (``pins``) and the offline summarizer's salience
(``adapters.salience``) both find dates by ``MONTHS`` and quantities by a number
before one of ``UNITS``, so they read a text alike; the salience also reads a
number said in words (``NUMBER_WORDS``, words: "three years"). ``MONTHS`` and
``UNITS`` are regular-expression groups, to be followed by a check that no Latin
letter continues the word (``(?![A-Za-z])``): ``5 min`` is a quantity, ``5 mint``
is not. Words that are common English after a number (``in``, ``A``) are no units
here.
"""

from __future__ import annotations

MONTHS = (
    r"(?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)"
)
"""English month names and their abbreviations, as one group."""

UNITS = (
    r"(?:kg|kilograms?|kilos?|g|grams?|mg|lbs?|pounds?|km|kilomet(?:re|er)s?|m²|sqm|"
    r"square met(?:re|er)s?|m|met(?:re|er)s?|cm|mm|mi|miles?|ft|feet|GB|gigabytes?|MB|"
    r"KB|TB|GiB|MiB|KiB|TiB|ms|s|sec|secs|seconds?|min|mins|minutes?|h|hrs|hours?|"
    r"days?|weeks?|months?|years?|%|°C|°F|EUR|USD|GBP|JPY|CNY|RMB|euros?|dollars?|"
    r"kWh|W|kW|V|Hz|MHz|GHz|rpm|px|pt|requests|users|people|"
    r"欧元|美元|英镑|日元|人民币|元|块|公斤|千克|克|公里|千米|平方米|平米|米|厘米|毫米|"
    r"天|小时|分钟|秒|年|个月|周|岁|人|件|台|页|条|次|个|星)"
)
"""Units of measure, money and counts (English and Chinese), as one group."""

NUMBER_WORDS = (
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
    "ninety", "hundred", "thousand",
)  # fmt: skip
"""English numbers from two, in words, lower case: followed by one of ``UNITS`` they
make a quantity (a tens word may take a hyphen and a ones word: "twenty-five").
"One" is left out: "one day" is seldom a count."""
