"""The directories of a namespace, created with their modes when missing (FORMAT.md, "Layout")."""

import errno
import os
import stat

AREAS = ("tmp", "pending", "claimed", "quarantine", "delayed")


class Layout:
    """<container>/AppGroupMailbox/<namespace>/ and its areas; a mixin of Spool."""

    def create_layout(self, container, namespace, group_shared):
        """Creates the missing directories (mode 0700, or 2770 when group_shared or when the
        namespace directory exists group-shared); returns whether this call created the
        namespace directory."""
        self.set_modes(group_shared)
        self.path = os.path.join(container, "AppGroupMailbox", namespace)
        self._mkdirs(container)
        # In a setgid container AppGroupMailbox/ is the group's whatever this namespace's mode,
        # so a private namespace made first does not lock the group out (SECURITY.md).
        root = os.path.join(container, "AppGroupMailbox")
        if os.stat(container).st_mode & stat.S_ISGID:
            self._mkdir(root, 0o2770)
        else:
            self._mkdir(root)
        created = self._mkdir(self.path)
        if not created and self.directory_shared():
            # The group's mailbox (a creator may still be making its areas): what this opener
            # makes, areas included, is the group's too, whatever it was asked for.
            self.set_modes(True)
        for area in AREAS:
            self._mkdir(os.path.join(self.path, area))
        self._require_one_mount()
        return created

    def _require_one_mount(self):
        """Raises OSError (EXDEV) when an area or `state` is not on the namespace directory's
        mount (another mount id, or another device: a btrfs subvolume): renames between them
        would fail, and a quarantine move would become a delete (SECURITY.md)."""
        home_mount, home_device = _mount_of(self.path)
        for name in AREAS + ("state",):
            path = os.path.join(self.path, name)
            if not os.path.lexists(path):
                continue
            mount, device = _mount_of(path)
            # A regular file is not held to the directory's device where the mount id is known:
            # overlayfs gives it the device of the layer it comes from (without /proc the mount
            # id is not known).
            known = mount is not None and home_mount is not None
            regular = stat.S_ISREG(os.lstat(path).st_mode)
            if (known and mount != home_mount) or (
                    (not regular or not known) and device != home_device):
                raise OSError(errno.EXDEV, "an area of the mailbox is on another mount", name)

    def set_modes(self, group_shared):
        """The modes of what this opener creates: the mailbox's sharing mode."""
        self.dir_mode, self.file_mode = (0o2770, 0o660) if group_shared else (0o700, 0o600)

    def directory_shared(self):
        """Whether the namespace directory is group-shared as `mailboxctl create --group-shared`
        makes it (setgid and group-writable, 02770). Such a mailbox stays group-shared whatever
        its settings file says: a group member who rewrote "sharing" to "private" would
        otherwise have every opener create files 0600, locking the other members out."""
        mode = os.stat(self.path).st_mode
        return bool(mode & stat.S_ISGID and mode & stat.S_IWGRP)

    def _mkdirs(self, path):
        if not os.path.isdir(path):
            parent = os.path.dirname(os.path.abspath(path))
            if parent != path:
                self._mkdirs(parent)
            self._mkdir(path)

    def _mkdir(self, path, mode=None):
        created = False
        mode = self.dir_mode if mode is None else mode
        try:
            os.mkdir(path, mode)
            os.chmod(path, mode)
            created = True
        except FileExistsError:
            pass
        if os.path.islink(path) or not os.path.isdir(path):
            raise OSError(errno.ENOTDIR, "not a real directory", path)
        return created

    def area(self, name, entry=None):
        """The path of an area, or of entry inside it."""
        if entry is None:
            return os.path.join(self.path, name)
        return os.path.join(self.path, name, entry)

    def fsync_area(self, name):
        """Syncs an area's directory after a move into it (unless relaxed)."""
        if self.durable:
            fd = os.open(self.area(name), os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _mount_of(path):
    """(mount id, device) of path itself, not followed if a symlink: the mount id from
    /proc/self/fdinfo of an O_PATH descriptor (proc(5), "mnt_id")."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        device = os.fstat(fd).st_dev
        try:
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
                for line in info:
                    if line.startswith("mnt_id:"):
                        return int(line.split()[1]), device
        except OSError:
            pass  # no /proc: the device alone
        return None, device
    finally:
        os.close(fd)
