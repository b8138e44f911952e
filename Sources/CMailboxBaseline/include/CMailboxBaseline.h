#ifndef CMAILBOX_BASELINE_H
#define CMAILBOX_BASELINE_H

#include <stddef.h>
#include <stdint.h>

/// The benchmark's floor: a spool in plain C that makes the fewest system calls for the same
/// guarantees as the library (see docs/PERFORMANCE.md).
///
/// Layout: `<root>/{tmp,pending,claimed}`; a message is one file named
/// `<micros:16>-<pid:10>-<sequence:10>.msg`, so a sorted listing is FIFO.
/// - enqueue: openat(O_CREAT|O_EXCL) in tmp, write, fsync, close, renameat into pending, fsync
///   pending (both fsyncs only when durable);
/// - claim: renameat from pending into claimed, oldest first from one sorted listing kept in
///   memory (listed again only when used up);
/// - read: openat, read, close;
/// - acknowledge: unlinkat.
typedef struct cbaseline cbaseline;

/// Opens (creating its directories) the spool at `root`. `durable` selects the two fsyncs;
/// `max_message` is the read buffer size in bytes. Returns NULL with errno set on failure.
cbaseline *cbaseline_open(const char *root, int durable, size_t max_message);
/// Closes the directories and frees the index.
void cbaseline_close(cbaseline *spool);
/// Turns the flushes on (1) or off (0), for prefilling in relaxed mode.
void cbaseline_set_durable(cbaseline *spool, int durable);

/// Publishes one message of `length` bytes. Returns 0, or -1 with errno set.
int cbaseline_enqueue(cbaseline *spool, const void *bytes, size_t length);
/// As cbaseline_enqueue, flushing `pending/` only when `flush_directory` is non-zero (a batch
/// flushes it once, after its last message).
int cbaseline_enqueue_flushing(cbaseline *spool, const void *bytes, size_t length,
                               int flush_directory);
/// Whether the spool flushes (1) or not (0).
int cbaseline_is_durable(cbaseline *spool);
/// Flushes `pending/` (fsync). Returns 0 or -1.
int cbaseline_flush_pending(cbaseline *spool);
/// Claims the oldest pending message, reads it and acknowledges it. Returns the bytes read, 0
/// when nothing is pending, -1 with errno set on failure. Copies at most `capacity` bytes of the
/// message into `out` when `out` is not NULL.
long cbaseline_claim_read_ack(cbaseline *spool, void *out, size_t capacity);
/// Lists and sorts `pending/` into the in-memory index now. Returns the entry count or -1.
long cbaseline_refresh(cbaseline *spool);

/// Monotonic clock (CLOCK_MONOTONIC) in nanoseconds; comparable across processes.
int64_t cbaseline_now_ns(void);

/// Enqueues `count` messages of `size` bytes. Returns elapsed nanoseconds or -1.
int64_t cbaseline_time_enqueue(cbaseline *spool, long count, size_t size);
/// Claims, reads and acknowledges `count` messages. Returns elapsed nanoseconds, or -1 when the
/// spool ran empty first or a call failed.
int64_t cbaseline_time_consume(cbaseline *spool, long count);
/// Runs `count` full cycles (enqueue, claim, read, acknowledge). Returns elapsed ns or -1.
int64_t cbaseline_time_cycle(cbaseline *spool, long count, size_t size);
/// Enqueues `count` messages of `size` bytes in batches of `batch`: each file flushed when
/// durable, `pending/` flushed once per batch. Returns elapsed ns or -1.
int64_t cbaseline_time_enqueue_batch(cbaseline *spool, long count, size_t size, long batch);
/// Consumes until nothing is pending and the file `done_path` exists. Returns messages
/// consumed, or -1.
long cbaseline_consume_until(cbaseline *spool, const char *done_path);

/// Wake-up consumer: watches `<root>/pending` with inotify (IN_MOVED_TO), creates
/// `<root>/ready`, then for each event claims, reads and acknowledges the named message, whose
/// content is the producer's cbaseline_now_ns() in decimal, and stores now minus that in
/// `latencies` (ns). Stops after `samples` messages; a message whose content is not a decimal
/// stamp is dropped. Returns the samples stored (at most `samples`), or -1.
long cbaseline_wake_consume(const char *root, long samples, int64_t *latencies);
/// Wake-up producer: `samples` times, sleeps `gap_us` microseconds then enqueues a message
/// holding cbaseline_now_ns() in decimal. Returns 0 or -1.
int cbaseline_wake_produce(cbaseline *spool, long samples, long gap_us);

#endif
