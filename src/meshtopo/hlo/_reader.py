"""The HLO reader: text to header, computations and instructions, by XLA's grammar.

Grammar (``xla/hlo/parser/hlo_parser.cc``; white space and comments between any two tokens)::

    module       := [ 'HloModule' name ( ',' key '=' value )* ] computation+
    computation  := [ 'ENTRY' ] name [ signature ] '{' instruction* '}'
                    [ ',' 'execution_thread' '=' string ]
    instruction  := [ 'ROOT' ] name '=' [ shape ] opcode '(' operands ')' ( ',' key '=' value )*
    operands     := [ operand ( ',' operand )* ]
    operand      := [ shape ] name | [ shape ] opcode '(' operands ')'

An instruction may leave out its shape where XLA infers it (``_opcodes.SHAPE_REQUIRED`` lists
the opcodes that must write theirs; ``_infer`` gives the inferred shape). An operand written as
an instruction (without attributes) is one, named ``<opcode>.anon`` as XLA names it, read
before the instruction that uses it.

An instruction ends after its last value when the next token is no ``,``; where a value
ends, its kind's reader says (``attribute_value_end``): that rule alone decides where an
instruction ends, whatever the line breaks. Operands and called computations must be defined
before they are used, names are unique in a computation, and a computation has one ROOT (its
last instruction when none is marked), as XLA's parser requires.

The fast path reads runs of instructions written one a line as XLA prints them: the C scanner
(``_line_scan.scan_lines``) cuts each line into its texts (name, shape, opcode, operands,
leading explicit groups, its metadata attribute, the names of ``calls=`` and ``to_apply=``,
the attribute list left with those names written ``%``) and ``_lines`` decides the rest: the
attribute list left is read once per distinct text and opcode by the general reader's own
reader of an attribute list (``read_attributes``), and shapes, names and XLA's checks between
instructions are checked as the general reader checks them. It takes a line only when the next line
starts another statement (a name or ``}``, which no value continues) and those checks pass,
and otherwise declines to the general reader, so it decides only how quickly an instruction
is read. A computation's head on one line as XLA prints it is scanned the same way
(``_line_scan.scan_head``); it is taken when each parameter's shape is an array as XLA
prints it and XLA takes the result shape, and the general reader reads any other.

The text is read whole (``parse_module``) or in pieces (the stream) that each end where a
top-level statement ends (``_statements``): the reader takes the next piece only between
statements, so the grammar never meets a statement cut short, and the end of the text it has
is the end of whatever it is reading. ``MESHTOPO_HLO_FAST_PATHS=0`` in the environment when a
read starts turns the fast paths off (the general reader reads every line), to compare.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Final, NamedTuple, TypeVar, cast

from .._errors import HloParseError
from ._allowed import allowed_attributes, conditional_required, unexpected_attribute
from ._bool_lists import parameter_replication
from ._collective import CHANNEL_OPCODES
from ._computation_layout import computation_layout_end
from ._extents import group_end, value_end
from ._frontend_attributes import frontend_attributes_end
from ._infer import InferenceError, ProgramShape, infer_shape
from ._instruction_checks import (
    CHECKED_OPCODES,
    checked_after,
    instruction_error,
    reads_attributes,
)
from ._int_lists import parse_int_list
from ._literal import read_literal
from ._metadata import check_metadata, printed_metadata
from ._name_lists import COMPUTATION_LIST_ATTRIBUTES, names_in
from ._name_set import NameSet
from ._native import scan_head, scan_lines
from ._opcodes import (
    ASYNC_KINDS,
    OPCODES,
    OPERAND_COUNTS,
    REQUIRED_ATTRIBUTES,
    SHAPE_REQUIRED,
    async_form,
    required_attributes,
)
from ._operands import NOT_AN_OPERAND, can_be_shape, name_at, operand_shape, split_operands
from ._original_value import check_recovery_table
from ._pure_lexer import next_token
from ._shape import ELEMENT_BITS
from ._shape_syntax import PRINTED_ARRAY, parse_shape, read_shape, shape_error
from ._stack_frames import read_stack_frames
from ._structure import CALL_ATTRIBUTES, Attribute, Computation, Instruction
from ._syntax import (
    MAX_DEPTH,
    NAME,
    SKIP,
    SyntaxFault,
    leading_channel,
    skip,
)
from ._token_cursor import TokenCursor, UnparsedAttribute
from ._token_values import int_value
from ._tokenize import json_dict_end
from ._tokens import KEYWORDS as KEYWORDS_OF_LEXER
from ._tokens import PRIMITIVE_TYPES, STRING, TokKind
from ._value_checks import (
    HEADER_CHECKS,
    OPCODE_VALUE_CHECKS,
    VALUE_CHECKS,
    Check,
    value_check,
)
from ._value_starts import device_list_end
from ._values import parse_int, unquote

_LITERAL_OPCODES: Final = frozenset({"constant", "parameter"})
_LITERAL_WINDOW: Final = 1 << 16  # how far a constant without its ')' is read for XLA's stop
_OPENERS: Final = frozenset({TokKind.kLparen, TokKind.kLsquare, TokKind.kLbrace})
_CLOSERS: Final = frozenset({TokKind.kRparen, TokKind.kRsquare, TokKind.kRbrace})
# An attribute value that is a computation written inline (or a list of them): a brace and,
# before any ',' or '}', a name and '=' (an instruction), or a second brace.
_INLINE: Final = re.compile(
    r"\{" + SKIP.pattern + r"(?:\{|(?:ROOT(?![A-Za-z0-9_.\-])" + SKIP.pattern
    + r")?(?:%[A-Za-z_][A-Za-z0-9_.\-]*|[A-Za-z_][A-Za-z0-9_.\-]*:?)" + SKIP.pattern + "=)")
# XLA's words for an operand that is neither a defined name nor an instruction it reads.
# Words XLA's lexer reads as keywords: no name unless written with '%'.
KEYWORDS: Final = frozenset(KEYWORDS_OF_LEXER) | {"nan"}  # nan is a decimal's token
# The module header's attributes XLA's parser takes.
HEADER_ATTRIBUTES: Final = (
    "alias_passthrough_params", "allow_spmd_sharding_propagation_to_output",
    "allow_spmd_sharding_propagation_to_parameters", "buffer_donor", "entry_computation_layout",
    "frontend_attributes", "input_output_alias", "is_scheduled", "num_partitions",
    "origin_recovery_table", "replica_count",
)
# Words XLA's lexer reads as keywords or types, so never as a name without '%'.
_RESERVED: Final = KEYWORDS | PRIMITIVE_TYPES
_STRING: Final = re.compile(STRING)
# The start of a literal's value after its shape (``literal=f32[] 0.1``; an array's braces
# after a layout are taken with the shape, as a continuation).
_LITERAL_VALUE: Final = re.compile(r"[-+.0-9(]|(?:true|false|nan|inf)(?![A-Za-z0-9_.\-])")
# A parameter's shape in a head the fast path reads: an array shape XLA takes, as XLA prints
# it (others are read by the one reader of a parameter list).
_PRINTED_PARAMETER_SHAPE: Final = re.compile(PRINTED_ARRAY)
_LAYOUTS_KEPT: Final = 4096
# Metadata attributes the fast path remembers as taken (a dump repeats each).
_METADATA_KEPT: Final = 8192
_SHAPES_KEPT: Final = 4096  # shape texts the fast path keeps, each once (a dump repeats a few)
# The most instructions the fast path reads at once (a stream holds them until yielded).
_RUN: Final = 64
# Parameter numbers as XLA prints them, the most a computation of a dump has (the fast
# path's; the general reader takes every other).
_PRINTED_NUMBERS: Final = {str(number): number for number in range(4096)}
# Operand names and their inline shapes (empty when none is written).
_Operands = tuple[tuple[str, ...], tuple[str | None, ...]]
# The arguments of an instruction the fast path read that no check made when read needs: it
# is made once its computation is kept (``read_into``) or, a root, once asked for
# (``Reader.root``); never when its computation is read again on use.
_Unmade = tuple[str, str, str, tuple[str, ...] | None, int, int, str, bool, str | None, str,
                "_Layout", tuple[str, ...], tuple[str, ...], tuple[str | None, ...], int,
                str | None, tuple[int, int] | None, str | None]
# A computation's parameter as its checks and program shape need it: name, shape text, and
# the line and column of its name.
_Parameter = tuple[str, str, int, int]


class _Layout:
    """What one-line attribute lists with the same ``shared`` text share (the attributes
    after a leading channel id and explicit groups, without their metadata attribute;
    in an open layout, the names of ``calls=`` and ``to_apply=`` written ``%``, each line's
    own): that the text is an attribute list, the computations it calls (in an open layout,
    none but each line's own), control predecessors and whether it has a metadata
    attribute. Calling it with an instruction read by the fast path gives that
    instruction's attributes with their positions: those of ``shared`` from ``spans`` (each
    attribute's key, value and the value's offset in ``shared``; None in an open layout,
    whose lines differ there), any other (a metadata attribute) split from the instruction's
    own text. ``opened`` counts the names an open layout writes ``%``; ``values`` holds each
    attribute's value text by key (the leading channel id and explicit groups, read apart:
    empty), ``keys`` the keys."""

    __slots__ = ("accepted", "called", "controls", "has_metadata", "keys", "opened", "shared",
                 "spans", "values")

    def __init__(self, called: tuple[str, ...], controls: tuple[str, ...], shared: str,
                 values: dict[str, str], spans: tuple[tuple[str, str, int], ...] | None = None,
                 opened: int = 0) -> None:
        self.called, self.controls, self.shared, self.values = called, controls, shared, values
        self.keys = frozenset(values)
        self.spans, self.opened = spans, opened
        self.has_metadata = "metadata" in values
        self.accepted: set[str] = set()  # opcodes XLA allows these attributes on

    def allows(self, opcode: str) -> bool:
        """True when XLA allows an ``opcode`` instruction these attributes (and they hold
        those it requires)."""
        if opcode in self.accepted:
            return True
        if not self.keys <= allowed_attributes(opcode, self.keys) or not set(
                REQUIRED_ATTRIBUTES.get(opcode, ())) <= self.keys:
            return False
        for key, value in self.values.items():  # a value read by a grammar of the opcode's
            if (check := OPCODE_VALUE_CHECKS.get((opcode, key))) is not None:
                try:
                    if check(value, 1, 1) is not None:
                        return False
                except (HloParseError, SyntaxFault):
                    return False
        self.accepted.add(opcode)
        return True

    def __call__(self, instruction: Instruction) -> list[Attribute]:
        line = instruction.line
        text = instruction.attribute_text
        start = instruction.column + len(instruction.text) - len(text)  # of the list
        channel, at, after = leading_channel(text)
        found = [] if channel is None else [Attribute("channel_id", channel, line, start + at)]
        rest = start + len(text) - len(after)  # where the text after the channel id starts
        shared_at = 0
        groups = instruction.explicit_groups
        if groups is not None:
            at = after.index("{")
            found.append(Attribute("replica_groups", groups, line, rest + at))
            shared_at = len(after) - len(after[at + len(groups):].lstrip(" \t"))
        spans, shared = self.spans, self.shared
        if spans is not None and after.startswith(shared, shared_at):
            at = rest + shared_at
            found += [Attribute(key, value, line, at + start) for key, value, start in spans]
            shared_at += len(shared)
        found += [Attribute(key, after[value_start:value_end], line, rest + value_start)
                  for key, value_start, value_end in read_attributes(after, shared_at)[0]]
        return found


class _Shared:
    """What the readers of one module share (a computation written inline is read by a
    reader of its own): operands' definitions (``Reader``'s ``definition``), each
    computation's result shape and root, the computations async starts call, the
    computations written inline not yet taken and how many were named, the caller's
    ``visit`` and ``opcodes``, and the state of a text that is one instruction (kept apart
    from ``Reader``'s own attributes, which stay few enough for Python to share their
    layout)."""

    __slots__ = ("after_reading", "async_called", "definition", "inline", "inline_count",
                 "made_whole", "missing", "opcodes", "programs", "read_module", "recorded",
                 "roots", "shapes_read", "single_state", "visit")

    def __init__(self, definition: Callable[[Computation, str], str | None] | None,
                 read_module: Callable[[str], object] | None) -> None:
        self.definition = definition
        self.read_module = read_module  # reads a module text the header holds
        # Each computation's parameters (by number) and result shape once read, made its
        # program shape on first use (``program``): few are ever asked for.
        self.programs: dict[str, ProgramShape | tuple[dict[int, _Parameter], str]] = {}
        # Each computation's root once read (a whole text), made on first use (``root``).
        self.roots: dict[str, Instruction | _Unmade] = {}
        # The shape text of each name read in a computation read again on use whose
        # instructions were visited (its visited ones' operands are looked up there).
        self.shapes_read: dict[str, dict[str, str]] = {}
        self.async_called: set[str] = set()
        self.inline: list[Computation] = []
        self.inline_count = 0  # names given: _, _.1, ...
        self.visit: Callable[[Instruction], None] | None = None
        self.opcodes: frozenset[str] = frozenset()
        self.single_state = 0  # 1: the computation given, 2: the instruction read
        self.missing = 0  # parameters made for operands not defined
        # The first error XLA's parser records and reads on past (``Reader.reported``).
        self.recorded: HloParseError | None = None
        # The first error of XLA's checks of the whole module, once every statement is read.
        self.after_reading: HloParseError | None = None
        # Where the operand written as an instruction being read ends, once it is read to its
        # ')' (XLA's reader then stands there whatever it refuses; None before).
        self.made_whole: int | None = None

    def take_made_whole(self) -> int | None:
        """``made_whole``, reset to None."""
        found, self.made_whole = self.made_whole, None
        return found

    def program(self, name: str) -> ProgramShape | None:
        """The program shape of computation ``name``, None when it is not read yet."""
        found = self.programs.get(name)
        if found is None or isinstance(found, ProgramShape):
            return found
        parameters, result = found
        program = self.programs[name] = ProgramShape(
            tuple((p[0], p[1]) for _, p in sorted(parameters.items())), result)
        return program


class HeaderRecord:
    """The ``HloModule name, key=value, ...`` line as written (None values: no header)."""

    def __init__(self, name: str | None, attributes: list[Attribute], line: int,
                 frames: str = "") -> None:
        self.name = name
        self.attributes = attributes
        self.line = line
        self.frames = frames  # the stack-frame tables after the header line, as written


class Reader:
    """Reads one module's text: ``header()`` once, then ``computation_head()`` and
    ``instruction_runs()`` (or ``read_into``, which keeps them) for each computation until
    ``computation_head()`` returns None. ``pieces`` (streaming) gives the text after
    ``text``, each piece ending where a top-level statement ends
    (``_statements.statement_pieces``); without it ``text`` is the whole text. A streaming
    reader keeps the names of a computation's instructions in bounded memory (``NameSet``),
    and its ``definition(computation, name)`` is the shape
    text of an instruction read before in ``computation`` (a reader of a whole text keeps
    each itself), for the shapes XLA infers. ``read_module`` reads the module texts a
    header's ``origin_recovery_table`` holds (an ``HloParseError`` where XLA refuses one);
    without it they are not read."""

    def __init__(
        self,
        text: str,
        source: str | None = None,
        pieces: Iterator[str] | None = None,
        definition: Callable[[Computation, str], str | None] | None = None,
        read_module: Callable[[str], object] | None = None,
    ) -> None:
        self.text = text
        self._shared = _Shared(definition, read_module)
        self.source = source
        self._pieces = pieces
        self._bounded = pieces is not None
        self._fast = fast_paths()
        self.pos = 0
        self.line = 1  # the line of ``self.pos``
        self._carried = 0  # characters of the line the text starts in, read and dropped
        self.computation_names: set[str] = set()
        # The text is one instruction (XLA's single-instruction module: one computation,
        # named _, whose operands written with a shape and no definition are parameters).
        self.single = False
        self._entry_seen = False
        self._name_at = (1, 1)  # where the name of the computation being read is written
        # The result shape written in its signature (None when it has none), and where.
        self._result: str | None = None
        self._result_where: tuple[int, int] | None = None
        self._head_at = (1, 1)  # where the computation being read starts (ENTRY, if written)
        # (opcode, has channel, has groups, attribute text as scanned) -> its layout
        # (``_layout_of``).
        self._layouts: dict[tuple[str, bool, bool, str], _Layout] = {}
        self._metadata_seen: set[str] = set()
        self._shapes: dict[str, str] = {}  # each shape text the fast path read, kept once
        # Each parameter shape of a head the fast path scanned: whether XLA prints it so.
        self._parameter_shapes: dict[str, bool] = {}
        # (signature's result, root's shape) -> whether XLA finds them compatible.
        self._compatible: dict[tuple[str, str], bool] = {}
        # For the computation just read: the offset and line its instructions start at,
        # when the fast path read every one (so ``_LinesAgain`` can read them again on first
        # use), else None.
        self._again_at: tuple[int, int] | None = None
        self._lines_again: _LinesAgain | None = None  # what reads them (one for the module)
        # The opcodes last visited, and those the fast path checks when it reads them.
        self._visited: frozenset[str] | None = None
        self._checked_opcodes: frozenset[str] = frozenset()

    # ---- positions, errors and more text -------------------------------------------------

    def _advance(self, pos: int) -> None:
        """Move to ``pos`` (at or after the current position), counting lines."""
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of ``offset`` (at or after the current position)."""
        text = self.text
        offset = min(offset, len(text))
        line = self.line + text.count("\n", self.pos, offset)
        newline = text.rfind("\n", 0, offset)
        return line, offset - newline if newline >= 0 else self._carried + offset + 1

    def error(self, message: str, offset: int) -> HloParseError:
        """An ``HloParseError`` at ``offset``."""
        line, column = self.position(offset)
        return HloParseError(message, line, column, self.source)

    def reported(self, error: HloParseError) -> HloParseError:
        """The error XLA reports when the text is refused with ``error``: the first one its
        parser recorded without stopping (an operand it reads neither as a name nor as an
        instruction), if any, else ``error``."""
        return self._shared.recorded or error

    def _fill(self) -> None:
        """Between statements: when no token is left, append the next piece (dropping what
        has been read), until one is or the pieces end."""
        while self._pieces is not None and SKIP.match(  # type: ignore[union-attr]
                self.text, self.pos).end() >= len(self.text):
            newline = self.text.rfind("\n", 0, self.pos)
            self._carried = self.pos - newline - 1 if newline >= 0 else self._carried + self.pos
            self.text = self.text[self.pos:]  # what has been read is let go first
            self.pos = 0
            piece = next(self._pieces, None)
            if piece is None:
                self._pieces = None
                return
            self.text += piece

    def _step(self, read: Callable[[int], tuple[object, int]]) -> object:
        """Run one grammar step at the current position; a fault becomes an
        ``HloParseError`` with line and column."""
        try:
            found, end = read(self.pos)
        except SyntaxFault as fault:
            raise self.error(fault.message, fault.offset) from None
        self._advance(end)
        return found

    def _expect(self, char: str, pos: int, what: str) -> int:
        pos = skip(self.text, pos)
        if not self.text.startswith(char, pos):
            raise SyntaxFault(f"expects '{char}' {what}", pos)
        return pos + 1

    # ---- module and computations ---------------------------------------------------------

    def header(self) -> HeaderRecord:
        """The module header, or a record with ``name`` None when the text has none."""
        self._fill()
        return self._step(self._header)  # type: ignore[return-value]

    def _header(self, pos: int) -> tuple[HeaderRecord, int]:
        text = self.text
        pos = skip(text, pos)
        line, _ = self.position(pos)
        at = _past_keyword(text, pos, TokKind.kw_HloModule)
        if at is None:
            self._headerless(pos)
            return HeaderRecord(None, [], line), pos
        # The name is one token, an identifier or a name (``%m``, ``m:``), whatever is
        # written against it (XLA's ParseName).
        kind, _, end, _ = next_token(text, at)
        if at >= len(text) or kind not in (TokKind.kIdent, TokKind.kName):
            raise SyntaxFault("expects name", at)
        name = text[at:end].lstrip("%").removesuffix(":")
        try:
            written, end = read_attributes(text, end)
        except AttributesCut as cut:  # XLA judges the attributes before the cut first
            self._judged_header(cut.found)
            raise
        self._judged_header(written)
        attributes = [Attribute(k, text[s:e], *self.position(s)) for k, s, e in written]
        frames_end = self._stack_frames(end)
        frames = text[end:frames_end].strip("\n\r")
        return HeaderRecord(name, attributes, line, frames), frames_end

    def _judged_header(self, found: list[tuple[str, int, int]]) -> None:
        """XLA's judgement of the module header's attributes (key, value start and end in
        the text), each in turn: one the header does not take or takes once, and its value
        by its reader."""
        seen: set[str] = set()
        for key, start, stop in found:
            if key not in HEADER_ATTRIBUTES or key in seen:
                message = (f"attribute {key} already exists" if key in seen else
                           f'unexpected attribute "{key}". Allowed attributes: '
                           + ", ".join(HEADER_ATTRIBUTES))
                raise self.error(message, _key_at(self.text, key, start))
            seen.add(key)
            if (check := self._header_check(key)) is not None and (recorded := self._checked(
                    check, self.text[start:stop], *self.position(start),
                    _key_at(self.text, key, start))) is not None:
                self._record(recorded)

    def _header_check(self, key: str) -> Check | None:
        """The check of header attribute ``key``'s value (the modules of a recovery table
        are read by the module reader given, if any)."""
        if key == "origin_recovery_table" and self._shared.read_module is not None:
            return check_recovery_table(self._shared.read_module)
        return HEADER_CHECKS.get(key)

    def _headerless(self, pos: int) -> None:
        """XLA reads a text without the header line as a module when its first token is
        ENTRY or its second is '{', else as one instruction (``single``). A text without
        tokens is read as a module, which says it has no computation where XLA stops."""
        text = self.text
        kind, _, end, _ = next_token(text, pos)
        if kind not in (TokKind.kw_ENTRY, TokKind.kEof) and (
                next_token(text, end)[0] != TokKind.kLbrace):
            self.single = True
            self._shared.inline_count = 1  # the module and its computation are named _

    def _stack_frames(self, pos: int) -> int:
        """Past the stack-frame index XLA prints after the header, if one starts at ``pos``
        (``read_stack_frames``; what XLA records in it, recorded)."""
        cursor = TokenCursor(self.text, 1, 0, pos)
        if cursor.kind != TokKind.kw_FileNames:
            return pos
        try:
            read_stack_frames(cursor)
        except HloParseError as error:
            raise SyntaxFault(error.message, error.column) from None
        if cursor.recorded is not None:
            self._record(self.error(cursor.recorded.message, cursor.recorded.column))
        return cursor.previous_end

    def computation_head(self) -> Computation | None:
        """The next computation's header (no instructions yet), or None at the end."""
        if self.single:
            if self._shared.single_state:
                return None
            self._shared.single_state = 1
            self._begin()
            return Computation("_", True, self.line, "")
        self._fill()
        computation = self._printed_head() if self._fast else None
        if computation is None:
            computation = self._step(self._computation_head)  # type: ignore[assignment]
        if computation is None and self._shared.after_reading is not None:
            raise self._shared.after_reading
        self._begin()
        return computation

    def root(self, name: str) -> Instruction | None:
        """The root of computation ``name`` as it was read (None when none of that name was):
        one read again on use is not read again for it."""
        roots = self._shared.roots
        found = roots.get(name)
        if isinstance(found, tuple):
            found = roots[name] = Instruction(*found)
        return found

    def shapes_read(self, name: str) -> Mapping[str, str] | None:
        """The shape text of each instruction of computation ``name`` by name, as read,
        when it is read again on use and some of its instructions were visited (None
        otherwise: look them up in the computation)."""
        return self._shared.shapes_read.get(name)

    def _begin(self) -> None:
        """Start reading a computation's instructions."""
        self._names: set[str] | NameSet = NameSet() if self._bounded else set()
        # The shape text of each name read (a whole text only): what an operand written with
        # its shape is compared with first (``_same_as_defined``).
        self._shape_of: dict[str, str] | None = None if self._bounded else {}
        self._parameters: dict[int, _Parameter] = {}
        # async starts and updates -> what their updates and dones continue
        self._async_ops: dict[str, _AsyncStart] = {}
        # The channel_id of each of XLA's channel instructions read, by name (None: none).
        self._channels: dict[str, int | None] = {}
        self._nested: list[Instruction] = []  # operands written as instructions, in order
        # What each line the fast path read calls (a whole text's: a stream's computation
        # is never read again on use, and its lines are not kept).
        self._calls: list[tuple[str, ...]] | None = None if self._bounded else []
        self._depth = 0  # how deep in them the reader is
        # The ROOT and the last instruction read (left unmade where the fast path left them).
        self._root: Instruction | _Unmade | None = None
        self._last: Instruction | _Unmade | None = None
        self._root_at: tuple[int, int] | None = None

    def instruction_runs(
        self, computation: Computation, visit: Callable[[Instruction], None] | None = None,
        opcodes: frozenset[str] = frozenset(),
    ) -> Iterator[list[Instruction]]:
        """The instructions of ``computation`` in text order, a run at a time, each checked
        against those before it and passed to ``visit`` when its opcode is in ``opcodes``
        (once made, before its name is judged, as XLA decodes it), until its closing brace
        is read; then the computation's root is set.
        Runs of instructions written one a line are read by the fast path (``_lines``);
        every other instruction by the general reader, with the operands written as
        instructions in it before it."""
        return cast("Iterator[list[Instruction]]", self._runs(computation, visit, opcodes))

    def _runs(
        self, computation: Computation, visit: Callable[[Instruction], None] | None,
        opcodes: frozenset[str], unmade: bool = False,
    ) -> Iterator[list[Instruction | _Unmade]]:
        """``instruction_runs``; with ``unmade``, the fast path leaves the instructions no
        check needs unmade (``_lines``)."""
        self._shared.visit, self._shared.opcodes = visit, opcodes  # for every right side
        if opcodes is not self._visited:  # the opcodes a run's lines are checked for
            self._visited, self._checked_opcodes = opcodes, _checked_when_read(opcodes)
        checked = self._checked_opcodes
        body = (self.pos, self.line)
        by_lines = not self.single and not self._bounded  # every line the fast path's
        self._again_at = None
        while True:
            self._fill()
            run = (self.pos, self.line)  # where the fast path's run starts
            read, plain = ([], True) if self.single else self._lines(computation, checked,
                                                                       unmade)
            if not plain:  # a line of the run is checked or visited
                for instruction in read:
                    if isinstance(instruction, tuple):
                        continue  # (none that is checked is left unmade)
                    if instruction.inline_shapes and not self._same_as_defined(instruction,
                                                                                computation):
                        self._check_operand_shapes(
                            (instruction.operands, instruction.inline_shapes), computation,
                            functools.partial(_operand_position, instruction))
                    if instruction.opcode == "constant":
                        self._check_literal(instruction)
                    elif instruction.opcode in CHECKED_OPCODES:
                        self._check_after(instruction, computation, run)
                    if instruction.opcode in CHANNEL_OPCODES:
                        self._check_channel(instruction)
                    if instruction.opcode in opcodes:
                        visit(instruction)  # type: ignore[misc]
            if read:
                yield read
            if len(read) == _RUN:
                continue  # the run may go on
            if self.text.startswith("\n}", self.pos):  # the closing brace on the next line
                self.pos += 2
                self.line += 1
                found: Instruction | None = None
            else:
                found = self._step(  # type: ignore[assignment]
                    lambda pos: self._instruction(pos, computation))
            if found is None:
                if by_lines:
                    self._again_at = body
                if self._last is None:  # XLA reads an instruction's name where '}' is
                    raise self.error("expects name", self.text.rfind("}", 0, self.pos))
                root = self._root = self._last if self._root is None else self._root
                root_name, root_shape = ((root[0], root[2]) if isinstance(root, tuple)
                                         else (root.name, root.shape_text))
                if isinstance(root, Instruction):  # (an unmade one is set once made)
                    computation.root = root
                self._check_parameters()
                self._check_result(computation, root_name, root_shape)
                if not _no_attributes_after(self.text, self.pos):  # a ',' may come
                    thread = cast("str | None", self._step(self._computation_attributes))
                    if thread is not None:
                        computation.execution_thread = thread
                if computation.is_entry:  # once read, as XLA checks, at its ENTRY
                    if self._entry_seen:
                        raise HloParseError("expects only one ENTRY", *self._head_at,
                                            self.source)
                    self._entry_seen = True
                name = computation.name
                if name in self.computation_names:  # once read, as XLA checks
                    raise HloParseError(f"computation already exists: {name}",
                                        *self._name_at, self.source)
                self.computation_names.add(name)
                self._shared.programs[name] = (self._parameters, root_shape)
                if not self._bounded:  # (a stream keeps no computation)
                    self._shared.roots[name] = root
                return
            by_lines = False
            for operand in self._nested:  # written as operands (parameters added): first
                self._check(computation, operand, None)
            if found.opcode == "parameter":  # XLA adds it by its number, then by its name
                self._parameter(found)
            self._check(computation, found, self._root_at)
            yield [*self._nested, found]

    def read_into(self, computation: Computation,
                  visit: Callable[[Instruction], None] | None = None,
                  opcodes: frozenset[str] = frozenset()) -> None:
        """Read ``computation``'s instructions into it (``instruction_runs``, with the same
        ``visit`` and ``opcodes``); one whose every line the fast path read is left to read
        them again on first use (``Computation.read_on_use``), but for the instructions
        visited, kept to take their places then (their collectives refer to them), and their
        operands' shapes, kept for ``shapes_read``: the instructions no check needed are
        then never made."""
        read: list[Instruction | _Unmade] = []
        for run in self._runs(computation, visit, opcodes, not self.single and not self._bounded):
            read += run
        at = self._again_at
        if at is not None:  # read again on use: fewer objects kept
            offset, line = at  # (the line is the head's, one a line, as XLA prints it)
            visited = {item.name: item for item in read
                       if not isinstance(item, tuple) and item.opcode in opcodes}
            where: object = offset if line == computation.line else at
            if visited:
                where = _Visited(offset, line, visited)
                if self._shape_of is not None:
                    self._shared.shapes_read[computation.name] = self._shape_of
            computation.read_on_use(self._reading_again(self._checked_opcodes),
                                    self._calls or (), signature_known=True, at=where)
        else:
            made = [Instruction(*item) if isinstance(item, tuple) else item for item in read]
            if isinstance(self._root, tuple):  # the root as made, here and in the module's
                # roots: its ROOT, else the last line (an unmade one is no general reader's)
                computation.root = next((m for m in reversed(made) if m.is_root), made[-1])
                roots = self._shared.roots
                if isinstance(roots.get(computation.name), tuple):
                    roots[computation.name] = computation.root
            computation.add(made)

    def _reading_again(self, checked: frozenset[str]) -> _LinesAgain:
        """What reads this one's computations again on first use: one for the module, with
        a reader over the same text, with the same names and caches (shared, not copied)."""
        found = self._lines_again
        if found is None or found.checked is not checked:
            again = Reader(self.text, self.source)
            again.computation_names, again._layouts = self.computation_names, self._layouts
            again._shapes, again._metadata_seen = self._shapes, self._metadata_seen
            found = self._lines_again = _LinesAgain(again, checked)
        return found

    def _printed_head(self) -> Computation | None:
        """The computation head at the current position when it is on one line as XLA
        prints it (read past), else None (the general reader reads it: ``_computation_head``)."""
        scanned = scan_head(self.text, self.pos)
        if scanned is None:
            return None
        end, entry, name_at, name_end, signature_at, result_at, result_end, shapes = scanned
        text, kept = self.text, self._parameter_shapes
        for shape in shapes:
            printed = kept.get(shape)
            if printed is None:
                printed = _remember(kept, shape,
                                    _PRINTED_PARAMETER_SHAPE.fullmatch(shape) is not None)
            if not printed:
                return None  # the one reader of a parameter list reads it
        name = text[name_at:name_end]
        result = text[result_at:result_end] if signature_at >= 0 else None
        if name in _RESERVED or (result is not None and _signature_shape_refused(result)):
            return None  # the general reader says why
        start = entry if entry >= 0 else name_at
        start_line, start_column = self.position(start)
        self._head_at = (start_line, start_column)
        self._name_at = (start_line, start_column + name_at - start)
        self._result = result
        self._result_where = None if result is None else (
            start_line, start_column + result_at - start)
        self.pos, self.line = end, start_line  # the head is on one line
        return Computation(name.lstrip("%"), entry >= 0, start_line,
                           "" if result is None else text[signature_at:result_end])

    def _computation_head(self, pos: int) -> tuple[Computation | None, int]:
        text = self.text
        pos = skip(text, pos)
        if pos >= len(text):
            return None, pos
        start_line, start_column = self._head_at = self.position(pos)
        past_entry = _past_keyword(text, pos, TokKind.kw_ENTRY)
        entry = past_entry is not None
        at = pos if past_entry is None else past_entry
        kind, _, name_end, _ = next_token(text, at)  # XLA's ParseName: one name token
        if kind not in (TokKind.kIdent, TokKind.kName):
            raise SyntaxFault("expects name", at)
        name = text[at:name_end].lstrip("%").removesuffix(":")
        self._name_at = self.position(at)
        begin = skip(text, name_end)
        at = begin
        if text.startswith("(", at):  # the signature: (parameters) -> shape
            recorded: list[tuple[str, int]] = []
            arrow = _parameter_list_end(text, at, recorded)
            if not text.startswith("->", arrow):
                raise SyntaxFault("expects '->'", arrow)
            at, refused = read_shape(text, skip(text, arrow + 2), len(text), signature=True,
                                     recorded=recorded)
            if refused is not None:
                raise SyntaxFault(*(recorded[0] if recorded else refused))
            if recorded:
                self._record(self.error(*recorded[0]))
            at = skip(text, at)
        if not text.startswith("{", at):
            raise SyntaxFault("expects '{' at the beginning of instruction list.", at)
        signature = text[begin:at].strip()
        result_at = self._result_at(pos, (start_line, start_column), begin, at)
        self._result_where = result_at
        self._result = None if result_at is None else _signature_result(signature)
        computation = Computation(name, entry, start_line, signature)
        return computation, at + 1

    def _computation_attributes(self, pos: int) -> tuple[str | None, int]:
        """The attributes after a computation's closing brace: ``execution_thread``, a string,
        alone, as XLA takes them (its value, or None when not written)."""
        try:
            found, end = read_attributes(self.text, pos)
        except AttributesCut as cut:  # XLA judges the attributes before the cut first
            self._thread(cut.found)
            raise
        return self._thread(found), end

    def _thread(self, found: list[tuple[str, int, int]]) -> str | None:
        """The execution thread the attributes ``found`` after a computation's brace (key,
        value start and end) name, each judged in turn as XLA judges them."""
        thread = None
        for key, start, stop in found:
            at = _key_at(self.text, key, start)  # XLA points at the attribute's name
            if key != "execution_thread":
                raise SyntaxFault(f'unexpected attribute "{key}". Allowed attributes: '
                                  "execution_thread", at)
            if thread is not None:
                raise SyntaxFault(f"attribute {key} already exists", at)
            value = self.text[start:stop]
            if _STRING.fullmatch(value) is None:
                raise SyntaxFault("expects string", start)
            thread = unquote(value)
        return thread

    def _result_at(self, head: int, head_at: tuple[int, int], start: int, stop: int
                   ) -> tuple[int, int] | None:
        """Where the result shape of the signature ``text[start:stop]`` starts (None without
        ``->``), counted from the computation's head at ``head`` (at ``head_at``)."""
        arrow = self.text.rfind("->", start, stop) if start >= 0 else -1
        if arrow < 0:
            return None
        at = skip(self.text, arrow + 2)
        if self.text.find("\n", head, at) < 0:  # on the head's line, as XLA prints it
            return head_at[0], head_at[1] + at - head
        return self.position(at)

    def _parameter(self, instruction: Instruction) -> None:
        """Note the number of parameter ``instruction``: each number once in a computation,
        as XLA's parser requires."""
        operands = instruction.operand_text
        number, after = _parameter_number(operands, 0)
        if number in self._parameters:
            at = instruction.attribute_at - 1 - len(operands)  # where the operand text starts
            raise HloParseError(f"Duplicate parameter number {number}",
                                *instruction.position(at + after), self.source)
        self._parameters[number] = (instruction.name, instruction.shape_text, instruction.line,
                                    instruction.column)

    def _check_channel(self, instruction: Instruction) -> None:
        """XLA's rule for a send-done or recv-done whose operand is a channel instruction:
        the same channel_id, or none on both (XLA refuses it without words; the words are
        ours, at the instruction). Each channel instruction's channel_id is kept for the
        dones after it."""
        found = self._channels[instruction.name] = _channel_id(instruction)
        if instruction.opcode not in ("send-done", "recv-done") or not instruction.operands:
            return
        operand = instruction.operands[0]
        if operand in self._channels and found != (expected := self._channels[operand]):
            raise HloParseError(
                f"{instruction.opcode} {instruction.name} has {_channel_words(found)} but its "
                f"operand {operand} has {_channel_words(expected)}", instruction.line,
                instruction.column, self.source)

    def _check_parameters(self) -> None:
        """A computation's parameters are numbered 0 to their count less one (XLA stops at
        a check when they are not)."""
        count = len(self._parameters)
        if not count or max(self._parameters) < count:
            return
        for number, (_, _, line, column) in self._parameters.items():
            if number >= count:
                raise HloParseError(f"invalid parameter number. Expected [0, {count}), got "
                                    f"{number}", line, column, self.source)

    def _check_result(self, computation: Computation, root: str, shape_text: str) -> None:
        """XLA's rule at a computation's end: the shape of its root (``shape_text``, of the
        instruction named ``root``) is the signature's result shape, layouts and dynamic
        dimensions aside. (Shapes the shape reader refuses are left alone: the reader does
        not check shapes yet.)"""
        result, result_at = self._result, self._result_where
        if result is None or result_at is None:
            return
        if result == shape_text:
            return  # a shape is compatible with itself
        pair = (result, shape_text)
        compatible = self._compatible.get(pair)
        if compatible is None:
            try:
                expected, found = parse_shape(result), parse_shape(shape_text)
            except HloParseError:
                return
            compatible = _remember(self._compatible, pair, expected.compatible(found))
        if not compatible:
            expected, found = parse_shape(result), parse_shape(shape_text)
            raise HloParseError(
                f"Shape of computation {computation.name}, {expected.human_string}, is not "
                f"compatible with that of its root instruction {root}, "
                f"{found.human_string}", *result_at, self.source)

    def _check(self, computation: Computation, instruction: Instruction,
               root_at: tuple[int, int] | None) -> None:
        """XLA's parser rules between instructions, in its order: one ROOT (its keyword
        written at ``root_at``), operands defined before use, unique names (called
        computations and control predecessors are looked up as they are read, ``_judged``,
        and names judged legal once the instruction is made, ``_right_side``)."""
        names = self._names
        name = instruction.name
        if instruction.is_root:
            if self._root is not None:
                raise HloParseError("one computation should have only one ROOT",
                                    *(root_at or (instruction.line, instruction.column)),
                                    self.source)
            self._root = instruction
        for index, operand in enumerate(instruction.operands):
            if operand not in names:
                raise HloParseError(f"instruction does not exist: {operand}",
                                    *_operand_position(instruction, index), self.source)
        if name in names:
            raise HloParseError(f"instruction already exists: {name}",
                                instruction.line, instruction.column, self.source)
        names.add(name)
        if self._shape_of is not None:
            self._shape_of[name] = instruction.shape_text
        self._last = instruction

    def _definition(self, computation: Computation, name: str) -> str | None:
        """The shape text of instruction ``name`` read before in ``computation``: as the
        reader kept it (a whole text), else as the ``definition`` it was given says."""
        if self._shape_of is not None:
            return self._shape_of.get(name)
        given = self._shared.definition
        return None if given is None else given(computation, name)

    def _same_as_defined(self, instruction: Instruction, computation: Computation) -> bool:
        """True when every operand of ``instruction`` written with a shape is written with
        the shape text of its definition (``_check_operand_shapes`` says what else XLA
        takes)."""
        shapes, shape_of = instruction.inline_shapes, self._shape_of
        if shape_of is not None and tuple(map(shape_of.get, instruction.operands)) == shapes:
            return True
        definition = self._definition
        return all(shape is None or definition(computation, name) == shape
                   for name, shape in zip(instruction.operands, shapes, strict=True))

    def _record(self, error: HloParseError) -> None:
        """Keep ``error``, one XLA's parser records and reads on past, unless one was kept
        before (``reported``)."""
        if self._shared.recorded is None:
            self._shared.recorded = HloParseError(error.message, error.line, error.column,
                                                  self.source)

    def _check_operand_shapes(self, operands: _Operands, computation: Computation,
                              position: Callable[[int], tuple[int, int]]) -> None:
        """XLA finds an operand written with a shape by its name and that shape: one
        incompatible with the operand's own is no operand it knows (refused where operand
        ``index`` is written, ``position(index)``)."""
        definition = self._definition
        for index, (name, shape) in enumerate(zip(*operands, strict=True)):
            if shape is None or (defined := definition(computation, name)) in (shape, None):
                continue
            if not _same_shape(shape, defined):
                raise HloParseError(NOT_AN_OPERAND, *position(index), self.source)

    def _check_after(self, instruction: Instruction, computation: Computation,
                     run: tuple[int, int]) -> None:
        """``instruction_error`` on an instruction of the fast path's run that started at
        offset and line ``run``: one a line, so XLA points at the next line's first token."""
        opcode = instruction.opcode
        attributes = _values(instruction) if reads_attributes(opcode) else {}
        if not checked_after(opcode, attributes):
            return
        inline = instruction.inline_shapes or (None,) * len(instruction.operands)
        shapes = [shape if shape is not None else self._definition(computation, name)
                  for name, shape in zip(instruction.operands, inline, strict=True)]
        refused = instruction_error(opcode, instruction.shape_text, shapes, attributes)
        if refused is None:
            return
        text, at = self.text, run[0]
        for _ in range(instruction.line - run[1] + 1):
            at = text.index("\n", at) + 1
        line = instruction.line + 1 + text.count("\n", at, after := skip(text, at))
        raise HloParseError(refused, line, after - text.rfind("\n", 0, after), self.source)

    def _check_literal(self, instruction: Instruction) -> None:
        """A constant's literal read as XLA reads it against the constant's shape
        (``read_literal``), refused at XLA's token (what XLA records in it, recorded)."""
        end = instruction.attribute_at if instruction.attribute_at >= 0 else len(
            instruction.text)
        close = instruction.text.rindex(")", 0, end)
        start = close - len(instruction.operand_text)
        recorded: list[tuple[str, int]] = []
        try:
            read_literal(instruction.operand_text, parse_shape(instruction.shape_text),
                         recorded)
        except SyntaxFault as fault:
            raise HloParseError(fault.message, *instruction.position(start + fault.offset),
                                self.source) from None
        for message, at in recorded:
            self._record(HloParseError(message, *instruction.position(start + at),
                                       self.source))

    # ---- instructions ---------------------------------------------------------------------

    def _instruction(self, pos: int, computation: Computation) -> tuple[Instruction | None, int]:
        text = self.text
        at = skip(text, pos)
        if self.single:
            return self._single_instruction(at, computation)
        if at >= len(text):
            what = (f"computation {computation.name}" if computation.name
                    else "a computation written inline")
            raise SyntaxFault(f"{what} is never closed (expected '}}')", at)
        if text[at] == "}":
            return None, at + 1
        return self._general(at, computation)

    def _single_instruction(self, at: int, computation: Computation
                            ) -> tuple[Instruction | None, int]:
        """The one instruction of a text that is one (its name may be left out: XLA names it
        _), then the end of the text."""
        text = self.text
        if self._shared.single_state == 2:
            if at < len(text):
                raise SyntaxFault('Syntax error:\nExpected eof after parsing single instruction. '
                                  'Did you mean to write an HLO module and forget the '
                                  '"HloModule" header?', at)
            return None, at
        if can_be_shape(text, at):
            self._nested, self._depth = [], 0
            found, end = self._right_side("_", at, at, computation, True)
        else:
            found, end = self._general(at, computation)
        self._shared.single_state = 2
        found.is_root = True
        return found, end

    def _missing_parameter(self, name: str | None, shape: str, at: int,
                           computation: Computation) -> Instruction:
        """The parameter XLA makes, in a text that is one instruction, of an operand written
        with a shape and no definition (named ``_N`` when the operand has no name)."""
        number = self._shared.missing
        self._shared.missing += 1
        name = name or f"_{number}"
        written = f"{name} = {shape} parameter({number})"
        line, column = self.position(at)
        return self._make(name, "parameter", shape, ((), ()), line, column, computation,
                          False, str(number), written, [], len(written), [])

    def _lines(self, computation: Computation, checked: frozenset[str], unmade: bool = False
               ) -> tuple[list[Instruction | _Unmade], bool]:
        """The instructions of ``computation`` on the lines after the current position (a
        line's end) that the fast path takes, at most ``_RUN``, read past: each line
        ``scan_lines`` scans, up to the first whose attributes, shape, operands or names
        the general reader must judge (it reads that line and says what is wrong); and
        whether none of them has an opcode in ``checked`` or operands written with
        shapes (none needs checks when read). With ``unmade``, each that has no such opcode
        or operands is left unmade (``_Unmade``)."""
        scanned = scan_lines(self.text, self.pos, _RUN) if self._fast else None
        read: list[Instruction | _Unmade] = []
        if not scanned:
            return read, True
        names, known, layouts, shapes, metadata, shape_of, parameters, calls = (
            self._names, self.computation_names, self._layouts, self._shapes,
            self._metadata_seen, self._shape_of, self._parameters, self._calls)
        defined, add = names.issuperset, names.add
        make, counts = Instruction, OPERAND_COUNTS  # (each looked up once a run)
        owner, line, end = computation.name, self.line, self.pos
        plain = True
        for (after, root, column, name, opcode, shape, operand_text, operands, inline,
             attribute_at, channel, groups, rest, tail, written, callees) in scanned:
            if rest is None:
                if opcode not in _BARE_OPCODES:
                    break  # the general reader refuses it
                layout, called = _NO_ATTRIBUTES, _NO_ATTRIBUTES.called
            else:
                if tail is not None and tail not in metadata and not self._metadata(tail):
                    break  # the general reader says why
                key = (opcode, channel is not None, groups is not None, rest)
                found = layouts.get(key) or self._layout_of(*key, callees is not None)
                if found is None or (tail is not None and found.has_metadata):
                    break
                if found.opened != (0 if callees is None else len(callees)) or (
                        callees and not _RESERVED.isdisjoint(callees)):
                    break  # a name written '%' in the text, or a keyword: the general reader's
                layout, called = found, callees or found.called
                if called and calls is not None:
                    calls.append(called)
            if operands is None or opcode in _LITERAL_OPCODES:  # no names, or a literal
                if operand_text is None:
                    break  # a literal or number written as names: the general reader's
                if opcode == "parameter":
                    # A number as XLA prints it, each once (the general reader says what else).
                    number = _PRINTED_NUMBERS.get(operand_text, -1)
                    if number < 0 or number in parameters:
                        break  # the general reader takes other numbers
                    operands, inline = (), ()
                else:
                    try:
                        operands, inline = self._operands(opcode, operand_text, 0)
                    except SyntaxFault:
                        break
            kept = shapes.get(shape)
            if kept is None:
                if shape_error(shape, 0, len(shape)) is not None:
                    break
                if len(shapes) >= _SHAPES_KEPT:
                    shapes.clear()
                kept = shapes[shape] = shape
            # XLA's checks between instructions (``_check``), when they pass.
            count = (counts.get(opcode, -1) if opcode != "tuple"
                     else _operand_count(opcode, kept))
            controls = layout.controls
            if (name in names or name in _GENERAL_NAMES or not defined(operands)
                    or (operand_text is not None and not _RESERVED.isdisjoint(operands))
                    or (count >= 0 and count != len(operands)) or not known.issuperset(called)
                    or (controls and not defined(controls))
                    or (root >= 0 and self._root is not None)):
                break
            arguments: _Unmade = (  # names as printed: split from the text on use,
                name, opcode, kept,  # but where the checks when read need them at once
                None if operand_text is None and operands and opcode not in checked
                else operands,
                line + 1, column, owner, root >= 0, operand_text, written, layout, called,
                controls, inline, attribute_at, channel, groups, layout.shared)
            add(name)
            if shape_of is not None:
                shape_of[name] = kept
            checks = bool(inline) or opcode in checked
            if checks:
                plain = False
            line += 1
            end = after
            if opcode == "parameter":
                parameters[number] = (name, kept, line, column)
            instruction = arguments if unmade and not checks else make(*arguments)
            if root >= 0:
                self._root = instruction
            read.append(instruction)
        if read:
            self.pos, self.line, self._last = end, line, read[-1]
        return read, plain

    def _metadata(self, tail: str) -> bool:
        """True when ``tail`` is one ``, metadata={...}`` attribute XLA takes (remembered:
        dumps repeat the metadata of a source line on many instructions)."""
        value = tail[len(", metadata="):]
        if not tail.startswith(", metadata=") or not (printed_metadata(value) or (
                _one_attribute(tail) and _takes_metadata(value))):
            return False
        if len(self._metadata_seen) >= _METADATA_KEPT:
            self._metadata_seen.clear()
        self._metadata_seen.add(tail)
        return True

    def _layout_of(self, opcode: str, has_channel: bool, has_groups: bool, rest: str,
                   open_callees: bool) -> _Layout | None:
        """The layout of attribute text ``rest`` on an ``opcode`` instruction, remembered
        (with ``open_callees``, each name of ``calls=`` and ``to_apply=`` is written ``%``: the
        scanner gives each line's own). None when ``rest`` is no attribute list the fast path
        takes, or ``opcode`` is none of XLA's or does not take these attributes."""
        if opcode not in _FAST_OPCODES:
            return None
        layout = self._layout(has_channel, has_groups, rest, open_callees)
        if layout is None or not layout.allows(opcode):
            return None
        return _remember(self._layouts, (opcode, has_channel, has_groups, rest), layout)

    def _layout(self, has_channel: bool, has_groups: bool, shared: str,
                open_callees: bool = False) -> _Layout | None:
        """What one-line instructions with the attribute text ``shared`` after a leading
        channel id and explicit groups (``has_channel``, ``has_groups``) share; None when
        ``shared`` is no attribute list or the general reader must report an error. With
        ``open_callees``, ``calls=%`` and ``to_apply=%`` stand for each line's own names (the
        scanner's), and a text that also names computations otherwise is left to the general
        reader."""
        try:
            read, end = read_attributes(shared, 0)
        except SyntaxFault:
            return None
        if end != len(shared):
            return None
        spans = [(key, shared[start:stop], start) for key, start, stop in read]
        keys = ([k for k, *_ in spans] + (["channel_id"] if has_channel else [])
                + (["replica_groups"] if has_groups else []))
        if len(set(keys)) != len(keys):
            return None
        called: list[str] = []
        controls: tuple[str, ...] = ()
        opened = 0
        try:
            for k, value, *_ in spans:
                if open_callees and value == "%" and k in _OPEN_CALLEES:
                    opened += 1  # a name the scanner cut (read as a name)
                    continue
                if k == "metadata" and not _takes_metadata(value):
                    return None
                if k in _SHAPE_RULED:
                    return None  # checked against the instruction's shape: the general reader
                if k in VALUE_CHECKS and VALUE_CHECKS[k](value, 1, 1) is not None:
                    return None  # the general reader records what XLA records
                if k in CALL_ATTRIBUTES:
                    called.extend(names_in(k, value, 1, 1))
                elif k == "control-predecessors":
                    controls = tuple(names_in(k, value, 1, 1))
        except (HloParseError, SyntaxFault):
            return None
        if open_callees and called:  # the order of the names would be lost
            return None
        values = {k: value for k, value, _ in spans}
        values.update(dict.fromkeys(keys[len(spans):], ""))  # the leading ones, read apart
        return _Layout(tuple(called), controls, shared, values,
                       None if open_callees else tuple(spans), opened)

    def _general(self, at: int, computation: Computation) -> tuple[Instruction, int]:
        text = self.text
        self._nested, self._depth = [], 0
        past_root = _past_keyword(text, at, TokKind.kw_ROOT)
        root = past_root is not None
        self._root_at = self.position(at) if root else None
        start = at if past_root is None else past_root
        name = name_at(text, start)  # XLA's ParseName: an identifier, '%name' or 'name:'
        if name is None:
            raise SyntaxFault("expects name", start)
        pos = self._expect("=", name[1], "in instruction")
        if root and self._root is not None:  # XLA's check before the right side
            raise SyntaxFault("one computation should have only one ROOT", at)
        written = text[start:name[1]]
        return self._right_side(written if written.startswith("%") else name[0], start,
                                skip(text, pos), computation, root)

    def _right_side(self, name: str, start: int, shape_start: int, computation: Computation,
                    is_root: bool, nested: bool = False) -> tuple[Instruction, int]:
        """The instruction called ``name`` (written from ``start``) whose right side
        ``[shape] opcode(operands) attributes`` starts at ``shape_start``; a ``nested`` one
        (an operand written as an instruction: XLA names it) takes no attributes."""
        text = self.text
        shape_stop = shape_start
        if can_be_shape(text, shape_start):
            recorded: list[tuple[str, int]] = []
            shape_stop, refused = read_shape(text, shape_start, len(text), recorded=recorded)
            if refused is not None:
                raise SyntaxFault(*refused)
            if recorded:
                self._record(self.error(*recorded[0]))
        op_start = skip(text, shape_stop)
        token, _, opcode_end, _ = next_token(text, op_start)  # XLA's ``ParseOpcode``
        if token != TokKind.kIdent:
            raise SyntaxFault("expects opcode", op_start)
        opcode = kind = text[op_start:opcode_end]
        if kind not in OPCODES:
            form = async_form(kind)
            if form is None:
                raise SyntaxFault(f"expects opcode but sees: {kind}, error: Unknown "
                                  f"opcode: {kind}", op_start)
            if form[1] not in OPCODES:
                raise SyntaxFault(f"expects async wrapped opcode but sees: {kind}, error: "
                                  f"Unknown opcode: {form[1]}", op_start)
            kind = form[0]
        if shape_stop == shape_start and kind in SHAPE_REQUIRED:
            raise SyntaxFault(f"cannot infer shape for opcode: {kind}", skip(text, opcode_end))
        open_at = self._expect("(", opcode_end, _BEFORE_OPERANDS.get(
            opcode, "at the beginning of operands")) - 1
        operands: _Operands | None = None
        try:
            close = group_end(text, open_at)
        except SyntaxFault:  # XLA reads the operands token by token, and may stop in them
            if kind == "constant" and shape_stop > shape_start:
                _refuse_as_a_literal(text, open_at + 1, text[shape_start:shape_stop])
                raise
            if opcode in _LITERAL_OPCODES:
                self._read_operands(opcode, open_at + 1, len(text), computation)
            else:  # the ')' after an operand ends them, whatever brackets come after
                operands, close = self._operand_list(open_at + 1, len(text), computation,
                                                     to_paren=True)
                if close >= len(text) and operands[0] and self._nested and (
                        self._nested[-1].name == operands[0][-1]):
                    # The last operand, an instruction, is read: no ')' comes after it.
                    raise SyntaxFault("expects ')' at the end of operands", len(text)) from None
                if close >= len(text):
                    operands = None
            if operands is None:
                # The operands ran to the end of the text: XLA stops at the last one.
                if kind == "parameter":
                    raise SyntaxFault("expects ')' after parameter number", len(text)) from None
                raise SyntaxFault(NOT_AN_OPERAND, _last_operand(text, open_at + 1)) from None
        if operands is None:
            operands = self._read_operands(opcode, open_at + 1, close - 1, computation)
        if operands[1]:  # as each operand is read, before XLA counts them

            def written_at(index: int) -> tuple[int, int]:
                at = _operand_offset(text[open_at + 1:close - 1], index)
                return self.position(open_at + 1 + (at or 0))

            try:
                self._check_operand_shapes(operands, computation, written_at)
            except HloParseError:
                self._undefined_operand_first(operands[0], text, open_at + 1, close - 1)
                raise
        if nested:  # read to its ')': XLA refuses what follows with its reader past it
            self._shared.made_whole = close
        expected = _operand_count(opcode, text[shape_start:shape_stop])
        if expected >= 0 and len(operands[0]) != expected and all(
                self._defined(operand) for operand in operands[0]):  # else: which is not
            raise SyntaxFault(f"expects {expected} operands, but has {len(operands[0])} "
                              "operands", open_at)
        try:
            if nested:
                name = self._anonymous(opcode)
            if kind == "conditional":
                if not operands[0]:
                    raise SyntaxFault("conditional requires at least one operand", skip(text, close))
                _check_predicate(self._operand_shape(operands, computation), skip(text, close))
            continues = None
            if kind in ASYNC_KINDS:
                continues = self._async(opcode, text[shape_start:shape_stop], operands[0],
                                        skip(text, close))
            try:
                found, end = ([], close) if nested else read_attributes(text, close)
            except AttributesCut as cut:  # XLA judges the attributes before the cut first
                self._judged(opcode, [Attribute(k, text[s:e], *self.position(s))
                                              for k, s, e in cut.found],
                             [_key_at(text, k, s) for k, s, _ in cut.found],
                             operands, computation, cut.value_cut)
                raise
            written_inline = [at for at, (k, s, _) in enumerate(found)
                              if k in CALL_ATTRIBUTES and _written_inline(k, text, s)]
            if written_inline:  # XLA judges the attributes before one, and its key, first
                before = found[:written_inline[0]]
                key, key_start, _ = found[written_inline[0]]
                self._judged(opcode, [Attribute(k, text[s:e], *self.position(s))
                                      for k, s, e in before],
                             [_key_at(text, k, s) for k, s, _ in before], operands, computation,
                             key_after=(key, _key_at(text, key, key_start)))
            inline = {at: self._inline_computations(*found[at]) for at in written_inline}
            if continues is not None:
                self._async_attributes(name.lstrip("%"), kind, continues, [
                    (k, text[s:e]) for k, s, e in found], end)
            line, column = self.position(start)
            attributes = [Attribute(k, inline.get(at) or text[s:e], *self.position(s))
                          for at, (k, s, e) in enumerate(found)]
            shape = text[shape_start:shape_stop]
            refused_inference = None
            if not shape:
                try:
                    shape = self._inferred(opcode, operands, attributes, computation)
                except InferenceError as error:  # XLA refuses it once the attributes are read
                    refused_inference = error.message
            instruction = self._make(
                name, opcode, shape, operands, line, column,
                computation, is_root, text[open_at + 1:close - 1], text[start:end],
                attributes, close - start, [_key_at(text, k, s) for k, s, _ in found])
            written = {a.key for a in attributes}
            required = (conditional_required(written, self._operand_type(operands, computation))
                        if kind == "conditional" else required_attributes(opcode))
            for key in required:
                if key == "dimensions" and kind == "broadcast" and _is_scalar(
                        self._operand_shape(operands, computation)):
                    continue  # a scalar's broadcast needs none
                if key not in written:  # where the attribute list starts (past it: none)
                    raise SyntaxFault(f"attribute {key} is expected but not seen", skip(text, close))
            if refused_inference is not None:
                raise SyntaxFault(f"failed to infer shape for opcode: {opcode}, error: "
                                  f"{refused_inference}", skip(text, end))
            if kind == "conditional":
                _check_branches(attributes, len(operands[0]), skip(text, end))
            elif kind == "scan":
                _check_scan(attributes, len(operands[0]), self._shared.program, skip(text, end))
            if checked_after(kind, written) and (after_error := instruction_error(
                    kind, shape, self._operand_shapes(operands, computation),
                    {a.key: a.value for a in attributes})) is not None:
                raise SyntaxFault(after_error, skip(text, end))
            if kind == "constant":  # XLA reads the literal as it makes the instruction
                self._check_literal(instruction)
            if opcode in CHANNEL_OPCODES:
                self._check_channel(instruction)
            shared = self._shared
            if opcode in shared.opcodes and shared.visit is not None:
                shared.visit(instruction)  # after the checks a nested one is dropped for
            refused_name = None if nested else _refused_name(name)
            if refused_name is not None:  # once the instruction is made, as XLA checks it
                raise SyntaxFault(refused_name, start)
            for attribute in attributes:  # then its replication
                if attribute.key == "parameter_replication":
                    _check_replication(attribute.value, shape, skip(text, end))
            return instruction, end
        except (SyntaxFault, HloParseError):
            self._undefined_operand_first(operands[0], text, open_at + 1, close - 1)
            raise

    def _undefined_operand_first(self, operands: tuple[str, ...], text: str, start: int,
                                 stop: int) -> None:
        """XLA records an operand it finds undefined and reads on, so its error comes before
        any later in the instruction: raised here, at the operand (written in
        ``text[start:stop]``), when one of ``operands`` is."""
        undefined = next((o for o in operands if not self._defined(o)), None)
        if undefined is None:
            return
        try:
            at = next(at for name, _, at in split_operands(text[start:stop], check_shapes=False)
                      if name == undefined)
        except (SyntaxFault, StopIteration):
            return
        raise SyntaxFault(f"instruction does not exist: {undefined}", start + at)

    def _inline_computations(self, key: str, start: int, stop: int) -> str:
        """Read the computations written inline as attribute ``key``'s value
        ``text[start:stop]`` (``{ instructions }``, or ``{ {...}, {...} }`` for a key that
        takes a list) as XLA reads them: each a computation of the module named ``_`` (``_.1``,
        ``_.2``, ... in the order they are read), kept in ``inline``; the value as their
        names (``_``, or ``{_, _.1}``)."""
        text = self.text
        first = skip(text, start + 1)
        if key not in COMPUTATION_LIST_ATTRIBUTES:  # one computation (else a list: "{{")
            return self._inline_computation(start)
        names = []
        at = first
        while text.startswith("{", at):
            names.append(self._inline_computation(at))
            at = skip(text, group_end(text, at))
            if text.startswith(",", at):
                at = skip(text, at + 1)
        if at != stop - 1:
            raise SyntaxFault("expects '}' at the end of the computation list", at)
        return "{" + ", ".join(names) + "}"

    def _cut_inline_computations(self, key: str, start: int) -> None:
        """Read the computations written inline as attribute ``key``'s value from the ``{``
        at ``start`` whose brackets do not balance, up to where XLA's parser stops in them,
        which raises there: in a computation left open, or in a list of them where neither
        ',' nor '}' follows one."""
        text = self.text
        at = skip(text, start + 1)
        if key not in COMPUTATION_LIST_ATTRIBUTES:  # one computation (else a list: "{{")
            self._inline_computation(start, cut=True)
            return
        while text.startswith("{", at):
            try:
                end = group_end(text, at)
            except SyntaxFault:  # the last one, left open
                self._inline_computation(at, cut=True)
                raise SyntaxFault("expects a list to end with kRbrace", len(text)) from None
            self._inline_computation(at)
            at = skip(text, end)
            if not text.startswith(",", at):
                break
            at = skip(text, at + 1)
        raise SyntaxFault("expects a list to end with kRbrace", at)

    def _inline_computation(self, start: int, cut: bool = False) -> str:
        """Read the computation written inline from the ``{`` at ``start``; its name. With
        ``cut`` (its brackets do not balance), it is read up to where XLA's parser stops in
        its instructions, which raises there, or to its '}'."""
        stop = len(self.text) if cut else group_end(self.text, start)
        line, column = self.position(start)
        inner = Reader(self.text[start:stop], self.source)
        inner.line, inner._carried, inner.pos = line, column - 1, 1
        inner.computation_names, inner._shared = self.computation_names, self._shared
        shared = self._shared
        # named once read, as XLA names it
        computation = Computation("", False, line, "", written_inline=True)
        inner._begin()
        for run in inner.instruction_runs(computation, shared.visit, shared.opcodes):
            computation.add(run)
        if skip(inner.text, inner.pos) < len(inner.text) and not cut:
            raise SyntaxFault("expects '}' at the end of instruction list.", start + inner.pos)
        self.computation_names.discard("")
        program, root = shared.programs.pop(""), shared.roots.pop("")
        while True:
            count = shared.inline_count
            shared.inline_count += 1
            name = "_" if count == 0 else f"_.{count}"
            if name not in self.computation_names:
                break
        computation.name = name
        for instruction in computation.instructions:
            instruction.computation = name
        self.computation_names.add(name)
        shared.programs[name], shared.roots[name] = program, root
        shared.inline.append(computation)
        return name

    @property
    def inline(self) -> list[Computation]:
        """The computations written inline as attribute values, read and not yet taken."""
        return self._shared.inline

    def take_inline(self) -> list[Computation]:
        """The computations written inline read since the last call."""
        found, self._shared.inline = self._shared.inline, []
        return found

    def _defined(self, name: str) -> bool:
        """True when instruction ``name`` was read before in this computation (or as an
        operand of the instruction being read)."""
        return name in self._names or any(i.name == name for i in self._nested)

    def _anonymous(self, opcode: str) -> str:
        """XLA's name for an instruction written as an operand: ``<opcode>.anon``, made
        unique among the names read (``.1``, ``.2``, ...)."""
        taken = {i.name for i in self._nested}
        name = f"{opcode}.anon"
        suffix = 0
        while name in self._names or name in taken:
            suffix += 1
            name = f"{opcode}.anon.{suffix}"
        return name

    def _async(self, opcode: str, shape: str, operands: tuple[str, ...], after: int
               ) -> _AsyncStart:
        """XLA's checks of an async wrapper (``async-start`` or its shorthand ``<op>-start``,
        their -update and -done) before its attributes, refused at ``after``, the token after
        its operands: a start's shape is ``((operands), outputs, ...)``; an update or done has
        one operand, an async start or update wrapping the same op; an update has its
        operand's shape. What the wrapper continues (a start: itself)."""
        form = async_form(opcode)
        kind, wrapped = form if form is not None else (opcode, "")
        if kind == "async-start":
            if not _async_start_shape(shape):
                raise SyntaxFault("AsyncStart expects the op shape to be in the form of "
                                  "((async-operands), async-outputs, state).", after)
            return _AsyncStart(wrapped, "main", shape, "")
        start = self._async_ops.get(operands[0]) if len(operands) == 1 else None
        if start is None:
            raise SyntaxFault("AsyncUpdate and AsyncDone expect a single async op as their "
                              "operand.", after)
        if wrapped and start.wrapped and start.wrapped != wrapped:
            raise SyntaxFault(f"Expect async wrapped opcode to be {start.wrapped}, but got "
                              f"{wrapped}", after)
        if kind == "async-update" and not _same_shape(shape, start.shape):
            raise SyntaxFault("AsyncUpdate expects the op shape to be the same as the operand "
                              "shape.", after)
        return start._replace(wrapped=wrapped or start.wrapped)

    def _async_attributes(self, name: str, kind: str, start: _AsyncStart,
                          found: list[tuple[str, str]], end: int) -> None:
        """Note async start or update ``name`` (of ``kind``, continuing ``start``) for the
        updates and dones to come; an update or done names its start's computation
        (``calls``) and ``async_execution_thread`` if any (``found``: key and value as
        written), refused at the token after it (``end``); no two starts call the same
        computation."""
        written = dict(found)
        try:
            calls = next(iter(names_in("calls", written.get("calls"), 1, 1)), "")
        except HloParseError:  # its reader refuses it where XLA does (``_judged``)
            calls = ""
        thread = unquote(written.get("async_execution_thread", '"main"').strip())
        if kind == "async-start":
            if calls in self._shared.async_called and self._shared.after_reading is None:
                self._shared.after_reading = self.error(  # XLA's module check, after reading
                    f"Computation {calls} is called by more than one async op",
                    skip(self.text, end))
            if calls:
                self._shared.async_called.add(calls)
            start = start._replace(thread=thread, calls=calls)
        elif calls in self.computation_names and start.calls and calls != start.calls:
            raise SyntaxFault(f"Expect async_wrapped_computation to be {start.calls}, but got "
                              f"{calls}", skip(self.text, end))
        elif "async_execution_thread" in written and thread != start.thread:
            raise SyntaxFault(f"Expect async_execution_thread to be {start.thread}, but got "
                              f"{thread}", skip(self.text, end))
        if kind != "async-done":
            self._async_ops[name] = start

    def _operand_shape(self, operands: _Operands, computation: Computation) -> str | None:
        """The shape text of the first of ``operands`` (None when not known)."""
        if not operands[0]:
            return None
        return (operands[1][0] if operands[1] else None) or next(
            (i.shape_text for i in self._nested if i.name == operands[0][0]), None) or (
            self._definition(computation, operands[0][0])) or None

    def _operand_type(self, operands: _Operands, computation: Computation) -> str | None:
        """The element type of the first of ``operands`` (its shape's first token; None when
        not known)."""
        shape = self._operand_shape(operands, computation)
        if not shape:
            return None
        _, start, end, _ = next_token(shape, 0)
        return shape[start:end]

    def _inferred(self, opcode: str, operands: _Operands, attributes: list[Attribute],
                  computation: Computation) -> str:
        """The shape XLA infers for an instruction written without one (``_infer``), from
        its operands' shapes (written inline, else their ``definition``), or "" when it is
        not inferred."""
        return infer_shape(opcode, self._operand_shapes(operands, computation),
                           {a.key: a.value for a in attributes}, self._shared.program)

    def _operand_shapes(self, operands: _Operands, computation: Computation
                        ) -> list[str | None]:
        """The shape texts of ``operands`` (written inline, else their ``definition``;
        None when not known)."""
        inline = operands[1] or (None,) * len(operands[0])
        nested = {i.name: i.shape_text for i in self._nested}  # not yet the caller's
        return [shape if shape is not None else
                nested.get(name) or self._definition(computation, name)
                for name, shape in zip(operands[0], inline, strict=True)]

    def _operands(self, opcode: str, text: str, offset: int) -> _Operands:
        """Names and inline shapes of the operands written in ``text`` (at ``offset``), each a
        ``[shape] name`` (the fast path's; an operand written as an instruction is a
        ``SyntaxFault`` here: ``_read_operands`` reads it)."""
        if opcode == "parameter":
            _parameter_number(text, offset)
        if opcode in _LITERAL_OPCODES or not text.strip():
            return (), ()
        if NAME.fullmatch(text) and text not in _RESERVED:  # (a keyword is no name)
            return (text.lstrip("%"),), ()
        try:
            found = split_operands(text)
        except SyntaxFault as fault:
            raise SyntaxFault(fault.message, offset + fault.offset) from None
        shapes = tuple(shape for _, shape, _ in found)
        return tuple(name for name, _, _ in found), (shapes if any(shapes) else ())

    def _read_operands(self, opcode: str, start: int, stop: int, computation: Computation
                       ) -> _Operands:
        """The operands written in ``text[start:stop]`` (between an operand list's
        brackets): names and inline shapes; one written as an instruction is read
        (``_operand_list``)."""
        text = self.text[start:stop]
        if ("(" in text or self.single) and opcode not in _LITERAL_OPCODES and text.strip():
            return self._operand_list(start, stop, computation)[0]
        try:
            read = self._operands(opcode, text, start)
        except SyntaxFault:
            if opcode in _LITERAL_OPCODES:
                raise
            return self._operand_list(start, stop, computation)[0]
        if any(_is_opcode(name) and not self._defined(name) for name in read[0]):
            return self._operand_list(start, stop, computation)[0]  # which XLA leaves out
        return read

    def _operand_list(self, start: int, stop: int, computation: Computation,
                      to_paren: bool = False) -> tuple[_Operands, int]:
        """XLA's operand list: ``operand (',' operand)*``, where an operand is ``[shape]
        name`` or an instruction without attributes, ``[shape] opcode(operands)`` (its shape
        may be left out where XLA infers it), read and named as XLA names it
        (``_anonymous``) and kept in ``_nested`` to come before the instruction using it;
        and where the list ends: ``stop``, or with ``to_paren`` past the ')' an operand is
        followed by (XLA reads the list so, whatever brackets follow it)."""
        text = self.text
        names: list[str] = []
        shapes: list[str | None] = []
        c = TokenCursor(text, 1, 0, start)  # (an error's column is its offset in ``text``)
        while True:
            operand = c.start
            shape = operand_shape(c, stop)
            word = c.word
            if (c.kind == TokKind.kIdent and c.start < stop
                    and c.look_ahead() == TokKind.kLparen
                    and (word not in SHAPE_REQUIRED or shape is not None)
                    and _is_opcode(word)):
                if self._depth >= MAX_DEPTH:
                    raise SyntaxFault(f"values nested more than {MAX_DEPTH} deep", operand)
                self._depth += 1
                # What XLA records reading a nested instruction is dropped if it reads one,
                # and comes after its error for the operand if not.
                shared = self._shared
                recorded, shared.recorded = shared.recorded, None
                shared.made_whole = None
                try:
                    found, end = self._right_side("", operand, operand, computation, False,
                                                  nested=True)
                    if found.opcode == "parameter":  # XLA adds it as it makes it
                        self._parameter(found)
                except (SyntaxFault, HloParseError):  # its literal's, too
                    shared.recorded = recorded
                    whole = shared.take_made_whole()  # (the read above may have set it)
                    if whole is None:  # XLA stops in it
                        raise SyntaxFault(NOT_AN_OPERAND, operand) from None
                    end = whole
                    # Refused once read to its ')' (its number taken, an attribute it needs,
                    # its channel): XLA records that it reads neither a name nor an
                    # instruction there and reads on without it.
                    self._record(self.error(NOT_AN_OPERAND, operand))
                else:
                    shared.recorded, shared.made_whole = recorded, None
                    if not all(self._defined(name) for name in found.operands):
                        raise SyntaxFault(NOT_AN_OPERAND, operand)  # XLA stops in it
                    self._nested.append(found)
                    names.append(found.name)
                    shapes.append(None)
                self._depth -= 1
                c.jump(end)
            elif not self.single and (c.start >= stop or c.kind == TokKind.kComma or (
                    to_paren and c.kind == TokKind.kRparen)):
                # Nothing, or a shape alone: XLA's parser records that it reads neither a name
                # nor an instruction there, reads on from the ',' or ')' and leaves the
                # operand out.
                self._record(self.error(NOT_AN_OPERAND, operand))
            else:
                opcode_word = c.kind == TokKind.kIdent and _is_opcode(word)
                name = c.name() if c.start < stop and c.kind in (
                    TokKind.kIdent, TokKind.kName) else None
                if self.single and shape is not None and (
                        name is None or not self._defined(name)):
                    made = self._missing_parameter(name, shape, operand, computation)
                    self._parameter(made)
                    self._nested.append(made)
                    names.append(made.name)
                    shapes.append(shape)
                elif name is None or not self._defined(name):
                    if not (opcode_word and (c.start >= stop or c.kind == TokKind.kComma or (
                            to_paren and c.kind == TokKind.kRparen))):
                        raise SyntaxFault(NOT_AN_OPERAND, operand)
                    # XLA then reads it as an instruction's opcode and stops at the ',' or
                    # ')' after it: it records that it reads neither and reads on without it.
                    self._record(self.error(NOT_AN_OPERAND, operand))
                else:
                    names.append(name)
                    shapes.append(shape)
                if c.start < stop and c.kind != TokKind.kComma and not (
                        to_paren and c.kind == TokKind.kRparen):  # XLA tries it as an instruction
                    raise SyntaxFault(NOT_AN_OPERAND, operand)
            read = tuple(names), (tuple(shapes) if any(shapes) else ())
            if c.start >= stop:
                return read, stop
            if to_paren and c.kind == TokKind.kRparen:
                return read, c.end
            if c.kind != TokKind.kComma:
                raise SyntaxFault("expects ')' at the end of operands", c.start)
            c.lex()

    def _make(
        self, name: str, opcode: str, shape: str, operands: _Operands, line: int,
        column: int, computation: Computation, is_root: bool, operand_text: str, written: str,
        attributes: list[Attribute], attribute_at: int, key_offsets: list[int],
    ) -> Instruction:
        instruction = Instruction(
            name.lstrip("%"), opcode, shape.strip(), operands[0], line, column, computation.name,
            is_root, operand_text, written, attributes, (), (), operands[1], attribute_at)
        if attributes:
            instruction.called_computations, controls = self._judged(
                opcode, attributes, key_offsets, operands, computation)
            if controls is not None:
                instruction.control_predecessors = controls
        return instruction

    def _judged(self, opcode: str, attributes: list[Attribute], key_offsets: list[int],
                operands: _Operands, computation: Computation, value_cut: bool = False,
                key_after: tuple[str, int] | None = None,
                ) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
        """The computations ``attributes`` (of an ``opcode`` instruction) call and the
        control predecessors they name (None when they name none), after XLA's judgement of
        each in turn: an attribute ``opcode`` does not take or takes once, and each value by
        its reader. With ``value_cut``, the last value is cut where the attribute list is
        refused and only read by a reader of its own kind that may stop before. With
        ``key_after`` (a key and its offset), the key of the attribute after them is judged
        too (its value is a computation written in place, read next)."""
        called: list[str] = []
        controls: tuple[str, ...] | None = None
        seen: set[str] = set()
        keys = [a.key for a in attributes] + ([key_after[0]] if key_after else [])
        predicate = (self._operand_type(operands, computation) if opcode == "conditional"
                     else None)

        def judge(key: str, key_at: int) -> None:
            refusal = (unexpected_attribute(opcode, key, keys, predicate)
                       if key not in seen else f"attribute {key} already exists")
            if refusal is not None:
                raise self.error(refusal, key_at)
            seen.add(key)

        for index, (key, value, at_line, at_column) in enumerate(attributes):
            judge(key, key_offsets[index])
            if key == "metadata":
                check_metadata(value, at_line, at_column)
                continue
            if (check := value_check(opcode, key)) is not None and (recorded := self._checked(
                    check, value, at_line, at_column, key_offsets[index])) is not None:
                self._record(recorded)
            cut_here = value_cut and index == len(attributes) - 1
            if key in CALL_ATTRIBUTES and cut_here and (
                    inline_at := self._inline_start(key, key_offsets[index])) is not None:
                self._cut_inline_computations(key, inline_at)  # XLA stops in them
            elif key in CALL_ATTRIBUTES:
                called.extend(names_in(key, value, at_line, at_column,
                                       self.computation_names))  # looked up as read
            elif key == "control-predecessors":  # looked up as read
                controls = tuple(names_in(key, value, at_line, at_column, self._names))
            if cut_here:
                break  # (its reader, if any, stopped where XLA's does)
        else:
            if key_after is not None:
                judge(*key_after)
        return tuple(called), controls

    def _inline_start(self, key: str, key_at: int) -> int | None:
        """Where the computation written inline as attribute ``key``'s value (its name at
        offset ``key_at``) starts, or None when the value is no such computation."""
        start = skip(self.text, key_at + len(key) + 1)
        return start if _written_inline(key, self.text, start) else None

    def _checked(self, check: Check, value: str, line: int, column: int, key_at: int
                 ) -> HloParseError | None:
        """``check`` of an attribute's ``value`` (written at ``line:column``, the attribute's
        name at offset ``key_at``): what XLA records reading it, or None; where XLA gives the
        attribute up (``UnparsedAttribute``), the refusal points at its name, as XLA's
        does."""
        try:
            found = check(value, line, column)
        except UnparsedAttribute as error:
            raise self.error(error.message, key_at) from None
        except HloParseError as error:
            raise self._past_the_value(error, value, key_at) from None
        return None if found is None else self._past_the_value(found, value, key_at)

    def _past_the_value(self, error: HloParseError, value: str, key_at: int) -> HloParseError:
        """``error`` of a value's reader, or, where the reader ran out of the value (the
        error is at its end), the same error at the token after it, where XLA's reader
        stands."""
        start = skip(self.text, self.text.index("=", key_at) + 1)
        end = start + len(value)
        if not self.text.startswith(value, start) or (error.line, error.column) != self.position(
                end):
            return error
        return self.error(error.message, skip(self.text, end))


