"""The clock and the move without replacing that every protocol in FORMAT.md relies on.

"now" is the wall clock in microseconds since the Unix epoch, and "without replacing" is
renameat2(..., RENAME_NOREPLACE), or link then unlink where the filesystem lacks it (FORMAT.md,
the paragraph before "Layout").
"""

import ctypes
import errno
import os
import time


def now_micros():
    return time.time_ns() // 1000


# renameat2(RENAME_NOREPLACE) from the C library; link then unlink where it is missing.
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)
if _renameat2 is not None:
    _renameat2.argtypes = [
        ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    _renameat2.restype = ctypes.c_int


def rename_noreplace(source, target):
    """Renames without replacing an existing target (FORMAT.md "without replacing")."""
    if _renameat2 is not None:
        if _renameat2(-100, os.fsencode(source), -100, os.fsencode(target), 1) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(code, os.strerror(code), source)
    os.link(source, target)
    try:
        os.unlink(source)
    except FileNotFoundError:
        return  # another process finished the same move
    except OSError:
        # Both names hold the entry: take the new one back while the old one is there, so an
        # error means "not moved" (the producer then restores its counters).
        if os.path.lexists(source):
            try:
                os.unlink(target)
            except OSError:
                pass
            raise


def write_all(fd, data, offset=None):
    """Writes all of data to fd (at offset with pwrite when given), looping over short writes;
    raises OSError when the system writes nothing (ENOSPC) or refuses (EFBIG, EIO...), so a
    file is never left shorter than what was meant without an error."""
    view = memoryview(data)
    while view:
        if offset is None:
            count = os.write(fd, view)
        else:
            count = os.pwrite(fd, view, offset)
            offset += count
        if count <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[count:]
