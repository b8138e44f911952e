"""A bridge between a mailbox and NATS JetStream: forward.py, consume.py, jetstream.py."""