class _AsyncStart(NamedTuple):
    """What an async update or done continues: the wrapped op ("" when the opcodes do not
    name it), the execution thread, the start's (or update's) shape and the computation it
    calls ("" when not written)."""

    wrapped: str
    thread: str
    shape: str
    calls: str


def _check_replication(value: str, shape: str, after: int) -> None:
    """XLA's rule for ``parameter_replication``: one element per leaf buffer of the shape,
    refused at ``after``, the token after the instruction."""
    try:
        leaves = sum(1 for _ in parse_shape(shape).leaves())
    except HloParseError:
        return  # the shape is not known
    elements = len(parameter_replication(value, 1, 1))  # (its reader refused what XLA does)
    if elements != leaves:
        raise SyntaxFault(f"parameter has {leaves} leaf buffers, but parameter_replication has "
                          f"{elements} elements.", after)


def _check_predicate(shape: str | None, after: int) -> None:
    """XLA's rule for a conditional's first operand (of ``shape``, None when not known): a
    scalar pred or s32, refused at ``after``, the token after the operands."""
    if shape is None:
        return
    try:
        found = parse_shape(shape)
    except HloParseError:
        return
    if found.tuple_shapes is not None or found.dimensions:
        raise SyntaxFault("The first operand must be a scalar", after)
    if found.element_type not in ("pred", "s32"):
        raise SyntaxFault("The first operand must be a scalar of PRED or S32", after)


