#!/usr/bin/env python3
"""Brings messages from a NATS JetStream stream into a local mailbox (docs/SCALING.md): pulls
from a durable consumer and enqueues each message with ``mailboxctl enqueue --id``,
acknowledging to JetStream only after that enqueue returned.

    consume.py --server nats://nats1:4222 --stream MAILBOX --durable host7 \\
        -- --container /var/lib/app --namespace jobs

Arguments after ``--`` go to ``mailboxctl enqueue``. The message id is the ``Nats-Msg-Id``
header (a UUID; anything else is turned into a UUID derived from it), else a UUID derived from
the stream name and sequence, so a redelivery (after a crash, before the acknowledgement)
enqueues the same id again, which writes nothing while that message is still in the mailbox.
``Mailbox-Enqueued-At``, ``Mailbox-Type`` (or ``Mailbox-Type-Encoded``, decoded),
``Mailbox-Payload-Version`` and ``Mailbox-Priority`` become ``--enqueued-at``, ``--type``,
``--payload-version`` and ``--priority``.

A message mailboxctl rejects as bad data (exit 65: not JSON, too large, or dated more than the
mailbox's message lifetime ago; with ``--delay`` or ``--not-before``, due past that lifetime
counted from its date), or whose ``Mailbox-Payload-Version`` is not an integer from 1
to 2**31 - 1, ``Mailbox-Priority`` not a level from 0 to 9, ``Mailbox-Enqueued-At`` not an
ISO 8601 date from 1970 to 2286, or whose type headers name no
tag a command line can carry (both headers, bad percent-encoding, not UTF-8, a NUL), is terminated in
JetStream (never redelivered) and logged; any other failure (a full mailbox, exit 75) is
redelivered after ``--retry-after`` seconds. Runs until SIGINT, SIGTERM or SIGHUP, then finishes the
enqueues in progress, acknowledges them and exits 0 (a second such signal stops those enqueues
with SIGTERM, one waiting for room with ``--wait`` too, and gives their messages back, at once;
one stored just before gets a copy the next enqueue by id finds while it is still in the
mailbox); until the first connection succeeds it
keeps trying while no server answers, and a stop signal ends it at once (exit 0); any other error
of the first connection (a credentials file that is missing or needs the ``nkeys`` module, an
authorization refused) is said in one line and ends it with exit 78. When JetStream refuses the stream or
the durable consumer (a stream that does not exist), or the durable consumer exists with other
settings than it makes (not explicit acknowledgements, a push consumer, another filter), it
says why and exits 78; when JetStream does not answer, 69. A ``--mailboxctl`` that is not an
executable file (looked up in $PATH without a slash) is said in one line with exit 78, before
it connects, as does a mailbox ``mailboxctl status`` cannot open (one not created yet, which
``enqueue`` would create with the default bounds), or arguments after ``--`` that would refuse,
change or lose messages: they may hold only ``--container``, ``--app-group``, ``--namespace``,
``--relaxed``, ``--wait``, ``--delay`` and ``--not-before``, with values ``mailboxctl enqueue
--dry-run`` takes (a ``--delay`` past the mailbox's message lifetime would refuse every message
as bad data; a mailboxctl without ``--dry-run``, older than this script, cannot check that and
is refused with ``--delay`` or ``--not-before``); when an enqueue exits 65 and that check now
fails too (the settings changed), the message is given back and it stops with exit 78 as at the
start. Each enqueue passes ``--no-create`` (a mailboxctl older than this script, without it,
is said in a line at the start), so a mailbox deleted while it runs is not made again with the
default bounds: its messages are given back (exit 66) until the mailbox is there again. From
its fetch until it is answered (waiting for a free enqueue, or for room with ``--wait``), each
message is reported in progress to JetStream every half ack wait (at most every 0.5 s), so it
is not delivered again meanwhile. An enqueue refused as a usage error (exit 64) gives the message
back for later. A
durable consumer or stream deleted while it runs, or a consumer made again with other settings
(asked every 10 seconds), is said in one line, and it finishes the enqueues in progress and
exits 78. Needs the ``nats-py`` package (PyPI).
"""

import os
import signal
import sys


