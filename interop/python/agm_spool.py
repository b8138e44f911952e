#!/usr/bin/env python3
"""The command line of the second implementation of the AppGroupMailbox spool (the package `agm`
beside this file, written from docs/FORMAT.md, Python 3 standard library only).

Command line (used by Tests/AppGroupMailboxTests/Interop):

    agm_spool.py enqueue CONTAINER NS [--lines] [--id UUID] [--enqueued-at-us N] [--delay S]
                 [--type T] [--payload-version N] [--retry-full SECONDS] [limits]
        stdin is one message (or one a line with --lines); prints "<id> <outcome>" per message.
    agm_spool.py drain CONTAINER NS [--count N] [--until-file F] [--limit L] [--type T] [limits]
        claims and acknowledges; prints one JSON object a message (id, deliveryCount,
        enqueuedAt, messageType, payloadVersion, payloadHex). Stops after N messages, or when F exists and a claim
        finds nothing, or (without either) at the first empty claim.
    agm_spool.py hold CONTAINER NS [--limit L] [limits]
        claims up to L messages, prints them as drain does, and exits without acknowledging.
    agm_spool.py release-delay CONTAINER NS --delay S [limits]
        claims one message and releases it with a retry delay of S seconds.
    limits: --claim-timeout S (this opener's lease), --relaxed (no flushes), and the settings
            --max-messages N --max-payload-bytes N --lifetime S --max-quarantined N
            --max-attempts N --discard-oldest --group-shared, which only set the settings of a
            namespace this command creates (or finds without a settings file): the mailbox's
            stored settings apply to every opener (FORMAT.md, "The settings file"), so given for
            an existing mailbox whose settings differ they are ignored, with a note on stderr.

Exit status: 0; 2 for a usage error (argparse; also a --payload-version outside 1 to
2**31 - 1, an --enqueued-at-us outside 0 to 9999999999999999 (1970 to 2286), an --id that is
not a UUID, an invalid namespace, or a limit out of range such as --lifetime under 0.000001, a
--claim-timeout outside 0.000001 to 31622400 or a count over 8999999999999999: one usage line
and one error line, nothing written); 65 when a message is over the stored maxPayloadBytes
(prints "too-large") or is not one JSON value as every consumer reads it (prints "not-json";
nothing written), or its header line would be over 4,096 bytes (prints "header-too-long";
nothing written), or it would be expired when due, or at its --enqueued-at-us already (prints
"<id> expired"; nothing written); 69 when the
mailbox cannot be opened or used: its settings file cannot be used or has a format newer than 2,
or a system call failed while opening it (permission denied, a symlink where a directory or the
settings file should be, a `state` file that is not a regular file with one link...); 74 for an
I/O error during the command (ENOSPC, EFBIG, EIO, EACCES...: an enqueue that fails removes its
temporary file and publishes nothing, and the messages before it stay enqueued); 75 when
the mailbox stayed full for --retry-full seconds (prints "full"). On 69 and 74 stderr has one line,
"agm_spool: error: OPERATION: DESCRIPTION (errno N)" (OPERATION is open or the command; the
settings file's reason instead of the errno), never a path or message bytes.
"""

import argparse
import errno
import json
import os
import sys
import time
import uuid

sys.dont_write_bytecode = True  # leave no __pycache__ beside the sources

from agm import (  # noqa: E402
    HeaderTooLong, MailboxFull, NotJSON, PayloadTooLarge, SettingsUnreadable, Spool, now_micros)
from agm.names import MAX_MICROS, micros_after  # noqa: E402

# The settings options: (destination, option, stored member, default).
SETTINGS_OPTIONS = (
    ("max_messages", "--max-messages", "maxMessages", 100),
    ("max_payload_bytes", "--max-payload-bytes", "maxPayloadBytes", 65536),
    ("lifetime", "--lifetime", "messageLifetime", 86400.0),
    ("max_quarantined", "--max-quarantined", "maxQuarantinedFiles", 20),
    ("max_attempts", "--max-attempts", "maxDeliveryAttempts", None),
    ("discard_oldest", "--discard-oldest", "overflowPolicy", False),
    ("group_shared", "--group-shared", "sharing", False),
)


