"""The errors the producer and consumer protocols raise (FORMAT.md, "Producer protocol" and
"Consumer protocol")."""


class MailboxFull(Exception):
    """The depth bound holds no room (rejectNewest), or nothing pending can be evicted."""


class PayloadTooLarge(Exception):
    """The message file would exceed maxPayloadBytes; nothing was written."""


class ClaimGone(Exception):
    """The claim was recovered or finished elsewhere (ENOENT); nothing was changed."""