def _stop_before_the_loop(number, frame):
    """A stop signal before the event loop handles them (Python's own start, the imports):
    nothing was taken yet, so it ends the program at once, without a traceback. os._exit, not
    sys.exit: a SystemExit raised while the import system compiles a module is lost."""
    os._exit(0)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
for _number in STOP_SIGNALS:
    signal.signal(_number, _stop_before_the_loop)

import argparse  # noqa: E402 - after the stop signals are handled
import asyncio  # noqa: E402
import shutil  # noqa: E402
import uuid  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from nats_bridge import common  # noqa: E402
from nats_bridge.common import log  # noqa: E402

USAGE_ERROR = 64
LOCATION_OPTIONS = ("--container", "--app-group", "--namespace")
# What the arguments after -- may hold: where the mailbox is and how each enqueue is made.
ENQUEUE_OPTIONS = LOCATION_OPTIONS + ("--relaxed", "--wait", "--delay", "--not-before")
DATA_ERROR = 65
UNAVAILABLE = 69  # sysexits.h EX_UNAVAILABLE: JetStream did not answer
CONFIGURATION_ERROR = 78  # EX_CONFIG: JetStream refused the stream or consumer; a bad connection
CONSUMER_CHECK = 10.0  # seconds between two checks that the consumer exists as consume.py made it
ID_NAMESPACE = uuid.UUID("6f1d3c52-3b7e-4a55-9a3c-6d1f8f1a2b90")


def is_option(argument):
    """Whether mailboxctl takes `argument` as an option: it starts with "-", is not "-" alone,
    and is not a number (as ``--delay -5`` gives -5 as the value)."""
    if not argument.startswith("-") or argument == "-":
        return False
    try:
        float(argument)
    except ValueError:
        return True
    return False


def parse_arguments():
    argv = sys.argv[1:]
    enqueue = []
    if "--" in argv:
        enqueue = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(
        usage="%(prog)s [options] -- MAILBOX-OPTIONS",
        description="Enqueue JetStream messages into a local mailbox (mailboxctl enqueue --id).",
        epilog="Everything after -- goes to each 'mailboxctl enqueue' and chooses the mailbox "
               "(required): for example -- --container /srv/app --namespace jobs, or "
               "-- --app-group ID (the namespace is 'default' unless given).")
    common.add_connection_arguments(parser)
    parser.add_argument("--stream", required=True, help="the stream to consume")
    parser.add_argument("--durable", required=True, help="the durable consumer's name")
    parser.add_argument("--subject", default="", help="a filter subject (default: the whole stream)")
    parser.add_argument("--mailboxctl", default="mailboxctl", help="the mailboxctl to run")
    parser.add_argument("--batch", type=common.integer(1, 4096), default=64,
                        help="messages per fetch (1 to 4096, default 64)")
    parser.add_argument("--parallel", type=common.integer(1, 256), default=4,
                        help="enqueues running at once (1 to 256, default 4)")
    parser.add_argument("--ack-wait", type=common.seconds(1, 86400), default=30.0,
                        help="seconds before JetStream redelivers an unacknowledged message "
                             "(set when the consumer is created; 1 to 86400, default 30)")
    parser.add_argument("--retry-after", type=common.seconds(0.1, 86400), default=2.0,
                        help="seconds before a message that failed to enqueue comes again "
                             "(0.1 to 86400, default 2)")
    arguments = parser.parse_args(argv)
    arguments.enqueue = enqueue
    return arguments


def message_id(message):
    headers = message.headers or {}
    text = headers.get(common.MSG_ID)
    if text:
        try:
            return str(uuid.UUID(text))
        except ValueError:
            return str(uuid.uuid5(ID_NAMESPACE, "id:" + text))
    meta = message.metadata
    return str(uuid.uuid5(ID_NAMESPACE, f"{meta.stream}:{meta.sequence.stream}"))


