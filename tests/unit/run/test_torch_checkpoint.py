"""The one validity check of a torch checkpoint (core.run.torch_checkpoint): complete or
torn, and the epoch it holds, read without torch and without running the file's code."""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from pathlib import Path

import pytest
from support.checkpoints import checkpoint_bytes, epoch_checkpoint
from support.fifos import make_fifo, returns_within

from rgpu_tui.core.run.torch_checkpoint import MAX_DIRECTORY_BYTES, MAX_ENTRIES, check_checkpoint


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_real_torch_save_is_valid_and_says_its_epoch(tmp_path: Path):
    """torch.save of the dict libreyolo 1.6.0 saves (epoch 0-based, config.epochs, tensors,
    an OrderedDict state_dict): valid, epoch 3 of 6, no torch imported to read it."""
    torch = pytest.importorskip("torch")
    from collections import OrderedDict

    state = OrderedDict(w=torch.zeros(3, 3), b=torch.ones(3))
    doc = {"model": state, "epoch": 2, "config": {"epochs": 6}, "optimizer": {"state": {}}}
    path = tmp_path / "weights" / "epoch_3.pt"
    path.parent.mkdir()
    torch.save(doc, path)
    got = check_checkpoint(str(path), epoch=True, crc=True)
    assert got.valid and got.problem is None
    assert (got.epoch, got.total_epochs, got.size) == (3, 6, path.stat().st_size)


def test_a_torn_checkpoint_is_invalid_and_says_why(tmp_path: Path):
    whole = epoch_checkpoint(4, 5, size=4096)
    empty = check_checkpoint(str(_write(tmp_path / "last.pt", b"")))
    assert not empty.valid and empty.problem.startswith("last.pt is empty (0 bytes)")
    for cut in (len(whole) // 2, len(whole) - 10, 30):  # the central directory is at the end
        got = check_checkpoint(str(_write(tmp_path / "cut.pt", whole[:cut])), "cut.pt")
        assert not got.valid
        assert got.problem.startswith("cut.pt is not a complete torch checkpoint (zip)")
    assert check_checkpoint(str(_write(tmp_path / "ok.pt", whole)), epoch=True).epoch == 4


def test_no_data_pkl_no_zip_and_crc(tmp_path: Path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        out.writestr("x/other", b"1")
    got = check_checkpoint(str(_write(tmp_path / "a.pt", buf.getvalue())))
    assert got.problem == "a.pt is not a torch checkpoint: no */data.pkl in the zip archive"
    got = check_checkpoint(str(_write(tmp_path / "b.pt", b"not a zip" * 100)))
    assert "not a complete torch checkpoint" in got.problem
    data = bytearray(checkpoint_bytes(2000, 1))
    at = bytes(data).index(b"pickle")
    data[at + 2000 : at + 2004] = b"XXXX"  # inside the data member: its CRC fails
    path = _write(tmp_path / "c.pt", bytes(data))
    assert check_checkpoint(str(path)).valid  # the cheap check reads the directory only
    assert "fails its CRC check" in check_checkpoint(str(path), crc=True).problem


def test_missing_fifo_and_directory_never_block(tmp_path: Path):
    assert check_checkpoint(str(tmp_path / "none.pt")).problem == "none.pt: no such file"
    fifo = make_fifo(tmp_path / "f.pt")
    got = returns_within(lambda: check_checkpoint(str(fifo), epoch=True), [fifo])
    assert got.problem == "f.pt is not a regular file"
    (tmp_path / "d.pt").mkdir()
    assert not check_checkpoint(str(tmp_path / "d.pt")).valid


class _Boom:
    """Unpickled for real, it would create a file: it must never run."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_the_pickle_runs_nothing_and_odd_epochs_are_unknown(tmp_path: Path):
    marker = tmp_path / "ran"
    for doc, want in (
        ({"epoch": _Boom(str(marker)), "config": {"epochs": 5}}, (None, 5)),
        ({"epoch": 1e9, "config": {"epochs": True}}, (None, None)),
        ({"epoch": -5, "config": "x"}, (None, None)),
        ({"epoch": 10**30}, (None, None)),
        (["not", "a", "dict"], (None, None)),
        ({"epoch": 7, "config": {"epochs": 9}, "x": _Boom(str(marker))}, (8, 9)),
    ):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as out:
            out.writestr("a/data.pkl", pickle.dumps(doc, protocol=2))
        got = check_checkpoint(str(_write(tmp_path / "h.pt", buf.getvalue())), epoch=True)
        assert got.valid, got.problem  # a pickle we cannot read is no torn file
        assert (got.epoch, got.total_epochs) == want
    assert not marker.exists()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        out.writestr("a/data.pkl", b"\x80\x02garbage that is no pickle")
    got = check_checkpoint(str(_write(tmp_path / "g.pt", buf.getvalue())), epoch=True)
    assert got.valid and got.epoch is None


def _many_entries(path: Path, entries: int, name_len: int = 8) -> Path:
    """A zip with a data.pkl and `entries` - 1 empty members (stored, no data)."""
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("a/data.pkl", pickle.dumps({"epoch": 0}, protocol=2))
        for i in range(entries - 1):
            out.writestr(f"a/data/{i:0{name_len}d}", b"")
    return path


@pytest.mark.parametrize("entries", [MAX_ENTRIES + 1, 70_000])  # 70,000: a zip64 directory
def test_a_zip_directory_past_the_cap_is_not_read(tmp_path: Path, entries: int):
    # A directory of 1,000,000 entries took tens of seconds and ~550 MB;
    # the end record says how many there are, and past MAX_ENTRIES none is read
    path = _many_entries(tmp_path / "many.pt", entries)
    got = check_checkpoint(str(path), epoch=True)
    assert not got.valid
    assert f"lists {entries:,} entries" in got.problem
    assert got.size == path.stat().st_size
    # at the cap it is read as before
    assert check_checkpoint(str(_many_entries(tmp_path / "ok.pt", 300)), epoch=True).valid


def test_a_directory_that_understates_its_entries_is_capped_by_its_bytes(tmp_path: Path):
    # the end record's entry count is forged down to 10: zipfile reads a directory by its
    # size, so the size is capped too
    path = _many_entries(tmp_path / "liar.pt", MAX_DIRECTORY_BYTES // 200, name_len=200)
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x05\x06")
    data[at + 8 : at + 12] = (10).to_bytes(2, "little") * 2
    path.write_bytes(bytes(data))
    got = check_checkpoint(str(path))
    assert not got.valid
    assert "lists 10 entries in" in got.problem
