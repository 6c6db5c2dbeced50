"""HLO shapes as XLA prints them: arrays, tuples, tokens, layouts and dynamic dimensions.

Grammar (``xla/hlo/parser/hlo_parser.cc``, ``ParseShape``)::

    shape  := tuple | array | 'b' '(' array ')'
    tuple  := '(' [ shape ( ',' shape )* ] ')'
    array  := TYPE '[' [ dim ( ',' dim )* ] ']' [ '{' layout '}' ]
    dim    := INT | '<=' INT | '?'

The layout is kept as raw text (``"1,0:T(8,128)"``); meshtopo never needs its parts. Shapes
are read by one reader, ``_shape_syntax.parse_shape``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

# Bits per element; sub-byte types occupy a whole byte unless the layout packs them (E(n)).
ELEMENT_BITS: dict[str, int] = {
    "pred": 8,
    "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
    "f4e2m1fn": 4, "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8,
    "f8e4m3fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "f8e8m0fnu": 8,
    "token": 0, "opaque": 0,
}  # fmt: skip

_PACKED = re.compile(r"E\(([0-9]+)\)")


@dataclass(frozen=True)
class Shape:
    """One HLO shape: an array (``tuple_shapes is None``) or a tuple of shapes.

    ``dimensions`` are the sizes (the bound for ``<=N``, -1 for ``?``); ``dynamic[i]`` says
    whether dimension i was written as ``<=N`` or ``?``. ``layout`` is the raw text inside the
    braces, or None when none was written. ``is_buffer``: the array is a buffer, written
    ``b(f32[16])`` (its size is the array's).
    """

    element_type: str
    dimensions: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: str | None = None
    tuple_shapes: tuple[Shape, ...] | None = None
    is_buffer: bool = False

    @property
    def is_tuple(self) -> bool:
        """True for tuple shapes."""
        return self.tuple_shapes is not None

    @property
    def is_dynamic(self) -> bool:
        """True if any dimension (of any leaf) is dynamic."""
        return any(any(leaf.dynamic) for leaf in self.leaves())

    def leaves(self) -> Iterator[Shape]:
        """The array (and token) shapes inside, depth first, left to right."""
        if self.tuple_shapes is None:
            yield self
            return
        for sub in self.tuple_shapes:
            yield from sub.leaves()

    @property
    def element_count(self) -> int | None:
        """Elements of an array shape (bounds for ``<=N``), None for tuples and ``?`` dims."""
        if self.tuple_shapes is not None or -1 in self.dimensions:
            return None
        return math.prod(self.dimensions)

    @property
    def byte_size(self) -> int | None:
        """Bytes of all array leaves (XLA's ``ByteSizeOfElements`` summed over the leaves).

        Dynamic ``<=N`` dimensions count at their bound; a ``?`` dimension or an unknown
        element type makes the size unknown (None). Sub-byte types take one byte per element
        unless the layout packs them with ``E(bits)``.
        """
        total = 0
        for leaf in self.leaves():
            count = leaf.element_count
            bits = ELEMENT_BITS.get(leaf.element_type)
            if count is None or bits is None:
                return None
            if 0 < bits < 8:
                packed = _PACKED.search(leaf.layout or "")
                bits = int(packed.group(1)) if packed else 8
            total += (count * bits + 7) // 8
        return total

    def compatible(self, other: Shape) -> bool:
        """True when ``other`` has the same element types and dimensions, layouts and which
        dimensions are dynamic aside (XLA's ``ShapeUtil::Compatible``)."""
        if self.tuple_shapes is not None or other.tuple_shapes is not None:
            return (self.tuple_shapes is not None and other.tuple_shapes is not None
                    and len(self.tuple_shapes) == len(other.tuple_shapes)
                    and all(a.compatible(b) for a, b in zip(self.tuple_shapes,
                                                            other.tuple_shapes, strict=True)))
        return (self.element_type == other.element_type
                and self.dimensions == other.dimensions and self.is_buffer == other.is_buffer)

    @property
    def human_string(self) -> str:
        """The shape as XLA's messages print it: without layouts."""
        if self.tuple_shapes is not None:
            return "(" + ", ".join(s.human_string for s in self.tuple_shapes) + ")"
        return str(Shape(self.element_type, self.dimensions, self.dynamic,
                         is_buffer=self.is_buffer))

    def __str__(self) -> str:
        return self._text

    @functools.cached_property
    def _text(self) -> str:
        """XLA's text of the shape, made once per shape (the reader shares one per text)."""
        if self.tuple_shapes is not None:
            return "(" + ", ".join(str(s) for s in self.tuple_shapes) + ")"
        if self.is_buffer:
            return f"b({Shape(self.element_type, self.dimensions, self.dynamic, self.layout)})"
        dims = ",".join(
            ("?" if d < 0 else f"<={d}") if dyn else str(d)
            for d, dyn in zip(self.dimensions, self.dynamic, strict=True)
        )
        layout = "" if self.layout is None else "{" + self.layout + "}"
        return f"{self.element_type}[{dims}]{layout}"