def _check_branches(attributes: list[Attribute], operands: int, after: int) -> None:
    """XLA's rule for a conditional's branches (its ``attributes``) and its number of
    ``operands``: one branch at least, and one operand per branch after the branch index,
    refused at ``after``, the token after the instruction (XLA refuses it without a
    message)."""
    branches = 2
    for key, value, line, column in attributes:
        if key == "branch_computations":
            branches = len(names_in(key, value, line, column))
    if branches == 0:
        raise SyntaxFault("a conditional needs at least one branch computation", after)
    if operands != branches + 1:
        raise SyntaxFault(f"a conditional of {branches} branch computations takes "
                          f"{branches + 1} operands (the branch index, then one for each "
                          f"branch), but has {operands} operands", after)


def _check_scan(attributes: list[Attribute], operands: int,
                program_of: Callable[[str], ProgramShape | None], after: int) -> None:
    """XLA's rules for a scan of ``operands`` operands with ``attributes`` (``program_of``
    a computation read gives its program shape): as many operands as its ``to_apply`` has
    parameters, one dimension, and no more carries than operands; refused at ``after``,
    the token after the instruction."""
    written = {a.key: a for a in attributes}
    to_apply, dimensions, num_carries = (
        written["to_apply"], written["dimensions"], written["num_carries"])
    called = names_in("to_apply", to_apply.value, to_apply.line, to_apply.column)
    program = program_of(called[0]) if called else None
    parameters = None if program is None else len(program.parameters)
    if parameters is not None and parameters != operands:
        raise SyntaxFault(f"expects {operands} operands to match the number of parameters of "
                          f"to_apply, but to_apply has {parameters} parameters", after)
    if len(parse_int_list(dimensions.value, dimensions.line, dimensions.column)) != 1:
        raise SyntaxFault("expects exactly one dimension", after)
    carries = parse_int(num_carries.value, "num_carries", num_carries.line, num_carries.column)
    if operands < carries:
        raise SyntaxFault(f"expects at least {carries} operands to match the number of "
                          f"carries, but has {operands} operands", after)


