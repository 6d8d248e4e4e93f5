"""What kind of model a file holds, told from its content rather than its name.

PyTorch files are zip archives whose entries give them away: TorchScript (``torch.jit.save``)
holds ``code/`` and ``constants.pkl``; an ExportedProgram (``torch.export.save``, ``.pt2``) holds
``archive_format`` and ``models/*.json`` (``serialized_exported_program.json`` before torch 2.6);
weights (``torch.save`` of a state_dict or a checkpoint) hold only ``data.pkl`` and tensor data;
a ``.safetensors`` file (weights too) starts with the length of its JSON header.
ONNX is a protobuf whose first field is the IR version; MNN is a FlatBuffer, which has no magic
number, so it is recognised by its ``.mnn`` suffix plus a sane FlatBuffer header.

Reads only bytes: no torch, no unpickling, so it is safe and quick on any file. Every tool asks
here first (``identify``, ``expect``), so a file that is no model, or not the kind a tool takes,
gets the same message from each of them, naming the file as the user gave it.
"""

from __future__ import annotations

import mmap
import pickletools
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

from workbench.modeltools.errors import ModelToolError

STATE_DICT = "state_dict"
TORCHSCRIPT = "torchscript"
EXPORTED_PROGRAM = "exported_program"
ONNX = "onnx"
MNN = "mnn"

KINDS = (STATE_DICT, TORCHSCRIPT, EXPORTED_PROGRAM, ONNX, MNN)
PYTORCH_KINDS = (STATE_DICT, TORCHSCRIPT, EXPORTED_PROGRAM)

DESCRIPTIONS = {
    STATE_DICT: "PyTorch weights (a state_dict, or a checkpoint holding one)",
    TORCHSCRIPT: "a TorchScript model (torch.jit.save)",
    EXPORTED_PROGRAM: "an ExportedProgram (torch.export.save)",
    ONNX: "an ONNX model",
    MNN: "an MNN model",
}

KNOWN_FORMATS = ("PyTorch weights, TorchScript, an ExportedProgram (.pt2), ONNX or MNN")

# torch.save's format before torch 1.6: a pickled magic number (protocol 2, a 10-byte long).
_LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"

# Modules whose names a pickle of plain weights may refer to (storages, tensor rebuilders,
# containers). A class from anywhere else, or any nn.Module, means a whole pickled object.
_WEIGHT_PICKLE_MODULES = ("torch", "collections", "builtins", "__builtin__", "numpy", "_codecs",
                          "copyreg")
_OBJECT_PICKLE_MODULES = ("torch.nn.modules", "torch.nn.parallel", "torch.jit", "torch.fx",
                          "torch.export", "torch.ao")


@dataclass(frozen=True)
class ModelFile:
    """A model file and the kind of model it holds (one of KINDS)."""

    path: Path
    kind: str

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self.kind]

    @property
    def is_pytorch(self) -> bool:
        return self.kind in PYTORCH_KINDS


def identify(path: Path) -> ModelFile:
    """The kind of model ``path`` holds; ModelToolError naming the file and saying what it is
    instead (missing, empty, text, truncated, another format) when it is no model we know."""
    path = Path(path)
    if not path.exists():
        raise ModelToolError(f"{path} does not exist")
    if path.is_dir():
        raise ModelToolError(f"{path} is a folder; give a model file ({KNOWN_FORMATS})")
    try:
        with open(path, "rb") as file:
            size = path.stat().st_size
            if size == 0:
                raise ModelToolError(
                    f"{path} is empty (0 bytes), so it was not saved or copied completely; "
                    "save the model again")
            with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
                kind = _kind_of(path, data)
    except OSError as exc:
        raise ModelToolError(f"cannot read {path}: {exc.strerror or exc}") from None
    return ModelFile(path, kind)


# How the kinds are named when a tool takes them: as a group, and as one file.
_KIND_WORDS = {STATE_DICT: "PyTorch weights", TORCHSCRIPT: "TorchScript",
               EXPORTED_PROGRAM: "ExportedPrograms (.pt2)", ONNX: "ONNX models",
               MNN: "MNN models"}
_ONE_KIND = {STATE_DICT: "PyTorch weights", TORCHSCRIPT: "a TorchScript model",
             EXPORTED_PROGRAM: "an ExportedProgram", ONNX: "an ONNX model", MNN: "an MNN model"}


