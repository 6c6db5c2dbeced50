"""A domain instruction's ``domain={kind="sharding", entry={...}, exit={...}}`` checked token by
token as XLA's parser reads it (``ParseDomain``), refused in XLA's words at XLA's token: its
three sub-attributes, each required, the entry and exit shardings read by the one sharding
reader, and ``sharding`` the one kind XLA knows.

>>> check_domain('{kind="sharding", entry={maximal device=0}, exit={replicated}}', 1, 1)
>>> check_domain('{kind=, entry={maximal device=0}, exit={replicated}}', 1, 1)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:7: expects string
"""

from __future__ import annotations

from ._sharding_reader import sharding_value
from ._token_cursor import TokenCursor, sub_attributes, value_check


def _domain(c: TokenCursor) -> None:
    """XLA's ``ParseDomain`` at the cursor."""
    found = sub_attributes(c, {"entry": sharding_value, "exit": sharding_value,
                               "kind": TokenCursor.string})
    if found["kind"] != "sharding":
        raise c.error(f"unsupported domain kind: {found['kind']}")


check_domain = value_check(_domain, "a domain's ``domain``")
