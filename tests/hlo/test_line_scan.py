"""The compiled scanner of one-line instructions and computation heads, against the forms it
takes written as regexes with the cuts it makes after them (operand names and shapes, explicit
groups, a metadata attribute, called names, parameter shapes)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshtopo import hlo
from meshtopo.hlo._explicit_scan import groups_end
from meshtopo.hlo._line_scan import scan_head, scan_lines
from meshtopo.hlo._operands import _PRINTED_OPERAND, _PRINTED_OPERANDS
from meshtopo.hlo._tokens import DOUBLE_QUOTED

from ._corpus import corpus
from ._fast_paths import errors_both_ways, structure, turn_off
from ._text import entry_head

if TYPE_CHECKING:
    from meshtopo.hlo._line_scan import ScannedLine


def group_items(depth: int) -> str:
    """A regex for the inside of a bracketed group on one line, nested at most ``depth``
    deep, with strings and comments."""
    inner = r'[^{}()\[\]"/\n]++|' + DOUBLE_QUOTED + r"|/\*(?:[^*\n]|\*(?!/))*\*/|/(?![*/])"
    for _ in range(depth):
        item = f"(?:{inner})*+"
        inner = inner + r"|\{" + item + r"\}|\(" + item + r"\)|\[" + item + r"\]"
    return f"(?:{inner})*+"


# The form (see _line_scan.c): groups 1 ROOT, 2 name, 3 shape, 4 opcode, 5 operands, 6 the
# operands when names alone, 7 the attributes, 8 a leading channel id, 9 the attributes after it.
_NAME = r"(?:%[A-Za-z_][A-Za-z0-9_.\-]*|[A-Za-z_][A-Za-z0-9_.\-]*)"
_SHAPE = (r"[a-z][a-z0-9]*\[[^{}()\[\]\"/\n]*\](?:\{" + group_items(3) + r"\})?|\("
          + group_items(3) + r"\)")
FORM = re.compile(
    r"[ \t]*(ROOT[ \t]+)?(" + _NAME + r")[ \t]*=[ \t]*"
    r"(" + _SHAPE + r")[ \t]+([a-z][a-z0-9\-]*)\(((" + _NAME + r"(?:,[ \t]*" + _NAME
    + r")*)(?=\))|" + group_items(3) + r")\)"
    r"((?:,[ \t]*channel_id=[ \t]*([0-9]{1,18})[ \t]*(?=,|[ \t\r]*\n))?([^\n]*+))"
    r"(?=\n[ \t]*+(?:%|\}|[A-SU-Za-z_]|T[A-Za-z0-9_.\-]*+[ \t]*+=))"
)


# At the top of an attribute list: a bracketed group, a string, one character; group 1 a
# comment, or a bracket or quote not closed on the line.
_TOP_ITEM = re.compile(r"\{" + group_items(3) + r"\}|\(" + group_items(3) + r"\)|\["
                       + group_items(3) + r"\]|\"(?:[^\"\\]|\\.)*\"|(/[/*]|[{(\[\"])|.",
                       re.S)
_METADATA = re.compile(r", metadata=(\{" + group_items(3) + r"\})(?=,|$)")
_GROUP = re.compile(r"\{" + group_items(3) + r"\}")
_CALLEE = re.compile(r",[ \t]*(?:calls|to_apply)=[ \t]*(%?[A-Za-z_][A-Za-z0-9_.\-]*)(?=,|$)")


def attribute_cuts(rest: str) -> tuple[str, str | None, tuple[str, ...] | None]:
    """``rest`` without its first metadata attribute and with each name of ``calls=`` and
    ``to_apply=`` written ``%``, outside strings and brackets and before any comment; that
    attribute (or None); those names (None when none; with more than four, none is cut).
    Without those keys, or in a ``rest`` longer than 1,024 characters, a last metadata
    attribute that ends ``rest`` is cut alone."""
    tail, at = None, 0
    names: list[tuple[int, int]] = []  # where each called name is in rest
    cut: tuple[int, int] | None = None
    last = rest.rfind(", metadata={")
    ends = last >= 0 and _GROUP.fullmatch(rest, last + 11) is not None
    if len(rest) > 1024 or ("calls=" not in rest and "to_apply=" not in rest and (
            last < 0 or ends)):  # cut at a last metadata alone, without reading the rest
        return (rest[:last], rest[last:], None) if ends else (rest, None, None)
    while at < len(rest):
        metadata = _METADATA.match(rest, at) if tail is None else None
        if metadata is not None:
            tail, cut, at = metadata.group(), metadata.span(), metadata.end()
            continue
        callee = _CALLEE.match(rest, at)
        if callee is not None:
            if len(names) == 4:
                names = []
                break
            names.append(callee.span(1))
            at = callee.end()
            continue
        if tail is None and rest.startswith(", metadata={", at) and not _GROUP.match(
                rest, at + 11):
            break
        item = _TOP_ITEM.match(rest, at)
        if item is None or item.group(1):
            break
        at = item.end()
    pieces: list[str] = []  # rest's text between the cuts, and '%' for each name
    callees: list[str] = []
    kept = 0
    for start, stop in sorted([*names, *([cut] if cut else [])]):
        pieces.append(rest[kept:start])
        if (start, stop) != cut:
            pieces.append("%")
            callees.append(rest[start:stop].lstrip("%"))
        kept = stop
    return "".join(pieces) + rest[kept:], tail, tuple(callees) or None


def reference(text: str, pos: int) -> ScannedLine | None:
    """What ``scan_lines`` gives for the line at ``pos``, from ``FORM``, the printed form of
    operands with their shapes and Python's string methods."""
    m = FORM.match(text, pos)
    bare = m.group(2).lstrip("%") if m is not None else ""
    if m is None or "\n" in m.group() or m.group(2) == "ROOT" or (
            not m.group(2).startswith("%") and text.startswith("=", m.end(2))) or (
            bare.startswith("__") and not bare.startswith("__xla_")):
        # not one line, a keyword, what XLA's lexer reads as an attribute's name, or a name
        # XLA renames
        return None
    start, (attributes, end) = m.start(2), m.span(7)
    while end > attributes and text[end - 1] in " \t\r":
        end -= 1
    groups = rest = tail = callees = None
    if end > attributes:
        rest_at = min(m.start(9), end)
        if text.startswith(", replica_groups=", rest_at, end):
            at = rest_at + len(", replica_groups=")
            stop = after = groups_end(text, at)
            while 0 < after < end and text[after] in " \t":
                after += 1
            if 0 < stop <= end and (after == end or text[after] == ","):
                groups, rest_at = (at - start, stop - start), after
        rest, tail, callees = attribute_cuts(text[rest_at:end])
    operands, names, shapes = m.group(5), None, ()
    if m.group(6) is not None:
        names = tuple(n.strip(" \t").lstrip("%") for n in m.group(6).split(","))
    elif _PRINTED_OPERANDS.fullmatch(operands):
        printed = list(_PRINTED_OPERAND.finditer(operands))
        names = tuple(p.group(2)[1:] for p in printed)
        if any(p.group(1) for p in printed):
            shapes = tuple(p.group(1) for p in printed)
    printed_names = names and not shapes and operands == "%" + ", %".join(names)
    return (end, m.start(1) - pos + 1 if m.group(1) else -1, start - pos + 1,
            m.group(2).lstrip("%"), m.group(4), m.group(3), None if printed_names else operands,
            names, shapes,
            attributes - start, m.group(8), groups, rest, tail, text[start:end], callees)


