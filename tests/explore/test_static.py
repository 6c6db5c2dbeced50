"""The page's static files: every character outside ASCII has a glyph in Debian's default fonts.

Debian's default fonts are DejaVu (fonts-dejavu-core); a character none of them draws shows
as a missing-glyph box (as U+23F8, the pause sign, did). fontconfig's ``fc-list`` answers which
installed fonts cover a character; the test is skipped where fontconfig or DejaVu is absent.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "src/meshtopo/explore/static"


def _families(char: str) -> set[str]:
    done = subprocess.run(
        ["fc-list", f":charset={ord(char):x}", "family"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return {name.strip() for line in done.stdout.splitlines() for name in line.split(",")}


@pytest.mark.timeout(120)
@pytest.mark.skipif(shutil.which("fc-list") is None, reason="fontconfig's fc-list is not installed")
def test_every_character_of_the_page_has_a_dejavu_glyph() -> None:
    if "DejaVu Sans" not in _families("A"):
        pytest.skip("DejaVu Sans is not installed")
    used = {
        char
        for path in STATIC.iterdir()
        if path.suffix in {".html", ".js", ".css"}
        for char in path.read_text(encoding="utf-8")
        if ord(char) > 127
    }
    assert used, "the page uses no character outside ASCII; this test checks nothing"
    missing = sorted(
        f"U+{ord(char):04X}" for char in used if not {"DejaVu Sans", "DejaVu Sans Mono"} <= _families(char)
    )
    assert missing == []
    # The check itself tells a missing glyph: the pause sign is not in DejaVu.
    assert "DejaVu Sans" not in _families("\u23f8")