def _is_scalar(shape: str | None) -> bool:
    """True when ``shape`` is an array of rank 0 (False when it is not known)."""
    try:
        found = parse_shape(shape) if shape else None
    except HloParseError:
        return False
    return found is not None and found.tuple_shapes is None and not found.dimensions


def _same_shape(a: str, b: str) -> bool:
    """True when shape texts ``a`` and ``b`` are the same shape (layouts aside)."""
    try:
        return a == b or parse_shape(a).compatible(parse_shape(b))
    except HloParseError:
        return False


def _async_start_shape(shape: str) -> bool:
    """True when ``shape`` is an async start's: a tuple of at least two, the first a tuple."""
    try:
        found = parse_shape(shape)
    except HloParseError:
        return False
    parts = found.tuple_shapes
    return parts is not None and len(parts) >= 2 and parts[0].tuple_shapes is not None


def _operand_count(opcode: str, shape: str) -> int:
    """How many operands XLA's parser wants of an ``opcode`` instruction of the shape text
    ``shape`` ("" when not written): the opcode's count, the element count of a tuple's
    written tuple shape, or -1 for any number."""
    if opcode == "tuple" and shape.startswith("("):
        tuple_shapes = parse_shape(shape).tuple_shapes
        return -1 if tuple_shapes is None else len(tuple_shapes)
    return OPERAND_COUNTS.get(opcode, -1)