def _spool(arguments):
    """The Spool, and a note on stderr naming the settings options given that the mailbox's
    stored settings override (as mailboxctl notes them)."""
    given = {destination: getattr(arguments, destination)
             for destination, _, _, _ in SETTINGS_OPTIONS
             # `is not`: 0 (--max-quarantined 0) equals False and is a value given.
             if getattr(arguments, destination) is not None
             and getattr(arguments, destination) is not False}
    values = {destination: given.get(destination, default)
              for destination, _, _, default in SETTINGS_OPTIONS}
    spool = Spool(arguments.container, arguments.namespace, claim_timeout=arguments.claim_timeout,
                  message_type=arguments.type if arguments.command == "drain" else None,
                  durable=not arguments.relaxed, **values)
    ignored = [option for destination, option, member, _ in SETTINGS_OPTIONS
               if destination in given and member in spool.differing_settings]
    if ignored:
        print("note: %s ignored: the mailbox's stored settings apply" % ", ".join(ignored),
              file=sys.stderr, flush=True)
    return spool


def _print_claim(claim):
    print(json.dumps({
        "id": claim.id, "deliveryCount": claim.delivery_count,
        "enqueuedAt": claim.header["enqueuedAt"], "messageType": claim.header["messageType"],
        "payloadVersion": claim.header.get("payloadVersion", 1),
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
    parser.add_argument("--payload-version", type=int, default=1)
    parser.add_argument("--retry-full", type=float, default=0.0)
    parser.add_argument("--count", type=int)
    parser.add_argument("--until-file")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--max-messages", type=int)
    parser.add_argument("--max-payload-bytes", type=int)
    parser.add_argument("--lifetime", type=float)
    parser.add_argument("--claim-timeout", type=float, default=600.0)
    parser.add_argument("--max-quarantined", type=int)
    parser.add_argument("--max-attempts", type=int)
    parser.add_argument("--discard-oldest", action="store_true")
    parser.add_argument("--group-shared", action="store_true")
    parser.add_argument("--relaxed", action="store_true")
    arguments = parser.parse_args(argv)
    if not 1 <= arguments.payload_version <= 2**31 - 1:
        parser.error("--payload-version needs an integer from 1 to 2147483647")
    if arguments.delay != arguments.delay:
        parser.error("--delay needs a number of seconds, not NaN")
    if arguments.enqueued_at_us is not None and not 0 <= arguments.enqueued_at_us <= MAX_MICROS:
        parser.error("--enqueued-at-us needs an integer from 0 to %d (1970 to 2286)" % MAX_MICROS)
    if arguments.id is not None:
        try:
            uuid.UUID(arguments.id)
        except ValueError:
            parser.error("--id needs a UUID")
    try:
        spool = _spool(arguments)
    except SettingsUnreadable as error:
        print("agm_spool: error: open: the settings file cannot be used: %s" % error,
              file=sys.stderr)
        return 69
    except OSError as error:
        _print_error("open", error)
        return 69
    except ValueError as error:
        parser.error(str(error))  # an invalid namespace or limit, in Spool's words
    try:
        return _run(arguments, spool)
    except OSError as error:
        _print_error(arguments.command, error)
        return 74


def _print_error(operation, error):
    """One line naming the operation, the system's description of the errno and the errno; never
    a path or message bytes (SECURITY.md)."""
    code = error.errno if error.errno is not None else errno.EIO
    print("agm_spool: error: %s: %s (errno %d)" % (operation, os.strerror(code), code),
          file=sys.stderr, flush=True)


def _run(arguments, spool):
    """The command, on the opened spool; its exit status."""
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
                        not_before = micros_after(now_micros(), arguments.delay)
                    id, outcome = spool.enqueue(
                        message, id=arguments.id, enqueued_at=arguments.enqueued_at_us,
                        not_before=not_before, message_type=arguments.type or "",
                        payload_version=arguments.payload_version)
                    break
                except MailboxFull:
                    if time.monotonic() >= deadline:
                        print("full", flush=True)
                        return 75
                    time.sleep(0.001)
                except PayloadTooLarge:
                    print("too-large", flush=True)
                    return 65
                except NotJSON:
                    print("not-json", flush=True)
                    return 65
                except HeaderTooLong:
                    print("header-too-long", flush=True)
                    return 65
            print(id, outcome, flush=True)
            if outcome == "expired":
                return 65
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
