"""Reading and writing text files so that an unedited file saves back byte-identical.

The editor works on text with "\\n" line ends only; the encoding, the dominant line ending and
the byte-order mark found on disk are kept beside it and restored on save.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
from dataclasses import dataclass
from pathlib import Path

from workbench.editor.errors import EditorError
from workbench.platform.atomic_files import write_atomically

# A NUL byte this early means a binary file (images, archives, model weights): showing it as
# text would only mislead.
BINARY_SNIFF_BYTES = 8 * 1024

# Longest BOMs first: the UTF-32-LE mark starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_BOM_FOR_ENCODING = {name: bom for bom, name in _BOMS}

EOL_NAMES = {"\n": "LF", "\r\n": "CRLF", "\r": "CR"}


@dataclass
class TextFile:
    """A file's text as the editor holds it, plus what is needed to write it back unchanged.

    ``text`` uses "\\n" line ends only; ``eol`` is the line ending to write ("\\n", "\\r\\n" or
    "\\r"). When ``is_text`` is False the file is binary or undecodable and ``text`` is only a
    preview with replacement characters. ``disk_sha256`` is the hash of the bytes read.
    """

    text: str
    encoding: str = "utf-8"
    eol: str = "\n"
    has_bom: bool = False
    is_text: bool = True
    disk_sha256: str = ""


def detect_eol(text: str) -> str:
    """The line ending used most often in ``text`` ("\\n" when there is none)."""
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    best = max((lf, "\n"), (crlf, "\r\n"), (cr, "\r"), key=lambda pair: pair[0])
    return best[1] if best[0] > 0 else "\n"


def normalize_eol(text: str) -> str:
    """``text`` with every line ending turned into "\\n"."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text_file(path: Path | str) -> TextFile:
    """Read ``path``, find its encoding, line ending and BOM, and return its text.

    Raises EditorError when the file is missing, is a folder, or cannot be read.
    """
    data = _read_bytes(Path(path))
    return decode_text(data)


def decode_text(data: bytes) -> TextFile:
    """Decode file bytes the way ``read_text_file`` does (BOM, UTF-8, best guess, Latin-1)."""
    sha = hashlib.sha256(data).hexdigest()
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                raw = data[len(bom):].decode(encoding)
            except UnicodeDecodeError:
                return _not_text(data, sha)
            return TextFile(normalize_eol(raw), encoding, detect_eol(raw), True, True, sha)
    if looks_binary(data):
        return _not_text(data, sha)
    encoding = _guess_encoding(data)
    raw = data.decode(encoding)
    return TextFile(normalize_eol(raw), encoding, detect_eol(raw), False, True, sha)


def looks_binary(head: bytes) -> bool:
    """True when the first bytes of a file say it holds binary data, not text.

    A NUL byte early on means binary, unless a byte-order mark says the file is UTF-16 or
    UTF-32 text (whose characters contain NUL bytes).
    """
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return False
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


def encode_text(text: str, encoding: str, eol: str = "\n", has_bom: bool = False) -> bytes:
    """The bytes ``write_text_file`` would write; raises EditorError for unencodable text."""
    if eol not in EOL_NAMES:
        raise EditorError(f"Unknown line ending {eol!r}: use LF, CRLF or CR.")
    disk_text = text if eol == "\n" else text.replace("\n", eol)
    try:
        body = disk_text.encode(encoding)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start]
        line = disk_text.count(eol, 0, exc.start) + 1 if eol else 1
        raise EditorError(
            f"The character {bad!r} (U+{ord(bad):04X}) on line {line} cannot be saved in "
            f"{encoding}. Remove it, or save the file as UTF-8, which can hold every character."
        ) from None
    except LookupError:
        raise EditorError(f"Unknown encoding {encoding!r}: save the file as UTF-8.") from None
    if has_bom:
        body = _BOM_FOR_ENCODING.get(codecs.lookup(encoding).name, b"") + body
    return body


def write_text_file(
    path: Path | str, text: str, encoding: str = "utf-8", eol: str = "\n", has_bom: bool = False
) -> str:
    """Write ``text`` to ``path`` atomically with the given encoding, line ending and BOM.

    Returns the SHA-256 of the bytes written, so the caller can recognise its own write when a
    file watcher reports it. Raises EditorError with what to do when it cannot.
    """
    path = Path(path)
    data = encode_text(text, encoding, eol, has_bom)
    if path.is_dir():
        raise EditorError(f"{path} is a folder; choose a file name to save to.")
    try:
        write_atomically(path, data)
    except FileNotFoundError:
        raise EditorError(
            f"Cannot save {path.name}: the folder {path.parent} does not exist any more. "
            "Create it again, or use Save As… to put it somewhere else."
        ) from None
    except PermissionError:
        raise EditorError(
            f"Cannot save {path.name}: you do not have permission to write in {path.parent}. "
            "Change the folder's permissions, or use Save As… to put it somewhere else."
        ) from None
    except OSError as exc:
        if exc.errno == errno.EROFS:
            raise EditorError(
                f"Cannot save {path.name}: {path.parent} is on a read-only file system. "
                "Your text stays in the tab; use Save As… to put it somewhere writable."
            ) from None
        raise EditorError(f"Cannot save {path.name}: {exc.strerror or exc}.") from None
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise EditorError(f"{path} does not exist. It may have been moved or deleted.") from None
    except IsADirectoryError:
        raise EditorError(f"{path} is a folder, not a file; open a file inside it.") from None
    except PermissionError:
        raise EditorError(
            f"You do not have permission to read {path}. Check the file's permissions."
        ) from None
    except OSError as exc:
        raise EditorError(f"Cannot read {path}: {exc.strerror or exc}.") from None


def _guess_encoding(data: bytes) -> str:
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    # Only a guess: accept it when it decodes the whole file, else Latin-1 (which decodes any
    # byte) so the user always sees something editable.
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is not None:
        try:
            name = codecs.lookup(best.encoding).name
            data.decode(name)
            return name
        except (LookupError, UnicodeDecodeError):
            pass
    return "latin-1"


def _not_text(data: bytes, sha: str) -> TextFile:
    preview = data[:64 * 1024].decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    return TextFile(normalize_eol(preview), "utf-8", "\n", False, False, sha)
