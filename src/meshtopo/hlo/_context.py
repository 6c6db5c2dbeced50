"""What a collective needs from its module after the line is read: counts, placement,
computation roots, operand definitions, and caches shared by every collective of a module.

``ScanContext`` is the base used by the streaming reader (which fills ``roots`` and the
operand definitions as it goes); ``TextContext`` adds lookups in the whole module text for
``parse_module``.
"""

from __future__ import annotations

import re

from .._device_list import CollectiveDeviceList
from .._errors import InternalError
from .._modes import CollectiveOpGroupMode
from .._placement import DeviceAssignment
from ._collective import Collective, DecodedAttributes
from ._explicit import PendingGroups
from ._shape import Shape, parse_shape

SHAPE_PATTERN = (
    r"(?:[a-z][a-z0-9]*\[[^\]\n]*\](?:\{[^}\n]*\})?"
    r"|\((?:[^()\n]|\((?:[^()\n]|\((?:[^()\n]|\([^()\n]*\))*\))*\))*\))"
)
ROOT_LINE = re.compile(
    r"\n[ \t]*ROOT[ \t]+%?[^\s=]+[ \t]*=[ \t]*(" + SHAPE_PATTERN + r")[ \t]+([\w\-]+)\("
)


class ScanContext:
    """Module-wide facts and caches for the collectives of one module."""

    def __init__(
        self,
        replica_count: int = 1,
        num_partitions: int = 1,
        device_assignment: DeviceAssignment | None = None,
    ) -> None:
        self.replica_count = replica_count
        self.num_partitions = num_partitions
        self.roots: dict[str, tuple[str, str]] = {}
        self.group_cache: dict[str, CollectiveDeviceList] = {}
        self.pairs_cache: dict[str, list[tuple[int, int]]] = {}
        self.slice_sizes_cache: dict[str, list[tuple[int, ...]]] = {}
        self.dims_cache: dict[str, tuple[int, ...]] = {}
        # Long explicit lists met by the running scan, decoded together when it ends.
        self.pending_groups: dict[str, PendingGroups] = {}
        # One string per distinct shape text, shared by the collectives that write it.
        self.shapes: dict[str, str] = {}
        self.wrapped: dict[str, Collective] = {}
        # The collective at the root of each computation (for async wrappers), and whether
        # the last scan found any op that ``Linker`` has to pair (not a plain sync collective).
        self.root_collectives: dict[str, Collective] = {}
        self.needs_link = False
        # Decoded attributes per distinct attribute text (see ``_scan``).
        self.templates: dict[tuple[str, bool, str],
                             tuple[DecodedAttributes | None, CollectiveOpGroupMode | None]
                             | None] = {}
        self._assignment = device_assignment

    def default_assignment(self) -> DeviceAssignment:
        """The module's device assignment: the one given to the reader, else XLA's default
        placement for the module's replica and partition counts (built on first use)."""
        if self._assignment is None:
            self._assignment = DeviceAssignment.default(self.replica_count, self.num_partitions)
        return self._assignment

    def computation_root(self, name: str) -> tuple[str, str] | None:
        """(root opcode, root element type) of computation ``name``, if known."""
        return self.roots.get(name)

    def line_text(self, offset: int) -> str:
        """The text from ``offset`` of the module text to the end of its line (readers
        without the module text keep each instruction's text instead)."""
        raise InternalError("this reader keeps no module text; the instruction text was lost")

    def instruction_text(self, offset: int) -> str:
        """``line_text(offset)`` without trailing white space."""
        return self.line_text(offset).rstrip()

    def definition(self, collective: Collective, name: str) -> str | None:
        """The shape text of operand ``name`` of ``collective``, if its definition was seen."""
        return collective_inline(collective, name)

    def operand_shape(self, collective: Collective, name: str) -> Shape | None:
        """The parsed shape of an operand, or None when neither written inline nor seen."""
        text = self.definition(collective, name)
        return None if text is None else parse_shape(text, collective.line, collective.column)

    def payload_bytes(self, collective: Collective) -> int | None:
        """``Collective.bytes``: see its docstring for the rule per opcode."""
        wrapped = self.wrapped.get(collective.name)
        if wrapped is not None and wrapped is not collective:
            return self.payload_bytes(wrapped)
        opcode = collective.opcode
        shape = collective.shape
        if opcode.endswith("-done"):
            if opcode == "recv-done":
                return _element_bytes(shape, 0)
            if opcode == "send-done":
                return None
            return shape.byte_size
        underlying = collective.underlying_opcode
        if underlying == "all-gather":
            if opcode == "all-gather-start" and shape.tuple_shapes and len(shape.tuple_shapes) == 2:
                return shape.tuple_shapes[1].byte_size
            return shape.byte_size
        if underlying == "recv":
            return _element_bytes(shape, 0)
        operands = collective.operand_shapes
        if underlying in ("ragged-all-to-all", "collective-permute", "send"):
            operands = operands[:1]
        sizes = [s.byte_size if s is not None else None for s in operands]
        if not sizes or any(size is None for size in sizes):
            # Without operand shapes, ops whose result has the operand's size use the result.
            same_size = ("all-reduce", "all-to-all", "collective-broadcast", "collective-permute")
            return shape.byte_size if opcode in same_size else None
        return sum(size for size in sizes if size is not None)


