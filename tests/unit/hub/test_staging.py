"""core.hub.staging: a private, complete copy of a checkpoint that another process rewrites."""

from __future__ import annotations

import errno
import hashlib
import os
import random
import stat
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from rgpu_tui.core.hub import staging
from rgpu_tui.core.hub.staging import StagingError, stage


def checkpoint_bytes(size: int, seed: int, prefix: str = "best") -> bytes:
    """A torch-like checkpoint: a stored zip with <prefix>/data.pkl and a data blob."""
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{prefix}/data.pkl", b"\x80\x02pickle" + bytes([seed % 256]))
        archive.writestr(f"{prefix}/data/0", random.Random(seed).randbytes(size))
        archive.writestr(f"{prefix}/version", b"3\n")
    return buf.getvalue()


def rewrite_in_place(path: Path, data: bytes) -> None:
    """What torch.save over an existing best.pt does: same inode, truncated, rewritten."""
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.write(data)


def write_checkpoint_file(path: Path, size: int, seed: int) -> int:
    """Write a stored zip of `size` random bytes without holding them in memory."""
    rng = random.Random(seed)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("best/data.pkl", b"\x80\x02pickle")
        with archive.open("best/data/0", "w", force_zip64=True) as member:
            left = size
            while left:
                n = min(left, 1 << 20)
                member.write(rng.randbytes(n))
                left -= n
    return path.stat().st_size


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(staging_dir: Path) -> list[str]:
    return sorted(os.listdir(staging_dir)) if staging_dir.exists() else []


@pytest.fixture
def run(tmp_path: Path) -> Path:
    (tmp_path / "exp1" / "weights").mkdir(parents=True)
    return tmp_path / "exp1"


@pytest.fixture
def sdir(run: Path) -> Path:
    return run / ".rgpu" / "staging"


def test_copies_hashes_and_keeps_the_copy_private(run: Path, sdir: Path) -> None:
    data = checkpoint_bytes(300_000, seed=1)
    src = run / "weights" / "best.pt"
    src.write_bytes(data)
    staged = stage(str(src), str(sdir), settle_s=0.05)
    assert staged.sha256 == sha(data)
    assert staged.size == len(data)
    assert Path(staged.path).read_bytes() == data
    assert Path(staged.path).parent == sdir
    st = os.stat(staged.path)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_dev == src.stat().st_dev  # same filesystem as the run
    assert os.stat(staged.path).st_ino != src.stat().st_ino  # a copy, not a link
    assert [n for n in leftovers(sdir) if n.endswith(".part")] == []
    staged.remove()
    assert leftovers(sdir) == []


class SettleClock:
    """A fake clock for staging.wait_settled (its `clock` and `sleep`): sleep() moves it on
    and then runs whatever a writer does by that time. No real time passes."""

    def __init__(self, monkeypatch) -> None:
        self.t = 0.0
        self.writes: list[tuple[float, Callable[[], None]]] = []  # (due, write), in order
        self.calls: list[tuple[float, float, os.stat_result | None]] = []  # (start, end, stat)
        real = staging.wait_settled

        def wait_settled(*args, **kwargs):
            start = self.t
            st = real(*args, sleep=self.sleep, clock=self.now, **kwargs)
            self.calls.append((start, self.t, st))
            return st

        monkeypatch.setattr(staging, "wait_settled", wait_settled)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        # at least a microsecond, as a real sleep: a step below the float's resolution at t
        # (settle_s minus an elapsed time that is 1e-17 short of it) would not move the clock
        self.t += max(seconds, 1e-6)
        while self.writes and self.writes[0][0] <= self.t:
            self.writes.pop(0)[1]()


def test_waits_until_the_file_has_been_still_for_settle_s(
    run: Path, sdir: Path, monkeypatch
) -> None:
    src = run / "weights" / "best.pt"
    src.write_bytes(checkpoint_bytes(50_000, seed=0))
    # sizes differ, so each rewrite shows in the stat even within one mtime tick
    versions = [checkpoint_bytes(50_000 + s, seed=s) for s in (1, 2, 3)]
    clock = SettleClock(monkeypatch)
    written_at: list[float] = []

    def write(data: bytes) -> None:
        rewrite_in_place(src, data)
        written_at.append(clock.t)

    for k, data in enumerate(versions, 1):
        clock.writes.append((0.1 * k, lambda data=data: write(data)))
    staged = stage(str(src), str(sdir), settle_s=0.3)
    assert Path(staged.path).read_bytes() == versions[-1]
    assert len(written_at) == 3 and written_at[-1] >= 0.3
    [(start, end, st)] = clock.calls  # one wait, which saw every rewrite
    assert st is not None and st.st_size == len(versions[-1])
    # still for settle_s after the last rewrite, then at once (within one poll, 0.06 s)
    assert 0.3 <= end - written_at[-1] < 0.3 + 0.06


def test_source_rewritten_during_the_copy_starts_over(run: Path, sdir: Path) -> None:
    old, new = checkpoint_bytes(600_000, seed=1), checkpoint_bytes(500_000, seed=2)
    src = run / "weights" / "best.pt"
    src.write_bytes(old)
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        if len(seen) == 1:  # the writer strikes in the middle of the first try
            rewrite_in_place(src, new)

    staged = stage(str(src), str(sdir), settle_s=0.05, chunk=64 * 1024, progress=progress)
    assert staged.sha256 == sha(new)
    assert Path(staged.path).read_bytes() == new
    totals = [t for _, t in seen]
    assert totals[0] == len(old) and totals[-1] == len(new)  # a second try, from 0
    assert len([n for n in leftovers(sdir) if n.endswith(".part")]) == 0


