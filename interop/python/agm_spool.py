#!/usr/bin/env python3
"""A second, minimal implementation of the AppGroupMailbox spool, written from docs/FORMAT.md.

Python 3 standard library only. It implements the producer protocol (enqueue, with an id, a date
or a not-before time) and the consumer protocol (claim, read, acknowledge, release, release with a
delay, renew, recovery of abandoned claims, promotion of due delayed messages, expiry, quarantine)
so that the interop tests can check the format against the Swift library from the outside. It is
not a full client: no wake-ups, no maintenance of `tmp/`, no trimming beyond what quarantine does.

Command line (used by Tests/AppGroupMailboxTests/Interop):

    agm_spool.py enqueue CONTAINER NS [--lines] [--id UUID] [--enqueued-at-us N] [--delay S]
                 [--type T] [--retry-full SECONDS] [limits]
        stdin is one message (or one a line with --lines); prints "<id> <outcome>" per message.
    agm_spool.py drain CONTAINER NS [--count N] [--until-file F] [--limit L] [--type T] [limits]
        claims and acknowledges; prints one JSON object a message (id, deliveryCount,
        enqueuedAt, messageType, payloadHex). Stops after N messages, or when F exists and a claim
        finds nothing, or (without either) at the first empty claim.
    agm_spool.py hold CONTAINER NS [--limit L] [limits]
        claims up to L messages, prints them as drain does, and exits without acknowledging.
    agm_spool.py release-delay CONTAINER NS --delay S [limits]
        claims one message and releases it with a retry delay of S seconds.
    limits: --max-messages N --max-payload-bytes N --lifetime S --claim-timeout S
            --max-quarantined N --max-attempts N --discard-oldest --group-shared --relaxed
"""

import argparse
import ctypes
import errno
import fcntl
import json
import os
import re
import secrets
import stat
import sys
import time
import uuid

AREAS = ("tmp", "pending", "claimed", "quarantine", "delayed")
MAX_MICROS = 9_999_999_999_999_999
MAX_ATTEMPTS = 2_147_483_647
MAX_HEADER_BYTES = 4096
LINK_GRACE_MICROS = 1_000_000
STATE_LENGTH = 65
NAMESPACE = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)
UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
STEM = re.compile(r"(\d{16})-(\d{20})-(" + UUID_TEXT + r")-(0|[1-9]\d{0,9})", re.ASCII)
CLAIMED = re.compile(r"(.+)\.([0-9a-f]{16})\.(\d{16})\.claim", re.ASCII)
DELAYED = re.compile(r"(\d{16})-(.+\.msg)", re.ASCII)
QUARANTINED = re.compile(
    r"\d{16}-[a-z]+-(" + UUID_TEXT + r"|unknown)-[0-9a-f]{8}\.q", re.ASCII | re.I)
ANY_UUID = re.compile(UUID_TEXT, re.ASCII | re.I)


class MailboxFull(Exception):
    """The depth bound holds no room (rejectNewest), or nothing pending can be evicted."""


class PayloadTooLarge(Exception):
    """The message file would exceed maxPayloadBytes; nothing was written."""


class ClaimGone(Exception):
    """The claim was recovered or finished elsewhere (ENOENT); nothing was changed."""


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
    os.unlink(source)


class Name:
    """A pending name: <enqueuedAt:16>-<sequence:20>-<id>-<attempts>.msg."""

    def __init__(self, micros, sequence, id, attempts):
        self.micros, self.sequence, self.id, self.attempts = micros, sequence, id, attempts

    @property
    def key(self):
        return (self.micros, self.sequence)

    @property
    def stem(self):
        return f"{self.micros:016d}-{self.sequence:020d}-{self.id}-{self.attempts}"

    @property
    def file(self):
        return self.stem + ".msg"

    @staticmethod
    def parse_stem(text):
        match = STEM.fullmatch(text)
        if not match:
            return None
        micros, sequence, id, attempts = match.groups()
        if int(sequence) >= 1 << 64 or int(attempts) > MAX_ATTEMPTS:
            return None
        return Name(int(micros), int(sequence), id, int(attempts))

    @staticmethod
    def parse(text):
        return Name.parse_stem(text[:-4]) if text.endswith(".msg") else None


