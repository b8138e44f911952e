"""The producer protocol: enqueue, with an id, a date or a not-before time (FORMAT.md, "Producer
protocol" and "Delayed messages")."""

import os
import secrets
import uuid

from . import envelope
from .errors import MailboxFull, NotJSON, PayloadTooLarge
from .names import DEFAULT_LEVEL, MAX_MICROS, ClaimedName, Name, delayed_file, parse_delayed, quarantined_id
from .system import move_refusing_attributes, now_micros, rename_noreplace, write_all


class Producer:
    """Enqueue; a mixin of Spool (needs Layout, State and StoredSettings)."""

    def enqueue(self, payload, id=None, enqueued_at=None, not_before=None, message_type="",
                payload_version=1):
        """Publishes one message; returns (id, outcome): published, delayed, duplicate, or expired
        (nothing written: due, or at a given enqueued_at, later than messageLifetime after it).
        The bounds are the stored settings, re-read first when `settings` changed (and again
        under the lock). payload_version (1 to 2**31 - 1) is recorded in the header. Raises
        ValueError for another payload version or an enqueued_at (microseconds) outside 0 to
        MAX_MICROS (1970 to 2286), NotJSON for a payload that is not one JSON value as every
        consumer reads it (envelope.is_json: a consumer would quarantine it), PayloadTooLarge
        over maxPayloadBytes, HeaderTooLong for a header line over 4,096 bytes (a long type
        tag), MailboxFull; nothing is written then."""
        if type(payload_version) is not int or not 1 <= payload_version <= envelope.MAX_PAYLOAD_VERSION:
            raise ValueError("payload_version must be 1 to 2**31 - 1")
        # A name holds 16 digits of microseconds (1970 to 2286): another date makes a name no
        # reader parses, quarantined as foreign by the first claim after "published".
        if enqueued_at is not None and (
                type(enqueued_at) is not int or not 0 <= enqueued_at <= MAX_MICROS):
            raise ValueError("enqueued_at must be 0 to %d microseconds (1970 to 2286)" % MAX_MICROS)
        if not envelope.is_json(payload):
            raise NotJSON()
        self.refresh_settings()
        unique = id is not None
        id = str(uuid.UUID(id)) if unique else str(uuid.uuid4())
        now = now_micros()
        micros = enqueued_at if enqueued_at is not None else now
        due = min(not_before, MAX_MICROS) if not_before is not None and not_before > now else None
        # Expired when due, or (a given date) already: the first claim would only delete it, so
        # nothing is written (FORMAT.md, producer protocol, step 5).
        if (due if due is not None else now) - micros >= self.settings.lifetime_micros:
            return id, "expired"

        def encode(micros):
            data = envelope.encode(id, micros, message_type, payload, payload_version)
            if len(data) > self.settings.max_payload_bytes:
                raise PayloadTooLarge(len(data))
            return data

        data = encode(micros)
        temporary = self.area("tmp", f"{os.getpid()}-{secrets.token_hex(8)}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     self.file_mode)
        published = None
        try:
            os.fchmod(fd, self.file_mode)
            write_all(fd, data)
            if self.durable:
                os.fsync(fd)
            area = "pending" if due is None else "delayed"

            def publish(counters):
                nonlocal micros, published
                if unique and self.contains(id):
                    return "duplicate"
                # The sequence first: refused for want of one, nothing was evicted for it.
                self.make_sequence_room(counters)
                self.make_room(counters)
                if enqueued_at is None and micros < counters[2]:
                    micros = counters[2]
                    os.ftruncate(fd, 0)
                    write_all(fd, encode(micros), 0)
                    if self.durable:
                        os.fsync(fd)
                before = list(counters)
                name = Name(due if due is not None else micros, counters[0] + 1, id, 0)
                target = name.file if due is None else delayed_file(due, name)
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
                self.remove(self.area(area, published))
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

    def make_room(self, counters, level=DEFAULT_LEVEL):
        """Step 4: recount when the counter says full, then reject or evict the oldest pending
        message of the lowest level, never one above the incoming message's `level`. The bound
        and the policy come from `settings`, re-read under the lock (State.locked)."""
        max_messages, discard_oldest = self.settings.max_messages, self.settings.discard_oldest
        if counters[1] < max_messages:
            return
        counters[:] = self.recount(counters)
        if counters[1] < max_messages:
            return
        if not discard_oldest:
            raise MailboxFull()
        # Regular files only: the recount counted nothing else, so evicting anything else
        # would lower the counter below the messages it counted.
        names = [Name.parse(e.name) for e in os.scandir(self.area("pending"))
                 if e.is_file(follow_symlinks=False)]
        names = [n for n in names if n]
        # Before a valid message is evicted, every pending file no claim would deliver goes to
        # quarantine (a hard link as a copy): if that made room, nothing is evicted (FORMAT.md,
        # "Producer protocol"; the Swift library's makeRoom does the same).
        valid, contained = [], 0
        for name in names:
            retired = self.retire_undeliverable(name)
            if retired is not None:
                contained += retired
                continue
            verdict = self.inspect_pending(name)
            if verdict == "valid":
                valid.append(name)
            elif verdict == "linked":
                contained += self.quarantine_linked(name.file, name.id)
            elif verdict not in ("gone", "young"):
                contained += self.quarantine("pending", name.file, name.id, verdict)
        if contained:
            counters[:] = self.recount(counters)
            if counters[1] < max_messages:
                return
        names = [n for n in valid if n.level <= level]
        # The victims are chosen before any is deleted: a file whose own inode flags refuse its
        # delete (chattr +i, +a) is passed over for the next, and when too few are left nothing
        # is evicted.
        candidates = iter(sorted(names, key=lambda n: n.eviction_key))

        def next_candidate():
            for name in candidates:
                path = self.area("pending", name.file)
                if not move_refusing_attributes(path):
                    return path
            return None

        needed = counters[1] + 1 - max_messages
        victims = []
        while len(victims) < needed:
            path = next_candidate()
            if path is None:
                raise MailboxFull()
            victims.append(path)
        while counters[1] >= max_messages:
            path = victims.pop(0) if victims else next_candidate()
            if path is None:
                break
            try:
                os.unlink(path)
                counters[1] -= 1
            except FileNotFoundError:
                continue  # claimed meanwhile (still counted): the next one goes instead
        if counters[1] >= max_messages:
            raise MailboxFull()
