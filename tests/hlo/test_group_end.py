"""A group's end found from tokens lexed at once and matched with numpy is the end the walk
token by token finds, and where the group is wrong both refuse it alike: on random
brackets, strings in either quote, comments and error tokens, short groups and long ones
(past the first run of tokens)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshtopo.hlo._extents import _walk, group_end
from meshtopo.hlo._syntax import MAX_DEPTH, SyntaxFault
from meshtopo.hlo._token_cursor import TokenCursor

_PIECES = st.sampled_from(["{", "}", "(", ")", "[", "]", "{", "}", "1", ",", "a=", '"}"',
                           "'('", "/* ] */", "$", " ", "\n", "f32[8]{0}", '"', "'", "/*"])


def _outcome(find: object) -> tuple[str, int]:
    try:
        return "end", find()  # type: ignore[operator]
    except SyntaxFault as fault:
        return fault.message, fault.offset


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from("{(["), st.lists(_PIECES, min_size=60, max_size=300), st.booleans())
def test_the_same_end_or_refusal(opener: str, pieces: list[str], closed: bool) -> None:
    closer = {"{": "}", "(": ")", "[": "]"}[opener]
    text = opener + "".join(pieces) + (closer * 300 if closed else "")
    assert _outcome(lambda: group_end(text, 0)) == _outcome(
        lambda: _walk(TokenCursor(text, 1, 0), None))


def test_a_long_group_ends_at_its_own_closer() -> None:
    inner = ", ".join("{" + ",".join(map(str, range(i, i + 4))) + "}" for i in range(500))
    text = "x={" + inner + "}, y=1"
    assert group_end(text, 2) == len(text) - len(", y=1")


def test_nested_past_the_limit_is_refused_at_the_bracket_past_it() -> None:
    text = "{" * (MAX_DEPTH + 1) + "}" * (MAX_DEPTH + 1)
    assert _outcome(lambda: group_end(text, 0)) == (
        f"values nested more than {MAX_DEPTH} deep", MAX_DEPTH)


def test_a_bracket_closed_by_another_kind_far_in() -> None:
    text = "{" + "1," * 100 + "(2]" + "}"
    assert _outcome(lambda: group_end(text, 0)) == (
        "'(' is never closed: ']' comes before the ')' it needs", 201)


def test_an_unended_string_far_in() -> None:
    text = "{" + "1," * 100 + '"' + "}"
    assert _outcome(lambda: group_end(text, 0)) == ("unterminated string", 201)