def expect(path: Path, kinds: tuple[str, ...], tool: str = "") -> ModelFile:
    """``identify(path)``, and ModelToolError when the file holds none of ``kinds`` (what
    ``tool``, named as the user knows it, takes), saying what the file is and what to do."""
    found = identify(path)
    if found.kind in kinds:
        return found
    if ONNX in kinds and found.is_pytorch:
        advice = f"convert it to ONNX first (workbench model convert {path})"
    elif found.kind == MNN:
        advice = "give the ONNX model it was converted from"
    elif found.kind == ONNX:
        advice = "give the PyTorch model it was exported from"
    else:
        advice = f"give {_words([_ONE_KIND[k] for k in kinds])}"
    if tool:
        takes = _words([_KIND_WORDS[k] for k in kinds])
        raise ModelToolError(f"{path} is {found.description}; {tool} takes {takes}: {advice}")
    raise ModelToolError(f"{path} is {found.description}, not "
                         f"{_words([_ONE_KIND[k] for k in kinds])}; {advice}")


def damaged(path: Path, kind: str) -> str:
    """The message for a file that looks like ``kind`` but that its library cannot read."""
    what = {ONNX: "ONNX model", MNN: "MNN model"}.get(kind, "PyTorch file")
    return (f"{path} is a damaged {what}: it cannot be read although it starts like one (it may "
            "be truncated or corrupted); save, convert or copy it again")