def _written_inline(key: str, text: str, start: int) -> bool:
    """True when attribute ``key``'s value at ``start`` is a computation written in place,
    or for a key that takes a list of computations, a list of them ("{{"): a list whose
    first item is no '{' is a list of names (its reader says what is wrong)."""
    return _INLINE.match(text, start) is not None and (
        key not in COMPUTATION_LIST_ATTRIBUTES or text.startswith("{", skip(text, start + 1)))


def _refused_name(written: str) -> str | None:
    """XLA's refusal of an instruction's name as written (with its '%', if any): a type's
    name, which XLA's lexer reads as a type, or a name XLA's sanitizer renames (one that
    starts "__", the backends' prefix, but not "__xla_"); None when XLA takes it."""
    name = written.lstrip("%")
    if name in ELEMENT_BITS:
        return (f"illegal instruction name: {name}; suggest renaming to: {name}_"
                if written.startswith("%") else "expects name")
    if name.startswith("__") and not name.startswith("__xla_"):
        return f"illegal instruction name: {name}; suggest renaming to: a{name[1:]}"
    return None


def _signature_result(signature: str) -> str:
    """The result shape's text of a computation's signature ``(params) -> shape``."""
    return signature.rpartition("->")[2].strip()


def _channel_id(instruction: Instruction) -> int | None:
    """The channel_id ``instruction`` is written with (its reader took it), or None."""
    if instruction.leading_channel is not None:  # digits the fast path took (at most 18)
        return int(instruction.leading_channel)
    written = instruction.attributes.get("channel_id")
    return None if written is None else parse_int(written, "channel_id", instruction.line,
                                                  instruction.column)


