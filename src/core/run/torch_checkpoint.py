"""Is a file a complete torch checkpoint, and which epoch does it hold: the one check.

libreyolo 1.6.0 saves every checkpoint (best.pt, last.pt, epoch_N.pt) with `torch.save`, a
zip archive whose members are `<archive>/data.pkl` (the pickled dict), `<archive>/data/<n>`
(the tensors' bytes) and a few small files, with the zip's central directory at the very
end. It writes best.pt and last.pt in place (truncated, then written again), so a process
killed while saving leaves a torn file: 0 bytes, or a zip cut short, whose central
directory cannot be read. `check_checkpoint` tells a complete one from a torn one:

- valid: a regular file, not empty, whose zip central directory reads, holding a
  `<archive>/data.pkl` member; with `crc=True` (a push's staged copy: it reads the whole
  file) every member passes its CRC check too;
- `epoch=True` also reads what the checkpoint says it holds, without torch and without
  running anything from the file: data.pkl is read through an unpickler whose every class
  and function is an inert stand-in (`_Inert`) and whose tensors are None, so only the
  plain values come back. libreyolo stores `epoch` (0-based: the epoch after which it was
  saved) and `config.epochs` (the run's total); `Checked.epoch` is the 1-based epoch done
  (`epoch` + 1), as epoch_N.pt's N and metrics.jsonl count.

Push (core.hub.staging, which adds the CRC check), pull (core.hub.hub_pull: a download is
checked before it takes a real name), resume (core.launch.resume: which checkpoint to
resume from) and the refresh (core.run.checkpoints: the push dialogs mark an invalid file)
all ask here. The file is untrusted: opened without blocking (core.base.safeio), data.pkl
read only up to PKL_MAX_BYTES, and any failure is a one-line problem, never an exception.
Before the zip's directory is read (zipfile builds an object per entry: a forged directory
of 1,000,000 entries took tens of seconds and ~550 MB), its end record is read: a
directory that says it lists more than MAX_ENTRIES entries, or is larger than
MAX_DIRECTORY_BYTES, is not read and the file is invalid, with a line that says so.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import struct
import zipfile
from dataclasses import dataclass

from ..base.safeio import NotRegularFile, open_regular
from ..base.values import EPOCHS, checked

PKL_RE = re.compile(r"[^/]+/data\.pkl")
PKL_MAX_BYTES = 64 * 1024 * 1024  # a 100M-parameter model's data.pkl is a few MB
# a checkpoint's entries: data.pkl, a few small files and one per tensor's storage (model,
# EMA and optimizer state of the largest YOLO: a few thousand); 10x that, read in < 0.1 s
MAX_ENTRIES = 20_000
MAX_DIRECTORY_BYTES = MAX_ENTRIES * 256  # a central directory entry: 46 bytes + name + extra
_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"


@dataclass(frozen=True)
class Checked:
    """What `check_checkpoint` found: `problem` None means a complete torch checkpoint."""

    problem: str | None
    size: int | None = None
    epoch: int | None = None  # the epochs done (1-based), as the checkpoint says
    total_epochs: int | None = None  # config.epochs, as the checkpoint says

    @property
    def valid(self) -> bool:
        return self.problem is None


class _Inert(dict):
    """What every class and function named in data.pkl becomes: called, built or filled,
    it does nothing (a dict, so an OrderedDict's items still land somewhere)."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        pass

    def append(self, item) -> None:
        pass

    def extend(self, items) -> None:
        pass


class _InertUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # noqa: ARG002 - nothing is ever imported
        return _Inert

    def persistent_load(self, pid):  # a tensor's storage: not read
        return None


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:120] if text else type(exc).__name__


