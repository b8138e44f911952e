"""One namespace of a mailbox, opened (and created when missing) as FORMAT.md, "Layout" and "The
state file and the lock", describe; the protocols come from the mixins."""

from .consumer import Consumer
from .layout import Layout
from .names import valid_namespace
from .producer import Producer
from .state import State


class Spool(Producer, Consumer, State, Layout):
    """One namespace of a mailbox, opened (and created when missing) as FORMAT.md describes."""

    def __init__(self, container, namespace, max_messages=100, max_payload_bytes=65536,
                 lifetime=86400.0, claim_timeout=600.0, max_quarantined=20, max_attempts=None,
                 discard_oldest=False, message_type=None, durable=True, group_shared=False):
        if not valid_namespace(namespace):
            raise ValueError("invalid namespace")
        self.max_messages, self.max_payload_bytes = max_messages, max_payload_bytes
        self.lifetime = int(lifetime * 1_000_000)
        self.claim_timeout = int(claim_timeout * 1_000_000)
        self.max_quarantined, self.max_attempts = max_quarantined, max_attempts
        self.discard_oldest, self.message_type, self.durable = discard_oldest, message_type, durable
        self.create_layout(container, namespace, group_shared)
        self.open_state()
        self.last_sweep = None