def _channel_words(channel_id: int | None) -> str:
    return "no channel_id" if channel_id is None else f"channel_id={channel_id}"


def _is_opcode(word: str) -> bool:
    """Whether XLA's parser reads ``word`` (an identifier) as an opcode."""
    return word in OPCODES or async_form(word) is not None


@functools.lru_cache(maxsize=4096)
def _signature_shape_refused(shape: str) -> bool:
    """True when XLA refuses ``shape`` in a signature, or records an error reading it
    (remembered: a dump's heads repeat a few result shapes)."""
    recorded: list[tuple[str, int]] = []
    end, refused = read_shape(shape, 0, len(shape), signature=True, recorded=recorded)
    return refused is not None or bool(recorded) or skip(shape, end) < len(shape)


def _key_at(text: str, key: str, value_start: int) -> int:
    """The offset of attribute ``key``'s name, whose value starts at ``value_start`` (the
    name is the last text of it before the value: only '=' and white space come between)."""
    return text.rfind(key, 0, value_start)


def _parameter_number(text: str, offset: int) -> tuple[int, int]:
    """The number a parameter's operand text (at ``offset``) holds, one integer of int64 at
    least 0 (else a ``SyntaxFault`` in XLA's words), and the offset of the token after it."""
    if (number := _PRINTED_NUMBERS.get(text)) is not None:
        return number, len(text)
    kind, start, end, _ = next_token(text, 0)  # XLA's ParseInt64
    if kind != TokKind.kInt:
        raise SyntaxFault("expects integer", offset + start)
    number, after = int_value(text, start, end), skip(text, end)
    if number < 0:
        raise SyntaxFault("parameter number must be >= 0", offset + after)
    if after != len(text):
        raise SyntaxFault("expects ')' after parameter number", offset + after)
    return number, after


