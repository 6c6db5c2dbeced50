"""The structural model: computations and their instructions, as the reader found them.

An ``Instruction`` keeps its opcode as written (one of XLA's, ``_opcodes``), its operand names,
every attribute as raw value text with its position, and the computations it calls;
``Computation.called_computations`` and ``Module.computations`` together give the call graph
(``calls=``, ``to_apply=``, while ``body=``/``condition=``, conditional branches, fusions,
async wrappers, custom calls). Nothing here reads text: ``_reader`` builds these records.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from .._collector import paused
from .._errors import HloParseError, InvalidArgumentError
from ._shape import Shape
from ._shape_syntax import parse_shape

if TYPE_CHECKING:
    from ._collective import Collective

# Attributes whose value names computations (a name, or a braced list of names).
CALL_ATTRIBUTES = frozenset({
    "calls", "to_apply", "body", "condition", "branch_computations", "true_computation",
    "false_computation", "select", "scatter", "called_computations", "comparator",
})  # fmt: skip


class Attribute(NamedTuple):
    """``key=value`` as written: the value's raw text and the 1-based line and column where
    the value starts."""

    key: str
    value: str
    line: int
    column: int


# What a computation read on use (``Computation.read_on_use``) reads on first use.
_READ_ON_USE = frozenset({"instructions", "root", "signature"})
_READING = threading.RLock()  # held while one is read (a reader may ask for another)


def _fresh_lock() -> None:
    """A process forked while another thread read a computation starts with the lock free
    (the computation that thread read is read again on use)."""
    global _READING
    _READING = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock)

# An instruction's attributes, or what makes them on first use (``Instruction.attribute_list``).
Attributes = list[Attribute] | Callable[["Instruction"], list[Attribute]]
# What prints an instruction read from a proto on first use: its (text, attribute_at,
# attributes).
Printer = Callable[["Instruction"], tuple[str, int, Attributes]]


@dataclass(eq=False, slots=True)
class Instruction:
    """One instruction: ``[ROOT] name = shape opcode(operands), key=value, ...``.

    ``line``/``column`` (1-based) locate its name token; ``attribute_text`` is the
    attribute list as written (from the first ``,`` after the operands), the end of
    ``text`` from ``attribute_at``. ``attribute_list`` holds every
    attribute in written order with positions (split on first use where the reader's fast
    path already checked the text); ``attributes`` is the same as a dict of raw values.
    An instruction read from a proto is printed on first use of ``text``,
    ``attribute_at`` or ``attribute_list`` (a ``Printer`` makes the three), and its
    ``operand_text`` is its operands' names, joined on first use: its line and column do not
    depend on its text, and most are never asked for. Where the fast path read a line whose
    operands are names as XLA prints them, ``operands`` are split from ``text`` on first use
    (a tuple kept for every instruction would be one more object for the collector to walk).
    Where the fast path read the line, ``leading_channel`` holds the digits of a leading
    ``channel_id``, ``groups_span`` where in ``text`` the ``replica_groups`` value after it
    is when written in XLA's printed explicit form (``_explicit_scan`` checked it; the value
    is ``explicit_groups``, sliced on use, as such lists can be most of a line), and
    ``shared_attributes`` the attribute text after those (what collectives that differ only
    in channel id and explicit groups share); ``shared_attributes`` is None otherwise.
    """

    name: str
    opcode: str
    shape_text: str
    _operands: tuple[str, ...] | None
    line: int
    column: int
    computation: str
    is_root: bool
    _operand_text: str | None
    _text: str | Printer
    _attributes: Attributes
    called_computations: tuple[str, ...] = ()
    control_predecessors: tuple[str, ...] = ()
    inline_shapes: tuple[str | None, ...] = ()
    _attribute_at: int = -1
    leading_channel: str | None = None
    groups_span: tuple[int, int] | None = None
    shared_attributes: str | None = None
    collective: Collective | None = None

    @property
    def operands(self) -> tuple[str, ...]:
        """The operands' names (no ``%``), in order."""
        found = self._operands
        if found is None:  # names as XLA prints them, in the text: split on first use
            found = self._operands = tuple(self.operand_text[1:].split(", %"))
        return found

    @operands.setter
    def operands(self, value: tuple[str, ...]) -> None:
        self._operands = value

    @property
    def operand_text(self) -> str:
        """What is written between the opcode's parentheses (None given: the operands'
        names, as XLA prints them, joined from ``operands`` or, when those are None too,
        cut from ``text`` before ``attribute_at``)."""
        found = self._operand_text
        if found is None:
            operands = self._operands
            if operands is None:
                text, close = cast("str", self._text), self._attribute_at - 1
                found = text[text.rfind("(", 0, close) + 1:close]
            else:
                found = "%" + ", %".join(operands) if operands else ""
            self._operand_text = found
        return found

    @operand_text.setter
    def operand_text(self, value: str) -> None:
        self._keep_operands()
        self._operand_text = value

    def _keep_operands(self) -> None:
        """Split the operands out of the text before the text changes."""
        if self._operands is None:
            self._operands = self.operands

    @property
    def text(self) -> str:
        """The instruction as written, from its name (``ROOT`` and indentation left out)."""
        found = self._text
        if not isinstance(found, str):
            found = self._printed(found)
        return found

    @text.setter
    def text(self, value: str) -> None:
        if not isinstance(self._text, str):
            self._printed(self._text)  # what goes with the text stays as printed
        self._keep_operands()
        self._text = value

    @property
    def attribute_at(self) -> int:
        """Where in ``text`` the attribute list starts (its first ``,``); -1 when it has
        none."""
        if not isinstance(self._text, str):
            self._printed(self._text)
        return self._attribute_at

    @attribute_at.setter
    def attribute_at(self, value: int) -> None:
        if not isinstance(self._text, str):
            self._printed(self._text)
        self._keep_operands()
        self._attribute_at = value

    def _printed(self, printer: Printer) -> str:
        self._text, self._attribute_at, self._attributes = printer(self)
        return self._text

    @property
    def attribute_list(self) -> list[Attribute]:
        """Every attribute in written order, with the position of its value."""
        if not isinstance(self._text, str):
            self._printed(self._text)
        found = self._attributes
        if callable(found):
            found = self._attributes = found(self)
        return found

    @property
    def explicit_groups(self) -> str | None:
        """The explicit ``replica_groups`` value at ``groups_span``, or None."""
        span = self.groups_span
        return None if span is None else self.text[span[0]:span[1]]

    @property
    def attribute_text(self) -> str:
        """The attribute list as written, from the first ``,`` after the operands ("" when
        there is none)."""
        return "" if self.attribute_at < 0 else self.text[self.attribute_at:]

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of ``offset`` into ``text``."""
        newline = self.text.rfind("\n", 0, offset)
        if newline < 0:
            return self.line, self.column + offset
        return self.line + self.text.count("\n", 0, offset), offset - newline

    @property
    def attributes(self) -> dict[str, str]:
        """Every attribute as ``key -> raw value text`` (``metadata`` etc. included)."""
        return {a.key: a.value for a in self.attribute_list}

    @property
    def shape(self) -> Shape:
        """The result shape (written, or inferred where it is not: ``_infer``); an
        ``HloParseError`` when it was neither written nor inferred (``shape_text`` is "")."""
        if not self.shape_text:
            raise HloParseError(f"the shape of {self.name} is not written and meshtopo does not "
                                f"infer it for {self.opcode}", self.line, self.column)
        return parse_shape(self.shape_text, self.line, self.column)

    def __repr__(self) -> str:
        return f"<Instruction {self.opcode} {self.name} at {self.line}:{self.column}>"


class Computation:
    """A computation: its instructions in text (for scheduled modules: schedule) order.

    A computation that holds no collective is read on first use of ``instructions``,
    ``by_name``, ``root`` or ``signature`` (``read_on_use``) when read from a proto (its line
    and its instruction count, which place every later line, are known without them), and
    any computation, its signature as written kept, on first use of the others from text
    when the reader's fast path read every line of it (read again the same way, its
    collectives' instructions, kept, in their places: until then it holds no other
    instruction for the collector to walk).
    ``by_name`` is made from ``instructions`` on first use when not given: most computations
    of a module are never looked up by name.
    """

    def __init__(
        self, name: str, is_entry: bool, line: int, signature: str,
        instructions: list[Instruction] | None = None, execution_thread: str | None = None,
        by_name: dict[str, Instruction] | None = None, root: Instruction | None = None,
        written_inline: bool = False,
    ) -> None:
        self.name = name
        self.is_entry = is_entry
        self.line = line
        self.signature = signature
        self.instructions: list[Instruction] = [] if instructions is None else instructions
        self.execution_thread = execution_thread
        self._by_name = by_name
        self.root = root
        self.written_inline = written_inline  # as an attribute's value (``to_apply={...}``)
        self._unread: Callable[[Computation, Any], None] | None = None

    # What each instruction that calls computations calls, while it is known unread
    # (``read_on_use``; a class default, which a pickled computation without it reads too).
    _calls: Sequence[tuple[str, ...]] | None = None

    _unread_at: Any = None  # what ``read_on_use`` hands its reader (a class default)

    def read_on_use(self, reader: Callable[[Computation, Any], None],
                    calls: Sequence[tuple[str, ...]] | None = None, *, at: Any = None,
                    signature_known: bool = False) -> None:
        """``reader(computation, at)`` sets ``instructions``, ``root`` and ``signature``
        (``signature`` stays as set when ``signature_known``), each once complete, when one
        of them or ``by_name`` is first asked for (until then they are not set, so reading
        any other attribute costs nothing more); an error it raises goes to that caller,
        and the next use reads again. Computations are read on use one at a time.
        ``calls``, when given, is what each of its instructions that calls computations
        calls, in order: ``called_computations`` is answered from it until then (asking
        for it reads nothing). ``at`` is what the reader needs of this computation (one
        reader serves many)."""
        del self.instructions, self.root
        if not signature_known:
            del self.signature
        self._by_name = None
        self._unread, self._unread_at = reader, at
        self._calls = calls

    if not TYPE_CHECKING:  # the checker sees the declared attributes only

        def __getattr__(self, name: str) -> object:
            # Called only for an attribute that is not set: those ``read_on_use`` holds back.
            if name in _READ_ON_USE and "_unread" in self.__dict__:
                # A thread that asks while another reads waits for it. The collector waits
                # too: one asking for many computations leaves what they make to one walk.
                with _READING, paused():
                    reader = self._unread
                    if reader is not None:
                        reader(self, self._unread_at)
                        self._unread = self._unread_at = None
                    if name in self.__dict__:
                        return self.__dict__[name]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def add(self, instructions: list[Instruction]) -> None:
        """Append ``instructions`` (read in text order) to ``instructions`` (and to ``by_name``
        once made)."""
        self.instructions += instructions
        if self._by_name is not None:
            self._by_name.update({instruction.name: instruction for instruction in instructions})

    @property
    def by_name(self) -> dict[str, Instruction]:
        """The instructions by name (made on first use when not given)."""
        found = self._by_name
        if found is None:
            found = {instruction.name: instruction for instruction in self.instructions}
            self._by_name = found
        return found

    @by_name.setter
    def by_name(self, value: dict[str, Instruction]) -> None:
        self._by_name = value

    @property
    def called_computations(self) -> list[str]:
        """Computations called by any instruction here, first-call order, no repeats."""
        if self._calls is not None and "instructions" not in self.__dict__:
            return list(dict.fromkeys(itertools.chain.from_iterable(self._calls)))
        seen: dict[str, None] = {}
        for instruction in self.instructions:
            for name in instruction.called_computations:
                seen.setdefault(name, None)
        return list(seen)

    def instruction(self, name: str) -> Instruction:
        """The instruction called ``name`` (``InvalidArgumentError`` when there is none)."""
        found = self.by_name.get(name)
        if found is None:
            raise InvalidArgumentError(f"computation {self.name} has no instruction {name}")
        return found

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __repr__(self) -> str:
        return f"<Computation {self.name}: {len(self.instructions)} instructions>"
