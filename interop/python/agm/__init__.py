"""A second, minimal implementation of the AppGroupMailbox spool, written from docs/FORMAT.md.

Python 3 standard library only. It implements the producer protocol (enqueue, with an id, a date
or a not-before time) and the consumer protocol (claim, read, acknowledge, release, release with a
delay, renew, recovery of abandoned claims, promotion of due delayed messages, expiry, quarantine)
so that the interop tests can check the format against the Swift library from the outside. It is
not a full client: no wake-ups, no maintenance of `tmp/`, no trimming beyond what quarantine does.

One concern a module:
    names.py     the names of entries, their formats and parsing ("Layout", "Names")
    system.py    the clock and the move without replacing
    envelope.py  the header line and the message ("Message files")
    layout.py    the directories of a namespace ("Layout")
    settings.py  the stored settings every opener follows ("The settings file")
    state.py     the lock, the state line and its rebuild ("The state file and the lock")
    producer.py  enqueue ("Producer protocol", "Delayed messages")
    consumer.py  claim and what follows it ("Consumer protocol", "Delayed messages", "Lifetime")
    spool.py     Spool, one namespace, which puts them together
The command line is interop/python/agm_spool.py.
"""

from .consumer import Claim
from .errors import (
    ClaimGone, HeaderTooLong, MailboxFull, NotJSON, PayloadTooLarge, SettingsFormatTooNew,
    SettingsUnreadable)
from .settings import Settings
from .spool import Spool
from .system import now_micros

__all__ = ["Claim", "ClaimGone", "HeaderTooLong", "MailboxFull", "NotJSON", "PayloadTooLarge", "Settings",
           "SettingsFormatTooNew", "SettingsUnreadable", "Spool", "now_micros"]
