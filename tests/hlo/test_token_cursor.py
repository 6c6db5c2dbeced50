"""A token cursor steps through the tokens XLA's lexer gives, one at a time, whatever the
run of tokens it lexes at once: over a module's text from any offset, after a jump, and
after an integer read out of a longer token (``lex_integer_first``)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshtopo.hlo._pure_lexer import next_token
from meshtopo.hlo._token_cursor import TokenCursor
from meshtopo.hlo._tokens import TokKind

K = TokKind


def one_at_a_time(text: str, at: int, count: int) -> list[tuple[int, int, int]]:
    tokens = []
    for _ in range(count):
        kind, start, end, at = next_token(text, at)
        tokens.append((kind, start, end))
    return tokens


def stepped(cursor: TokenCursor, count: int) -> list[tuple[int, int, int]]:
    tokens = []
    for _ in range(count):
        tokens.append((cursor.kind, cursor.start, cursor.end))
        cursor.lex()
    return tokens


def test_a_cursor_over_a_module_reads_its_tokens() -> None:
    text = "HloModule m\n\nENTRY e {\n  p = f32[8]{0} parameter(0)\n" + "".join(
        f'  a{i} = f32[8]{{0}} add(p, p), metadata={{op_name="x/{i}" source_line={i}}}\n'
        for i in range(40)) + "  ROOT r = f32[8]{0} copy(a39)\n}\n"
    for at in (0, 17, 1000):
        assert stepped(TokenCursor(text, 1, 0, at), 300) == one_at_a_time(text, at, 300)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.sampled_from('0123456789-x_.{},=( )"a%/*\n'), max_size=200),
       st.integers(0, 200), st.integers(0, 200))
def test_jumps_and_the_end(text: str, at: int, to: int) -> None:
    at, to = min(at, len(text)), min(to, len(text))
    cursor = TokenCursor(text, 1, 0, at)
    assert stepped(cursor, 80) == one_at_a_time(text, at, 80)  # kEof again past the end
    cursor.jump(to)
    assert cursor.previous_end == to
    assert stepped(cursor, 80) == one_at_a_time(text, to, 80)


def test_an_integer_read_out_of_a_longer_token() -> None:
    cursor = TokenCursor("{2x3, 4}", 1, 0)
    cursor.lex_integer_first()
    assert (cursor.kind, cursor.word) == (K.kInt, "2")
    cursor.lex()  # the rest of '2x3' as XLA's lexer reads it from there
    assert (cursor.kind, cursor.word) == (K.kIdent, "x3")
    assert cursor.look_ahead() == K.kComma
