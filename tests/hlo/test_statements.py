"""The stream reads by whole statements: a module cut at any token boundary, or handed over
one token a block, streams to what ``parse_module`` reads (the same collectives, or the same
error at the same line and column), and the splitter cuts only where a statement ends."""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterable

import pytest

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo._statements import statement_pieces, statements_end
from meshtopo.hlo._tokenize import tokenize

from ._corpus import corpus
from .test_fuzz import HAND

ADD = "%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n"
THREADED = f"""HloModule threads, replica_count=2, frontend_attributes={{a="b"}}

{ADD}%host (p: f32[4]) -> f32[4] {{
  ROOT %p = f32[4]{{0}} parameter(0) /* a comment, with }} and ( in it */
}}, execution_thread="host"

ENTRY %main (p: f32[4]) -> (f32[4]) {{
  %p = f32[4]{{0}} parameter(0), metadata={{op_name="a
b" source_line=3}}
  %s = ((f32[4]), f32[4], u32[]) call-start(%p), async_execution_thread="host", to_apply=%host
  %d = f32[4]{{0}} call-done(%s)
  %ar = f32[4]{{0}} all-reduce(%d), channel_id=1, replica_groups=[1,2]<=[2,1]
     T(1,0), to_apply=%add, use_global_device_ids=true
  ROOT %t = (f32[4]) tuple(f32[4] negate(%ar))
}}
"""
HEADERLESS = f"""{ADD.replace(" (x: f32[], y: f32[]) -> f32[]", "")}ENTRY %e (a: f32[2]) -> f32[2] {{
  %a = f32[2] parameter(0)
  %r = f32[2] reduce-scatter(%a), replica_groups={{{{0}}}}, dimensions={{0}}, to_apply=%add
  ROOT %c = f32[2] copy(%r)
}}
"""
SINGLE = "%r = f32[8] all-reduce(f32[8] %p), replica_groups={{0,1}}, to_apply=%add"
LATE_ERROR = HEADERLESS.replace("ROOT %c = f32[2] copy(%r)", "ROOT %c = f32[2] copy(%q)")
UNCLOSED_STRING = HEADERLESS.replace("dimensions={0}", 'dimensions={0}, x="never closed')
UNKNOWN = HEADERLESS.replace("copy(%r)", "kopy(%r)")
NO_PARENS = HEADERLESS.replace("ROOT %c = f32[2] copy(%r)", "%z = f32[2] add\n  ROOT %c = f32[2] copy(%r)")
UNCLOSED = HEADERLESS.rstrip().removesuffix("}")
MODULES = {
    "hand": HAND, "threaded": THREADED, "headerless": HEADERLESS, "single": SINGLE,
    "late_error": LATE_ERROR, "unclosed_string": UNCLOSED_STRING, "unknown_opcode": UNKNOWN,
    "no_parens": NO_PARENS, "unclosed": UNCLOSED,
}


class Blocks(io.TextIOBase):
    """A text file that hands over the given blocks, one a read."""

    def __init__(self, blocks: Iterable[str]) -> None:
        self._blocks = iter(blocks)

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        return next(self._blocks, "")


def read_whole(text: str) -> object:
    try:
        return [(c.name, c.line, c.column, c.groups_text, c.channel_id)
                for c in hlo.parse_module(text).collectives]
    except mt.HloParseError as error:
        return error.message, error.line, error.column


def read_streamed(blocks: Iterable[str]) -> object:
    try:
        return [(c.name, c.line, c.column, c.groups_text, c.channel_id)
                for c in hlo.iter_collectives(Blocks(blocks), progress=False)]
    except mt.HloParseError as error:
        return error.message, error.line, error.column


def token_boundaries(text: str) -> list[int]:
    tokens = tokenize(text)
    return sorted({0, len(text), *tokens.starts.tolist(), *tokens.ends.tolist()})


@pytest.mark.parametrize("name", list(MODULES))
def test_a_cut_at_any_token_boundary_streams_as_the_whole_text(name: str) -> None:
    text = MODULES[name]
    whole = read_whole(text)
    for cut in token_boundaries(text):
        assert read_streamed([part for part in (text[:cut], text[cut:]) if part]) == whole, cut


@pytest.mark.parametrize("name", list(MODULES))
def test_one_token_a_block_streams_as_the_whole_text(name: str) -> None:
    text = MODULES[name]
    cuts = token_boundaries(text)
    blocks = [text[a:b] for a, b in itertools.pairwise(cuts)]
    assert read_streamed(blocks) == read_whole(text)
    assert "".join(statement_pieces(blocks)) == text


