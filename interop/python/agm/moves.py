"""What a move meets when its target name is taken (FORMAT.md, "Moves: target exists, source
vanished"): the same message again, or another entry."""

import os
import stat


def same_entry(one, other, limit):
    """Whether two entries are the same file, or regular files with equal bytes of at most
    ``limit`` bytes (largestPayloadBytes, as a claim reads), read without following links;
    anything else differs."""
    try:
        first, second = os.lstat(one), os.lstat(other)
    except OSError:
        return False
    if (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino):
        return True
    if not (stat.S_ISREG(first.st_mode) and stat.S_ISREG(second.st_mode)
            and first.st_size == second.st_size <= limit):
        return False
    left = read_capped(one, limit)
    return left is not None and left == read_capped(other, limit)


def read_capped(path, limit):
    """The bytes of the regular file at path (not followed if a link), or None when it is not
    one, cannot be read, or holds more than limit bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = read_at_most(fd, limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_at_most(fd, count):
    """Up to count bytes from fd, fewer only at its end: a file that grows while it is read
    is never read past count."""
    data = b""
    while len(data) < count:
        chunk = os.read(fd, count - len(data))
        if not chunk:
            break
        data += chunk
    return data
