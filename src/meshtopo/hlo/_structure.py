"""The full structural model: every computation and every instruction, in text order.

Built lazily by ``Module.computations``. Each ``Instruction`` keeps its opcode as written
(unknown opcodes are fine), its operand names, every attribute as raw text, and the
computations it calls; ``Computation.called_computations`` and
``Module.computations`` together give the call graph (``calls=``, ``to_apply=``, while
``body=``/``condition=``, conditional branches, fusions, async wrappers, custom calls).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._errors import HloParseError
from ._collective import Collective
from ._lexer import (
    operand_name,
    parse_name_list,
    remap_error,
    split_attributes,
    split_operands,
)
from ._line import operands_end, shape_end
from ._shape import Shape, parse_shape

if TYPE_CHECKING:
    from ._module import Module

# Attributes whose value names computations (a name, or a braced list of names).
CALL_ATTRIBUTES = (
    "calls", "to_apply", "body", "condition", "branch_computations", "true_computation",
    "false_computation", "select", "scatter", "called_computations", "comparator",
)  # fmt: skip
_LITERAL_OPCODES = frozenset({"constant", "parameter", "iota", "rng-bit-generator-state"})
_HEAD = re.compile(r"[ \t]*(ROOT[ \t]+)?(%?[^\s=%]+|%[^\s=]+)[ \t]*=[ \t]*")
_OPCODE = re.compile(r"[ \t]*([A-Za-z][\w\-]*)[ \t]*\(")
_SIGNATURE = re.compile(r"\n(ENTRY[ \t]+)?(%?[^\s(){}=,\"%]+|%[^\s(){}=,\"]+)[ \t]*([^\n]*?)\{[ \t]*\r?$",
                        re.M)
_THREAD = re.compile(r'execution_thread="([^"]*)"')


@dataclass
class Instruction:
    """One instruction line: ``[ROOT] %name = shape opcode(operands), attr=value, ...``."""

    name: str
    opcode: str
    shape_text: str
    operands: tuple[str, ...]
    attributes: dict[str, str]
    line: int
    column: int
    computation: str
    is_root: bool = False
    called_computations: tuple[str, ...] = ()
    control_predecessors: tuple[str, ...] = ()
    operand_text: str = ""
    collective: Collective | None = None

    @property
    def shape(self) -> Shape:
        """The result shape."""
        return parse_shape(self.shape_text, self.line, self.column)


@dataclass
class Computation:
    """A computation: its instructions in text (for scheduled modules: schedule) order."""

    name: str
    is_entry: bool
    line: int
    signature: str
    instructions: list[Instruction] = field(default_factory=list)
    execution_thread: str | None = None

    @property
    def root(self) -> Instruction | None:
        """The ROOT instruction (the last one when none is marked)."""
        for instruction in self.instructions:
            if instruction.is_root:
                return instruction
        return self.instructions[-1] if self.instructions else None

    @property
    def called_computations(self) -> list[str]:
        """Computations called by any instruction here, first-call order, no repeats."""
        seen: dict[str, None] = {}
        for instruction in self.instructions:
            for name in instruction.called_computations:
                seen.setdefault(name, None)
        return list(seen)

    def instruction(self, name: str) -> Instruction:
        """The instruction called ``name`` (``KeyError``-free: raises ``InvalidArgumentError``)."""
        from .._errors import InvalidArgumentError

        for instruction in self.instructions:
            if instruction.name == name:
                return instruction
        raise InvalidArgumentError(f"computation {self.name} has no instruction {name}")

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)


def parse_computations(
    text: str, headers: list[tuple[int, str, bool]], module: Module
) -> dict[str, Computation]:
    """Every computation of ``text`` (headers as the scan found them), in text order."""
    by_name = module.collectives_by_name
    computations: dict[str, Computation] = {}
    for index, (offset, name, is_entry) in enumerate(headers):
        line = 1 + text.count("\n", 0, offset + 1)
        header_end = text.find("\n", offset + 1)
        header_end = len(text) if header_end < 0 else header_end
        limit = headers[index + 1][0] if index + 1 < len(headers) else len(text)
        close = text.find("\n}", header_end, limit + 1)
        if close < 0:
            raise HloParseError(
                f"computation {name} is never closed (expected '}}')", line, 1, module.source)
        signature_match = _SIGNATURE.match(text, offset)
        signature = signature_match.group(3).strip() if signature_match else ""
        thread = _THREAD.search(signature)
        computation = Computation(name, is_entry, line, signature,
                                  execution_thread=thread.group(1) if thread else None)
        if name in computations:
            raise HloParseError(f"computation {name} is defined twice", line, 1, module.source)
        computations[name] = computation
        body = text[header_end:close]
        try:
            _read_body(body, line, computation, by_name)
        except HloParseError as error:
            raise HloParseError(error.message, error.line, error.column, module.source) from None
    return computations


def _read_body(body: str, header_line: int, computation: Computation,
               collectives: dict[str, Collective]) -> None:
    lines = body.split("\n")
    index = 1
    while index < len(lines):
        raw = lines[index]
        line = header_line + index
        stripped = raw.strip()
        if not stripped or stripped.startswith("//"):
            index += 1
            continue
        logical = raw
        extra = 0
        while _open(logical) and index + extra + 1 < len(lines) and extra < 1000:
            extra += 1
            logical += "\n" + lines[index + extra]
        try:
            instruction = _read_instruction(logical.replace("\n", " "), line, computation.name)
        except HloParseError as error:
            raise remap_error(error, logical, line) from None
        collective = collectives.get(instruction.name)
        if collective is not None and collective.computation == computation.name:
            instruction.collective = collective
        computation.instructions.append(instruction)
        index += 1 + extra


def _open(text: str) -> bool:
    stripped = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text).rstrip()
    return stripped.endswith(",") or sum(map(stripped.count, "{([")) > sum(
        map(stripped.count, "})]"))


def _read_instruction(text: str, line: int, computation: str) -> Instruction:
    head = _HEAD.match(text)
    if head is None:
        raise HloParseError(
            f"expected an instruction 'name = shape opcode(...)' but found "
            f"{text.strip()[:30]!r}", line, len(text) - len(text.lstrip()) + 1)
    end_of_shape = shape_end(text, head.end())
    opcode = _OPCODE.match(text, end_of_shape)
    if opcode is None:
        raise HloParseError(
            f"expected an opcode followed by '(' after the shape of {head.group(2)}",
            line, end_of_shape + 1)
    operands_start = opcode.end()
    close = operands_end(text, operands_start, line)
    operand_text = text[operands_start:close]
    names: tuple[str, ...] = ()
    if opcode.group(1) not in _LITERAL_OPCODES:
        names = tuple(operand_name(op)[0] for op, _ in split_operands(operand_text, line,
                                                                       operands_start + 1))
    rest = text[close + 1:]
    if rest.strip() and not rest.lstrip().startswith(","):
        raise HloParseError(f"unexpected {rest.strip()[:20]!r} after the operands", line, close + 2)
    attributes: dict[str, str] = {}
    for key, value, column in split_attributes(rest, line, close + 2):
        if key in attributes:
            raise HloParseError(f"attribute {key} already exists", line, column)
        attributes[key] = value
    called: list[str] = []
    for key, value in attributes.items():
        if key in CALL_ATTRIBUTES:
            called.extend(parse_name_list(value, key, line, 1))
    control = tuple(parse_name_list(attributes.get("control-predecessors", "{}"),
                                    "control-predecessors", line, 1))
    return Instruction(
        name=head.group(2).lstrip("%"), opcode=opcode.group(1),
        shape_text=text[head.end():end_of_shape].strip(), operands=names, attributes=attributes,
        line=line, column=head.start(2) + 1, computation=computation,
        is_root=head.group(1) is not None, called_computations=tuple(called),
        control_predecessors=control, operand_text=operand_text,
    )