class ClaimedName:
    """<pending stem with attempts counting this claim>.<token:16>.<leaseUntil:16>.claim"""

    def __init__(self, name, token, lease):
        self.name, self.token, self.lease = name, token, min(max(lease, 0), MAX_MICROS)

    @property
    def file(self):
        return f"{self.name.stem}.{self.token}.{self.lease:016d}.claim"

    @staticmethod
    def parse(text):
        match = CLAIMED.fullmatch(text)
        name = match and Name.parse_stem(match.group(1))
        return ClaimedName(name, match.group(2), int(match.group(3))) if name else None


def parse_delayed(text):
    """(due, pending name) of a delayed name, or None."""
    match = DELAYED.fullmatch(text)
    name = match and Name.parse(match.group(2))
    return (int(match.group(1)), name) if name else None


def quarantined_id(text):
    match = QUARANTINED.fullmatch(text)
    return match.group(1).lower() if match and match.group(1) != "unknown" else None


def parse_state(raw):
    """(sequence, depth, newest) from the state line, or None when it does not parse."""
    if len(raw) != STATE_LENGTH or raw[:2] != b"1 " or raw[64:] != b"\n":
        return None
    fields = (raw[2:22], raw[23:43], raw[44:64])
    if raw[22:23] != b" " or raw[43:44] != b" " or not all(f.isdigit() for f in fields):
        return None
    sequence, depth, newest = (int(f) for f in fields)
    if sequence >= 1 << 64 or depth > 2_147_483_647 or newest > MAX_MICROS:
        return None
    return [sequence, depth, newest]


def state_line(counters):
    sequence, depth, newest = counters
    return f"1 {sequence:020d} {max(depth, 0):020d} {max(newest, 0):020d}\n".encode()


