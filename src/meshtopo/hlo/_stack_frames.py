"""The stack-frame index XLA prints between a module's header and its first computation,
read token by token as XLA's parser reads it, refusing in XLA's words at XLA's token.

Grammar (the section words are keywords of XLA's lexer)::

    frames  := 'FileNames' names 'FunctionNames' names
               'FileLocations' located 'StackFrames' located
    names   := ( INT STRING )*
    located := ( INT '{' [ [','] NAME= INT ]+ '}' )*

A name's missing string is recorded and read on past (XLA reports it if the text is refused
later). A location's fields are ``column``, ``end_column``, ``end_line``, ``file_name_id``,
``function_name_id`` and ``line``, a frame's ``file_location_id`` and ``parent_frame_id``,
each written once; none may be left out.

>>> cursor = TokenCursor('FileNames 1 "a.py" FunctionNames FileLocations StackFrames '
...                      '1 {file_location_id=1}', 1, 1)
>>> read_stack_frames(cursor)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:62: sub-attribute parent_frame_id is expected but not seen
"""

from __future__ import annotations

from ._token_cursor import TokenCursor, sub_attributes
from ._tokens import TokKind

K = TokKind
_LOCATION_FIELDS = ("column", "end_column", "end_line", "file_name_id", "function_name_id",
                    "line")
_FRAME_FIELDS = ("file_location_id", "parent_frame_id")


def read_stack_frames(c: TokenCursor) -> None:
    """Read the index from the cursor's ``FileNames``; the cursor stops on the token after
    it."""
    c.lex()
    _names(c)
    _section(c, K.kw_FunctionNames, "FunctionNames")
    _names(c)
    _section(c, K.kw_FileLocations, "FileLocations")
    _located(c, _LOCATION_FIELDS)
    _section(c, K.kw_StackFrames, "StackFrames")
    _located(c, _FRAME_FIELDS)


def _section(c: TokenCursor, kind: int, word: str) -> None:
    if c.kind != kind:
        raise c.error(f"expects '{word}'")
    c.lex()


def _names(c: TokenCursor) -> None:
    while c.kind == K.kInt:
        c.lex()
        if c.kind == K.kString:
            c.lex()
        else:
            c.record("expects string")


def _located(c: TokenCursor, fields: tuple[str, ...]) -> None:
    while c.kind == K.kInt:
        c.lex()
        sub_attributes(c, dict.fromkeys(fields, TokenCursor.integer))
