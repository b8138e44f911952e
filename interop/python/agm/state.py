"""The state file: the namespace lock and its counters line, rebuilt from the names when it does
not parse or on a program's first use (FORMAT.md, "The state file and the lock")."""

import errno
import fcntl
import os
import stat

from .errors import OrdinalExhausted
from .names import MAX_MICROS, MAX_SEQUENCE, ClaimedName, Name, parse_delayed
from .system import now_micros, write_all

STATE_LENGTH = 65


def parse_state(raw):
    """(sequence, depth, newest) from the state line, or None when it does not parse."""
    if len(raw) != STATE_LENGTH or raw[:2] != b"1 " or raw[64:] != b"\n":
        return None
    fields = (raw[2:22], raw[23:43], raw[44:64])
    if raw[22:23] != b" " or raw[43:44] != b" " or not all(f.isdigit() for f in fields):
        return None
    sequence, depth, newest = (int(f) for f in fields)
    # A sequence past what producers hand out is damage (a line written by hand): rebuilt.
    if sequence > MAX_SEQUENCE or depth > 2_147_483_647 or newest > MAX_MICROS:
        return None
    return [sequence, depth, newest]


def state_line(counters):
    sequence, depth, newest = counters
    return f"1 {sequence:020d} {max(depth, 0):020d} {max(newest, 0):020d}\n".encode()


class State:
    """The lock and the counters of a namespace; a mixin of Spool (needs Layout and
    StoredSettings)."""

    def open_state(self):
        """Opens the state file, creating it with its mode set explicitly when missing."""
        # Created with its mode set explicitly when missing (whatever the umask); an existing
        # one (possibly empty: rebuilt on first use) is used as it is.
        # O_NONBLOCK: a FIFO or a device there must not block the open; it is refused below
        # (a regular file ignores the flag). A hard-linked one is refused too, never written
        # through: another name (outside the mailbox perhaps) would get the state line.
        state = os.path.join(self.path, "state")
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            self.state = os.open(state, flags | os.O_CREAT | os.O_EXCL, self.file_mode)
            os.fchmod(self.state, self.file_mode)
        except FileExistsError:
            self.state = os.open(state, flags)
        info = os.fstat(self.state)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(self.state)
            raise OSError(errno.EINVAL, "state is not a regular file with one link")
        self.validated = False

    def close(self):
        os.close(self.state)

    def locked(self, body):
        """Runs body(counters) under the lock, the settings re-read first when they changed;
        writes the counters back when they changed."""
        fcntl.flock(self.state, fcntl.LOCK_EX)
        try:
            self.refresh_settings()
            stored = parse_state(os.pread(self.state, STATE_LENGTH, 0))
            counters = list(stored) if stored and self.validated else self.recount(stored)
            self.validated = True
            result = body(counters)
            if counters != stored:
                self.write_state(counters)
            return result
        finally:
            fcntl.flock(self.state, fcntl.LOCK_UN)

    def write_state(self, counters):
        write_all(self.state, state_line(counters), 0)

    def recount(self, stored):
        """Counters rebuilt from the names (call under the lock). A name's sequence past
        MAX_SEQUENCE does not move the counter, and `newest` comes only from names not later
        than now: a future-dated import must never become the clock of later enqueues."""
        seen = set()
        sequence = stored[0] if stored else 0
        newest = stored[2] if stored else 0
        now = now_micros()

        def count(name, implicit):
            nonlocal sequence, newest
            seen.add((name.micros, name.sequence, name.id))
            if name.sequence <= MAX_SEQUENCE:
                sequence = max(sequence, name.sequence)
            if implicit and stored is None and name.micros <= now:
                newest = max(newest, name.micros)

        def claimed(text):
            parsed = ClaimedName.parse(text)
            return parsed.name if parsed else None

        def delayed(text):
            parsed = parse_delayed(text)
            return parsed[1] if parsed else None

        # Listed pending, claimed, delayed, pending again: a message that moves once meanwhile
        # is still seen (FORMAT.md, "Why the lock").
        for area, parse, implicit in (("pending", Name.parse, True), ("claimed", claimed, True),
                                      ("delayed", delayed, False), ("pending", Name.parse, True)):
            for entry in os.scandir(self.area(area)):
                # Only regular files are messages (FIFOs, sockets, devices neither).
                if not entry.is_file(follow_symlinks=False):
                    continue
                name = parse(entry.name)
                if name:
                    count(name, implicit)
        return [sequence, len(seen), newest]

    def make_sequence_room(self, counters):
        """Before a sequence is handed out: when the counter leaves none (a line written near
        MAX_SEQUENCE), rebuilds it from the names alone, so it is the largest sequence a message
        holds; raises OrdinalExhausted when that leaves none either (FORMAT.md, "Names")."""
        if counters[0] < MAX_SEQUENCE:
            return
        rebuilt = self.recount(None)
        rebuilt[2] = max(rebuilt[2], counters[2])
        counters[:] = rebuilt
        if counters[0] >= MAX_SEQUENCE:
            raise OrdinalExhausted()

    def recount_locked(self):
        """Rebuilds the counters under the lock (after entries left without lowering depth)."""
        self.locked(lambda counters: counters.__setitem__(slice(None), self.recount(counters)))

    def remove(self, path):
        """Unlinks a message file; False when it was gone. No lock, and depth stays: it is an upper
        bound that only a recount lowers, since the message may never have been counted
        (FORMAT.md, "The state file and the lock")."""
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True