def reference_lines(text: str, pos: int, most: int) -> list[ScannedLine]:
    """What ``scan_lines`` gives: each line after a line end while ``reference`` takes it."""
    found: list[ScannedLine] = []
    while len(found) < most and text.startswith("\n", pos):
        line = reference(text, pos + 1)
        if line is None:
            break
        found.append(line)
        pos = line[0]
    return found


SEEDS = [
    "  ROOT %ar.1 = f32[8,128]{1,0} all-reduce(%p, %q), channel_id=12, replica_groups="
    '{{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add, metadata={op_name="x"}\n'
    "  %n = f32[] add()\n",
    "  %t = (f32[2]{0}, s32[]) tuple(f32[2]{0} %a, s32[] %b), sharding={{replicated}, "
    "{maximal device=0}}\n}\n",
    "  x.1 = bf16[4]{0:T(128)} copy(x), channel_id=123456789012345678 \r\n  T.2 = f32[] "
    "constant(0)\n",
    '  %c = s32[] custom-call(), custom_call_target="a\\"b/*c*/", backend_config="{}"\n'
    "  ROOT %d = f32[] parameter(0)\n",
    "  %f = (f32[2]{0}, s32[]) fusion(f32[2]{0} %a, (f32[], s32[4]{0}) %b, %c, /*index=3*/"
    "s32[] %d), kind=kLoop, calls=%g\n  %e = f32[] add(f32[] %x, f32[] %y)\n}\n",
]
PIECES = [*" \t\r\n,={}()[]\"/*%\\_.-0123456789aTRO", "ROOT ", "channel_id=",
          ", replica_groups=", "{{0,1}}", ", metadata={", "é", "中", "😀", "\x00",
          "/*index=5*/", "f32[8]{0} ", "(f32[], s32[2]{0}) ", ", %", ", backend_config=" + "x" * 1000]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str], pieces: list[str]) -> str:
    """One of ``seeds`` with a few of ``pieces`` inserted, deleted or replaced."""
    text = list(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        edit, piece = draw(st.sampled_from("idr")), draw(st.sampled_from(pieces))
        if edit == "i":
            text.insert(at, piece)
        elif at < len(text):
            text[at:at + 1] = [piece] if edit == "r" else []
    return "".join(text)


@given(mutated(SEEDS, PIECES), st.sampled_from([0, 2]), st.booleans(), st.sampled_from([1, 2, 64]))
@settings(max_examples=3000, deadline=None)
def test_scan_lines_is_the_form(text: str, skipped: int, twice: bool, most: int) -> None:
    text = "\n" + text[skipped:]
    first = text.find("\n", 1)
    if twice and first > 0:  # a line repeated: its groups are compared with the line before's
        text = text[:first] + text
    assert scan_lines(text, 0, most) == reference_lines(text, 0, most)


def test_scan_lines_reads_the_line() -> None:
    text = "\n" + SEEDS[0]
    assert scan_lines(text, 0, 1) == [(
        len(text.split("\n")[1]) + 1, 3, 8, "ar.1", "all-reduce", "f32[8,128]{1,0}", None,
        ("p", "q"), (), 42, "12", (74, 87), ", use_global_device_ids=true, to_apply=%",
        ', metadata={op_name="x"}', text[8:text.index("\n", 1)], ("add",))]


@pytest.mark.parametrize("operands", ["%p,%q", "%p,  %q", "p, %q", "%p, q", "f32[] %p, %q"])
def test_operands_not_as_printed_are_kept_as_written(operands: str) -> None:
    # Operands written as XLA prints them are given as None (their names join into them).
    (line,) = scan_lines(f"\n  %n = f32[] add({operands})\n}}", 0, 1)
    assert line[6:8] == (operands, ("p", "q"))


def test_scan_lines_reads_operand_shapes() -> None:
    text = "\n" + SEEDS[4]
    first, second = scan_lines(text, 0, 64)
    assert first[7:9] == (("a", "b", "c", "d"), ("f32[2]{0}", "(f32[], s32[4]{0})", None, "s32[]"))
    assert second[7:9] == (("x", "y"), ("f32[]", "f32[]"))


@pytest.mark.parametrize("text", [
    "  ROOT = f32[] add(%a)\n}\n",  # the keyword, not a name
    "  ROOT\t%r = f32[] add(%a)\n  T(1,0)\n",  # an iota's continuation may follow
    "  %r = f32[] add(%a)",  # no newline: the text may go on
    "  %r = f32[] add({{{{0}}}})\n}\n",  # deeper than the form
    "  %r = f32[] add(%a /* } */\n}\n",  # a comment not closed on the line
    *(f"  %r = f32[{c}] add(%a)\n}}\n" for c in "[({\"/)}"),  # no bracket in dimensions
])
def test_scan_lines_declines(text: str) -> None:
    assert scan_lines("\n" + text, 0, 64) == []


@pytest.mark.parametrize("pos", [-1, 1, 999])
def test_scan_lines_out_of_range(pos: int) -> None:
    assert scan_lines("\n" + SEEDS[0], pos, 64) == []


def test_attributes_after_metadata_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scanner cuts the line at its last metadata; what follows it is still read.
    text = (entry_head("HloModule m, replica_count=2")
            + '  %a = f32[8]{0} copy(%p), metadata={op_name="a" source_line=1}\n'
            '  %b = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply=%add, '
            'metadata={op_name="b"}, control-predecessors={%a}\n'
            "  ROOT %r = f32[8]{0} copy(%b)\n}\n")
    fast = hlo.parse_module(text)
    assert fast.entry.instruction("b").control_predecessors == ("a",)
    turn_off(monkeypatch)
    assert structure(fast) == structure(hlo.parse_module(text))


def test_cut_attributes_read_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    # A metadata attribute before a backend_config, and fusions and reductions that differ
    # only in the computation they call, share a layout; each keeps its own attributes,
    # positions and callees, as the general reader reads them.
    text = (entry_head("HloModule m, replica_count=2")
            + '  %a = f32[8]{0} fusion(%p), kind=kLoop, calls=%add, metadata={op_name="a"}, '
            'backend_config={"k":1}\n'
            '  %b = f32[8]{0} fusion(%a), kind=kLoop, calls=add, metadata={op_name="b"}, '
            'backend_config={"k":1}\n'
            "  %c = f32[8]{0} all-reduce(%b), replica_groups={}, to_apply=%add, "
            'backend_config="calls=%x, metadata={y}"\n'
            "  ROOT %r = f32[8]{0} copy(%c)\n}\n")
    fast = hlo.parse_module(text)
    assert [i.called_computations for i in fast.entry.instructions][1:4] == [
        ("add",), ("add",), ("add",)]
    assert fast.entry.instruction("b").attributes["metadata"] == '{op_name="b"}'
    turn_off(monkeypatch)
    assert structure(fast) == structure(hlo.parse_module(text))


def test_a_name_written_as_the_cut_is_read_by_the_general_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A literal '%' where the scanner writes one for each name it cuts is no name, though
    # the line before wrote the same attribute text with a name cut.
    text = (entry_head("HloModule m, replica_count=2")
            + "  %a = f32[8]{0} fusion(%p), kind=kLoop, calls=%add\n"
            "  %b = f32[8]{0} fusion(%a), kind=kLoop, calls=%\n"
            "  ROOT %r = f32[8]{0} copy(%b)\n}\n")
    fast, general = errors_both_ways(text, monkeypatch)
    assert fast == general


def test_fusions_calling_their_own_computations_share_one_layout() -> None:
    # Each fusion calls its own computation (as every dump writes them), with a metadata
    # attribute before its backend_config: the fast path reads all with one layout, its
    # opcode's checks (the fusion kind) included.
    computations = "".join(
        f"%f.{i} (a: f32[8]) -> f32[8] {{\n  %a = f32[8]{{0}} parameter(0)\n"
        f"  ROOT %n = f32[8]{{0}} negate(%a)\n}}\n\n" for i in range(3))
    fusions = "".join(
        f"  %x.{i} = f32[8]{{0}} fusion(%p), kind=kLoop, calls=%f.{i}, "
        f'metadata={{op_name="f{i}"}}, backend_config={{"k":1}}\n' for i in range(3))
    text = (f"HloModule m\n\n{computations}ENTRY %e (p: f32[8]) -> f32[8] {{\n"
            f"  %p = f32[8]{{0}} parameter(0)\n{fusions}  ROOT %r = f32[8]{{0}} copy(%x.2)\n}}\n")
    entry = hlo.parse_module(text).entry
    shared = {entry.instruction(f"x.{i}").shared_attributes for i in range(3)}
    assert shared == {', kind=kLoop, calls=%, backend_config={"k":1}'}
    assert [entry.instruction(f"x.{i}").called_computations for i in range(3)] == [
        ("f.0",), ("f.1",), ("f.2",)]


# A computation's head in the form (see _line_scan.c): groups 1 ENTRY, 2 name, 3 signature,
# 4 parameters, 5 result; each parameter's shape as the scanner cuts it.
_PARAMETER = r"[A-Za-z_][A-Za-z0-9_.\-]*:[ \t]*([a-z][a-z0-9]*\[[^\]\n]*\](?:\{[^}\n]*\})?)"
HEAD = re.compile(
    r"[ \t\r\n]*(ENTRY[ \t]+)?(" + _NAME + r")[ \t]*(\(((?:" + _PARAMETER.replace("(", "(?:", 1)
    + r"(?:,[ \t]*(?!\))|(?=\))))*)\)[ \t]*->[ \t]*([^\n]*[^ \t\n]))?[ \t]*\{[ \t]*(?=\n)")
HEAD_SEEDS = [
    "\n\nENTRY %main.5 (p: f32[8,128]{1,0}, q.1: s32[]) -> (f32[8,128], s32[]) {\n  %x\n",
    "fused_computation.3 (param_0.1: bf16[4]{0:T(128)}, param_1: pred[]) -> bf16[4]{0} {  \n",
    "\r\n%add (x: f32[], y: f32[]) -> f32[] {\n",
    "region_0.1 {\n",
    "ENTRY e () -> f32[2]{0} {\n",
]
HEAD_PIECES = [*" \t\r\n,:{}()[]-> %_.0aEf", "ENTRY ", ", q: s32[]", "f32[2]{0}", "/*x*/",
               "é", "\x00", "(f32[], s32[])"]


def head_reference(text: str, pos: int) -> tuple[object, ...] | None:
    """What ``scan_head`` gives at ``pos``, from ``HEAD``."""
    m = HEAD.match(text, pos)
    if m is None:
        return None
    if m.group(3) is None:
        return m.end(), m.start(1) if m.group(1) else -1, m.start(2), m.end(2), -1, -1, -1, ()
    return (m.end(), m.start(1) if m.group(1) else -1, m.start(2), m.end(2), m.start(3),
            m.start(5), m.end(5), tuple(re.findall(_PARAMETER, m.group(4))))


@given(mutated(HEAD_SEEDS, HEAD_PIECES), st.sampled_from([0, 1, 2]))
@settings(max_examples=3000, deadline=None)
def test_scan_head_is_the_form(text: str, pos: int) -> None:
    assert scan_head(text, pos) == head_reference(text, pos)


def test_scan_head_reads_the_head() -> None:
    assert scan_head(HEAD_SEEDS[0], 0) == (
        73, 2, 8, 15, 16, 52, 71, ("f32[8,128]{1,0}", "s32[]"))
    assert scan_head("ENTRY {\n", 0) == (7, -1, 0, 5, -1, -1, -1, ())  # ENTRY as the name


@pytest.mark.parametrize("text", [
    "f (p: f32[]) -> f32[] {",  # no newline: the text may go on
    "f (p: f32[],) -> f32[] {\n",  # a trailing comma
    "f ( p: f32[]) -> f32[] {\n",  # white space inside the parentheses
    "f (p: (f32[], s32[])) -> f32[] {\n",  # a tuple parameter
    "f (p: f32[]) -> {\n",  # no result
    "f { {\n",  # a brace after the brace
    "f (p: f32[]) -> f32[] {\r\n",  # a carriage return after the brace
])
def test_scan_head_declines(text: str) -> None:
    assert scan_head(text, 0) is None


@pytest.mark.parametrize("pos", [-1, 999])
def test_scan_head_out_of_range(pos: int) -> None:
    assert scan_head(HEAD_SEEDS[0], pos) is None


def test_scan_head_is_the_form_on_the_corpus() -> None:
    for _, text in corpus():
        for line in re.finditer(r"(?m)^(?=[^ \t\n}])", text):
            assert scan_head(text, line.start()) == head_reference(text, line.start())
