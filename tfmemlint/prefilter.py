"""The byte-level pre-filter: a file that holds none of the selected rules' trigger words cannot
hold a finding, so it is never decoded, parsed, or even allowed to import libcst."""

from __future__ import annotations

import re
from functools import lru_cache

from tfmemlint.rules import FAMILIES


def _triggers(selected: frozenset[str]) -> set[bytes]:
    triggers: set[bytes] = set()
    for family in FAMILIES:
        chosen = [rule for rule in family.rules if rule.code in selected]
        if chosen:
            triggers.update(family.triggers)
            for rule in chosen:
                triggers.update(rule.triggers)
    return triggers


@lru_cache(maxsize=8)
def _pattern(selected: frozenset[str]) -> re.Pattern[bytes] | None:
    triggers = _triggers(selected)
    if not triggers:
        return None
    return re.compile(b"|".join(re.escape(t) for t in sorted(triggers)))


@lru_cache(maxsize=1)
def any_trigger() -> re.Pattern[str]:
    """Any rule's trigger word, in text: what a region must not hold to be set aside unparsed."""
    every_rule = frozenset(rule.code for family in FAMILIES for rule in family.rules)
    return re.compile("|".join(re.escape(t.decode()) for t in sorted(_triggers(every_rule))))


def may_have_findings(raw: bytes, selected: frozenset[str]) -> bool:
    pattern = _pattern(selected)
    return pattern is not None and pattern.search(raw) is not None
