"""The directories of a namespace, created with their modes when missing (FORMAT.md, "Layout")."""

import errno
import os
import stat

AREAS = ("tmp", "pending", "claimed", "quarantine", "delayed")


class Layout:
    """<container>/AppGroupMailbox/<namespace>/ and its areas; a mixin of Spool."""

    def create_layout(self, container, namespace, group_shared):
        """Creates the missing directories (mode 0700, or 2770 when group_shared); returns
        whether this call created the namespace directory."""
        self.set_modes(group_shared)
        self.path = os.path.join(container, "AppGroupMailbox", namespace)
        self._mkdirs(container)
        self._mkdir(os.path.join(container, "AppGroupMailbox"))
        created = self._mkdir(self.path)
        for area in AREAS:
            self._mkdir(os.path.join(self.path, area))
        return created

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

    def _mkdir(self, path):
        created = False
        try:
            os.mkdir(path, self.dir_mode)
            os.chmod(path, self.dir_mode)
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
