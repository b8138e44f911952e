"""The directories of a namespace, created with their modes when missing (FORMAT.md, "Layout")."""

import errno
import json
import os

AREAS = ("tmp", "pending", "claimed", "quarantine", "delayed")


class Layout:
    """<container>/AppGroupMailbox/<namespace>/ and its areas; a mixin of Spool."""

    def create_layout(self, container, namespace, group_shared):
        """Creates the missing directories (mode 0700, or 2770 when group_shared)."""
        self.dir_mode, self.file_mode = (0o2770, 0o660) if group_shared else (0o700, 0o600)
        self.path = os.path.join(container, "AppGroupMailbox", namespace)
        self._mkdirs(container)
        for part in ("AppGroupMailbox", os.path.join("AppGroupMailbox", namespace)):
            self._mkdir(os.path.join(container, part))
        for area in AREAS:
            self._mkdir(os.path.join(self.path, area))

    def _mkdirs(self, path):
        if not os.path.isdir(path):
            parent = os.path.dirname(os.path.abspath(path))
            if parent != path:
                self._mkdirs(parent)
            self._mkdir(path)

    def _mkdir(self, path):
        try:
            os.mkdir(path, self.dir_mode)
            os.chmod(path, self.dir_mode)
        except FileExistsError:
            pass
        if os.path.islink(path) or not os.path.isdir(path):
            raise OSError(errno.ENOTDIR, "not a real directory", path)

    def area(self, name, entry=None):
        """The path of an area, or of entry inside it."""
        if entry is None:
            return os.path.join(self.path, name)
        return os.path.join(self.path, name, entry)

    def fsync_area(self, name):
        """Syncs an area's directory after a move into it (unless relaxed)."""
        if self.durable:
            fd = os.open(self.area(name), os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def stored_settings(self):
        """The namespace's `settings` object (FORMAT.md, "The settings file"): what applies to
        every opener. None when there is no file (a spool made before settings files); a format
        newer than 2 is refused."""
        try:
            with open(os.path.join(self.path, "settings"), "rb") as file:
                settings = json.loads(file.read(4097))
        except FileNotFoundError:
            return None
        if settings.get("format") not in (1, 2):
            raise ValueError("settings format %r is newer than this reader" % settings.get("format"))
        return settings
