"""Writing an output file so that it is complete or absent, never half-written.

The one writer of model files and of the command line's outputs.  A
regular file is written under a temporary name in its directory, flushed to
disk and renamed over the target; a symbolic link is followed (the file it
points to is replaced, the link stays).  A device or a pipe (``/dev/null``,
``/dev/stdout``) is written into directly: it is never renamed over.  A
directory, or a missing parent directory, raises before anything is written.

Examples
--------
>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> with replacing(os.path.join(d, "out.txt"), text=True) as f:
...     _ = f.write("done")
>>> open(os.path.join(d, "out.txt")).read()
'done'
>>> with replacing(d) as f:
...     pass
Traceback (most recent call last):
IsADirectoryError: [Errno 21] cannot write to ...: it is a directory
"""
import contextlib
import errno
import os
import secrets
import stat

__all__ = ["check_writable", "replacing"]


def check_writable(path):
    """The real path ``path`` will be written to; raises if it cannot be.

    Raises
    ------
    IsADirectoryError
        If ``path`` is a directory.
    FileNotFoundError
        If the directory that would hold ``path`` does not exist.
    """
    path = os.path.realpath(os.fspath(path))
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, f"cannot write to {path}: it is a directory")
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, f"cannot write to {path}: the directory "
                                f"{directory} does not exist")
    return path


def _special(path):
    """Whether ``path`` exists and is neither a regular file nor a directory."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def replacing(path, text=False):
    """A file object whose content appears at ``path`` only when the block completes.

    ``text=True`` opens it as text (universal newlines off), else binary.
    If the block raises, ``path`` keeps its old content (or stays absent).
    """
    path = check_writable(path)
    mode = "w" if text else "wb"
    kwargs = {"newline": ""} if text else {}
    if _special(path):  # a device or a pipe: write into it, never rename over it
        with open(path, mode, **kwargs) as f:
            yield f
        return
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_directory(directory)


def _sync_directory(directory):
    # makes the rename itself durable where directories can be synced (POSIX)
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
