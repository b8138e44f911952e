// The baseline wake-up loop: one inotify watch on pending/, a blocking read, claim by name.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "CMailboxBaseline.h"

long cbaseline_wake_consume(const char *root, long samples, int64_t *latencies) {
  char path[4096];
  snprintf(path, sizeof path, "%s/pending", root);
  int pending = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  snprintf(path, sizeof path, "%s/claimed", root);
  int claimed = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int watch = inotify_init1(IN_CLOEXEC);
  if (pending < 0 || claimed < 0 || watch < 0) return -1;
  snprintf(path, sizeof path, "%s/pending", root);
  if (inotify_add_watch(watch, path, IN_MOVED_TO) < 0) return -1;
  snprintf(path, sizeof path, "%s/ready", root);
  int ready = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (ready < 0) return -1;
  close(ready);
  char events[64 * (sizeof(struct inotify_event) + 256)] __attribute__((aligned(8)));
  char content[64];
  long stored = 0;
  long seen = 0;  // messages taken, a stamp that cannot be parsed included
  while (seen < samples) {
    ssize_t got = read(watch, events, sizeof events);
    if (got < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    for (ssize_t offset = 0; offset < got && seen < samples;) {
      struct inotify_event *event = (struct inotify_event *)(events + offset);
      offset += (ssize_t)sizeof *event + event->len;
      if (event->len == 0) continue;
      const char *name = event->name;
      if (renameat(pending, name, claimed, name) != 0) continue;
      int fd = openat(claimed, name, O_RDONLY | O_CLOEXEC);
      if (fd < 0) return -1;
      ssize_t length = read(fd, content, sizeof content - 1);
      close(fd);
      int64_t now = cbaseline_now_ns();  // holding the message, as the library side measures
      unlinkat(claimed, name, 0);
      seen++;
      if (length <= 0) continue;
      content[length] = 0;
      char *end = NULL;
      errno = 0;
      long long stamp = strtoll(content, &end, 10);
      // A stamp that cannot be parsed is dropped, as on the library side, not counted as 0.
      if (end == content || *end != 0 || errno != 0) continue;
      latencies[stored++] = now - stamp;
    }
  }
  close(watch);
  close(pending);
  close(claimed);
  return stored;
}

int cbaseline_wake_produce(cbaseline *spool, long samples, long gap_us) {
  char content[32];
  for (long index = 0; index < samples; index++) {
    struct timespec gap = {gap_us / 1000000, (gap_us % 1000000) * 1000};
    while (nanosleep(&gap, &gap) != 0 && errno == EINTR) {}
    int length = snprintf(content, sizeof content, "%lld", (long long)cbaseline_now_ns());
    if (cbaseline_enqueue(spool, content, (size_t)length) != 0) return -1;
  }
  return 0;
}
