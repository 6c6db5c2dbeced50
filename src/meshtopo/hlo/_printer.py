"""``Module.to_text()``: a module printed back in XLA's HLO text form.

Every instruction is printed from what the reader kept of it (``Instruction.text``, the
instruction as written from its name), so shapes, operands, attributes (metadata, backend
config, control predecessors) and the instruction order (for a scheduled module: the
schedule) are XLA's own text; the header line carries the module's counts, and the tables
written between the header and the first computation (``FileNames``, ``StackFrames``, ...)
are kept as the reader found them. jaxlib's parser reads the output back to the same module.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._structure import Computation


def header_line(name: str, attributes: dict[str, str], replica_count: int,
                num_partitions: int) -> str:
    """``HloModule name, key=value, ...`` with the counts as given (a count of 1 is written
    only when the attributes already had it)."""
    values = dict(attributes)
    for key, number in (("replica_count", replica_count), ("num_partitions", num_partitions)):
        if number != 1 or key in values:
            values[key] = str(number)
    return ", ".join([f"HloModule {name}"] + [f"{k}={v}" for k, v in values.items()])


def computation_lines(computation: Computation, lines: Iterable[str]) -> str:
    """Computation ``computation``'s head and ``lines`` (its instructions, already printed,
    each with its ``ROOT`` marker when it has one) as one block."""
    head = f"{'ENTRY ' if computation.is_entry else ''}%{computation.name}"
    if computation.signature:
        head += f" {computation.signature}"
    return head + " {\n  " + "\n  ".join(lines) + "\n}"


def instruction_line(text: str, is_root: bool) -> str:
    """An instruction's text (its name as written, with or without ``%``) with its ``ROOT``
    marker."""
    return "ROOT " + text if is_root else text


def module_text(name: str, header_attributes: dict[str, str], replica_count: int,
                num_partitions: int, stack_frames: str,
                computations: Iterable[Computation]) -> str:
    """A whole module in XLA's text form, from its header values, the stack-frame tables as
    the reader kept them (``Module.stack_frames``) and its computations."""
    blocks = [header_line(name, header_attributes, replica_count, num_partitions)]
    if stack_frames:
        blocks.append(stack_frames)
    for computation in computations:
        lines = [i.text for i in computation.instructions]
        root = computation.root
        if root is not None:
            at = len(lines) - 1 if computation.instructions[-1] is root else \
                computation.instructions.index(root)
            lines[at] = "ROOT " + lines[at]
        blocks.append(computation_lines(computation, lines))
    return "\n\n".join(blocks) + "\n"
