"""The errors the producer and consumer protocols raise (FORMAT.md, "Producer protocol" and
"Consumer protocol")."""


class MailboxFull(Exception):
    """The depth bound holds no room (rejectNewest), or nothing pending can be evicted."""


class OrdinalExhausted(MailboxFull):
    """No sequence is left to hand out (names.MAX_SEQUENCE) even counted from the names alone:
    until the message holding the largest leaves the mailbox, as full; nothing was written."""


class PayloadTooLarge(Exception):
    """The message file would exceed maxPayloadBytes; nothing was written."""


class NotJSON(ValueError):
    """The message is not one JSON value as every consumer reads it (envelope.is_json, the test
    of the Swift library's AppGroupRawMailbox.isJSON); nothing was written."""


class HeaderTooLong(ValueError):
    """The header line with its line feed would be over envelope.MAX_HEADER_BYTES (a long type
    tag): every reader would refuse the file as malformed; nothing was written."""


class ClaimGone(Exception):
    """The claim was recovered or finished elsewhere (ENOENT); nothing was changed."""


class SettingsUnreadable(ValueError):
    """The namespace's `settings` file is not readable settings (the text names a member, never
    a value); the mailbox is not opened (FORMAT.md, "The settings file")."""


class SettingsFormatTooNew(SettingsUnreadable):
    """The `settings` file has a format newer than this reader's: refused, not guessed."""

    def __init__(self, version):
        super().__init__("settings format %d" % version)
        self.version = version
