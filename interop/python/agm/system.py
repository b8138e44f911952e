"""The clock and the move without replacing that every protocol in FORMAT.md relies on.

"now" is the wall clock in microseconds since the Unix epoch, and "without replacing" is
renameat2(..., RENAME_NOREPLACE), or link then unlink where the filesystem lacks it (FORMAT.md,
the paragraph before "Layout").
"""

import ctypes
import errno
import os
import struct
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


# statx(2) from the C library (Python 3.11 has no os.statx), for the inode flags of one entry.
_statx = getattr(_libc, "statx", None)
if _statx is not None:
    _statx.argtypes = [
        ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    _statx.restype = ctypes.c_int
_AT_SYMLINK_NOFOLLOW, _STATX_TYPE = 0x100, 0x1
_STATX_ATTR_IMMUTABLE, _STATX_ATTR_APPEND, _STATX_ATTR_MOUNT_ROOT = 0x10, 0x20, 0x2000
# struct statx (linux/stat.h): 256 bytes; stx_attributes at 8, stx_attributes_mask at 56.
_STATX_SIZE, _ATTRIBUTES_AT, _ATTRIBUTES_MASK_AT = 256, 8, 56


def move_refusing_attributes(path):
    """The inode flags that refuse every rename, link and unlink of the entry at path itself
    (never a link's target), read with statx(2) and AT_SYMLINK_NOFOLLOW: of
    STATX_ATTR_IMMUTABLE and STATX_ATTR_APPEND (chattr +i, +a) and STATX_ATTR_MOUNT_ROOT
    (something mounted on it: renames and unlinks fail with EBUSY) the bits set in
    stx_attributes that the kernel reports in stx_attributes_mask; 0 when none, or when statx is
    missing or fails. A flag of the directory is not seen here (FORMAT.md, "Moves")."""
    if _statx is None:
        return 0
    buffer = ctypes.create_string_buffer(_STATX_SIZE)
    if _statx(-100, os.fsencode(path), _AT_SYMLINK_NOFOLLOW, _STATX_TYPE, buffer) != 0:
        return 0
    attributes, = struct.unpack_from("=Q", buffer, _ATTRIBUTES_AT)
    mask, = struct.unpack_from("=Q", buffer, _ATTRIBUTES_MASK_AT)
    return attributes & mask & (_STATX_ATTR_IMMUTABLE | _STATX_ATTR_APPEND | _STATX_ATTR_MOUNT_ROOT)


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