class Consumer:
    def __init__(self, arguments):
        self.arguments = arguments
        self.stopping = asyncio.Event()
        self.status = 0  # the exit status: 78 once the set-up was found wrong
        self.window = asyncio.Semaphore(arguments.parallel)
        self.existing = []  # ["--no-create"] once mailboxctl enqueue is known to have it
        self.ack_wait = arguments.ack_wait  # the durable consumer's, once it is known
        self.enqueues = set()  # the mailboxctl enqueue processes running
        self.in_progress = 0  # enqueue() calls not yet ended
        self.signals = 0  # stop signals received
        self.hurried = False  # a second stop signal came: those are stopped

    def stop_signal(self):
        """The first stop signal ends the fetching; a second one also stops the enqueues in
        progress (one waiting for room with ``--wait`` would hold the stop that long)."""
        self.signals += 1
        if self.signals > 1:  # not stopping.is_set(): a refused setting also sets that
            self.hurried = True
            for process in self.enqueues:
                try:
                    process.terminate()
                except ProcessLookupError:
                    pass
        elif self.in_progress:
            count = self.in_progress
            log.record(f"stopping: waiting for {count} enqueue{'s' if count > 1 else ''} in "
                       "progress (a second stop signal stops them)")
        self.stopping.set()

    async def enqueue(self, message, working):
        """Enqueues `message`, then acknowledges, terminates or gives it back; `working` (the
        task telling JetStream it is in progress, started when it was fetched) ends with it."""
        self.in_progress += 1
        try:
            headers = message.headers or {}
            command = ["enqueue", *self.arguments.enqueue, *self.existing,
                       "--id", message_id(message)]
            # Header values go after "=": one that starts with "-" is a value, not an option.
            if headers.get(common.ENQUEUED_AT):
                date = common.enqueued_at(headers[common.ENQUEUED_AT])
                if date is None:
                    return await self.terminate(
                        message, f"its {common.ENQUEUED_AT} header is not an ISO 8601 date "
                        "from 1970 to 2286")
                command.append("--enqueued-at=" + date)
            tag, why = common.message_type(headers)
            if why is not None:
                return await self.terminate(message, why)
            if tag:
                command.append("--type=" + tag)
            version = common.payload_version(headers.get(common.PAYLOAD_VERSION))
            if version is None:
                return await self.terminate(
                    message, f"its {common.PAYLOAD_VERSION} header is not an integer from 1 to "
                    f"{common.MAX_PAYLOAD_VERSION}")
            if version != 1:
                command += ["--payload-version", str(version)]
            level = common.priority(headers.get(common.PRIORITY))
            if level is None:
                return await self.terminate(
                    message, f"its {common.PRIORITY} header is not a level from 0 to 9")
            if level != common.DEFAULT_PRIORITY:
                command += ["--priority", str(level)]
            status, stderr = await self.mailboxctl(
                *command, data=message.data or b"", running=self.enqueues)
            if status == 0:
                await message.ack()
            elif self.hurried and status < 0:
                # Stopped by us (a second stop signal): back at once, for the next consumer.
                log.say(f"enqueue of message {message_id(message)} stopped by a second stop "
                        "signal: given back", kind="stopped")
                await message.nak()
            elif status == DATA_ERROR and (why := await self.arguments_refused()):
                # Not this message's fault: the mailbox's settings changed under the arguments
                # (a message lifetime now shorter than --delay), and every message would be
                # refused. It is given back, and consume.py stops as at the start.
                await message.nak()
                if self.status != CONFIGURATION_ERROR:
                    self.status = CONFIGURATION_ERROR
                    log.record(why)
                self.stopping.set()
            elif status == DATA_ERROR:
                await self.terminate(message, stderr)
            else:
                log.say(f"enqueue of message {message_id(message)} failed "
                        f"(exit {status}), retrying in "
                        f"{self.arguments.retry_after:g} s: "
                        f"{stderr}", kind="enqueue")
                await message.nak(delay=self.arguments.retry_after)
        except Exception as error:  # noqa: BLE001 - JetStream redelivers after ack_wait
            log.say(f"{type(error).__name__}: {error}", kind=type(error).__name__)
        finally:
            self.in_progress -= 1
            working.cancel()
            self.window.release()

    async def keep_in_progress(self, message):
        """Tells JetStream every half ack wait that `message` is still being enqueued (waiting
        for room with ``--wait``, a slow disk), so it is not delivered again meanwhile: a second
        copy, enqueued after the first was stored and consumed, was stored twice. A lost
        connection ends it (JetStream then delivers again after the ack wait, as after a
        crash)."""
        while True:
            # At least every half second apart: a consumer made with a tiny ack wait (below the
            # 1 s --ack-wait allows) would otherwise turn this into a busy loop.
            await asyncio.sleep(max(self.ack_wait / 2, 0.5))
            try:
                await message.in_progress()
            except Exception:  # noqa: BLE001 - the connection is gone: nothing to keep
                return

    async def unless_stopped(self, work):
        """(True, what `work` returned), or (False, None) when a stop signal came first (then
        `work` is cancelled)."""
        task = asyncio.ensure_future(work)
        stopped = asyncio.create_task(self.stopping.wait())
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not task.done():
            task.cancel()
            return False, None
        return True, task.result()

    async def terminate(self, message, why):
        """Terminates `message` in JetStream (bad data: never redelivered) and logs its id and
        why, never its contents."""
        log.record(f"message {message_id(message)} terminated: {why}")
        await message.term()

    async def run(self):
        import nats.errors
        import nats.js.errors
        from nats.js.api import AckPolicy, ConsumerConfig

        # Every message would fail to enqueue, and come back for ever: said at once instead.
        if shutil.which(self.arguments.mailboxctl) is None:
            log.record(f"cannot run --mailboxctl {self.arguments.mailboxctl}: not found, or not "
                       "an executable file")
            return CONFIGURATION_ERROR
        if why := await self.mailbox_unusable() or await self.arguments_refused():
            log.record(why)
            return CONFIGURATION_ERROR
        if not self.existing:
            log.record(f"note: --mailboxctl {self.arguments.mailboxctl} is older than consume.py "
                       "(its enqueue has no --no-create): a mailbox deleted while consume.py "
                       "runs is made again with the default bounds")
        loop = asyncio.get_running_loop()
        stops = STOP_SIGNALS
        for number in stops:
            loop.add_signal_handler(number, self.stop_signal)
        # A parent may have started us with them blocked (the mask is inherited across exec).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        # The first connection is tried until it succeeds or a stop signal comes, which ends
        # the program at once: nothing was taken yet.
        # An error trying again cannot mend (credentials, the nkeys module for --creds, an
        # authorization refused) ends it with one line and exit 78, as forward.py.
        try:
            connected, nc = await self.unless_stopped(
                common.connect_retrying(self.arguments, "mailbox-consume"))
        except Exception as error:  # noqa: BLE001 - said plainly, not as a traceback
            log.record(f"cannot connect: {type(error).__name__}: {error}")
            return CONFIGURATION_ERROR
        if not connected:
            return 0
        js = nc.jetstream()
        config = ConsumerConfig(
            durable_name=self.arguments.durable, ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.arguments.ack_wait,
            max_ack_pending=max(self.arguments.batch * 4, 256),
            filter_subject=self.arguments.subject or None)
        where = f"stream {self.arguments.stream}, durable consumer {self.arguments.durable}"
        try:
            subscribed, subscription = await self.unless_stopped(js.pull_subscribe(
                self.arguments.subject or None, durable=self.arguments.durable,
                stream=self.arguments.stream, config=config))
            # nats-py uses a durable consumer that exists as it is: one made otherwise (no
            # acknowledgements, another filter, a push consumer) would lose or misroute messages.
            found = subscribed and await js.consumer_info(
                self.arguments.stream, self.arguments.durable)
        except Exception as error:  # noqa: BLE001 - said plainly, not as a traceback
            await nc.close()
            if isinstance(error, nats.js.errors.ServiceUnavailableError):
                log.record(f"cannot consume from {where}: JetStream does not answer "
                           "(not enabled on the server, or no responders)")
                return UNAVAILABLE
            if isinstance(error, nats.js.errors.APIError):
                log.record(f"cannot consume from {where}: {error.description}")
                return CONFIGURATION_ERROR
            log.record(f"cannot consume from {where}: {type(error).__name__}: {error}")
            return UNAVAILABLE
        if not subscribed:
            await nc.close()
            return 0
        self.ack_wait = found.config.ack_wait or self.arguments.ack_wait
        problems = common.consumer_problems(found.config, self.arguments.subject)
        if problems:
            await nc.close()
            log.record(f"cannot consume from {where}: it exists with other settings: "
                       f"{'; '.join(problems)}; delete it or give another --durable")
            return CONFIGURATION_ERROR
        tasks = set()
        checked = loop.time()
        while not self.stopping.is_set():
            # A fetch from a consumer or stream deleted meanwhile times out like one with nothing
            # to deliver, and one made again otherwise (a push consumer, no acknowledgements)
            # stalls or loses messages: asked every CONSUMER_CHECK seconds, busy or idle.
            if loop.time() - checked >= CONSUMER_CHECK:
                checked = loop.time()
                if why := await self.unfit(js):
                    log.record(f"cannot consume from {where}: {why}")
                    self.status = CONFIGURATION_ERROR
                    break
            try:
                messages = await subscription.fetch(self.arguments.batch, timeout=1)
            except (nats.errors.TimeoutError, TimeoutError):  # nats-py raises either when idle
                continue
            except Exception as error:  # noqa: BLE001 - a lost server: try again
                log.say(f"fetch: {type(error).__name__}: {error}", kind="fetch")
                await asyncio.sleep(0.5)
                continue
            # Each message is kept in progress from its fetch, also while it waits for a free
            # enqueue: a message that waited out the ack wait was delivered again meanwhile.
            working = [asyncio.create_task(self.keep_in_progress(message))
                       for message in messages]
            for index, message in enumerate(messages):
                await self.window.acquire()
                if self.stopping.is_set():
                    self.window.release()
                    for rest, keeping in zip(messages[index:], working[index:]):
                        keeping.cancel()
                        # Delivered again at once, to the next consumer. (Messages nats-py
                        # already holds for a fetch that timed out are not seen here: those
                        # come again after the ack wait.)
                        await rest.nak()
                    break
                task = asyncio.create_task(self.enqueue(message, working[index]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.wait(set(tasks))
        # The last acknowledgements; with the server gone they are lost, and JetStream delivers
        # those messages again (the enqueue by id keeps one copy): said in a line, exit 0.
        for step, call in (("flushing the last acknowledgements", lambda: nc.flush(timeout=5)),
                           ("closing the connection", nc.close)):
            try:
                await call()
            except Exception as error:  # noqa: BLE001 - a stop must not end in a traceback
                log.say(f"{step}: {type(error).__name__}: {error}")
        return self.status

    async def mailbox_unusable(self):
        """Why the mailbox the arguments after ``--`` name cannot take messages, as
        ``mailboxctl status`` says it (one that does not exist, which ``enqueue`` would create
        with the default settings: a message over 64 KiB, or older than a day, would then be
        terminated; one this user may not open); None when it can."""
        location = []
        options = iter(self.arguments.enqueue)
        for argument in options:
            name = argument.split("=", 1)[0]
            if name in LOCATION_OPTIONS:
                location.append(argument)
                if "=" not in argument:
                    location.append(next(options, ""))
        try:
            status, stderr = await self.mailboxctl("status", *location)
        except OSError as error:  # executable, but not a program this system runs
            return f"cannot run --mailboxctl {self.arguments.mailboxctl}: {error.strerror}"
        return None if status == 0 else f"cannot enqueue into the mailbox: {stderr}"

    async def arguments_refused(self):
        """Why the arguments after ``--`` would refuse, change or lose messages; None when they
        would not. They may hold only ENQUEUE_OPTIONS: consume.py gives each message's ``--id``,
        ``--enqueued-at``, ``--type``, ``--payload-version`` and ``--priority`` itself (given
        twice, mailboxctl refuses the message), and the others would replace, split, merge or
        not store messages (``--data``, ``--lines``, ``--key``, ``--dry-run``; ``--help`` stores
        nothing and exits 0, so every message would be acknowledged and lost). Then mailboxctl
        is asked: ``enqueue --help`` refuses an option without its value and says whether it has
        ``--no-create`` (then every enqueue passes it: a mailbox deleted while consume.py runs
        is not made again with the default bounds) and ``--dry-run``: ``enqueue ... --dry-run``
        of a small message checks the values against the mailbox's settings (a ``--delay`` past
        the message lifetime refuses every message as bad data, exit 65, which would terminate
        them all). A mailboxctl without ``--dry-run`` cannot check that, so ``--delay`` and
        ``--not-before`` are refused with it. Stores nothing."""
        given = [argument.split("=", 1)[0] for argument in self.arguments.enqueue
                 if is_option(argument)]
        for name in given:
            if name not in ENQUEUE_OPTIONS:
                return (f"the arguments after -- may hold only {', '.join(ENQUEUE_OPTIONS)} "
                        "(consume.py gives each message's --id, --enqueued-at, --type, "
                        f"--payload-version and --priority itself), not {name}")
        status, usage, stderr = await self.mailboxctl(
            "enqueue", *self.arguments.enqueue, "--help", output=True)
        if status != 0:
            return f"mailboxctl enqueue refuses the arguments after --: {stderr}"
        self.existing = ["--no-create"] if "--no-create" in usage else []
        if "--dry-run" not in usage:
            if delays := [name for name in ("--delay", "--not-before") if name in given]:
                return (f"--mailboxctl {self.arguments.mailboxctl} is older than consume.py (its "
                        f"enqueue has no --dry-run), so {delays[0]} cannot be checked against "
                        "the mailbox's message lifetime (past it, every message would be "
                        "terminated): upgrade it, or leave that option out")
            return None
        status, stderr = await self.mailboxctl(
            "enqueue", *self.arguments.enqueue, *self.existing, "--dry-run", data=b"{}")
        if status == 0:
            return None
        return f"mailboxctl enqueue refuses the arguments after --: {stderr}"

    async def mailboxctl(self, *arguments, data=None, output=False, running=None):
        """Runs ``--mailboxctl`` with ``arguments``, ``data`` (bytes) on its stdin (nothing
        without it); returns its exit status (minus the signal's number when one ended it) and
        its stderr as text, trimmed, and with ``output`` its stdout as text between them
        (discarded without). The process is in the set ``running``, when given, while it runs.
        Raises OSError when it cannot be started."""
        # The message goes in as a file in memory (memfd_create(2)), not a pipe: mailboxctl may
        # exit before it reads (a usage error), and asyncio then reports the broken pipe as
        # "Future exception was never retrieved" with a traceback on stderr.
        stdin = asyncio.subprocess.DEVNULL
        if data is not None:
            stdin = os.memfd_create("message", os.MFD_CLOEXEC)
        try:
            if data is not None:
                view = memoryview(data)
                while view:
                    view = view[os.write(stdin, view):]
                os.lseek(stdin, 0, os.SEEK_SET)
            # A session of its own: Ctrl-C at a terminal signals consume.py only, which
            # lets the enqueues in progress finish (a second signal stops them).
            process = await asyncio.create_subprocess_exec(
                self.arguments.mailboxctl, *arguments, stdin=stdin,
                stdout=asyncio.subprocess.PIPE if output else asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE, start_new_session=True)
        finally:
            if data is not None:
                os.close(stdin)
        if running is not None:
            running.add(process)
            if self.hurried:  # started as the second stop signal came
                process.terminate()
        try:
            stdout, stderr = await process.communicate()
        finally:
            if running is not None:
                running.discard(process)
        stderr = stderr.decode(errors="replace").strip()
        if output:
            return process.returncode, stdout.decode(errors="replace"), stderr
        return process.returncode, stderr

    async def unfit(self, js):
        """Why the durable consumer can no longer be consumed from: deleted with its stream or
        alone, or made again with other settings than consume.py makes (``consumer_problems``);
        None when it fits or JetStream cannot say now (a lost server: fetch says that)."""
        import nats.js.errors

        try:
            info = await js.consumer_info(
                self.arguments.stream, self.arguments.durable, timeout=5)
        except nats.js.errors.NotFoundError as error:
            return f"{error.description} (deleted while consuming)"
        except Exception:  # noqa: BLE001 - not an answer that it is gone
            return None
        self.ack_wait = info.config.ack_wait or self.arguments.ack_wait
        problems = common.consumer_problems(info.config, self.arguments.subject)
        if problems:
            return (f"it was made again with other settings while consuming: "
                    f"{'; '.join(problems)}; delete it or give another --durable")
        return None


def main():
    return asyncio.run(Consumer(parse_arguments()).run())


if __name__ == "__main__":
    sys.exit(main())
