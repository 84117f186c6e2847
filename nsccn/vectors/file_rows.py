"""An int8 matrix left in its file (a member of an uncompressed .npz) and read a row at a time,
the first time each row is asked for.

The static model's rows are 24.6 MB (67,870 tokens and a bank of 32,768, 256 bytes each); a code
base uses a fraction of them (sympy's 27,272 entities: 8,265 tokens and 9,680 bank rows, 4.4 MB).
Read whole, all of it is the writer's memory for the whole index. Memory-mapping the file does
not help: a read of one row maps the pages around it too (the kernel's fault-around), so a few
hundred texts map all of it, and the mapped pages count in the process's RSS as its own do.
Here each row read is copied into the next free slot of an anonymous private mapping, whose pages
take memory only once written: the memory held is the rows used, to the page.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading
import zipfile
from pathlib import Path

import numpy as np

_LOCAL_HEADER = 30  # a zip member's local header: fixed part; its name and extra field follow


class FileRows:
    """`rows[ids]`: the rows `ids` (an integer array) as an int8 array, read from the file the first
    time each is asked for; `np.asarray(rows)`: every row, read at once (training, saving).
    The file is held open: a model file replaced meanwhile (a new file at its path) does not
    change the rows read later."""

    ndim = 2
    dtype = np.dtype(np.int8)

    def __init__(self, path: str | Path, offset: int, shape: tuple[int, int]):
        self.path, self.offset, self.shape = str(path), int(offset), (int(shape[0]), int(shape[1]))
        self._row_bytes = self.shape[1]
        self._fd = os.open(self.path, os.O_RDONLY)
        # Private: a forked child's rows are its own (a shared mapping would let its slots overwrite ours).
        self._mem = mmap.mmap(-1, max(1, self.shape[0] * self._row_bytes), flags=mmap.MAP_PRIVATE)
        self._data = np.frombuffer(self._mem, np.int8, count=self.shape[0] * self._row_bytes).reshape(self.shape)
        self._slot = np.full(self.shape[0], -1, np.int32)  # row -> where it was copied, -1 not yet read
        self._used = 0
        self._lock = threading.Lock()  # two threads may ask for a new row at once: one slot each

    @classmethod
    def of_npz(cls, path: str | Path, name: str) -> FileRows | None:
        """The 2-D int8 member `name` of the .npz at `path`, or None where it cannot be read in place
        (compressed, another dtype or order, no `os.pread`): the caller reads it whole."""
        if not hasattr(os, "pread"):
            return None
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(name + ".npy")
        if info.compress_type != zipfile.ZIP_STORED:
            return None
        with open(path, "rb") as f:
            f.seek(info.header_offset)
            local = f.read(_LOCAL_HEADER)
            if len(local) != _LOCAL_HEADER or local[:4] != b"PK\x03\x04":
                return None
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            start = info.header_offset + _LOCAL_HEADER + name_len + extra_len
            f.seek(start)
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                return None
            offset = f.tell()
        if dtype != np.int8 or fortran or len(shape) != 2 or offset - start + shape[0] * shape[1] != info.file_size:
            return None
        return cls(path, offset, shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.intp)
        slots = self._slot[ids]
        if slots.size and slots.min() < 0:
            self._read(np.unique(ids[slots < 0]))
            slots = self._slot[ids]
        return self._data[slots]

    def _read(self, rows: np.ndarray) -> None:
        with self._lock:
            for row in rows.tolist():
                row %= self.shape[0]  # as numpy indexes: -1 is the last row
                if self._slot[row] >= 0:  # read by another thread meanwhile
                    continue
                buf = os.pread(self._fd, self._row_bytes, self.offset + row * self._row_bytes)
                if len(buf) != self._row_bytes:
                    raise OSError(f"{self.path}: row {row} is cut short (the file changed since it was opened?)")
                slot = self._used
                self._data[slot] = np.frombuffer(buf, np.int8)
                self._used = slot + 1
                self._slot[row] = slot  # published last: a reader that sees the slot sees the row

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        size = self.shape[0] * self._row_bytes
        buf = os.pread(self._fd, size, self.offset)
        if len(buf) != size:
            raise OSError(f"{self.path}: its rows are cut short (the file changed since it was opened?)")
        out = np.frombuffer(buf, np.int8).reshape(self.shape)
        return out if dtype is None else out.astype(dtype)

    def __del__(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)