def _past_keyword(text: str, at: int, keyword: TokKind) -> int | None:
    """Where the token after ``keyword`` starts when the token at ``at`` is that keyword
    (``HloModule``, ``ENTRY``, ``ROOT``: a word written against ':' or '=' is a name), else
    None."""
    kind, _, end, _ = next_token(text, at)
    return skip(text, end) if kind == keyword else None


def _one_attribute(text: str) -> bool:
    """True when ``text`` is one ``, key=value`` attribute and nothing more."""
    try:
        read, end = read_attributes(text, 0)
    except SyntaxFault:
        return False
    return len(read) == 1 and end == len(text)


def _takes_metadata(value: str) -> bool:
    """True when XLA takes ``value`` as an instruction's metadata (the general reader says
    why not)."""
    try:
        check_metadata(value, 1, 1)
    except HloParseError:
        return False
    return True


_Key = TypeVar("_Key")
_Kept = TypeVar("_Kept")


def _remember(cache: dict[_Key, _Kept], key: _Key, value: _Kept) -> _Kept:
    """``cache[key] = value``, emptying ``cache`` first once it holds ``_LAYOUTS_KEPT``
    (lines that share nothing: keep few)."""
    if len(cache) >= _LAYOUTS_KEPT:
        cache.clear()
    cache[key] = value
    return value


