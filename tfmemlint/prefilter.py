"""The byte-level pre-filter: a file that holds none of the selected rules' trigger words cannot
hold a finding, so it is never decoded, parsed, or even allowed to import libcst."""

from __future__ import annotations

import re
from functools import lru_cache

from tfmemlint.rules import FAMILIES


@lru_cache(maxsize=8)
def _pattern(selected: frozenset[str]) -> re.Pattern[bytes] | None:
    triggers: set[bytes] = set()
    for family in FAMILIES:
        chosen = [rule for rule in family.rules if rule.code in selected]
        if chosen:
            triggers.update(family.triggers)
            for rule in chosen:
                triggers.update(rule.triggers)
    if not triggers:
        return None
    return re.compile(b"|".join(re.escape(t) for t in sorted(triggers)))


def may_have_findings(raw: bytes, selected: frozenset[str]) -> bool:
    pattern = _pattern(selected)
    return pattern is not None and pattern.search(raw) is not None