class TextContext(ScanContext):
    """A ``ScanContext`` over the whole module text: roots and definitions looked up lazily."""

    def __init__(
        self,
        text: str,
        replica_count: int = 1,
        num_partitions: int = 1,
        device_assignment: DeviceAssignment | None = None,
    ) -> None:
        super().__init__(replica_count, num_partitions, device_assignment)
        self.text = text
        self.set_computations([])

    def set_computations(self, computations: list[tuple[int, str]]) -> None:
        """The (offset, name) of every computation header, in text order (found by the scan
        that reads the collectives)."""
        self._starts = [offset for offset, _ in computations]
        self._names = [name for _, name in computations]
        self._spans = {name: (offset, index) for index, (offset, name) in enumerate(computations)}
        self._definitions: dict[str, dict[str, str]] = {}

    def line_text(self, offset: int) -> str:
        end = self.text.find("\n", offset)
        return self.text[offset:end if end >= 0 else len(self.text)]

    def _span(self, computation: str | None) -> tuple[int, int]:
        if computation is None or computation not in self._spans:
            return 0, len(self.text)
        offset, index = self._spans[computation]
        end = self._starts[index + 1] if index + 1 < len(self._starts) else len(self.text)
        return offset, end

    def computation_root(self, name: str) -> tuple[str, str] | None:
        if name not in self.roots and name in self._spans:
            start, end = self._span(name)
            match = ROOT_LINE.search(self.text, start, end)
            if match is not None:
                shape = match.group(1)
                self.roots[name] = (match.group(2), shape[: shape.find("[")] if "[" in shape else "")
        return self.roots.get(name)

    def definition(self, collective: Collective, name: str) -> str | None:
        inline = collective_inline(collective, name)
        if inline is not None:
            return inline
        table = self._definitions.get(collective.computation or "")
        if table is None:
            start, end = self._span(collective.computation)
            table = {
                m.group(1).lstrip("%"): m.group(2)
                for m in DEFINITION_LINE.finditer(self.text, max(start - 1, 0), end)
            }
            self._definitions[collective.computation or ""] = table
        return table.get(name)


DEFINITION_LINE = re.compile(
    r"\n[ \t]*(?:ROOT[ \t]+)?(%?[^\s=]+)[ \t]*=[ \t]*(" + SHAPE_PATTERN + r")[ \t]+[\w\-]+\("
)


def collective_inline(collective: Collective, name: str) -> str | None:
    """The inline shape written before operand ``name`` (``f32[8]{0} %x``), if any."""
    inline = getattr(collective, "inline_shapes", None)
    if not inline:
        return None
    for operand, shape in zip(collective.operands, inline, strict=False):
        if operand == name and shape:
            return str(shape)
    return None


def _element_bytes(shape: Shape, index: int) -> int | None:
    if shape.tuple_shapes is None:
        return shape.byte_size
    if index < len(shape.tuple_shapes):
        return shape.tuple_shapes[index].byte_size
    return None