def test_keeps_changing_is_an_error_after_n_tries(run: Path, sdir: Path) -> None:
    versions = [checkpoint_bytes(300_000, seed=s) for s in range(2)]
    src = run / "weights" / "best.pt"
    src.write_bytes(versions[0])
    calls = [0]

    def progress(done: int, total: int) -> None:
        calls[0] += 1
        rewrite_in_place(src, versions[calls[0] % 2])

    with pytest.raises(StagingError) as err:
        stage(str(src), str(sdir), settle_s=0.02, tries=3, chunk=64 * 1024, progress=progress)
    assert str(err.value) == "best.pt keeps changing: tried 3 times"
    assert leftovers(sdir) == []


def test_a_file_that_never_settles_uses_up_the_tries(run: Path, sdir: Path, monkeypatch) -> None:
    src = run / "weights" / "last.pt"
    src.write_bytes(checkpoint_bytes(10_000, seed=0))
    clock = SettleClock(monkeypatch)
    rewrites = [0]

    def sleep(seconds: float) -> None:  # a writer that rewrites it between any two looks
        clock.t += max(seconds, 1e-6)
        rewrites[0] += 1
        rewrite_in_place(src, checkpoint_bytes(10_000 + rewrites[0], seed=rewrites[0]))

    clock.sleep = sleep
    with pytest.raises(StagingError, match=r"^last\.pt keeps changing: tried 2 times$"):
        stage(str(src), str(sdir), settle_s=0.1, settle_max_s=0.3, tries=2)
    # each try gave up on its own once settle_max_s had passed (no copy, no longer wait)
    assert [st for _, _, st in clock.calls] == [None, None]
    for start, end, _ in clock.calls:
        assert 0.3 <= end - start < 0.3 + 0.02  # within one poll (settle_s / 5)
    assert leftovers(sdir) == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a zip at all" * 1000, "not a complete torch checkpoint"),
        ("no-data-pkl", "no */data.pkl"),
        ("corrupt-member", "fails its CRC check"),
        ("truncated", "not a complete torch checkpoint"),
    ],
)
def test_not_a_complete_checkpoint_is_an_error(run: Path, sdir: Path, content, message) -> None:
    if content == "no-data-pkl":
        import io

        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as archive:
            archive.writestr("best/weights.bin", b"x" * 1000)
        content = buf.getvalue()
    elif content == "corrupt-member":
        good = bytearray(checkpoint_bytes(20_000, seed=5))
        at = good.find(random.Random(5).randbytes(20_000)[:64])
        assert at > 0
        good[at + 100] ^= 0xFF  # one flipped byte inside the stored data member
        content = bytes(good)
    elif content == "truncated":
        content = checkpoint_bytes(20_000, seed=6)[:12_000]
    src = run / "weights" / "best.pt"
    src.write_bytes(content)
    with pytest.raises(StagingError) as err:
        stage(str(src), str(sdir), settle_s=0.02)
    text = str(err.value)
    assert message in text
    assert text.startswith("best.pt")
    assert "\n" not in text
    assert leftovers(sdir) == []


def test_missing_file_is_a_one_line_error(run: Path, sdir: Path) -> None:
    with pytest.raises(StagingError, match=r"^best\.pt: no such file$"):
        stage(str(run / "weights" / "best.pt"), str(sdir), settle_s=0.02)


def test_disk_full_while_copying_leaves_nothing(run: Path, sdir: Path, monkeypatch) -> None:
    src = run / "weights" / "best.pt"
    src.write_bytes(checkpoint_bytes(3_000_000, seed=3))
    real_write = os.write
    calls = [0]

    def full_write(fd, data):
        calls[0] += 1
        if calls[0] >= 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(staging.os, "write", full_write)
    with pytest.raises(StagingError) as err:
        stage(str(src), str(sdir), settle_s=0.02, chunk=1 << 20)
    assert calls[0] >= 2  # it did fail in the middle of the copy
    assert "no space left" in str(err.value)
    assert "best.pt" in str(err.value)
    assert leftovers(sdir) == []


def test_not_enough_free_space_fails_before_copying(run: Path, sdir: Path, monkeypatch) -> None:
    src = run / "weights" / "best.pt"
    src.write_bytes(checkpoint_bytes(100_000, seed=3))
    monkeypatch.setattr(staging, "_free_bytes", lambda path: 1000)
    with pytest.raises(StagingError, match="no space left"):
        stage(str(src), str(sdir), settle_s=0.02)
    assert leftovers(sdir) == []


def test_memory_stays_flat_for_a_30_mb_checkpoint(run: Path, sdir: Path) -> None:
    src = run / "weights" / "best.pt"
    size = write_checkpoint_file(src, 30 * 1024 * 1024, seed=9)
    tracemalloc.start()
    try:
        staged = stage(str(src), str(sdir), settle_s=0.02)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert staged.size == size
    digest = hashlib.sha256()
    with open(src, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    assert staged.sha256 == digest.hexdigest()
    print(f"peak traced memory staging {size / 1e6:.1f} MB: {peak / 1e6:.2f} MB")
    assert peak < 4 * 1024 * 1024  # chunks, not the file
    staged.remove()


def test_leftovers_of_dead_processes_are_cleaned(run: Path, sdir: Path) -> None:
    sdir.mkdir(parents=True)
    dead = sdir / ".best.pt.999999999.deadbeef.part"
    mine = sdir / f".best.pt.{os.getpid()}.cafe.staged"
    dead.write_bytes(b"x")
    mine.write_bytes(b"y")
    src = run / "weights" / "best.pt"
    src.write_bytes(checkpoint_bytes(1000, seed=1))
    staged = stage(str(src), str(sdir), settle_s=0.02)
    assert not dead.exists()
    assert mine.exists()
    staged.remove()
