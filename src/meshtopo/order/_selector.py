"""Integer values computed from ``replica-id`` and ``partition-id``, for every device at once:
what a conditional's selector (or a loop's bound) is on each device, as XLA computes it.

A value is a numpy array ``[devices or 1, *dims]`` (a leading 1 when it is the same on every
device). ``Evaluator.value`` follows what XLA emits for such selectors on CPU: ``partition-id``,
``replica-id``, integer and ``pred`` constants (scalars and arrays), ``iota``; ``compare``,
integer and logical arithmetic, shifts, ``select``, ``clamp``; ``convert``/``copy``/
``reshape``/``bitcast``/``broadcast``/``transpose``/``slice``/``dynamic-slice``;
``get-tuple-element`` of ``tuple``; and ``fusion``/``call`` (the called computation with its
parameters bound to the operands). Anything else (a parameter of the entry computation, a
loaded or floating-point value, a loop's result) is unknown, and ``blocker`` names the first
instruction that made it so.

Bound: each instruction is evaluated once per call site (memoised), at most
``EVALUATION_LIMIT`` instructions and ``VALUE_LIMIT`` elements per value (past that the value is
unknown), nesting at most ``DEPTH_LIMIT`` deep; O(instructions x devices) numpy work.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..hlo import Computation, Instruction

EVALUATION_LIMIT = 10_000
VALUE_LIMIT = 1 << 22
DEPTH_LIMIT = 200

_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": lambda a, b: np.sign(a) * np.sign(b) * (np.abs(a) // np.where(b == 0, 1, np.abs(b))),
    "remainder": lambda a, b: np.fmod(a, np.where(b == 0, 1, b)),
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "minimum": np.minimum, "maximum": np.maximum,
    "shift-left": lambda a, b: np.left_shift(a, np.clip(b, 0, 63)),
    "shift-right-logical": lambda a, b: np.right_shift(a, np.clip(b, 0, 63)),
    "shift-right-arithmetic": lambda a, b: np.right_shift(a, np.clip(b, 0, 63)),
}
_COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
    "GT": np.greater, "GE": np.greater_equal,
}
_SAME = frozenset({"copy", "reshape", "bitcast", "convert", "bitcast-convert"})
_INTEGER = re.compile(r"^(pred|s\d+|u\d+)$")
_SLICE = re.compile(r"\[(-?\d+):(-?\d+)(?::(\d+))?\]")
_NUMBERS = re.compile(r"-?\d+|true|false")

# A reference to an instruction's value: (computation, instruction name, frame), where the
# frame binds the computation's parameters to references in its caller (None: unbound).
Frame = tuple["Ref", ...] | None
Ref = tuple[Computation, str, Frame]


def compare_function(direction: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """numpy's comparison for an HLO ``direction`` (None when it is not one)."""
    return _COMPARE.get(direction)


@dataclass
class Blocker:
    """Why a value is unknown: the instruction it depends on and what it is."""

    instruction: Instruction
    reason: str

    def text(self) -> str:
        """``<opcode> <name> (line N)``, then the reason."""
        inst = self.instruction
        return f"{inst.opcode} {inst.name} (line {inst.line}), {self.reason}"