def check_checkpoint(
    path: str, name: str | None = None, *, crc: bool = False, epoch: bool = False
) -> Checked:
    """Whether the file at `path` is a complete torch checkpoint (see the module doc), one
    line saying why not, and, with `epoch`, the epoch it holds. Never raises; never blocks
    (a FIFO is "not a regular file")."""
    name = name or os.path.basename(path)
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return Checked(f"{name}: no such file")
    except NotRegularFile:
        return Checked(f"{name} is not a regular file")
    except OSError as exc:
        return Checked(f"{name}: cannot read: {exc.strerror or exc}")
    with os.fdopen(fd, "rb") as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
        except OSError as exc:
            return Checked(f"{name}: cannot read: {exc.strerror or exc}")
        if size == 0:
            return Checked(f"{name} is empty (0 bytes): torn, its process died while writing it", 0)
        return _check_open(fh, name, size, crc, epoch)


def _directory_size(fh, size: int) -> tuple[int, int] | None:
    """(entries, bytes) the zip's end record says its central directory holds (the zip64
    end record's when there is one); None when there is no end record (zipfile says why)."""
    tail_len = min(size, _EOCD_SIZE + 0xFFFF + 20)  # the record, its comment, a zip64 locator
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    at = tail.rfind(_EOCD, 0, max(0, len(tail) - _EOCD_SIZE + len(_EOCD)))
    if at < 0:
        return None
    entries, directory = struct.unpack_from("<HL", tail, at + 10)
    locator = at - 20
    if locator >= 0 and tail[locator : locator + 4] == _ZIP64_LOCATOR:
        (offset,) = struct.unpack_from("<Q", tail, locator + 8)
        if 0 <= offset <= size - 56:
            fh.seek(offset)
            record = fh.read(56)
            if record[:4] == _ZIP64_EOCD:
                entries, directory = struct.unpack_from("<QQ", record, 32)
    return entries, directory


def _check_open(fh, name: str, size: int, crc: bool, epoch: bool) -> Checked:
    try:
        listed = _directory_size(fh, size)
        if listed is not None and (listed[0] > MAX_ENTRIES or listed[1] > MAX_DIRECTORY_BYTES):
            entries, directory = listed
            return Checked(
                f"{name} is not a torch checkpoint: its zip directory lists {entries:,} "
                f"entries in {directory:,} bytes (a checkpoint has at most {MAX_ENTRIES:,}; "
                "not read)",
                size,
            )
        fh.seek(0)
        with zipfile.ZipFile(fh) as archive:
            members = [i for i in archive.infolist() if PKL_RE.fullmatch(i.filename)]
            if not members:
                return Checked(
                    f"{name} is not a torch checkpoint: no */data.pkl in the zip archive", size
                )
            bad = archive.testzip() if crc else None
            if bad is not None:
                return Checked(f"{name} is corrupt: member {bad} fails its CRC check", size)
            done = total = None
            if epoch:
                done, total = _epochs(archive, members[0])
    except zipfile.BadZipFile as exc:
        return Checked(f"{name} is not a complete torch checkpoint (zip): {_first_line(exc)}", size)
    except Exception as exc:  # OSError, EOFError, zlib.error, ... from a damaged archive
        return Checked(f"{name} is not a complete torch checkpoint (zip): {_first_line(exc)}", size)
    return Checked(None, size, done, total)


def _epochs(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> tuple[int | None, int | None]:
    """(epochs done, total epochs) from data.pkl; Nones when it does not say (or cannot be
    read: that is not a reason to call the file invalid, torch may still load it)."""
    if member.file_size > PKL_MAX_BYTES:
        return None, None
    try:
        with archive.open(member) as raw:
            data = raw.read(PKL_MAX_BYTES + 1)
        if len(data) > PKL_MAX_BYTES:
            return None, None
        doc = _InertUnpickler(io.BytesIO(data)).load()
    except Exception:  # a damaged or hostile pickle: the epoch is unknown
        return None, None
    if not isinstance(doc, dict):
        return None, None
    index = doc.get("epoch")
    done = None
    if type(index) is int:
        done = checked(index + 1, EPOCHS, integer=True)[0]
    config = doc.get("config")
    total = None
    if isinstance(config, dict):
        total = checked(config.get("epochs"), EPOCHS, integer=True)[0]
    return done, total
