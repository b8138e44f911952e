"""The settings file (FORMAT.md, "The settings file"): what the mailbox keeps about itself, the
bounds every producer and consumer follows whatever limits its opener was given. Read and
checked as the Swift library does (Sources/AppGroupMailbox/Settings/MailboxSettings.swift),
re-read when the file changes, and written once when a namespace has none."""

import json
import os
import secrets
import stat
import time

from .errors import SettingsFormatTooNew, SettingsUnreadable
from .jsontext import RepeatedName, loads_object
from .names import ClaimedName, Name, parse_delayed
from .system import rename_noreplace, write_all

FORMAT = 2  # the newest format read (and written: 2 only while held)
MAX_BYTES = 4096
PAYLOAD_CEILING = 64 * 1024 * 1024
RESOLUTION = 0.000_001  # seconds: the shortest messageLifetime and claim timeout (1 µs)
COUNT_CEILING = 8_999_999_999_999_999  # the largest count bound (AppGroupMailboxLimits.countCeiling)
CLAIM_TIMEOUT_CEILING = 31_622_400  # seconds (366 days): a longer lease reads as forged
CREATOR_GRACE = 2.0  # seconds an opener waits for the settings of a namespace being created


class Settings:
    """The stored members; `lifetime` in seconds, as stored (`lifetime_micros` in microseconds)."""

    FIELDS = ("max_messages", "max_payload_bytes", "lifetime", "max_quarantined", "max_attempts",
              "discard_oldest", "group_shared")
    NAMES = ("maxMessages", "maxPayloadBytes", "messageLifetime", "maxQuarantinedFiles",
             "maxDeliveryAttempts", "overflowPolicy", "sharing")

    def __init__(self, max_messages=100, max_payload_bytes=65536, lifetime=86400.0,
                 max_quarantined=20, max_attempts=None, discard_oldest=False, group_shared=False,
                 held=False, largest_payload_bytes=None):
        self.max_messages, self.max_payload_bytes = max_messages, max_payload_bytes
        self.lifetime, self.max_quarantined = lifetime, max_quarantined
        self.max_attempts = max_attempts
        self.discard_oldest, self.group_shared, self.held = discard_oldest, group_shared, held
        self.largest_payload_bytes = max(max_payload_bytes, largest_payload_bytes or 0)

    @property
    def lifetime_micros(self):
        """Microseconds, at most 2**63 - 1 (a lifetime of 1e308 s is valid), as the library's
        TimeInterval.microseconds clamps."""
        micros = self.lifetime * 1_000_000
        return 2**63 - 1 if micros >= 2.0**63 else int(micros)

    def differences(self, other):
        """The stored names of the members in which other differs (the hold aside)."""
        return [name for field, name in zip(self.FIELDS, self.NAMES)
                if getattr(self, field) != getattr(other, field)]

    def validate(self):
        """Raises SettingsUnreadable naming the first bound out of range (as the library's
        AppGroupMailboxLimits.validate())."""
        # Counts as the library bounds them: a larger one stores a number no reader takes as an
        # integer (FORMAT.md: below 9 * 10^15), so the file would lock every opener out.
        if not 1 <= self.max_messages <= COUNT_CEILING:
            raise SettingsUnreadable("'maxMessages' is out of range")
        if not 1 <= self.max_payload_bytes <= PAYLOAD_CEILING:
            raise SettingsUnreadable("'maxPayloadBytes' is out of range")
        # At least 1 µs, the unit of every stored time (as AppGroupMailboxLimits.resolution):
        # a shorter lifetime reads as 0 microseconds, and a file the library refuses must not
        # be one this side reads (or writes) and then expires every message by.
        if not RESOLUTION <= self.lifetime < float("inf"):
            raise SettingsUnreadable("'messageLifetime' is out of range")
        if not 0 <= self.max_quarantined <= COUNT_CEILING:
            raise SettingsUnreadable("'maxQuarantinedFiles' is out of range")
        if self.max_attempts is not None and not 1 <= self.max_attempts <= COUNT_CEILING:
            raise SettingsUnreadable("'maxDeliveryAttempts' is out of range")

    def encode(self):
        """The file's one line, byte for byte as the library writes it."""
        lifetime = self.lifetime
        if lifetime == int(lifetime) and abs(lifetime) < 1e15:
            lifetime = int(lifetime)
        line = (
            '{"format":%d,"maxMessages":%d,"maxPayloadBytes":%d,"largestPayloadBytes":%d,'
            '"messageLifetime":%s,"maxQuarantinedFiles":%d,"maxDeliveryAttempts":%s,'
            '"overflowPolicy":"%s","sharing":"%s"%s}\n') % (
            2 if self.held else 1, self.max_messages, self.max_payload_bytes,
            self.largest_payload_bytes, json.dumps(lifetime), self.max_quarantined,
            "null" if self.max_attempts is None else "%d" % self.max_attempts,
            "discardOldest" if self.discard_oldest else "rejectNewest",
            "groupShared" if self.group_shared else "private",
            ',"held":true' if self.held else "")
        return line.encode()

    @staticmethod
    def decode(raw):
        """Settings from the file's bytes; raises SettingsFormatTooNew for a format newer than
        FORMAT, SettingsUnreadable (naming a member, never a value) for anything else wrong."""
        try:
            settings = loads_object(raw.decode("utf-8"), whole=True)
        except RepeatedName as error:
            raise SettingsUnreadable(str(error))
        except (UnicodeDecodeError, ValueError):
            raise SettingsUnreadable("not one JSON object")
        version = _integer(settings.get("format"))
        if version is None:
            raise SettingsUnreadable("'format' is missing or not an integer")
        if version > FORMAT:
            raise SettingsFormatTooNew(version)
        if version < 1:
            raise SettingsUnreadable("'format' is below 1")

        def member(name, value):
            if value is None:
                raise SettingsUnreadable("'%s' is missing or of the wrong type" % name)
            return value

        lifetime = settings.get("messageLifetime")
        attempts = settings.get("maxDeliveryAttempts")
        policy = member("overflowPolicy", _text(settings.get("overflowPolicy")))
        sharing = member("sharing", _text(settings.get("sharing")))
        if policy not in ("rejectNewest", "discardOldest"):
            raise SettingsUnreadable("'overflowPolicy' is neither rejectNewest nor discardOldest")
        if sharing not in ("private", "groupShared"):
            raise SettingsUnreadable("'sharing' is neither private nor groupShared")
        held = False
        if version >= 2:
            held = settings.get("held")
            if type(held) is not bool:
                raise SettingsUnreadable("'held' is missing or not true or false (format 2)")
        result = Settings(
            max_messages=member("maxMessages", _integer(settings.get("maxMessages"))),
            max_payload_bytes=member("maxPayloadBytes", _integer(settings.get("maxPayloadBytes"))),
            lifetime=member("messageLifetime", float(lifetime) if _number(lifetime) else None),
            max_quarantined=member(
                "maxQuarantinedFiles", _integer(settings.get("maxQuarantinedFiles"))),
            max_attempts=None if attempts is None else member(
                "maxDeliveryAttempts", _integer(attempts)),
            discard_oldest=policy == "discardOldest", group_shared=sharing == "groupShared",
            held=held)
        largest = _integer(settings.get("largestPayloadBytes")) or 0
        result.largest_payload_bytes = max(result.max_payload_bytes, min(largest, PAYLOAD_CEILING))
        result.validate()
        return result