@pytest.mark.parametrize("shard", range(8))
def test_xla_test_modules_stream_in_small_blocks_as_whole(shard: int) -> None:
    # Every eighth module of XLA's own tests (from the shard on), handed over 7 characters
    # a block: the same collectives, or the same error where the same.
    for _, text in corpus()[shard::8]:
        if len(text) <= 200_000:
            blocks = [text[at:at + 7] for at in range(0, len(text), 7)]
            assert read_streamed(blocks) == read_whole(text), text[:200]


@pytest.mark.parametrize("name", ["hand", "threaded", "headerless"])
def test_pieces_end_where_statements_end(name: str) -> None:
    # Every piece of a module handed over one character a block ends before a statement's
    # first token: ENTRY, a name, ROOT or a computation's closing brace (never one of an
    # attribute's, nor its execution_thread).
    text = MODULES[name]
    ends = []
    at = 0
    for piece in list(statement_pieces(text))[:-1]:
        at += len(piece)
        ends.append(at)
    assert len(ends) > 4
    for end in ends:
        rest = text[end:]
        assert rest.startswith(("ENTRY", "%", "ROOT", "}")), rest[:20]
        assert text[end - 1].isspace()


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("ENTRY e {\n  p = f32[] parameter(0)\n  q = f32[] negate(p)\n",
                 "ENTRY e {\n  p = f32[] parameter(0)\n  ", id="two tokens after the next name"),
    pytest.param("ENTRY e {\n  p = f32[] parameter(0), metadata={op_name=\"x\n  q = f32[] negate(p)\n",
                 "ENTRY e {\n  ", id="a cut string hides what follows"),
    pytest.param("ENTRY e {\n  p = f32[] parameter(0) /* q = f32[] negate(p)\n  r = s\n",
                 "ENTRY e {\n  ", id="a cut comment hides what follows"),
    pytest.param("ENTRY e {\n  a = s32[] iota(), replica_groups=[2]<=[2]\n  T(0) b = f32[] x\n",
                 "ENTRY e {\n  a = s32[] iota(), replica_groups=[2]<=[2]\n  T(0) ",
                 id="an iota continued on the next line"),
    pytest.param("ENTRY e {\n  a = f32[] b\n  c = f32[] d\n  f = g\n",
                 "ENTRY e {\n  ", id="no operand list: not an instruction's end"),
    pytest.param("c {\n  ROOT a = f32[] p(0)\n}, execution_thread=\"h\"\nENTRY e {\n",
                 "c {\n  ROOT a = f32[] p(0)\n}, execution_thread=\"h\"\n", id="after the thread"),
    pytest.param("HloModule m, entry_computation_layout={(f32[])->f32[]}\nENTRY e {\n",
                 "HloModule m, entry_computation_layout={(f32[])->f32[]}\n", id="the header"),
    pytest.param("x = f32[] add(a, b)\ny = f32[] add(a, b)\n", "", id="one instruction"),
    pytest.param("ENTRY e {\n  a = f32[] b(), x={'a(b'}\n  c = f32[] d()\n  e = f32[] f()\n",
                 "ENTRY e {\n  a = f32[] b(), x={'a(b'}\n  c = f32[] d()\n  ",
                 id="a single-quoted string holding a bracket"),
    pytest.param("ENTRY e {\n  a = f32[] b(), x={'ab'}\n  c = f32[] d()\n  e = f32[] f()\n",
                 "ENTRY e {\n  a = f32[] b(), x={'ab'}\n  c = f32[] d()\n  ",
                 id="a single-quoted name"),
])
def test_statements_end(text: str, expected: str) -> None:
    end, _ = statements_end(text)
    assert text[:end] == expected


_QUOTED = """HloModule m, replica_count=2

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y), metadata={op_name='a}(b' source_file="f'{"}
}

ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %a = f32[4] all-reduce(%p), replica_groups={{0,1}}, to_apply=%add, frontend_attributes={k='}{)'}
  %b = f32[4] all-reduce(%a), replica_groups={{1,0}}, to_apply=%add, metadata={op_name='/* x'}
  ROOT %c = f32[4] all-reduce(%b), replica_groups={{0},{1}}, to_apply=%add, backend_config='{"a": "}"}'
}
"""


def test_single_quoted_strings_stream_as_they_read_whole() -> None:
    """Strings in either quote holding brackets, quotes and comment openers are cut nowhere
    inside: streamed in blocks of every size, the module gives the collectives it gives
    read whole."""
    whole = [(c.name, str(c.replica_groups)) for c in hlo.parse_module(_QUOTED).collectives]
    assert [name for name, _ in whole] == ["a", "b", "c"]
    for size in range(1, len(_QUOTED) // 4):
        streamed = hlo.iter_collectives(io.StringIO(_QUOTED), progress=False, block_size=size)
        assert [(c.name, str(c.replica_groups)) for c in streamed] == whole, size