def _operand_offset(operand_text: str, index: int) -> int | None:
    """Where operand ``index`` (its inline shape, if any) starts in ``operand_text``; None
    where the operands are not all plain ones (some written as instructions)."""
    try:
        found = split_operands(operand_text, check_shapes=False)
    except SyntaxFault:
        return None
    return found[index][2] if index < len(found) else None


def _no_attributes_after(text: str, pos: int) -> bool:
    """True when white space and a token that is no ',' (nor a comment) follow a computation's
    brace at ``pos``: no attributes follow it (what a dump always has; anything else is read
    by the grammar)."""
    end = len(text)
    while pos < end and text[pos] in " \t\r\n":
        pos += 1
    return pos < end and text[pos] not in ",/"


class _Visited:
    """Where a computation read again on use starts (``_LinesAgain``) and the instructions
    visited when it was first read, by name."""

    __slots__ = ("instructions", "line", "offset")

    def __init__(self, offset: int, line: int, instructions: dict[str, Instruction]) -> None:
        self.offset, self.line, self.instructions = offset, line, instructions


class _LinesAgain:
    """Reads a computation's instructions and root again from the text, the same as when
    first read, by the fast path alone (``Computation.read_on_use``; ``at`` is the offset and
    line they start at, or the offset alone when that line is the computation's own, its head
    written on one line, or, with them, the instructions visited when it was first read,
    which take their places): for a computation each of whose lines the fast path read, whose
    checks then passed. One serves the module's computations; it holds none, so a module of
    such computations holds no cycle."""

    __slots__ = ("checked", "reader")

    def __init__(self, reader: Reader, checked: frozenset[str]) -> None:
        self.reader, self.checked = reader, checked

    def __call__(self, computation: Computation, at: int | tuple[int, int] | _Visited) -> None:
        # (computations are read on use one at a time: the module's one reader is free)
        reader, visited = self.reader, None
        if isinstance(at, int):
            reader.pos, reader.line = at, computation.line
        elif isinstance(at, _Visited):
            reader.pos, reader.line, visited = at.offset, at.line, at.instructions
        else:
            reader.pos, reader.line = at
        reader._begin()
        instructions: list[Instruction] = []
        while True:
            read, _ = reader._lines(computation, self.checked)  # (it reads only the name)
            instructions += cast("list[Instruction]", read)  # (none left unmade)
            if len(read) < _RUN:
                break
        root = cast("Instruction", reader._last if reader._root is None else reader._root)
        if visited:  # in their places, the instructions visited when first read
            instructions = [visited.get(i.name, i) for i in instructions]
            root = visited.get(root.name, root)
        for key, value in (("instructions", instructions), ("root", root)):
            if key not in vars(computation):  # (one a caller set stays as set)
                setattr(computation, key, value)


def _values(instruction: Instruction) -> Mapping[str, str]:
    """The attribute values of ``instruction`` by key, as the checks after reading ask for
    them: its fast-path layout's while it holds one unsplit (a leading channel id and
    explicit groups are there empty, a metadata tail absent: no check reads them), else
    its own. Splitting a long line into attributes with positions costs more than those
    checks."""
    found = instruction._attributes
    return found.values if isinstance(found, _Layout) else instruction.attributes


def _operand_position(instruction: Instruction, index: int) -> tuple[int, int]:
    """Where operand ``index`` of ``instruction`` (its inline shape, if any) is written."""
    text, operands = instruction.text, instruction.operand_text
    at = _operand_offset(operands, index)
    if at is None:
        return instruction.line, instruction.column
    return instruction.position(text.find("(" + operands + ")", len(instruction.name)) + 1 + at)


_NO_ATTRIBUTES: Final = _Layout((), (), "", {})
# The attributes whose one name the scanner gives each line's own (``scan_lines``' callees).
_OPEN_CALLEES: Final = frozenset({"calls", "to_apply"})
# Names the general reader judges (a type or keyword: XLA's lexer reads them as such).
_GENERAL_NAMES: Final = frozenset(ELEMENT_BITS) | KEYWORDS
# Where XLA's parser expects the '(' after an opcode, in its words (most: its operands').
_BEFORE_OPERANDS: Final = {"constant": "before constant literal",
                           "parameter": "before parameter number"}


@functools.cache
def _checked_when_read(visited: frozenset[str]) -> frozenset[str]:
    """The opcodes whose instructions the fast path checks once read (``instructions``),
    those ``visited`` among them."""
    return CHECKED_OPCODES | CHANNEL_OPCODES | {"constant"} | visited

# The opcodes the fast path reads: async wrappers are left to the general reader (``_async``),
# and conditionals, whose attributes depend on their predicate's type, and scans, checked
# against the computation they call (``_check_branches``, ``_check_scan``).
_FAST_OPCODES: Final = OPCODES - frozenset(ASYNC_KINDS) - {"conditional", "scan"}
# The opcodes the fast path reads written without attributes: those that require none.
_BARE_OPCODES: Final = _FAST_OPCODES - set(REQUIRED_ATTRIBUTES)


# Attributes XLA checks against the instruction's shape (``_check_replication``).
_SHAPE_RULED: Final = frozenset({"parameter_replication"})
_MESH: Final = re.compile(r"mesh(?![A-Za-z0-9_.\-])")  # the word that starts a mesh's groups


def read_attributes(text: str, pos: int) -> tuple[list[tuple[str, int, int]], int]:
    """The ``, key=value`` attributes starting at ``pos``: (key, value start, value end) each
    (``attribute_value_end``), and the offset where the instruction ends (after its last
    value), read on XLA's tokens: a ``,`` and an attribute's name (``key=``, one token)
    before each value."""
    found: list[tuple[str, int, int]] = []
    end = pos
    c = TokenCursor(text, 1, 0, pos)
    while c.kind == TokKind.kComma:
        c.lex()
        if c.kind != TokKind.kAttributeName:
            raise AttributesCut("expects attribute name", c.start, found, False)
        key = text[c.start:c.end - 1]
        c.lex()
        start = c.start
        try:
            end = attribute_value_end(key, text, start)
        except SyntaxFault as fault:
            raise AttributesCut(fault.message, fault.offset,
                                [*found, (key, start, len(text))], True) from None
        found.append((key, start, end))
        c.jump(end)
    return found, end


def attribute_value_end(key: str, text: str, start: int) -> int:
    """Where the value of attribute ``key`` starting at ``start`` ends. Where a reader of the
    value's kind says where it ends, it decides: a JSON ``backend_config``, frontend
    attributes, a shape (``outfeed_shape``), an iota list or a mesh of replica groups (a
    ``SyntaxFault`` where that reader refuses it: the value is cut there). A custom call's
    ``literal`` is its shape and its value (``literal=f32[] 0.1``); any other value is one
    atom (``value_end``), as XLA's reader of each kind reads one."""
    if key == "backend_config" and text.startswith("{", start):
        json_end = json_dict_end(text, start)  # XLA's lexer: braces alone count, strings aside
        if json_end < 0:
            raise SyntaxFault("expects JSON dict", start)
        return json_end
    if key == "frontend_attributes" and text.startswith("{", start):
        attributes_end = frontend_attributes_end(text, start)
        if attributes_end is not None:
            return attributes_end
    if key == "entry_computation_layout" and text.startswith("{", start):
        layout_end = computation_layout_end(text, start)
        if layout_end is not None:
            return layout_end
    if key == "outfeed_shape":
        end, refused = read_shape(text, start, len(text), signature=True)
        if refused is not None:
            raise SyntaxFault(*refused)
        return end
    if key == "replica_groups" and (text.startswith("[", start) or _MESH.match(text, start)):
        return device_list_end(text, start)
    if key != "literal":
        return value_end(text, start, continued=False)
    end = value_end(text, start)  # the shape, its brackets continuing it
    after = skip(text, end)
    return value_end(text, after) if _LITERAL_VALUE.match(text, after) else end


def _parameter_list_end(text: str, at: int, recorded: list[tuple[str, int]] | None = None
                        ) -> int:
    """Where the token after a signature's parameter list (its '(' at ``at``) starts, read
    as XLA's ``ParseParamList`` reads it: ``'(' [ name shape ( ',' name shape )* ] ')'``, a
    name an identifier or ``name:``, each shape by the one shape reader (what XLA records
    in them appended to ``recorded``); a ``SyntaxFault`` at XLA's token where XLA refuses
    it."""
    c = TokenCursor(text, 1, 0, at)
    try:
        c.lex()  # the '('
        if c.kind != TokKind.kRparen:
            while True:
                if c.kind not in (TokKind.kIdent, TokKind.kName):
                    raise c.error("expects name")
                c.lex()
                end, refused = read_shape(text, c.start, len(text), signature=True,
                                          recorded=recorded)
                if refused is not None:
                    raise SyntaxFault(*(recorded[0] if recorded else refused))
                c.jump(end)
                if not c.eat(TokKind.kComma):
                    break
        c.expect(TokKind.kRparen, "expects ')' at the end of param list")
    except HloParseError as error:
        raise SyntaxFault(error.message, error.column) from None
    return c.start


def _refuse_as_a_literal(text: str, start: int, shape: str) -> None:
    """Where a constant's ')' is missing, XLA reads its literal (of ``shape``, from
    ``start``) token by token and stops in it or after it: a ``SyntaxFault`` there, if it
    stops within the next 64 KiB of ``text`` (or at its end)."""
    window = text[start:start + _LITERAL_WINDOW]
    at_end = start + len(window) == len(text)
    try:
        read_literal(window, parse_shape(shape))
    except SyntaxFault as fault:
        if at_end or fault.offset < len(window) - 1:
            raise SyntaxFault(fault.message, start + fault.offset) from None
        return
    if at_end:  # the literal is whole and the text ends
        raise SyntaxFault("expects ')' after constant literal", len(text))


def _last_operand(text: str, start: int) -> int:
    """Where the last operand of a list from ``start`` to the end of ``text`` starts: after
    its last ',' outside brackets, by XLA's tokens."""
    last, depth, at = start, 0, start
    while True:
        kind, _, end, at = next_token(text, at)
        if kind == TokKind.kEof:
            return skip(text, last)
        depth += (kind in _OPENERS) - (kind in _CLOSERS)
        if kind == TokKind.kComma and depth == 0:
            last = end


class AttributesCut(SyntaxFault):
    """An attribute list refused where its values are cut (text after a value that is no
    ``, name=``; a value whose brackets do not balance), with the attributes ``found``
    before it, ``(key, value start, value end)``: XLA's parser judges each of those first,
    and may stop in one. With ``value_cut``, the last one is the value being cut, its end
    the text's."""

    def __init__(self, message: str, offset: int, found: list[tuple[str, int, int]],
                 value_cut: bool) -> None:
        super().__init__(message, offset)
        self.found, self.value_cut = found, value_cut


def fast_paths() -> bool:
    """Whether the reader's one-line fast paths read what they can (the default), read from
    the environment when a read starts: ``MESHTOPO_HLO_FAST_PATHS=0`` turns them off, so
    that the general reader reads every line (the answers are the same, more slowly)."""
    return os.environ.get("MESHTOPO_HLO_FAST_PATHS", "") != "0"
