#ifndef CMAILBOX_SHIMS_H
#define CMAILBOX_SHIMS_H

/// Renames `oldpath` (relative to `olddirfd`) to `newpath` (relative to `newdirfd`) and fails with
/// EEXIST instead of replacing an existing destination: renameat2(2) with RENAME_NOREPLACE.
/// Returns 0 on success, -1 with errno set on failure (EINVAL or ENOSYS where the filesystem or
/// kernel lacks the flag; callers fall back to link(2) then unlink(2)).
int cmailbox_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);

/// Swaps `oldpath` (relative to `olddirfd`) and `newpath` (relative to `newdirfd`) atomically:
/// renameat2(2) with RENAME_EXCHANGE. Both must exist (ENOENT otherwise). Returns 0 or -1 with
/// errno (EINVAL or ENOSYS where the filesystem or kernel lacks the flag).
int cmailbox_rename_exchange(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);

/// The attributes that refuse every rename, link and unlink of the entry `path` (relative to
/// `dirfd`, never following a symbolic link), read with statx(2) and `AT_SYMLINK_NOFOLLOW`:
/// of STATX_ATTR_IMMUTABLE (0x10) and STATX_ATTR_APPEND (0x20) (see chattr(1) `+i`, `+a`) and
/// STATX_ATTR_MOUNT_ROOT (0x2000: something is mounted on the entry, as `mount --bind` does
/// onto a file; renames and unlinks fail with EBUSY, Linux 5.8 and later) the bits set in
/// `stx_attributes` that the kernel also reports in `stx_attributes_mask`. Returns those bits
/// (0 when none is set or the filesystem cannot say), or -1 with errno.
long long cmailbox_move_refusing_attributes(int dirfd, const char *path);

/// The id of the mount the open file `fd` is on (statx(2) `stx_mnt_id`, Linux 5.8 and later;
/// the id /proc/self/mountinfo lists first). Returns it, -2 when the kernel does not report it,
/// or -1 with errno.
long long cmailbox_mount_id(int fd);

/// Fills `buffer` with `length` random bytes from getrandom(2). Returns 0 or -1 with errno.
int cmailbox_random_bytes(void *buffer, unsigned long length);

/// flock(2): Swift sees only `struct flock` under that name, so the call goes through here.
int cmailbox_flock(int fd, int operation);

/// pipe2(2) with O_CLOEXEC | O_NONBLOCK (Swift's Glibc lacks pipe2). Returns 0 or -1 with errno.
int cmailbox_pipe_cloexec(int fds[2]);

/// getdents64(2): reads directory entries of the open directory `fd` into `buffer` (`size`
/// bytes) as `struct linux_dirent64` records (d_ino, d_off, d_reclen, d_type, NUL-terminated
/// d_name). Returns the bytes read, 0 at the end of the directory, or -1 with errno (EINVAL
/// when `size` cannot hold the next entry). Swift cannot call the variadic syscall(2).
long cmailbox_getdents64(int fd, void *buffer, unsigned long size);

/// Tells ThreadSanitizer that the lock at `address` was acquired (after locking) or is about to
/// be released (before unlocking); no-ops unless the ThreadSanitizer runtime is linked in.
void cmailbox_tsan_acquire(void *address);
void cmailbox_tsan_release(void *address);

#endif
