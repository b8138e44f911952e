"""The consumer protocol (FORMAT.md, "Consumer protocol", "Delayed messages" and "Lifetime"):
claim, read, acknowledge, release (with a delay), renew, recovery of abandoned claims, promotion
of due delayed messages, expiry and quarantine; and the hold ("The settings file": a held
mailbox is claimed from by nobody)."""

import errno
import json
import os
import secrets
import stat

from .envelope import MAX_HEADER_BYTES, decode_header, is_json
from .errors import ClaimGone
from .moves import read_at_most, same_entry
from .names import (
    MAX_ATTEMPTS, ClaimedName, micros_after, Name, delayed_file, parse_delayed, quarantined_file,
    trim_key)
from .system import move_refusing_attributes, now_micros, rename_noreplace, write_all

LINK_GRACE_MICROS = 1_000_000
# The errors of a rename or unlink that may be the entry's own doing (FORMAT.md, "Moves"):
# permissions or inode flags (EACCES, EPERM), or something mounted on it (EBUSY).
REFUSALS = (errno.EACCES, errno.EPERM, errno.EBUSY)
# The longest claim timeout (366 days) plus a day of margin: a lease ending further ahead was
# never given (FORMAT.md, "Recovery").
LEASE_CEILING_MICROS = (31_622_400 + 86_400) * 1_000_000


class Claim:
    """A claimed message: its claimed name, its header and its message bytes."""

    def __init__(self, claimed, header, payload):
        self.claimed, self.header, self.payload = claimed, header, payload

    @property
    def id(self):
        return self.claimed.name.id

    @property
    def delivery_count(self):
        return self.claimed.name.attempts


