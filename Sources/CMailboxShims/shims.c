#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "CMailboxShims.h"

int cmailbox_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
  return renameat2(olddirfd, oldpath, newdirfd, newpath, RENAME_NOREPLACE);
}

int cmailbox_rename_exchange(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
  return renameat2(olddirfd, oldpath, newdirfd, newpath, RENAME_EXCHANGE);
}

long long cmailbox_move_refusing_attributes(int dirfd, const char *path) {
  struct statx info;
  if (statx(dirfd, path, AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, STATX_TYPE, &info) != 0)
    return -1;
  unsigned long long wanted = STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND | STATX_ATTR_MOUNT_ROOT;
  return (long long)(info.stx_attributes & info.stx_attributes_mask & wanted);
}

long long cmailbox_mount_id(int fd) {
  struct statx info;
  if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_MNT_ID, &info) != 0) return -1;
  if (!(info.stx_mask & STATX_MNT_ID)) return -2;
  return (long long)info.stx_mnt_id;
}

int cmailbox_random_bytes(void *buffer, unsigned long length) {
  unsigned char *out = buffer;
  while (length > 0) {
    ssize_t got = getrandom(out, length, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    out += got;
    length -= (unsigned long)got;
  }
  return 0;
}

int cmailbox_flock(int fd, int operation) { return flock(fd, operation); }

int cmailbox_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC | O_NONBLOCK); }

long cmailbox_getdents64(int fd, void *buffer, unsigned long size) {
  return syscall(SYS_getdents64, fd, buffer, size);
}

// Weak: resolved only when the ThreadSanitizer runtime is linked (swift build --sanitize=thread).
void __tsan_acquire(void *address) __attribute__((weak));
void __tsan_release(void *address) __attribute__((weak));

void cmailbox_tsan_acquire(void *address) {
  if (__tsan_acquire) __tsan_acquire(address);
}

void cmailbox_tsan_release(void *address) {
  if (__tsan_release) __tsan_release(address);
}
