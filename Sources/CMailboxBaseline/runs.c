// Timed loops of the baseline spool, so no Swift runs inside a measured region.
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "CMailboxBaseline.h"

static char *filled(size_t size) {
  char *bytes = malloc(size ? size : 1);
  if (bytes) memset(bytes, 'x', size);
  return bytes;
}

int64_t cbaseline_time_enqueue(cbaseline *spool, long count, size_t size) {
  char *bytes = filled(size);
  if (!bytes) return -1;
  int64_t start = cbaseline_now_ns();
  for (long index = 0; index < count; index++) {
    if (cbaseline_enqueue(spool, bytes, size) != 0) {
      free(bytes);
      return -1;
    }
  }
  int64_t elapsed = cbaseline_now_ns() - start;
  free(bytes);
  return elapsed;
}

int64_t cbaseline_time_consume(cbaseline *spool, long count) {
  int64_t start = cbaseline_now_ns();
  for (long index = 0; index < count; index++) {
    if (cbaseline_claim_read_ack(spool, NULL, 0) <= 0) return -1;
  }
  return cbaseline_now_ns() - start;
}

int64_t cbaseline_time_cycle(cbaseline *spool, long count, size_t size) {
  char *bytes = filled(size);
  if (!bytes) return -1;
  int64_t start = cbaseline_now_ns();
  for (long index = 0; index < count; index++) {
    if (cbaseline_enqueue(spool, bytes, size) != 0 ||
        cbaseline_claim_read_ack(spool, NULL, 0) <= 0) {
      free(bytes);
      return -1;
    }
  }
  int64_t elapsed = cbaseline_now_ns() - start;
  free(bytes);
  return elapsed;
}

int64_t cbaseline_time_enqueue_batch(cbaseline *spool, long count, size_t size, long batch) {
  char *bytes = filled(size);
  if (!bytes) return -1;
  int durable = cbaseline_is_durable(spool);
  int64_t start = cbaseline_now_ns();
  for (long index = 0; index < count; index++) {
    if (cbaseline_enqueue_flushing(spool, bytes, size, 0) != 0) {
      free(bytes);
      return -1;
    }
    int last = index + 1 == count || (index + 1) % batch == 0;
    if (durable && last && cbaseline_flush_pending(spool) != 0) {
      free(bytes);
      return -1;
    }
  }
  int64_t elapsed = cbaseline_now_ns() - start;
  free(bytes);
  return elapsed;
}

long cbaseline_consume_until(cbaseline *spool, const char *done_path) {
  long consumed = 0;
  for (;;) {
    long got = cbaseline_claim_read_ack(spool, NULL, 0);
    if (got < 0) return -1;
    if (got > 0) {
      consumed += 1;
      continue;
    }
    // Empty: finished once the producers are done and a final look finds nothing.
    if (access(done_path, F_OK) == 0) {
      long last = cbaseline_claim_read_ack(spool, NULL, 0);
      if (last < 0) return -1;
      if (last == 0) return consumed;
      consumed += 1;
    }
  }
}
