"""The editable copy a pass builds its result in: computations as lists of instruction lines.

A ``Draft`` is made from a parsed ``Module`` (which it never changes): each instruction
keeps its text until a pass edits it, so the untouched ones print exactly as read. A pass
replaces, inserts and removes ``Line`` records and moves control predecessors; ``finish``
prints the draft with the module's header and reads it back through ``parse_module``, so
the reader stays the one place that builds modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._module import Module, parse_module
from .._printer import computation_lines, header_line, instruction_line, joined_module
from .._structure import Computation, Instruction


class Line:
    """One instruction to print: ``name = shape opcode(operand_text), attributes``.

    ``attributes`` excludes ``control-predecessors`` (held in ``control_predecessors``) and is
    split from the parsed instruction on first use; ``text`` is the instruction as read while
    nothing was edited."""

    def __init__(self, name: str, shape: str, opcode: str, operand_text: str,
                 attributes: list[tuple[str, str]] | None,
                 control_predecessors: list[str] | None = None,
                 operands: tuple[str, ...] = (), text: str | None = None,
                 source: Instruction | None = None) -> None:
        self.name = name
        self.shape = shape
        self.opcode = opcode
        self.operand_text = operand_text
        self._attributes = attributes
        self.control_predecessors = control_predecessors if control_predecessors else []
        self.operands = operands
        self.text = text
        self._source = source

    @classmethod
    def of(cls, instruction: Instruction) -> Line:
        """The line of a parsed instruction (printed from its own text until edited)."""
        return cls(instruction.name, instruction.shape_text, instruction.opcode,
                   instruction.operand_text, None, list(instruction.control_predecessors),
                   instruction.operands, instruction.text, instruction)

    @property
    def attributes(self) -> list[tuple[str, str]]:
        """``(key, raw value)`` in written order, ``control-predecessors`` left out."""
        if self._attributes is None:
            source = self._source
            self._attributes = [] if source is None else [
                (a.key, a.value) for a in source.attribute_list
                if a.key != "control-predecessors"]
        return self._attributes

    @attributes.setter
    def attributes(self, value: list[tuple[str, str]]) -> None:
        self._attributes = value

    def attribute(self, key: str) -> str | None:
        """The raw value of attribute ``key``, if written."""
        return next((v for k, v in self.attributes if k == key), None)

    def edited(self) -> None:
        """Marks the line as changed: it prints from its parts from now on."""
        self.text = None

    def print(self) -> str:
        """The instruction's text from its name on."""
        if self.text is not None:
            return self.text
        parts = [f"{self.name} = {self.shape} {self.opcode}({self.operand_text})"]
        parts += [f"{k}={v}" for k, v in self.attributes]
        if self.control_predecessors:
            names = ", ".join(f"%{n}" for n in self.control_predecessors)
            parts.append(f"control-predecessors={{{names}}}")
        return ", ".join(parts)


def operand_list(names: list[str] | tuple[str, ...]) -> str:
    """Operand text naming ``names``."""
    return ", ".join(f"%{n}" for n in names)


@dataclass(eq=False)
class DraftComputation:
    """A computation being rewritten: its head (kept from the parsed one), its lines in
    order and the name of its root."""

    source: Computation
    lines: list[Line]
    root: str | None

    def print(self) -> str:
        """The computation's text."""
        return computation_lines(
            self.source, (instruction_line(line.print(), line.name == self.root)
                          for line in self.lines))


class Draft:
    """An editable copy of ``module``: computations by name, in text order."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.computations: dict[str, DraftComputation] = {}
        for name, computation in module.computations.items():
            root = computation.root
            self.computations[name] = DraftComputation(
                computation, [Line.of(i) for i in computation.instructions],
                root.name if root is not None else None)
        self.names = {line.name for c in self.computations.values() for line in c.lines}
        self.names.update(self.computations)

    def unique(self, base: str) -> str:
        """A name not yet used in the module: ``base``, else ``base.N``."""
        name, n = base, 0
        while name in self.names:
            n += 1
            name = f"{base}.{n}"
        self.names.add(name)
        return name

    def add_computation(self, before: str, computation: Computation, lines: list[Line],
                        root: str) -> None:
        """Inserts a new computation (head from ``computation``) just before ``before``."""
        items = list(self.computations.items())
        at = next(n for n, (name, _) in enumerate(items) if name == before)
        items.insert(at, (computation.name, DraftComputation(computation, lines, root)))
        self.computations = dict(items)

    def text(self) -> str:
        """The draft in XLA's text form."""
        module = self.module
        header = header_line(module.name, module.header_attributes, module.replica_count,
                             module.num_partitions)
        return joined_module(header, module.stack_frames,
                             [c.print() for c in self.computations.values()])

    def finish(self) -> Module:
        """The rewritten module, read back through ``parse_module`` with the source module's
        placement."""
        module = self.module
        assignment = module.device_assignment if module.device_assignment_source != "default" \
            else None
        return parse_module(self.text(), module.replica_count, module.num_partitions,
                            assignment, module.source)


def new_computation(name: str, signature: str) -> Computation:
    """The head of a computation a pass creates."""
    return Computation(name, False, 0, signature)
