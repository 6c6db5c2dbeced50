"""The compiled parts: XLA's tokenizer (``hlo/_lexer.c``, its kinds and spellings from
``hlo/_tokens.h``, which ``hlo/_tokens.py`` writes), the readers of XLA's printed forms
(``hlo/_explicit_scan.c``, explicit replica groups, and ``hlo/_line_scan.c``, instructions one
a line; both read the groups' form from ``hlo/_explicit_form.h``) and ``order/_flight_scan.c``,
the decoder of Flight Recorder dumps, and ``order/_trace_scan.c``, the reader of profiler
traces' collective events. Once those are built, the HLO reader itself (``hlo/_reader.py``)
is compiled by mypyc from its Python source, where mypyc is at hand; a stamp beside it
records which source it was compiled from (``hlo/_compiled.py`` reads the source instead
when the two differ).

Each is optional: without a C compiler the install goes on without them and the reader uses
its pure-Python stand-ins (``hlo/_native.py``; for dumps, Python's unpickler as
``order/_flight_columns.py`` restricts it; for traces, ``order/_trace_events.py``'s cut), with
the same answers, more slowly.
``meshtopo --version`` says which are in use.
"""

import hashlib
import importlib.util
import os
import shlex
import subprocess
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_HLO = "src/meshtopo/hlo/"
_FORM = [_HLO + "_explicit_form.h"]
_READER = _HLO + "_reader.py"
_READER_MODULE = "meshtopo.hlo._reader"
_COMPILED = [_READER_MODULE + "__mypyc", _READER_MODULE]  # mypyc's shared library, the shim
_STAMP = "_reader.sha256"  # beside the compiled reader: the hash of the source it compiles


class _BuildExt(build_ext):
    """Build the C extensions and, when a C compiler runs and mypyc imports, the reader
    compiled from its source, with its stamp (written once that is built). The compiled
    reader's two extensions (mypyc's shared library and the module's shim) are named when
    the command is set up, which setuptools does for every command that lists outputs, and
    made by mypyc (its C written, a minute's type check) only when the command runs."""

    def finalize_options(self) -> None:
        self._built: set[str] = set()
        modules = self.distribution.ext_modules = self.distribution.ext_modules or []
        self._compiled = [e for e in modules if e.name in _COMPILED]  # (set up once before)
        if not self._compiled and _compiler_runs() and importlib.util.find_spec("mypyc"):
            self._compiled = [Extension(name, [], optional=True) for name in _COMPILED]
            modules += self._compiled
        super().finalize_options()

    def build_extension(self, extension: Extension) -> None:
        super().build_extension(extension)
        self._built.add(extension.name)  # (an optional one that fails does not get here)

    def run(self) -> None:
        digest = hashlib.sha256(Path(_READER).read_bytes()).hexdigest()
        places = [Path(self.build_lib, "meshtopo", "hlo")]
        if self.inplace:
            places.append(Path(_HLO))
        for place in places:  # no stamp until the reader compiled from this source is built
            (place / _STAMP).unlink(missing_ok=True)
        if self._compiled and not self._write_compiled():
            self.extensions = [e for e in self.extensions if e not in self._compiled]
            self._compiled = []
        super().run()
        if self._compiled and all(e.name in self._built for e in self._compiled):
            for place in places:
                if place.is_dir():
                    (place / _STAMP).write_text(digest + "\n")

    def _write_compiled(self) -> bool:
        """Have mypyc write the compiled reader's C and fill in its extensions; False, with
        a warning, when mypyc refuses (the reader is then not compiled). Only the reader's
        own type errors refuse: those of the modules it imports are left to ``make lint``,
        as the packages they import may be missing here."""
        from mypyc.build import mypycify

        try:
            made = mypycify(["--ignore-missing-imports", "--follow-imports=silent", _READER],
                            opt_level="3", group_name=_READER_MODULE,
                            target_dir=os.path.join(self.build_temp, "mypyc"))
        except (Exception, SystemExit) as error:
            self.warn(f"compiling {_READER} with mypyc failed ({error!r}; mypy says why above)")
            return False
        by_name = {extension.name: extension for extension in made}
        if set(by_name) != set(_COMPILED):
            self.warn(f"mypyc made {sorted(by_name)}, not {_COMPILED}")
            return False
        for extension in self._compiled:
            written = by_name[extension.name]
            for field in ("sources", "include_dirs", "extra_compile_args", "define_macros",
                          "libraries", "library_dirs", "extra_link_args"):
                setattr(extension, field, getattr(written, field))
        return True


def _compiler_runs() -> bool:
    """True when the C compiler (``CC``, else Python's) answers ``--version``."""
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    try:
        subprocess.run([*compiler, "--version"], capture_output=True, check=True, timeout=60)
    except (OSError, ValueError, subprocess.SubprocessError):
        return False
    return True


setup(cmdclass={"build_ext": _BuildExt}, ext_modules=[
    Extension("meshtopo.hlo._lexer", [_HLO + "_lexer.c"],
              depends=[_HLO + "_tokens.h", _HLO + "_lexer_scan.h"], extra_compile_args=["-O3"],
              optional=True),
    Extension("meshtopo.hlo._explicit_scan", [_HLO + "_explicit_scan.c"], depends=_FORM,
              extra_compile_args=["-O3"], optional=True),
    Extension("meshtopo.hlo._line_scan", [_HLO + "_line_scan.c"], depends=_FORM,
              extra_compile_args=["-O3"], optional=True),
    Extension("meshtopo.order._flight_scan", ["src/meshtopo/order/_flight_scan.c"],
              extra_compile_args=["-O3"], optional=True),
    Extension("meshtopo.order._trace_scan", ["src/meshtopo/order/_trace_scan.c"],
              extra_compile_args=["-O3"], optional=True),
])
