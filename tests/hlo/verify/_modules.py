"""Hand-written HLO modules for the verifier tests: a sum computation and one entry body."""

from __future__ import annotations

from dataclasses import dataclass

import meshtopo.hlo as hlo

HEADER = "HloModule m, replica_count={r}, num_partitions={p}"
SUM = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}"""


def module_text(body: str, r: int = 1, p: int = 1, params: str = "%p = f32[8]{0} parameter(0)"
                ) -> str:
    """A module whose entry defines ``params`` (one per line) and then ``body``."""
    lines = [HEADER.format(r=r, p=p), SUM, "ENTRY %main {"]
    lines += ["  " + line.strip() for line in params.strip().splitlines()]
    lines += ["  " + line.strip() for line in body.strip().splitlines()]
    lines.append("}")
    return "\n".join(lines) + "\n"


def instruction_text(body: str) -> str:
    """The last line of ``body`` as the verifier quotes it (stripped, ``ROOT`` dropped)."""
    last = body.strip().splitlines()[-1].strip()
    return last[5:] if last.startswith("ROOT ") else last


@dataclass(frozen=True)
class Case:
    """One verifier case: the entry body (its last line is the instruction checked), the
    counts, and XLA's message (``{instr}`` stands for the instruction's text) or None."""

    id: str
    body: str
    expected: str | None
    r: int = 1
    p: int = 1
    params: str = "%p = f32[8]{0} parameter(0)"
    check_replica_groups: bool = True

    def run(self) -> list[hlo.Finding]:
        module = hlo.parse_module(module_text(self.body, self.r, self.p, self.params))
        return hlo.verify(module, check_replica_groups=self.check_replica_groups)

    def message(self) -> str | None:
        if self.expected is None:
            return None
        return self.expected.replace("{instr}", instruction_text(self.body))


def assert_case(case: Case) -> None:
    """The case's module verifies with exactly the expected finding (or none)."""
    findings = case.run()
    expected = case.message()
    if expected is None:
        assert findings == [], [f.message for f in findings]
        return
    got = [f.message for f in findings]
    assert got == [expected], got