def _words(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _kind_of(path: Path, data) -> str:
    head = bytes(data[:64])
    if head.startswith((_ZIP_MAGIC, _EMPTY_ZIP_MAGIC)):
        return _zip_kind(path)
    if head.startswith(_LEGACY_TORCH_MAGIC):
        return STATE_DICT
    onnx = _onnx_layout(data)
    if onnx == "complete":
        return ONNX
    if onnx == "truncated":
        raise ModelToolError(
            f"{path} is a truncated ONNX model (it ends inside its graph); convert or copy it "
            "again")
    if _is_safetensors(head):
        return STATE_DICT
    if path.suffix.lower() == ".mnn":
        if _looks_like_flatbuffer(data):
            return MNN
        raise ModelToolError(f"{path} is not a valid MNN model (its header is damaged or the file "
                             "is truncated); convert or copy it again")
    raise ModelToolError(_not_a_model(path, data))


def _zip_kind(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            entries = _entries(names)
            if "constants.pkl" in entries and any(e.startswith("code/") for e in entries):
                return TORCHSCRIPT
            if ({"archive_format", "serialized_exported_program.json"} & entries
                    or any(e.startswith("models/") and e.endswith(".json") for e in entries)):
                if not (any(e.startswith("models/") and e.endswith(".json") for e in entries)
                        or "serialized_exported_program.json" in entries):
                    raise ModelToolError(
                        f"{path} is a compiled AOTInductor package, not an ExportedProgram; "
                        "save the program with torch.export.save(torch.export.export(model, "
                        "example_inputs), path) instead")
                return EXPORTED_PROGRAM
            pickles = [n for n in names if n == "data.pkl" or n.endswith("/data.pkl")]
            if not pickles:
                raise ModelToolError(
                    f"{path} is a zip archive but not a PyTorch file (no data.pkl inside); give "
                    f"a model file ({KNOWN_FORMATS})")
            pickled = _pickled_class(archive.read(pickles[0]))
    except zipfile.BadZipFile:
        raise ModelToolError(
            f"{path} is a damaged or truncated PyTorch file (its zip archive is incomplete); "
            "save or copy it again") from None
    if pickled:
        raise ModelToolError(
            f"{path} holds a whole pickled Python object ({pickled}), not just weights; loading "
            "it would run arbitrary code, so Workbench does not. Save model.state_dict() (and "
            "choose the project's model factory), or save TorchScript (torch.jit.save) or an "
            "ExportedProgram (torch.export.save)")
    return STATE_DICT


def _entries(names: list[str]) -> set[str]:
    """Archive entry names without the one top folder torch puts them in (and with it, for
    archives written without one)."""
    entries = set(names)
    for name in names:
        _, _, rest = name.partition("/")
        if rest:
            entries.add(rest)
    return entries


def _pickled_class(pickle_bytes: bytes) -> str:
    """The first class a pickle refers to that plain weights never do ("" when it holds only
    tensors, containers and numbers). Walks the opcodes; never unpickles."""
    strings: list[str] = []
    try:
        for opcode, argument, _ in pickletools.genops(pickle_bytes):
            name = ""
            if opcode.name in ("GLOBAL", "INST"):
                name = str(argument).replace(" ", ".", 1)
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                name = f"{strings[-2]}.{strings[-1]}"
            elif isinstance(argument, str):
                strings.append(argument)
            if name and not _is_weights_global(name):
                return name
    except Exception:
        # An unreadable pickle is for torch.load to report; it is not a class we refuse.
        return ""
    return ""


def _is_weights_global(name: str) -> bool:
    if name.startswith(_OBJECT_PICKLE_MODULES):
        return False
    return name.split(".")[0] in _WEIGHT_PICKLE_MODULES


# --- ONNX: a protobuf ModelProto ---------------------------------------------------------------

_ONNX_IR_VERSION_TAG = 0x08  # field 1 (ir_version), varint
_ONNX_GRAPH_FIELD = 7
# ModelProto's fields and their wire types (0 varint, 2 length-delimited): ir_version,
# producer_name, producer_version, domain, model_version, doc_string, graph, opset_import,
# metadata_props, training_info, functions, configuration. Later fields are allowed as unknown.
_ONNX_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}


def _onnx_layout(data) -> str:
    """"complete" when ``data`` walks as a ModelProto with a graph, "truncated" when it starts
    like one but a field runs past the end, "" otherwise."""
    size = len(data)
    if size < 2 or data[0] != _ONNX_IR_VERSION_TAG:
        return ""
    position, seen_graph, fields = 0, False, 0
    while position < size:
        tag, position = _varint(data, position)
        if tag is None:
            return "truncated" if fields >= 2 else ""
        field, wire = tag >> 3, tag & 7
        if field == 0 or field > 64 or _ONNX_FIELDS.get(field, wire) != wire:
            return ""
        if field not in _ONNX_FIELDS and field <= max(_ONNX_FIELDS):
            return ""
        if wire == 0:
            value, position = _varint(data, position)
            if value is None:
                return "truncated" if fields >= 2 else ""
            if field == 1 and not 1 <= value <= 100:
                return ""
        elif wire == 2:
            length, position = _varint(data, position)
            if length is None:
                return "truncated" if fields >= 2 else ""
            position += length
            if field == _ONNX_GRAPH_FIELD:
                seen_graph = True
        elif wire == 1:
            position += 8
        elif wire == 5:
            position += 4
        else:
            return ""
        fields += 1
        if position > size:
            return "truncated" if fields >= 2 or seen_graph else ""
    if seen_graph:
        return "complete"
    return "truncated" if fields >= 2 else ""


def _varint(data, position: int) -> tuple[int | None, int]:
    value, shift = 0, 0
    for index in range(position, min(position + 10, len(data))):
        byte = data[index]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, index + 1
        shift += 7
    return None, position


# --- MNN: a FlatBuffer -------------------------------------------------------------------------

def _looks_like_flatbuffer(data) -> bool:
    """A FlatBuffer's root offset, its root table and the table's vtable all lie in the file."""
    size = len(data)
    if size < 16:
        return False
    (root,) = struct.unpack_from("<I", data, 0)
    if root < 4 or root % 4 or root + 4 > size:
        return False
    (to_vtable,) = struct.unpack_from("<i", data, root)
    vtable = root - to_vtable
    if vtable < 4 or vtable + 4 > size:
        return False
    vtable_size, table_size = struct.unpack_from("<HH", data, vtable)
    return (vtable_size >= 4 and vtable_size % 2 == 0 and vtable + vtable_size <= size
            and 4 <= table_size and root + table_size <= size)


# --- what a file is when it is no model ---------------------------------------------------------

def _not_a_model(path: Path, data) -> str:
    head = bytes(data[:512])
    if head.startswith(_HDF5_MAGIC):
        what = "a Keras / HDF5 file"
    elif head[4:8] == b"TFL3":
        what = "a TensorFlow Lite model"
    elif head.startswith(b"\x80") and len(head) > 1 and head[1] <= 5:
        what = "a Python pickle but not a PyTorch file (torch.save writes a zip archive)"
    elif _is_text(head):
        first = head.decode("utf-8", errors="replace").strip().splitlines()
        snippet = first[0][:40] if first else ""
        what = f"a text file (it starts with {snippet!r})"
    else:
        what = "no model format Workbench knows"
    return f"{path} is not a model file: it is {what}; give {KNOWN_FORMATS}"


def _is_safetensors(head: bytes) -> bool:
    if len(head) < 10:
        return False
    (length,) = struct.unpack_from("<Q", head, 0)
    return 2 <= length < 100_000_000 and head[8:10] == b'{"'


def _is_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        # Cut in the middle of a multi-byte character?
        try:
            text = head[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return False
    return all(c.isprintable() or c in "\r\n\t\f" for c in text)
