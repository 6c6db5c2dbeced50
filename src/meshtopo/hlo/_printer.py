"""``Module.to_text()``: a module printed back in XLA's HLO text form.

Every instruction is printed from what the reader kept of it (``Instruction.text``, the
instruction as written from its name), so shapes, operands, attributes (metadata, backend
config, control predecessors) and the instruction order (for a scheduled module: the
schedule) are XLA's own text; the header line carries the module's counts, and the tables
written between the header and the first computation (``FileNames``, ``StackFrames``, ...)
are kept as the reader found them. jaxlib's parser reads the output back to the same module.

``printed_groups`` gives a written group list (or pair list) on one line as XLA prints it,
for tables and JSON: comments dropped, white space removed but where XLA writes a space.

>>> printed_groups("{{0,2}, /*x*/ {1,3}}"), printed_groups("mesh['a'=2,  'b'=2]{'b'}")
('{{0,2},{1,3}}', "mesh['a'=2,'b'=2] {'b'}")
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._values import without_comments

if TYPE_CHECKING:
    from ._structure import Computation


_SPACE = re.compile(r"\s")
_BETWEEN_WORDS = re.compile(r"(?<=\w)\s+(?=\w)")
_OTHER_SPACES = re.compile(r"(?<!\w)\s+|\s+(?!\w)")
_MESH_AXES = re.compile(r"(?<=[\])])\{")


def printed_groups(text: str) -> str:
    """``replica_groups`` (or ``source_target_pairs``) text as XLA prints it: no comments and
    no white space, but for the one space XLA writes in the mesh form before the axes and
    before ``device_ids`` (``mesh['a'=2,'b'=4], device_ids=(...) {'a'}``). A run of white
    space between two digits or letters, which XLA would refuse to read, stays one space so
    that no two numbers merge."""
    if "/" not in text and _SPACE.search(text) is None:
        return text
    joined = _OTHER_SPACES.sub("", _BETWEEN_WORDS.sub(" ", without_comments(text, False)))
    if joined.startswith("mesh["):
        joined = _MESH_AXES.sub(" {", joined.replace("],device_ids=", "], device_ids="))
    return joined


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
    thread = computation.execution_thread
    tail = ("" if thread is None or "execution_thread" in computation.signature
            else f', execution_thread="{thread}"')  # written after the brace
    return head + " {\n  " + "\n  ".join(lines) + "\n}" + tail


def instruction_line(text: str, is_root: bool) -> str:
    """An instruction's text (its name as written, with or without ``%``) with its ``ROOT``
    marker."""
    return "ROOT " + text if is_root else text


def module_text(name: str, header_attributes: dict[str, str], replica_count: int,
                num_partitions: int, stack_frames: str,
                computations: Iterable[Computation]) -> str:
    """A whole module in XLA's text form, from its header values, the stack-frame tables as
    the reader kept them (``Module.stack_frames``) and its computations."""
    blocks = []
    for computation in computations:
        if computation.written_inline:
            continue  # printed within the instruction that wrote it
        # An operand written as an instruction is printed within its user's text.
        written = [i for i in computation.instructions if i.text.lstrip("%").startswith(i.name)]
        lines = [i.text for i in written]
        root = computation.root
        if root is not None and written:
            at = len(lines) - 1 if written[-1] is root else written.index(root)
            lines[at] = "ROOT " + lines[at]
        blocks.append(computation_lines(computation, lines))
    return joined_module(header_line(name, header_attributes, replica_count, num_partitions),
                         stack_frames, blocks)


def joined_module(header: str, stack_frames: str, blocks: list[str]) -> str:
    """A module's text from its header line, its stack-frame tables ("" when none) and its
    computations' blocks (``computation_lines``)."""
    return "\n\n".join([header, stack_frames, *blocks] if stack_frames else [header, *blocks]) + "\n"
