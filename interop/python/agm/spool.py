"""One namespace of a mailbox, opened (and created when missing) as FORMAT.md, "Layout", "The
state file and the lock" and "The settings file", describe; the protocols come from the mixins."""

import copy

from .consumer import Consumer
from .errors import SettingsUnreadable
from .layout import Layout
from .names import valid_namespace
from .producer import Producer
from .settings import CLAIM_TIMEOUT_CEILING, RESOLUTION, Settings, StoredSettings
from .state import State


class Spool(Producer, Consumer, StoredSettings, State, Layout):
    """One namespace of a mailbox, opened (and created when missing) as FORMAT.md describes.

    Every bound comes from the mailbox's `settings` file, which applies to every opener whatever
    limits it was given, and is re-read when it changes: max_messages, max_payload_bytes,
    lifetime (seconds), max_quarantined, max_attempts (None: unlimited), discard_oldest and
    group_shared are only the settings stored when this opener creates the namespace, or finds
    one made before settings files (FORMAT.md); `differing_settings` then names the stored members
    that differ from them. claim_timeout (seconds), message_type and durable are this opener's
    own (not stored). Raises SettingsFormatTooNew for a settings format newer than 2, and
    SettingsUnreadable for a file that is not readable settings."""

    def __init__(self, container, namespace, max_messages=100, max_payload_bytes=65536,
                 lifetime=86400.0, claim_timeout=600.0, max_quarantined=20, max_attempts=None,
                 discard_oldest=False, message_type=None, durable=True, group_shared=False):
        if not valid_namespace(namespace):
            raise ValueError("invalid namespace")
        opener = Settings(max_messages, max_payload_bytes, lifetime, max_quarantined,
                          max_attempts, discard_oldest, group_shared)
        try:
            opener.validate()
        except SettingsUnreadable as error:
            raise ValueError("invalid limit: %s" % error) from None
        # 1 µs to 366 days, as AppGroupMailboxLimits.validate(): a shorter lease has ended when
        # it is taken, and every reader recovers a longer one at once as forged, so either would
        # hand the message to a second consumer while the first still holds it.
        if not RESOLUTION <= claim_timeout <= CLAIM_TIMEOUT_CEILING:
            raise ValueError("invalid limit: 'claimTimeout' is out of range")
        self.claim_timeout = int(claim_timeout * 1_000_000)
        self.message_type, self.durable = message_type, durable
        # Makes what is missing of a group-shared namespace for the group, the state file
        # below too.
        created = self.create_layout(container, namespace, group_shared)
        self.open_state()
        requested = copy.copy(opener)  # open_settings may adopt the directory's sharing mode
        self.open_settings(opener, created)
        self.set_modes(self.settings.group_shared or self.directory_shared())
        self.differing_settings = self.settings.differences(requested)
        self.last_sweep = None
