// The baseline spool: the fewest system calls for an atomic, optionally durable, FIFO spool.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "CMailboxBaseline.h"

enum { NAME_SLOT = 48 };

struct cbaseline {
  int tmp, pending, claimed;
  int durable;
  unsigned long sequence;
  char (*names)[NAME_SLOT];
  long count, cursor, capacity;
  char *buffer;
  size_t buffer_size;
  char *listing;
};

enum { LISTING_BYTES = 1 << 20 };

static int open_area(const char *root, const char *area) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, area);
  if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
  return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

cbaseline *cbaseline_open(const char *root, int durable, size_t max_message) {
  if (mkdir(root, 0700) != 0 && errno != EEXIST) return NULL;
  cbaseline *spool = calloc(1, sizeof *spool);
  if (!spool) return NULL;
  spool->tmp = open_area(root, "tmp");
  spool->pending = open_area(root, "pending");
  spool->claimed = open_area(root, "claimed");
  spool->durable = durable;
  spool->buffer_size = max_message + 1;
  spool->buffer = malloc(spool->buffer_size);
  spool->listing = malloc(LISTING_BYTES);
  if (spool->tmp < 0 || spool->pending < 0 || spool->claimed < 0 || !spool->buffer ||
      !spool->listing) {
    cbaseline_close(spool);
    return NULL;
  }
  return spool;
}

void cbaseline_close(cbaseline *spool) {
  if (!spool) return;
  if (spool->tmp >= 0) close(spool->tmp);
  if (spool->pending >= 0) close(spool->pending);
  if (spool->claimed >= 0) close(spool->claimed);
  free(spool->names);
  free(spool->buffer);
  free(spool->listing);
  free(spool);
}

void cbaseline_set_durable(cbaseline *spool, int durable) { spool->durable = durable; }

int64_t cbaseline_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int append_name(cbaseline *spool, const char *name) {
  if (spool->count == spool->capacity) {
    long capacity = spool->capacity ? spool->capacity * 2 : 1024;
    void *grown = realloc(spool->names, (size_t)capacity * NAME_SLOT);
    if (!grown) return -1;
    spool->names = grown;
    spool->capacity = capacity;
  }
  strncpy(spool->names[spool->count], name, NAME_SLOT - 1);
  spool->names[spool->count][NAME_SLOT - 1] = 0;
  spool->count += 1;
  return 0;
}

int cbaseline_enqueue(cbaseline *spool, const void *bytes, size_t length) {
  return cbaseline_enqueue_flushing(spool, bytes, length, spool->durable);
}

int cbaseline_enqueue_flushing(cbaseline *spool, const void *bytes, size_t length,
                               int flush_directory) {
  char name[NAME_SLOT];
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  long long micros = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
  snprintf(name, sizeof name, "%016lld-%010d-%010lu.msg", micros, (int)getpid(),
           ++spool->sequence);
  int fd = openat(spool->tmp, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  const char *cursor = bytes;
  size_t left = length;
  while (left > 0) {
    ssize_t written = write(fd, cursor, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return -1;
    }
    cursor += written;
    left -= (size_t)written;
  }
  if (spool->durable && fsync(fd) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  if (renameat(spool->tmp, name, spool->pending, name) != 0) return -1;
  if (flush_directory && fsync(spool->pending) != 0) return -1;
  // This process's own messages are newer than everything it listed: they go last.
  if (spool->names) return append_name(spool, name);
  return 0;
}

static int compare_names(const void *lhs, const void *rhs) { return strcmp(lhs, rhs); }

long cbaseline_refresh(cbaseline *spool) {
  spool->count = 0;
  spool->cursor = 0;
  int fd = openat(spool->pending, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  for (;;) {
    long got = syscall(SYS_getdents64, fd, spool->listing, LISTING_BYTES);
    if (got < 0) {
      close(fd);
      return -1;
    }
    if (got == 0) break;
    for (long offset = 0; offset < got;) {
      struct dirent64 *entry = (struct dirent64 *)(spool->listing + offset);
      offset += entry->d_reclen;
      size_t length = strlen(entry->d_name);
      if (length < 5 || strcmp(entry->d_name + length - 4, ".msg") != 0) continue;
      if (append_name(spool, entry->d_name) != 0) {
        close(fd);
        return -1;
      }
    }
  }
  close(fd);
  qsort(spool->names, (size_t)spool->count, NAME_SLOT, compare_names);
  return spool->count;
}

long cbaseline_claim_read_ack(cbaseline *spool, void *out, size_t capacity) {
  for (;;) {
    if (spool->cursor >= spool->count) {
      if (cbaseline_refresh(spool) < 0) return -1;
      if (spool->count == 0) return 0;
    }
    const char *name = spool->names[spool->cursor++];
    if (renameat(spool->pending, name, spool->claimed, name) != 0) {
      if (errno == ENOENT) continue;  // another consumer won
      return -1;
    }
    int fd = openat(spool->claimed, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    // One read returns a whole regular file that fits the buffer.
    ssize_t got;
    do {
      got = read(fd, spool->buffer, spool->buffer_size);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      close(fd);
      return -1;
    }
    size_t total = (size_t)got;
    close(fd);
    if (out) memcpy(out, spool->buffer, total < capacity ? total : capacity);
    if (unlinkat(spool->claimed, name, 0) != 0) return -1;
    return (long)(total > 0 ? total : 1);
  }
}

int cbaseline_flush_pending(cbaseline *spool) { return fsync(spool->pending); }

int cbaseline_is_durable(cbaseline *spool) { return spool->durable; }