class Evaluator:
    """Evaluates instructions of ``computations`` for devices with the given replica and
    partition ids (module docstring)."""

    def __init__(self, computations: dict[str, Computation], replicas: np.ndarray,
                 partitions: np.ndarray) -> None:
        self.computations = computations
        self.replicas = np.asarray(replicas, dtype=np.int64).reshape(-1)
        self.partitions = np.asarray(partitions, dtype=np.int64).reshape(-1)
        self.blocker: Blocker | None = None
        self._by_name: dict[str, dict[str, Instruction]] = {}
        self._memo: dict[tuple[str, str, int], np.ndarray | None] = {}
        self._frames: list[Frame] = []
        self._count = 0

    def scalar(self, computation: Computation, name: str) -> np.ndarray | None:
        """The value of ``name`` (a scalar) in ``computation`` for each device (an array of
        the devices' length), or None with ``blocker`` set."""
        self.blocker = None
        value = self._value((computation, name, None), 0)
        if value is None:
            return None
        if value.ndim != 1:
            self._fail(computation.instruction(name), "which is not a scalar")
            return None
        return np.broadcast_to(value, self.replicas.shape).astype(np.int64)

    def _fail(self, inst: Instruction, reason: str) -> None:
        if self.blocker is None:
            self.blocker = Blocker(inst, reason)

    def _instruction(self, computation: Computation, name: str) -> Instruction | None:
        table = self._by_name.get(computation.name)
        if table is None:
            table = self._by_name[computation.name] = {i.name: i for i in computation}
        return table.get(name)

    def _value(self, ref: Ref, depth: int) -> np.ndarray | None:
        computation, name, frame = ref
        key = (computation.name, name, id(frame))
        if key in self._memo:
            return self._memo[key]
        inst = self._instruction(computation, name)
        if inst is None:
            return None
        if depth > DEPTH_LIMIT or self._count >= EVALUATION_LIMIT:
            self._fail(inst, "which is past the evaluation limit")
            return None
        self._count += 1
        value = self._compute(inst, ref, depth)
        if value is not None and value.size > VALUE_LIMIT:
            self._fail(inst, f"which holds more than {VALUE_LIMIT} elements")
            value = None
        self._memo[key] = value
        return value

    def _operand(self, ref: Ref, index: int, depth: int) -> np.ndarray | None:
        inst = self._instruction(ref[0], ref[1])
        assert inst is not None
        if index >= len(inst.operands):
            return None
        return self._value((ref[0], inst.operands[index], ref[2]), depth + 1)

    def _compute(self, inst: Instruction, ref: Ref, depth: int) -> np.ndarray | None:
        opcode = inst.opcode
        shape = inst.shape
        if shape.is_tuple and opcode not in ("get-tuple-element",):
            self._fail(inst, "which is a tuple")
            return None
        if not _INTEGER.match(shape.element_type):
            self._fail(inst, f"which is {shape.element_type}, not an integer")
            return None
        dims = shape.dimensions
        if opcode == "partition-id":
            return self.partitions
        if opcode == "replica-id":
            return self.replicas
        if opcode == "constant":
            return self._constant(inst, dims)
        if opcode == "iota":
            dimension = int(inst.attributes.get("iota_dimension", "0"))
            if not 0 <= dimension < len(dims):
                self._fail(inst, "which has no valid iota_dimension")
                return None
            line = np.arange(dims[dimension], dtype=np.int64).reshape(
                [1] + [-1 if d == dimension else 1 for d in range(len(dims))])
            return np.broadcast_to(line, (1, *dims))
        if opcode == "parameter":
            return self._parameter(inst, ref, depth)
        if opcode == "get-tuple-element":
            return self._element(inst, ref, depth)
        if opcode in ("fusion", "call"):
            return self._call(inst, ref, depth)
        args = [self._operand(ref, i, depth) for i in range(len(inst.operands))]
        if any(a is None for a in args):
            return None
        values: list[np.ndarray] = [a for a in args if a is not None]
        result = self._apply(inst, values, dims)
        if result is None:
            self._fail(inst, "which is not evaluated")
            return None
        return result

    def _apply(self, inst: Instruction, args: list[np.ndarray],
               dims: tuple[int, ...]) -> np.ndarray | None:
        opcode = inst.opcode
        pred = inst.shape.element_type == "pred"
        if opcode in _SAME and len(args) == 1:
            value = args[0] != 0 if pred else args[0]
            return _reshaped(value.astype(np.int64), dims)
        if opcode == "not" and len(args) == 1:
            return (args[0] == 0).astype(np.int64) if pred else np.invert(args[0])
        if opcode == "negate" and len(args) == 1:
            return np.negative(args[0])
        if opcode == "abs" and len(args) == 1:
            return np.abs(args[0])
        if opcode in _BINARY and len(args) == 2 and args[0].ndim == args[1].ndim:
            return np.asarray(_BINARY[opcode](args[0], args[1]), dtype=np.int64)
        if opcode == "compare" and len(args) == 2 and args[0].ndim == args[1].ndim:
            compare = _COMPARE.get(inst.attributes.get("direction", ""))
            return None if compare is None else compare(args[0], args[1]).astype(np.int64)
        if opcode == "select" and len(args) == 3:
            if args[0].ndim == 1:
                args[0] = args[0].reshape((-1,) + (1,) * (args[1].ndim - 1))
            return np.where(args[0] != 0, args[1], args[2])
        if opcode == "clamp" and len(args) == 3:
            return np.clip(args[1], args[0], args[2])
        if opcode == "broadcast" and len(args) == 1:
            return _broadcast(args[0], inst.attributes.get("dimensions", "{}"), dims)
        if opcode == "transpose" and len(args) == 1:
            order = [int(x) for x in _NUMBERS.findall(inst.attributes.get("dimensions", ""))]
            return np.transpose(args[0], [0, *(1 + d for d in order)])
        if opcode == "slice" and len(args) == 1:
            spans = _SLICE.findall(inst.attributes.get("slice", ""))
            if len(spans) != args[0].ndim - 1:
                return None
            return args[0][(slice(None), *(slice(int(a), int(b), int(c or 1))
                                           for a, b, c in spans))]
        if opcode == "dynamic-slice" and len(args) >= 1:
            return _dynamic_slice(args[0], args[1:], dims)
        return None

    def _constant(self, inst: Instruction, dims: tuple[int, ...]) -> np.ndarray | None:
        count = int(np.prod(dims, dtype=np.int64))
        if count > VALUE_LIMIT:
            self._fail(inst, f"which holds more than {VALUE_LIMIT} elements")
            return None
        text = inst.operand_text
        if any(c in text for c in ".eE") and "true" not in text and "false" not in text:
            self._fail(inst, "which is not an integer constant")
            return None
        numbers = [1 if n == "true" else 0 if n == "false" else int(n)
                   for n in _NUMBERS.findall(text)]
        if len(numbers) != count:
            self._fail(inst, "whose literal is not read")
            return None
        return np.array(numbers, dtype=np.int64).reshape((1, *dims))

    def _parameter(self, inst: Instruction, ref: Ref, depth: int) -> np.ndarray | None:
        frame = ref[2]
        text = inst.operand_text.strip()
        if frame is None or not text.isdigit() or int(text) >= len(frame):
            self._fail(inst, "which the program is given at run time")
            return None
        return self._value(frame[int(text)], depth + 1)

    def _element(self, inst: Instruction, ref: Ref, depth: int) -> np.ndarray | None:
        """A ``get-tuple-element``: follows the tuple it reads (through parameters, calls
        and nested tuples) to the instruction that makes the element, and evaluates that."""
        index = int(inst.attributes.get("index", "-1"))
        target = self._resolve((ref[0], inst.operands[0] if inst.operands else "", ref[2]),
                               [index], depth)
        return None if target is None else self._value(target, depth + 1)

    def _resolve(self, ref: Ref, path: list[int], depth: int) -> Ref | None:
        """The reference that makes element ``path`` (outermost index last) of ``ref``."""
        for _ in range(DEPTH_LIMIT):
            if not path:
                return ref
            computation, name, frame = ref
            inst = self._instruction(computation, name)
            if inst is None:
                return None
            opcode = inst.opcode
            if opcode == "tuple":
                index = path.pop()
                if not 0 <= index < len(inst.operands):
                    self._fail(inst, "which has no such element")
                    return None
                ref = (computation, inst.operands[index], frame)
            elif opcode == "get-tuple-element" and inst.operands:
                path.append(int(inst.attributes.get("index", "-1")))
                ref = (computation, inst.operands[0], frame)
            elif opcode == "parameter":
                text = inst.operand_text.strip()
                if frame is None or not text.isdigit() or int(text) >= len(frame):
                    self._fail(inst, "which the program is given at run time")
                    return None
                ref = frame[int(text)]
            elif opcode in ("fusion", "call"):
                called = self._callee(inst, ref)
                if called is None:
                    return None
                ref = called
            else:
                self._fail(inst, "whose tuple is not evaluated")
                return None
        return None

    def _callee(self, inst: Instruction, ref: Ref) -> Ref | None:
        """The root of the computation ``inst`` calls, its parameters bound to the operands."""
        names = inst.called_computations
        called = self.computations.get(names[0]) if len(names) == 1 else None
        root = None if called is None else called.root
        if called is None or root is None:
            self._fail(inst, "whose called computation is not found")
            return None
        frame: Frame = tuple((ref[0], operand, ref[2]) for operand in inst.operands)
        self._frames.append(frame)  # keeps the frame alive: memo keys hold its id
        return (called, root.name, frame)

    def _call(self, inst: Instruction, ref: Ref, depth: int) -> np.ndarray | None:
        target = self._callee(inst, ref)
        return None if target is None else self._value(target, depth + 1)


