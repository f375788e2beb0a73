"""Is a compiler's output a shared library this process can load? Checked from its header before it is
cached, so a compiler command that makes something else (`gcc -c` makes a relocatable object, `-E` and
`-S` make text, `-static` an executable, `-m32` or a cross compiler another machine's code) is a clear
error at build time instead of a cached file that every later load fails on.

ELF (Linux and the BSDs) and Mach-O (macOS) are read; on a platform whose interpreter is neither, no
verdict is given here and loading is the check.
"""

from __future__ import annotations

import functools
import shlex
import sys

_ELF_MAGIC = b"\x7fELF"
_ELF_TYPES = {1: "a relocatable object file (ET_REL, what `-c` makes)", 2: "an executable (ET_EXEC)",
              4: "a core dump (ET_CORE)"}  # fmt: skip
_ET_DYN = 3
_PT_INTERP = 3
_MACHO_MAGICS = {b"\xcf\xfa\xed\xfe": 64, b"\xce\xfa\xed\xfe": 32}  # little-endian thin Mach-O
_MACHO_FAT = (b"\xca\xfe\xba\xbe", b"\xbe\xba\xfe\xca")
_MACHO_LOADABLE = {6, 8}  # MH_DYLIB, MH_BUNDLE
_MACHO_TYPES = {1: "a relocatable object file (MH_OBJECT, what `-c` makes)", 2: "an executable (MH_EXECUTE)"}


def shared_library_problem(data: bytes) -> str | None:
    """What `data` is when it is not a shared library for this machine (for the message), else None."""
    host = _host_header()
    if host.startswith(_ELF_MAGIC):
        return _elf_problem(data, host)
    if host[:4] in _MACHO_MAGICS:
        return _macho_problem(data)
    return None


def not_a_library_message(problem: str, origin: str, setting: tuple[str, ...], cmd: list[str]) -> str:
    """The error for a compiler that made `problem` instead of a library: the setting it came from
    (`origin`: TILECRAFT_CC, CC or PATH; `setting`: its words), the command line and the fix."""
    if origin == "PATH":
        who, fix = (
            f"the C compiler {shlex.join(setting)} (found on PATH)",
            "point TILECRAFT_CC at a compiler that can",
        )
    else:
        who = f"the compiler command {origin}={shlex.join(setting)!r}"
        fix = (f"remove the options that change what it makes (-c, -E, -S, -static, -m32, ...) from "
               f"{origin}, or name a compiler for this machine; tilecraft adds -shared and -fPIC itself")  # fmt: skip
    return (
        f"{who} made {problem}, not a shared library this process can load (nothing was cached)\n"
        f"  command: {shlex.join(cmd)}\n  fix: {fix}"
    )


@functools.cache
def _host_header() -> bytes:
    """The first bytes of the running interpreter's executable: the format, word size, byte order and
    machine a loadable library must have."""
    for path in ("/proc/self/exe", sys.executable):  # the first where it exists; a launcher script is not it
        try:
            with open(path, "rb") as f:
                return f.read(64)
        except OSError:
            continue
    return b""


def _elf_problem(data: bytes, host: bytes) -> str | None:
    if not data.startswith(_ELF_MAGIC):
        return _not_binary(data)
    if len(data) < 64:
        return f"a truncated ELF file ({len(data)} bytes)"
    if data[4:6] != host[4:6]:
        bits = {1: "32", 2: "64"}.get(data[4], "?")
        return (
            f"an ELF file for another word size or byte order ({bits}-bit; this Python is {_bits(host)}-bit)"
        )
    order = "little" if data[5] == 1 else "big"
    kind = int.from_bytes(data[16:18], order)
    if kind != _ET_DYN:
        return _ELF_TYPES.get(kind, f"an ELF file of type {kind}, not a shared object")
    machine, ours = int.from_bytes(data[18:20], order), int.from_bytes(host[18:20], order)
    if machine != ours:
        return f"a shared object for another machine (ELF machine {machine}; this Python's is {ours})"
    if _has_interpreter(data, order):
        return "a position-independent executable (it has a program interpreter), not a shared object"
    return None


def _bits(header: bytes) -> str:
    return {1: "32", 2: "64"}.get(header[4] if len(header) > 4 else 0, "?")


def _has_interpreter(data: bytes, order: str) -> bool:
    """Whether the ELF program headers name a program interpreter (PT_INTERP): executables do."""
    wide = data[4] == 2
    at = lambda off, size: int.from_bytes(data[off : off + size], order)  # noqa: E731
    phoff = at(32, 8) if wide else at(28, 4)
    entsize, count = (at(54, 2), at(56, 2)) if wide else (at(42, 2), at(44, 2))
    for i in range(count):
        start = phoff + i * entsize
        if start + 4 <= len(data) and at(start, 4) == _PT_INTERP:
            return True
    return False


def _macho_problem(data: bytes) -> str | None:
    if data[:4] in _MACHO_FAT:
        return None  # a universal binary: the loader picks the slice
    if data[:4] not in _MACHO_MAGICS:
        return _not_binary(data)
    kind = int.from_bytes(data[12:16], "little")
    if kind in _MACHO_LOADABLE:
        return None
    return _MACHO_TYPES.get(kind, f"a Mach-O file of type {kind}, not a dynamic library")


def _not_binary(data: bytes) -> str:
    if not data:
        return "an empty file"
    head = data[:40]
    if all(32 <= b < 127 or b in (9, 10, 13) for b in head):
        first = head.decode().splitlines()[0] if head.strip() else ""
        return f"a text file (it starts with {first!r}: preprocessed source or assembly, as -E or -S make)"
    return f"a file of unknown format (it starts with {head[:8].hex(' ')})"