def _number(value):
    return type(value) in (int, float)


def _integer(value):
    """An integral JSON number (1 or 1.0, not true), else None."""
    if not _number(value) or value != value or abs(value) >= 9e15 or value != int(value):
        return None
    return int(value)


def _text(value):
    return value if isinstance(value, str) else None


def _stamp(info):
    """What identifies one version of the file: inode, size, modification and change times."""
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class StoredSettings:
    """The stored settings of a namespace, as last read; a mixin of Spool (needs Layout, State)."""

    def open_settings(self, opener, created):
        """Reads `settings`, or, when the namespace has none, writes opener's (the sharing mode
        the directory shows unless this opener created it) as FORMAT.md says: after waiting up
        to CREATOR_GRACE for the creator's while `state` is still empty. Raises
        SettingsFormatTooNew or SettingsUnreadable (nothing is guessed)."""
        self.settings, self.settings_stamp = opener, None
        found = self.read_settings()
        if found is None and not created:
            deadline = time.monotonic() + CREATOR_GRACE
            while found is None and os.fstat(self.state).st_size == 0 \
                    and time.monotonic() < deadline:
                time.sleep(0.005)
                found = self.read_settings()
        if found is None:
            if not created:
                opener.group_shared = bool(os.stat(self.path).st_mode & stat.S_ISGID)
                self.set_modes(opener.group_shared)
                # A namespace whose file was moved away (damaged) may hold messages an earlier,
                # higher limit admitted: readers must accept them, not quarantine them.
                opener.largest_payload_bytes = max(
                    opener.largest_payload_bytes, self._largest_stored_message())
            try:
                self._write_settings(opener)
            except FileExistsError:
                pass  # a racing opener stored its settings first: those apply
            found = self.read_settings()
        if found is not None:
            self.settings, self.settings_stamp = found

    def _largest_stored_message(self):
        """Bytes of the largest message file in pending/, claimed/ and delayed/ (a regular file
        under its area's message name), counted at most as the bytes it occupies on disk (a
        sparse file planted to look large counts as what it holds) and at most PAYLOAD_CEILING;
        0 when none (entries that cannot be looked at are left out)."""
        largest = 0
        for area, parse in (("pending", Name.parse), ("claimed", ClaimedName.parse),
                            ("delayed", parse_delayed)):
            try:
                names = os.listdir(self.area(area))
            except OSError:
                continue
            for name in names:
                if parse(name) is None:
                    continue
                try:
                    info = os.lstat(self.area(area, name))
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    stored = min(info.st_size, info.st_blocks * 512)
                    largest = max(largest, min(stored, PAYLOAD_CEILING))
        return largest

    def read_settings(self):
        """(Settings, stamp) from the file, or None when there is none."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(os.path.join(self.path, "settings"), flags)
        except FileNotFoundError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SettingsUnreadable("not a regular file")
            raw = os.pread(fd, MAX_BYTES + 1, 0)
        finally:
            os.close(fd)
        if len(raw) > MAX_BYTES:
            raise SettingsUnreadable("larger than %d bytes" % MAX_BYTES)
        return Settings.decode(raw), _stamp(info)

    def refresh_settings(self):
        """Re-reads the file when it changed since it was read (one lstat otherwise). A file that
        cannot be read, or has a newer format, keeps the settings known (FORMAT.md: a reader
        "keeps the settings it had read"), as the library does."""
        try:
            stamp = _stamp(os.lstat(os.path.join(self.path, "settings")))
        except OSError:
            return
        if stamp == self.settings_stamp:
            return
        try:
            found = self.read_settings()
        except (OSError, SettingsUnreadable):
            return
        if found is not None:
            self.settings, self.settings_stamp = found

    def _write_settings(self, settings):
        """Writes settings to tmp/, flushes it and renames it to `settings` without replacing,
        then flushes the namespace directory; always flushed (settings are rare)."""
        temporary = self.area("tmp", f"{os.getpid()}-{secrets.token_hex(8)}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     self.file_mode)
        try:
            os.fchmod(fd, self.file_mode)
            write_all(fd, settings.encode())
            os.fsync(fd)
            rename_noreplace(temporary, os.path.join(self.path, "settings"))
        except BaseException:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            raise
        finally:
            os.close(fd)
        directory = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