def decode_header(data):
    """(header dict, payload bytes), or raises ValueError("malformed" or "future")."""
    newline = data.find(b"\n", 0, min(len(data), MAX_HEADER_BYTES))
    if newline <= 0 or data[:1] != b"{":
        raise ValueError("malformed")
    try:
        header = json.loads(data[:newline].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("malformed")
    if not isinstance(header, dict):
        raise ValueError("malformed")
    version = header.get("format")
    if type(version) is not int or version < 1:
        raise ValueError("malformed")
    if version > 1:
        raise ValueError("future")
    if (type(header.get("enqueuedAt")) is not int or not isinstance(header.get("id"), str)
            or not isinstance(header.get("messageType"), str)
            or not ANY_UUID.fullmatch(header["id"])):
        raise ValueError("malformed")
    return header, data[newline + 1:]


def is_json(payload):
    try:
        json.loads(payload.decode("utf-8"))
        return True
    except (UnicodeDecodeError, ValueError):
        return False


class Claim:
    def __init__(self, claimed, header, payload):
        self.claimed, self.header, self.payload = claimed, header, payload

    @property
    def id(self):
        return self.claimed.name.id

    @property
    def delivery_count(self):
        return self.claimed.name.attempts


class Spool:
    """One namespace of a mailbox, opened (and created when missing) as FORMAT.md describes."""

    def __init__(self, container, namespace, max_messages=100, max_payload_bytes=65536,
                 lifetime=86400.0, claim_timeout=600.0, max_quarantined=20, max_attempts=None,
                 discard_oldest=False, message_type=None, durable=True, group_shared=False):
        if not NAMESPACE.fullmatch(namespace) or set(namespace) == {"."}:
            raise ValueError("invalid namespace")
        self.max_messages, self.max_payload_bytes = max_messages, max_payload_bytes
        self.lifetime = int(lifetime * 1_000_000)
        self.claim_timeout = int(claim_timeout * 1_000_000)
        self.max_quarantined, self.max_attempts = max_quarantined, max_attempts
        self.discard_oldest, self.message_type, self.durable = discard_oldest, message_type, durable
        self.dir_mode, self.file_mode = (0o2770, 0o660) if group_shared else (0o700, 0o600)
        self.path = os.path.join(container, "AppGroupMailbox", namespace)
        self._mkdirs(container)
        for part in ("AppGroupMailbox", os.path.join("AppGroupMailbox", namespace)):
            self._mkdir(os.path.join(container, part))
        for area in AREAS:
            self._mkdir(os.path.join(self.path, area))
        # Created with its mode set explicitly when missing (whatever the umask); an existing
        # one (possibly empty: rebuilt on first use) is used as it is.
        state = os.path.join(self.path, "state")
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self.state = os.open(state, flags | os.O_CREAT | os.O_EXCL, self.file_mode)
            os.fchmod(self.state, self.file_mode)
        except FileExistsError:
            self.state = os.open(state, flags)
        if not stat.S_ISREG(os.fstat(self.state).st_mode):
            raise OSError(errno.EINVAL, "state is not a regular file")
        self.validated = False
        self.last_sweep = None

    def _mkdirs(self, path):
        if not os.path.isdir(path):
            parent = os.path.dirname(os.path.abspath(path))
            if parent != path:
                self._mkdirs(parent)
            self._mkdir(path)

    def _mkdir(self, path):
        try:
            os.mkdir(path, self.dir_mode)
            os.chmod(path, self.dir_mode)
        except FileExistsError:
            pass
        if os.path.islink(path) or not os.path.isdir(path):
            raise OSError(errno.ENOTDIR, "not a real directory", path)

    def area(self, name, entry=None):
        if entry is None:
            return os.path.join(self.path, name)
        return os.path.join(self.path, name, entry)

    def close(self):
        os.close(self.state)

    # The lock and the counters.

    def locked(self, body):
        """Runs body(counters) under the lock; writes the counters back when they changed."""
        fcntl.flock(self.state, fcntl.LOCK_EX)
        try:
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
        os.pwrite(self.state, state_line(counters), 0)

    def recount(self, stored):
        """Counters rebuilt from the names (call under the lock)."""
        seen = set()
        sequence = stored[0] if stored else 0
        newest = stored[2] if stored else 0

        def count(name, implicit):
            nonlocal sequence, newest
            seen.add((name.micros, name.sequence, name.id))
            sequence = max(sequence, name.sequence)
            if implicit and stored is None:
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
                if entry.is_dir(follow_symlinks=False) or entry.is_symlink():
                    continue
                name = parse(entry.name)
                if name:
                    count(name, implicit)
        return [sequence, len(seen), newest]

    def fsync_area(self, name):
        if self.durable:
            fd = os.open(self.area(name), os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    # The producer protocol.

    def enqueue(self, payload, id=None, enqueued_at=None, not_before=None, message_type=""):
        """Publishes one message; returns (id, outcome): published, delayed, duplicate, expired."""
        unique = id is not None
        id = str(uuid.UUID(id)) if unique else str(uuid.uuid4())
        now = now_micros()
        micros = enqueued_at if enqueued_at is not None else now
        due = min(not_before, MAX_MICROS) if not_before is not None and not_before > now else None
        if due is not None and due - micros >= self.lifetime:
            return id, "expired"

        def encode(micros):
            header = json.dumps(
                {"enqueuedAt": micros, "format": 1, "id": id, "messageType": message_type},
                separators=(",", ":"), ensure_ascii=False, sort_keys=True)
            data = header.encode("utf-8") + b"\n" + payload
            if len(data) > self.max_payload_bytes:
                raise PayloadTooLarge(len(data))
            return data

        data = encode(micros)
        temporary = self.area("tmp", f"{os.getpid()}-{secrets.token_hex(8)}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     self.file_mode)
        published = None
        try:
            os.fchmod(fd, self.file_mode)
            os.write(fd, data)
            if self.durable:
                os.fsync(fd)
            area = "pending" if due is None else "delayed"

            def publish(counters):
                nonlocal micros, published
                if unique and self.contains(id):
                    return "duplicate"
                self.make_room(counters)
                if enqueued_at is None and micros < counters[2]:
                    micros = counters[2]
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, encode(micros), 0)
                    if self.durable:
                        os.fsync(fd)
                before = list(counters)
                name = Name(due if due is not None else micros, counters[0] + 1, id, 0)
                target = name.file if due is None else f"{due:016d}-{name.file}"
                counters[0] += 1
                counters[1] += 1
                if enqueued_at is None:
                    counters[2] = max(counters[2], micros)
                self.write_state(counters)
                try:
                    rename_noreplace(temporary, self.area(area, target))
                except OSError:
                    counters[:] = before
                    self.write_state(before)
                    raise
                published = target
                return "published" if due is None else "delayed"

            outcome = self.locked(publish)
        finally:
            os.close(fd)
            if published is None:
                try:
                    os.unlink(temporary)
                except FileNotFoundError:
                    pass
        if published is not None:
            try:
                self.fsync_area(area)
            except OSError:
                self.remove_counted(self.area(area, published))
                raise
        return id, outcome

    def contains(self, id):
        """Whether a name in pending/, claimed/, delayed/ or quarantine/ carries id."""
        for entry in os.listdir(self.area("pending")):
            name = Name.parse(entry)
            if name and name.id == id:
                return True
        for entry in os.listdir(self.area("claimed")):
            claimed = ClaimedName.parse(entry)
            if claimed and claimed.name.id == id:
                return True
        for entry in os.listdir(self.area("delayed")):
            delayed = parse_delayed(entry)
            if delayed and delayed[1].id == id:
                return True
        return any(quarantined_id(entry) == id for entry in os.listdir(self.area("quarantine")))

    def make_room(self, counters):
        """Step 4: recount when the counter says full, then reject or evict the oldest pending."""
        if counters[1] < self.max_messages:
            return
        counters[:] = self.recount(counters)
        if counters[1] < self.max_messages:
            return
        if not self.discard_oldest:
            raise MailboxFull()
        for name in sorted(n for n in map(Name.parse, os.listdir(self.area("pending"))) if n):
            if counters[1] < self.max_messages:
                break
            try:
                os.unlink(self.area("pending", name.file))
                counters[1] -= 1
            except FileNotFoundError:
                continue
        if counters[1] >= self.max_messages:
            raise MailboxFull()

    def remove_counted(self, path):
        """Unlinks path and lowers depth in one hold of the lock; False when it was gone."""
        def remove(counters):
            try:
                os.unlink(path)
            except FileNotFoundError:
                return False
            counters[1] = max(0, counters[1] - 1)
            return True
        return self.locked(remove)

    # The consumer protocol.

    def claim(self, limit=None):
        """Claims up to limit valid messages, oldest first; returns Claims."""
        now = now_micros()
        interval = min(1_000_000, self.claim_timeout // 2)
        if self.last_sweep is None or now - self.last_sweep >= interval:
            self.last_sweep = now
            self.recover()
        self.promote()
        claims, removed = [], 0
        names = []
        for entry in os.listdir(self.area("pending")):
            name = Name.parse(entry)
            if name:
                names.append(name)
            elif self.quarantine("pending", entry, None, "foreign"):
                removed += 1
        for name in sorted(names, key=lambda n: n.key):
            if limit is not None and len(claims) >= limit:
                break
            outcome = self._take(name)
            if outcome == "removed":
                removed += 1
            elif isinstance(outcome, Claim):
                claims.append(outcome)
        if removed:
            self.locked(lambda counters: counters.__setitem__(slice(None), self.recount(counters)))
        return claims

    def _take(self, name):
        now = now_micros()
        path = self.area("pending", name.file)
        if now - name.micros >= self.lifetime:
            try:
                os.unlink(path)
                return "removed"
            except FileNotFoundError:
                return None
        if name.attempts >= min(self.max_attempts or MAX_ATTEMPTS, MAX_ATTEMPTS):
            moved = self.quarantine("pending", name.file, name.id, "deadletter")
            return "removed" if moved else None
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return "removed" if self.quarantine("pending", name.file, name.id, "unsafe") else None
        if info.st_nlink > 1:
            if now - info.st_ctime_ns // 1000 < LINK_GRACE_MICROS:
                return None
            return "removed" if self.quarantine("pending", name.file, name.id, "unsafe") else None
        claimed = ClaimedName(Name(name.micros, name.sequence, name.id, name.attempts + 1),
                              secrets.token_hex(8), now + self.claim_timeout)
        try:
            os.rename(path, self.area("claimed", claimed.file))
        except FileNotFoundError:
            return None
        failure = self._read(claimed)
        if isinstance(failure, Claim):
            return failure
        if failure == "vanished":
            return None
        if failure == "linked":
            self.locked(lambda _: rename_noreplace(self.area("claimed", claimed.file), path))
            return None
        if failure == "expired":
            try:
                os.unlink(self.area("claimed", claimed.file))
            except FileNotFoundError:
                return None
            return "removed"
        return "removed" if self.quarantine("claimed", claimed.file, name.id, failure) else None

    def _read(self, claimed):
        """The Claim, or why it is not delivered (a reason, linked, vanished or expired)."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(self.area("claimed", claimed.file), flags)
        except FileNotFoundError:
            return "vanished"
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EWOULDBLOCK,
                               errno.ENODEV, errno.EACCES):
                return "unsafe"
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return "unsafe"
            if info.st_nlink != 1:
                return "linked"
            if info.st_size > self.max_payload_bytes:
                return "oversized"
            data = b""
            while len(data) <= self.max_payload_bytes:
                chunk = os.read(fd, self.max_payload_bytes + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        if len(data) > self.max_payload_bytes:
            return "oversized"
        try:
            header, payload = decode_header(data)
        except ValueError as error:
            return str(error)
        if header["id"].lower() != claimed.name.id:
            return "malformed"
        if self.message_type is not None and header["messageType"] not in ("", self.message_type):
            return "wrongtype"
        if now_micros() - header["enqueuedAt"] >= self.lifetime:
            return "expired"
        if not is_json(payload):
            return "malformed"
        return Claim(claimed, header, payload)

    def acknowledge(self, claim):
        if not self.remove_counted(self.area("claimed", claim.claimed.file)):
            raise ClaimGone()

    def release(self, claim, delay=0.0):
        """Back to its place in pending/, or into delayed/ for delay seconds."""
        stem = claim.claimed.name.file
        target = ("pending", stem) if delay <= 0 else (
            "delayed", f"{min(now_micros() + int(delay * 1_000_000), MAX_MICROS):016d}-{stem}")
        try:
            self.locked(lambda _: rename_noreplace(self.area("claimed", claim.claimed.file),
                                                   self.area(*target)))
        except FileNotFoundError:
            raise ClaimGone()
        self.fsync_area(target[0])

    def renew(self, claim):
        renewed = ClaimedName(
            claim.claimed.name, claim.claimed.token, now_micros() + self.claim_timeout)
        try:
            self.locked(lambda _: os.rename(self.area("claimed", claim.claimed.file),
                                            self.area("claimed", renewed.file)))
        except FileNotFoundError:
            raise ClaimGone()
        claim.claimed = renewed

    def recover(self):
        """Restores claims whose lease ran out (or deletes them when expired); returns how many."""
        now, recovered, contained = now_micros(), 0, 0
        for entry in os.listdir(self.area("claimed")):
            claimed = ClaimedName.parse(entry)
            if not claimed or claimed.lease >= now:
                continue
            path = self.area("claimed", entry)
            if now - claimed.name.micros >= self.lifetime:
                self.remove_counted(path)
                continue
            try:
                target = self.area("pending", claimed.name.file)
                self.locked(lambda _: rename_noreplace(path, target))
                recovered += 1
            except FileNotFoundError:
                continue
            except FileExistsError:
                contained += self.quarantine("claimed", entry, claimed.name.id, "unsafe")
        if contained:
            self.locked(lambda counters: counters.__setitem__(slice(None), self.recount(counters)))
        if recovered:
            self.fsync_area("pending")
        return recovered

    def promote(self):
        """Moves due delayed messages into pending/ (deleting expired ones); returns how many."""
        now, promoted = now_micros(), 0
        for entry in os.listdir(self.area("delayed")):
            delayed = parse_delayed(entry)
            if not delayed or delayed[0] > now:
                continue
            path = self.area("delayed", entry)
            if now - delayed[1].micros >= self.lifetime:
                self.remove_counted(path)
                continue
            try:
                target = self.area("pending", delayed[1].file)
                self.locked(lambda _: rename_noreplace(path, target))
                promoted += 1
            except (FileNotFoundError, FileExistsError):
                continue
        if promoted:
            self.fsync_area("pending")
        return promoted

    def quarantine(self, area, entry, id, reason):
        """Moves an entry into quarantine/ (or deletes it); True when it left its area."""
        source = self.area(area, entry)
        if self.max_quarantined > 0:
            self._trim(self.max_quarantined - 1)
            for _ in range(8):
                target = f"{now_micros():016d}-{reason}-{id or 'unknown'}-{secrets.token_hex(4)}.q"
                try:
                    rename_noreplace(source, self.area("quarantine", target))
                    return True
                except FileNotFoundError:
                    return False
                except FileExistsError:
                    continue
                except OSError:
                    break
        try:
            self._remove(source)
            return True
        except OSError:
            return False

    def _trim(self, keeping):
        entries = os.listdir(self.area("quarantine"))
        entries.sort(key=lambda e: (QUARANTINED.fullmatch(e) is not None, e))
        for entry in entries[:max(0, len(entries) - keeping)]:
            try:
                self._remove(self.area("quarantine", entry))
            except OSError:
                pass

    def _remove(self, path):
        if os.path.isdir(path) and not os.path.islink(path):
            for child in os.listdir(path):
                self._remove(os.path.join(path, child))
            os.rmdir(path)
        else:
            os.unlink(path)


def _spool(arguments):
    return Spool(arguments.container, arguments.namespace, max_messages=arguments.max_messages,
                 max_payload_bytes=arguments.max_payload_bytes, lifetime=arguments.lifetime,
                 claim_timeout=arguments.claim_timeout, max_quarantined=arguments.max_quarantined,
                 max_attempts=arguments.max_attempts, discard_oldest=arguments.discard_oldest,
                 message_type=arguments.type if arguments.command == "drain" else None,
                 durable=not arguments.relaxed, group_shared=arguments.group_shared)


def _print_claim(claim):
    print(json.dumps({
        "id": claim.id, "deliveryCount": claim.delivery_count,
        "enqueuedAt": claim.header["enqueuedAt"], "messageType": claim.header["messageType"],
        "payloadHex": claim.payload.hex()}), flush=True)


def main(argv):
    parser = argparse.ArgumentParser(prog="agm_spool.py")
    parser.add_argument("command", choices=["enqueue", "drain", "hold", "release-delay"])
    parser.add_argument("container")
    parser.add_argument("namespace")
    parser.add_argument("--lines", action="store_true")
    parser.add_argument("--id")
    parser.add_argument("--enqueued-at-us", type=int)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--type")
    parser.add_argument("--retry-full", type=float, default=0.0)
    parser.add_argument("--count", type=int)
    parser.add_argument("--until-file")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--max-messages", type=int, default=100)
    parser.add_argument("--max-payload-bytes", type=int, default=65536)
    parser.add_argument("--lifetime", type=float, default=86400.0)
    parser.add_argument("--claim-timeout", type=float, default=600.0)
    parser.add_argument("--max-quarantined", type=int, default=20)
    parser.add_argument("--max-attempts", type=int)
    parser.add_argument("--discard-oldest", action="store_true")
    parser.add_argument("--group-shared", action="store_true")
    parser.add_argument("--relaxed", action="store_true")
    arguments = parser.parse_args(argv)
    spool = _spool(arguments)
    if arguments.command == "enqueue":
        data = sys.stdin.buffer.read()
        if arguments.lines:
            messages = [line for line in data.split(b"\n") if line.strip()]
        else:
            messages = [data.rstrip()]
        for message in messages:
            deadline = time.monotonic() + arguments.retry_full
            while True:
                try:
                    not_before = None
                    if arguments.delay > 0:
                        not_before = now_micros() + int(arguments.delay * 1_000_000)
                    id, outcome = spool.enqueue(
                        message, id=arguments.id, enqueued_at=arguments.enqueued_at_us,
                        not_before=not_before, message_type=arguments.type or "")
                    break
                except MailboxFull:
                    if time.monotonic() >= deadline:
                        print("full", flush=True)
                        return 75
                    time.sleep(0.001)
            print(id, outcome, flush=True)
    elif arguments.command in ("drain", "hold"):
        delivered = 0
        while arguments.count is None or delivered < arguments.count:
            done = arguments.until_file is not None and os.path.exists(arguments.until_file)
            claims = spool.claim(arguments.limit)
            for claim in claims:
                _print_claim(claim)
                if arguments.command == "drain":
                    spool.acknowledge(claim)
            delivered += len(claims)
            if arguments.command == "hold":
                break
            if not claims:
                if done or (arguments.count is None and arguments.until_file is None):
                    break
                time.sleep(0.002)
    elif arguments.command == "release-delay":
        claims = spool.claim(1)
        for claim in claims:
            _print_claim(claim)
            spool.release(claim, delay=arguments.delay)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