def _reshaped(value: np.ndarray, dims: tuple[int, ...]) -> np.ndarray | None:
    if int(np.prod(value.shape[1:], dtype=np.int64)) != int(np.prod(dims, dtype=np.int64)):
        return None
    return value.reshape((value.shape[0], *dims))


def _broadcast(value: np.ndarray, spec: str, dims: tuple[int, ...]) -> np.ndarray | None:
    mapped = [int(x) for x in _NUMBERS.findall(spec)]
    if len(mapped) != value.ndim - 1 or any(not 0 <= d < len(dims) for d in mapped):
        return None
    order = np.argsort(mapped)
    value = np.transpose(value, [0, *(1 + int(i) for i in order)])
    shape = [value.shape[0]] + [1] * len(dims)
    for position, d in enumerate(sorted(mapped)):
        shape[1 + d] = value.shape[1 + position]
    return np.broadcast_to(value.reshape(shape), (value.shape[0], *dims))


def _dynamic_slice(value: np.ndarray, starts: list[np.ndarray],
                   dims: tuple[int, ...]) -> np.ndarray | None:
    """XLA's ``dynamic-slice``: each start clamped to ``[0, dim - size]``, per device."""
    rank = value.ndim - 1
    if len(starts) != rank or len(dims) != rank or any(s.ndim != 1 for s in starts):
        return None
    devices = max([value.shape[0], *(s.shape[0] for s in starts)])
    out = np.broadcast_to(value, (devices, *value.shape[1:]))
    for axis in range(rank):
        size, whole = dims[axis], value.shape[1 + axis]
        start = np.clip(np.broadcast_to(starts[axis], (devices,)), 0, whole - size)
        index = start[:, None] + np.arange(size)
        index = index.reshape([devices] + [size if a == axis else 1 for a in range(rank)])
        out = np.take_along_axis(out, np.broadcast_to(
            index, [devices] + [size if a == axis else out.shape[1 + a] for a in range(rank)]),
            axis=1 + axis)
    return out
