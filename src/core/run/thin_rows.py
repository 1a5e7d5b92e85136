"""Which rows of a long metrics history are kept, so that what is read stays bounded
whatever the file holds (core.run.metrics keeps its per-row arrays parallel to these).

Rows are numbered 0, 1, ... in the order they were added. While there are at most
`old + 2 * recent` rows (3,072: more epochs than a real run has) every row is kept. Past
that, `compact` keeps:

- every row from `boundary` on: the newest `recent` (1,024) at least, exactly;
- of the older rows, one in `stride` (row numbers that are multiples of it: a power of two
  that doubles when more than `old` of them would be kept), so a chart that keeps one row
  in a larger power of two (core.run.series.stride_for) finds every row it asks for;
- the rows `pin`ned (where an attempt began again: its sums must stay exact), however old.

A row asked for that is not kept is answered by the nearest kept row before it
(`position`): exact for the newest rows and for every row of a real run, within `stride`
rows for the older rows of a longer file.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence

RECENT = 1024  # the newest rows, always kept
OLD = 1024  # at most this many older rows, one in `stride`


class RowThinner:
    def __init__(self, recent: int = RECENT, old: int = OLD) -> None:
        self.recent = recent
        self.old = old
        self.index = array("q")  # the number of each kept row, ascending
        self.count = 0  # rows in all
        self.stride = 1
        self.boundary = 0  # every row from here on is kept
        self._pins: dict[int, int] = {}  # row -> how many pinned it

    def append(self) -> bool:
        """One more row, kept for now; True when `compact` should run."""
        self.index.append(self.count)
        self.count += 1
        return len(self.index) > self.old + 2 * self.recent + len(self._pins)

    def compact(self) -> tuple[list[int], int, int]:
        """Drop older rows. Returns (the positions of the kept rows to keep, in order; the
        old boundary; the new one): rows [old, new) were all kept until now."""
        before = self.boundary
        boundary = max(before, self.count - self.recent)
        stride = self.stride
        while (boundary + stride - 1) // stride > self.old:
            stride *= 2
        pins = self._pins
        keep = [
            p for p, i in enumerate(self.index) if i >= boundary or i % stride == 0 or i in pins
        ]
        self.index = array("q", [self.index[p] for p in keep])
        self.stride, self.boundary = stride, boundary
        return keep, before, boundary

    def position(self, row: int) -> int:
        """The position of kept row `row`, or of the nearest kept row before it (0 when
        none is)."""
        return max(0, bisect_right(self.index, row) - 1)

    def truncate(self, position: int, count: int) -> None:
        """Keep the kept rows before `position`; there are now `count` rows in all (a
        resume wrote the later epochs again)."""
        del self.index[position:]
        self.count = count
        if self.index and self.index[-1] == count - 1:
            self.boundary = min(self.boundary, count)
        else:  # rows between the last kept one and `count` are not kept
            self.boundary = count
        self._pins = {r: n for r, n in self._pins.items() if r < count}

    def pin(self, row: int) -> None:
        self._pins[row] = self._pins.get(row, 0) + 1

    def unpin(self, row: int) -> None:
        n = self._pins.get(row, 0)
        if n <= 1:
            self._pins.pop(row, None)
        else:
            self._pins[row] = n - 1


class RowView(Sequence):
    """One per-row array seen as every row's value (len: all the rows): a row not kept
    reads as the nearest kept row before it (see the module doc)."""

    def __init__(self, thinner: RowThinner, values: array) -> None:
        self._thinner = thinner
        self._values = values

    def __len__(self) -> int:
        return self._thinner.count

    def __getitem__(self, i):  # int only: no caller slices every row
        n = self._thinner.count
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._values[self._thinner.position(i)]

    def __iter__(self) -> Iterator:
        for i in range(self._thinner.count):
            yield self[i]