class Consumer:
    """Claim and what follows it; a mixin of Spool (needs Layout, State and StoredSettings)."""

    def held(self):
        """Whether delivery is held: `settings` has format 2 and `held` true (FORMAT.md, "The
        settings file"), as last read (claim re-reads a changed file first)."""
        return self.settings.held

    def claim(self, limit=None):
        """Claims up to limit valid messages, oldest first; returns Claims. Re-reads `settings`
        first when it changed, so a changed bound or a hold applies from this claim."""
        self.refresh_settings()
        now = now_micros()
        interval = min(1_000_000, self.claim_timeout // 2)
        if self.last_sweep is None or now - self.last_sweep >= interval:
            self.last_sweep = now
            self.recover()
        self.promote()
        if self.held():
            return []
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
            self.recount_locked()
        return claims

    def retire_undeliverable(self, name):
        """Takes the pending message `name` out of the line when no claim would deliver it, by
        its name alone: expired (its lifetime counted from the name's time) or a dead letter
        (claimed as often as maxDeliveryAttempts allows). None when it is deliverable, else
        whether it left pending/. The one decision of a claim and of discard-oldest."""
        if now_micros() - name.micros >= self.settings.lifetime_micros:
            return self.expire("pending", name.file, name.id)
        if name.attempts >= min(self.settings.max_attempts or MAX_ATTEMPTS, MAX_ATTEMPTS):
            return self.quarantine("pending", name.file, name.id, "deadletter")
        return None

    def _take(self, name):
        now = now_micros()
        path = self.area("pending", name.file)
        retired = self.retire_undeliverable(name)
        if retired is not None:
            return "removed" if retired else None
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return "removed" if self.quarantine("pending", name.file, name.id, "unsafe") else None
        if info.st_nlink > 1:
            if now - info.st_ctime_ns // 1000 < LINK_GRACE_MICROS:
                return None
            return "removed" if self.quarantine_linked(name.file, name.id) else None
        next_name = Name(name.micros, name.sequence, name.id, name.attempts + 1, name.level)
        claimed = ClaimedName(next_name, secrets.token_hex(8), now + self.claim_timeout)
        try:
            os.rename(path, self.area("claimed", claimed.file))
        except FileNotFoundError:
            return None
        except OSError as error:
            # Replaced by a directory another user owns since the look, say, or a file made
            # immutable or append-only (EACCES, EPERM) or mounted on (EBUSY).
            if error.errno not in REFUSALS:
                raise
            outcome = self._refused("pending", name.file, name.id, error, passing=True)
            return "removed" if outcome == "unsafe" else None
        failure = self._read(claimed)
        if isinstance(failure, Claim):
            return failure
        if failure == "vanished":
            return None
        if failure in ("linked", "othertype"):
            # Linked after the look, or another consumer's type: back to its place, untouched.
            self.move("claimed", claimed.file, "pending", name.file, name.id)
            return None
        if failure == "expired":
            return "removed" if self.expire("claimed", claimed.file, name.id) else None
        return "removed" if self.quarantine("claimed", claimed.file, name.id, failure) else None

    def _read(self, claimed):
        """The Claim, or why it is not delivered (a reason, linked, othertype, vanished or expired)."""
        fd = _open_entry(self.area("claimed", claimed.file))
        if isinstance(fd, str):
            return fd
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return "unsafe"
            if info.st_nlink != 1:
                return "linked"
            if not self._accepts(info.st_size):
                return "oversized"
            limit = self.settings.largest_payload_bytes
            data = read_at_most(fd, limit + 1)
        finally:
            os.close(fd)
        if len(data) > limit:
            return "oversized"
        try:
            header, payload = decode_header(data)
        except ValueError as error:
            return str(error)
        if header["id"].lower() != claimed.name.id:
            return "malformed"
        if self.message_type is not None and header["messageType"] not in ("", self.message_type):
            return "othertype"
        if now_micros() - header["enqueuedAt"] >= self.settings.lifetime_micros:
            return "expired"
        if not is_json(payload):
            return "malformed"
        return Claim(claimed, header, payload)

    def _accepts(self, size):
        """Whether a message file of size bytes may be read: up to largestPayloadBytes, re-read
        from `settings` before calling a file oversized (FORMAT.md), so a consumer never
        quarantines what a producer of this mailbox was allowed to write."""
        if size <= self.settings.largest_payload_bytes:
            return True
        self.refresh_settings()
        return size <= self.settings.largest_payload_bytes

    def acknowledge(self, claim):
        if not self.remove(self.area("claimed", claim.claimed.file)):
            raise ClaimGone()

    def release(self, claim, delay=0.0):
        """Back to its place in pending/, or into delayed/ for delay seconds (clamped to 2286;
        ValueError for NaN, the claim kept)."""
        name = claim.claimed.name
        target = ("pending", name.file) if delay <= 0 else (
            "delayed", delayed_file(micros_after(now_micros(), delay), name))
        outcome = self.move("claimed", claim.claimed.file, *target, name.id)
        if outcome == "vanished":
            raise ClaimGone()
        if outcome == "moved":  # a copy already there: the message stays once (FORMAT.md)
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
        now, recovered = now_micros(), 0
        for entry in os.listdir(self.area("claimed")):
            claimed = ClaimedName.parse(entry)
            if not claimed or now <= claimed.lease <= now + LEASE_CEILING_MICROS:
                continue
            if now - claimed.name.micros >= self.settings.lifetime_micros:
                self.expire("claimed", entry, claimed.name.id)
                continue
            if self.move("claimed", entry, "pending", claimed.name.file, claimed.name.id,
                         passing=True) == "moved":
                recovered += 1
        if recovered:
            self.fsync_area("pending")
        return recovered

    def promote(self):
        """Moves due delayed messages into pending/ (deleting expired ones); returns how many."""
        now, promoted = now_micros(), 0
        for entry in os.listdir(self.area("delayed")):
            delayed = parse_delayed(entry)
            if not delayed:
                continue
            # Expired whether due or not: the lifetime counts from the name's enqueuedAt, so one
            # that outlived it while it waited is deleted now, not counted until its due time.
            if now - delayed[1].micros >= self.settings.lifetime_micros:
                self.expire("delayed", entry, delayed[1].id)
                continue
            if delayed[0] > now:
                continue
            if self.move("delayed", entry, "pending", delayed[1].file, delayed[1].id,
                         passing=True) == "moved":
                promoted += 1
        if promoted:
            self.fsync_area("pending")
        return promoted

    def move(self, area, entry, to_area, target, id, passing=False):
        """One move by FORMAT.md "Moves", under the lock: "moved"; "vanished" (the source was
        gone); or, when the target name is taken, "duplicate" (the same file or the same bytes:
        the source is deleted) or "conflict" (the source goes to quarantine), the counters then
        rebuilt. The message stays once, so it is never delivered twice from one move. A move
        refused (EACCES, EPERM, EBUSY) for a reason of the source's own is "unsafe" (quarantined) or
        "skipped" (left in place), see _refused; `passing` is true in the passes over entries
        other processes wrote (a promotion, a recovery)."""
        source, destination = self.area(area, entry), self.area(to_area, target)

        def body(counters):
            try:
                rename_noreplace(source, destination)
                return "moved"
            except FileNotFoundError:
                return "vanished"
            except FileExistsError:
                pass
            except OSError as error:
                if error.errno not in REFUSALS:
                    raise
                return self._refused(area, entry, id, error, passing)
            if same_entry(source, destination, self.settings.largest_payload_bytes):
                try:
                    outcome = "duplicate" if self.remove(source) else "vanished"
                except OSError as error:
                    # A second link of a flagged inode: passed over as a refused rename is.
                    if error.errno not in REFUSALS:
                        raise
                    return self._refused(area, entry, id, error, passing)
            elif self.quarantine(area, entry, id, "conflict"):
                outcome = "conflict"
            else:
                outcome = "vanished"
            if outcome != "vanished":
                counters[:] = self.recount(counters)
            return outcome
        return self.locked(body)

    def expire(self, area, entry, id):
        """Deletes an entry past its lifetime; True when it left its area. An entry unlink
        refuses (EISDIR, EPERM: a directory under a message name) goes to quarantine as
        `unsafe` instead, and when that fails too (a directory another user owns) it is left in
        place (False), as when it was gone already; never an error that stops the operation."""
        try:
            os.unlink(self.area(area, entry))
            return True
        except FileNotFoundError:
            return False
        except OSError as error:
            if error.errno not in (errno.EISDIR, errno.EPERM, errno.EBUSY):
                raise
        return self.quarantine(area, entry, id, "unsafe")

    def _refused(self, area, entry, id, error, passing=False):
        """After a move of entry was refused (EACCES, EPERM, EBUSY): "vanished" when it is gone,
        "unsafe" when it is not a regular file and went to quarantine, "skipped" when it is not
        one and stays (it cannot be moved or emptied). For a regular file: in a pass over
        entries other processes wrote (`passing`: a claim, a promotion, a recovery), "skipped"
        when its own inode flags say immutable or append-only (statx; chattr +i, +a) or something
        is mounted on it (statx STATX_ATTR_MOUNT_ROOT; mount --bind onto the file), with no
        quarantine or delete attempt, the file left exactly as it is; else the error is raised
        again (the area's flags or permissions, a sticky directory, protected_hardlinks)."""
        path = self.area(area, entry)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return "vanished"
        if stat.S_ISREG(info.st_mode):
            if passing and move_refusing_attributes(path):
                return "skipped"
            raise error
        return "unsafe" if self.quarantine(area, entry, id, "unsafe") else "skipped"

    def inspect_pending(self, name):
        """What a pending message file is, looked at without claiming it, as a claim would judge
        it: "valid", "gone", "young" (hard-linked, within its grace), "linked" (past it), or the
        quarantine reason ("unsafe", "oversized", "malformed", "future"). Reads at most the
        header's 4,096 bytes."""
        fd = _open_entry(self.area("pending", name.file))
        if isinstance(fd, str):
            return "gone" if fd == "vanished" else fd
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return "unsafe"
            if info.st_nlink != 1:
                young = now_micros() - info.st_ctime_ns // 1000 < LINK_GRACE_MICROS
                return "young" if young else "linked"
            if not self._accepts(info.st_size):
                return "oversized"
            data = read_at_most(fd, MAX_HEADER_BYTES)
        finally:
            os.close(fd)
        try:
            header, _ = decode_header(data)
        except ValueError as error:
            return str(error)
        return "valid" if header["id"].lower() == name.id else "malformed"

    def quarantine_linked(self, entry, id):
        """Quarantines the name `entry` of pending/, a regular file with more than one link, as
        a copy: its bytes (at most largestPayloadBytes) go to a new file in tmp/ that goes to
        quarantine, then the name is unlinked. Quarantine by rename would keep the inode linked,
        and its other names would count as linked for ever; this way, when they were all names
        in the spool, the last one is delivered once (FORMAT.md, "Consumer protocol"). A file
        that cannot be copied (larger than the limit, unreadable) is quarantined by rename."""
        source = self.area("pending", entry)
        # A file whose own inode flags refuse its delete (chattr +i, +a) keeps this name
        # whatever is done: a copy would be made again at every pass, pushing real records out
        # of quarantine/. It is passed over instead, as the Swift reader does.
        if move_refusing_attributes(source):
            return False
        copy = self.area("tmp", f"{os.getpid()}-{secrets.token_hex(8)}.linked.tmp")
        try:
            fd = _open_entry(source)
        except OSError:
            fd = "unsafe"
        if fd == "vanished":
            return False
        if fd == "unsafe":
            return self.quarantine("pending", entry, id, "unsafe")
        limit = self.settings.largest_payload_bytes
        try:
            # Replaced since the look by something that is not a regular file: moved as it is.
            data = read_at_most(fd, limit + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else None
        except OSError:
            data = None
        finally:
            os.close(fd)
        if data is None or len(data) > limit:
            return self.quarantine("pending", entry, id, "unsafe")
        # A copy that cannot be made (no inode or space left in tmp/, a quota) or written:
        # the name goes to quarantine by rename instead.
        try:
            out = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                          | os.O_CLOEXEC, self.file_mode)
        except OSError:
            return self.quarantine("pending", entry, id, "unsafe")
        try:
            os.fchmod(out, self.file_mode)
            write_all(out, data)
        except OSError:
            os.close(out)
            os.unlink(copy)
            return self.quarantine("pending", entry, id, "unsafe")
        os.close(out)
        if not self.quarantine("tmp", os.path.basename(copy), id, "unsafe"):
            try:
                os.unlink(copy)
            except FileNotFoundError:
                pass
            return False
        try:
            os.unlink(source)
        except FileNotFoundError:
            pass  # another consumer quarantined the same name: one copy too many, nothing lost
        except OSError:
            return False  # flagged or mounted on since the look: passed over, as above
        return True

    def quarantine(self, area, entry, id, reason):
        """Moves an entry into quarantine/ (or deletes it); True when it left its area."""
        source = self.area(area, entry)
        bound = self.settings.max_quarantined
        if bound > 0:
            self._trim(bound - 1)
            for _ in range(8):
                target = quarantined_file(now_micros(), reason, id, secrets.token_hex(4))
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
        entries.sort(key=trim_key)
        excess = len(entries) - keeping
        # An entry that cannot be deleted (another member's directory, an immutable file) is left
        # and the next oldest goes in its stead, as the Swift library does (SECURITY.md).
        for entry in entries:
            if excess <= 0:
                break
            try:
                self._remove(self.area("quarantine", entry))
            except FileNotFoundError:
                pass  # another process trimmed it
            except OSError:
                continue
            excess -= 1

    # How deep _remove descends with open descriptors before it moves a deeper directory up into
    # the top one to be emptied in a later round (the Swift library's Spool.removalDepth).
    REMOVAL_DEPTH = 16

    def _remove(self, path):
        """Removes an entry of any type without following links: a directory of any depth with
        a bounded number of open descriptors and no recursion past REMOVAL_DEPTH (a hostile tree
        thousands deep is neither a RecursionError nor a path over PATH_MAX)."""
        try:
            os.unlink(path)
            return
        except (IsADirectoryError, PermissionError):
            pass  # a directory (EISDIR, or EPERM as some filesystems say): empty it below
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            while True:
                names = os.listdir(top)
                if not names:
                    break
                for name in names:
                    self._remove_below(top, name, top, 1)
        finally:
            os.close(top)
        os.rmdir(path)

    def _remove_below(self, parent, name, top, depth):
        try:
            os.unlink(name, dir_fd=parent)
            return
        except FileNotFoundError:
            return
        except (IsADirectoryError, PermissionError):
            pass
        if depth >= self.REMOVAL_DEPTH:
            # A random 64-bit name: rename(2) could replace only an empty directory of that name.
            os.rename(name, "hoisted-%016x" % secrets.randbits(64),
                      src_dir_fd=parent, dst_dir_fd=top)
            return
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        try:
            for entry in os.listdir(child):
                self._remove_below(child, entry, top, depth + 1)
        finally:
            os.close(child)
        os.rmdir(name, dir_fd=parent)


def _open_entry(path):
    """A read-only descriptor of the message file at path, never following a link or waiting
    on a FIFO; "vanished" when it is gone, "unsafe" when it is no file a reader may open (a
    symlink, a FIFO or device, a directory, one this user may not read)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        return "vanished"
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EWOULDBLOCK,
                           errno.ENODEV, errno.EACCES):
            return "unsafe"
        raise
