"""Hand-written HLO shared by the reader's tests."""

ADD = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""


def entry_head(header: str) -> str:
    """A module's text up to and including the entry's parameter ``%p = f32[8]``: the header
    line, the ``%add`` reduction and the first line of ``ENTRY %main``."""
    return f"{header}\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n"


def conditional(predicate: str, attributes: str) -> str:
    """A module whose entry's root is a conditional on ``%p`` (a ``predicate``, e.g.
    ``pred[]``) of the operands ``(%p, %o, %o)`` with the attribute text ``attributes``
    (``, branch_computations={%b, %b}``); its one branch computation is ``%b``."""
    return ("HloModule m\n%b {\n  ROOT %x = f32[8] parameter(0)\n}\n"
            f"ENTRY e {{\n  %p = {predicate} parameter(0)\n  %o = f32[8] parameter(1)\n"
            f"  ROOT %c = f32[8] conditional(%p, %o, %o){attributes}\n}}\n")
