"""The byte-level pre-filter: a file that holds none of the rules' trigger words cannot hold a
finding, so it is never decoded, parsed, or even allowed to import libcst."""

from __future__ import annotations

import re

from tfmemlint.rules import FAMILIES

_TRIGGERS = re.compile(
    b"|".join(re.escape(trigger) for family in FAMILIES for trigger in family.triggers)
)


def may_have_findings(raw: bytes) -> bool:
    return _TRIGGERS.search(raw) is not None
