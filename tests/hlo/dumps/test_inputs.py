"""Every command and both readers open input the same way (``hlo._input``): gzip on stdin,
a truncated gzip file, streams that cannot peek, all with the same words."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import meshtopo as mt
from cli.inspect._dumps import MIXED_2X2
from meshtopo.cli import main

TRUNCATED = "Compressed file ended before the end-of-stream marker was reached"
# Each command that reads one HLO module, with the options it needs for one module.
COMMANDS = [["inspect"], ["check"], ["order"], ["neuron"], ["passes", "--to-sync"]]


def meshtopo(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "meshtopo", *args], input=stdin,
                          capture_output=True, timeout=60, check=False)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> Callable[..., tuple[int, str, str]]:
    """``meshtopo ARGS`` in this process with ``stdin`` as its standard input: (exit code,
    stdout, stderr)."""

    def run(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def gz(tmp_path: Path) -> tuple[bytes, Path]:
    data = gzip.compress(MIXED_2X2.encode())
    truncated = tmp_path / "truncgz.gz"
    truncated.write_bytes(data[:100])
    return data, truncated


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_gzip_on_stdin_reads_as_the_plain_text(command: list[str], gz: tuple[bytes, Path],
                                               run: Callable[..., tuple[int, str, str]]):
    data, _ = gz
    plain = run(*command, "-", stdin=MIXED_2X2.encode())
    zipped = run(*command, "-", stdin=data)
    assert plain[0] in (0, 1), plain[2]
    assert plain[1]
    assert zipped == plain


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_truncated_gzip_is_one_message_for_every_command(command: list[str],
                                                           gz: tuple[bytes, Path],
                                                           run: Callable[..., tuple[int, str,
                                                                                    str]]):
    data, truncated = gz
    assert run(*command, str(truncated)) == (
        2, "", f"meshtopo: error: {truncated} is not a readable gzip file: {TRUNCATED}\n")
    assert run(*command, "-", stdin=data[:100]) == (
        2, "", f"meshtopo: error: <stdin> is not a readable gzip file: {TRUNCATED}\n")


class _Unpeekable(io.RawIOBase):
    """A binary stream without ``peek`` that hands out a few bytes per read."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        size = 7 if size < 0 else min(size, 7)
        chunk, self._data = self._data[:size], self._data[size:]
        return chunk


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_load_and_iter_collectives_read_the_same_streams(compress: bool):
    data = MIXED_2X2.encode()
    data = gzip.compress(data) if compress else data
    for stream in (io.BytesIO(data), _Unpeekable(data)):
        module = mt.hlo.load(stream)
        assert module.text == MIXED_2X2
    names = [c.name for c in mt.hlo.load(io.BytesIO(data)).collectives]
    assert [c.name for c in mt.hlo.iter_collectives(_Unpeekable(data), progress=False)] == names
    assert [c.name for c in mt.hlo.iter_collectives(io.BytesIO(data), progress=False)] == names


def test_both_readers_word_a_truncated_gzip_alike(gz: tuple[bytes, Path]):
    _, truncated = gz
    expected = f"{truncated} is not a readable gzip file: {TRUNCATED}"
    with pytest.raises(mt.InvalidArgumentError) as loaded:
        mt.hlo.load(truncated)
    with pytest.raises(mt.InvalidArgumentError) as streamed:
        list(mt.hlo.iter_collectives(truncated, progress=False))
    assert str(loaded.value) == str(streamed.value) == expected


def test_explore_words_a_truncated_gzip_as_the_other_commands(gz: tuple[bytes, Path]):
    _, truncated = gz
    done = meshtopo("explore", "--port", "0", str(truncated))
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == (
        f"meshtopo: error: {truncated} is not a readable gzip file: {TRUNCATED}\n")


def test_a_callers_stream_stays_open_after_reading():
    stream = io.BytesIO(MIXED_2X2.encode())
    mt.hlo.load(stream)
    assert not stream.closed
    stream.seek(0)
    assert len(list(mt.hlo.iter_collectives(stream, progress=False))) == 5
    assert not stream.closed
