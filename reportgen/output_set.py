"""The files one command writes, checked before any work and committed together (all or none).

Why: a report is a set (report.html + report.json, often JUnit XML and a Markdown summary). Written one
by one, a failure after the first (a full disk, ``--json`` naming a folder) left a new HTML beside an
old JSON, and outputs that name the same file (``-o out.json``, ``--junit`` equal to ``-o``) silently
overwrote each other. Written by rename, a target that is not a regular file (``/dev/null`` in a
root CI container, a symlink to ``/proc/self/fd/1``) was replaced by a regular file.

Rules (docs/reliability.md, "Outputs"):

* ``-`` is standard output. At most one output may go there.
* A regular file (or a name that does not exist yet) is written to a temporary file in its folder and
  renamed over the target; through a symlink, the file the link points to is replaced, the link kept.
* A character device (``/dev/null``, a terminal) or a FIFO, or any path that resolves into ``/dev`` or
  ``/proc`` (``/dev/stdout``, ``/proc/self/fd/1``), is written in place, never renamed over. A FIFO
  with no reader is refused (it would hang the run). Block devices, sockets and folders are refused.
* Two outputs naming the same file are refused before any work (character devices excepted).
* An output never replaces an input: every output (a file, or a folder ``analyze -o``, ``--rule-outputs``,
  ``record --out`` fill) is resolved (symlinks followed, hard links compared by inode) against the
  command's inputs (``command_inputs``, declared once per command by the command line, or ``protect``)
  and refused before any work when it is an input file, an input folder, or lies inside an input folder
  (inside a source folder: where its readers would take it, ``sources.layout.read_from_source``; a report
  beside the data, ``job/report.html``, is no input); a folder swapped in whole must not hold an input.
* ``commit``: every regular target's temporary file is written completely first (a full disk fails
  here, and every temporary file is removed: nothing was replaced); then the in-place targets are
  written; then the temporary files are renamed into place. Renames within a folder do not need
  space. The folders are locked (``locking.folder_lock``) while their temporary files exist, so a
  temporary file found by a run that holds the lock is a leftover of a killed run and is removed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from reportgen import interrupts
from reportgen.errors import InputError, expanduser, naming
from reportgen.locking import folder_lock

STDOUT = "-"
TMP_PREFIX = ".reportgen-tmp-"


def is_stdout(path) -> bool:
    return path is not None and str(path) == STDOUT


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@dataclass
class Target:
    """One output: ``role`` names it in messages (``-o``, ``--json``, ``--junit``, ...)."""

    role: str
    path: Path  # as given ("-" for standard output)
    kind: str = "file"  # "file" (temporary file + rename), "inplace" (device / FIFO / /dev, /proc path), "stdout"
    final: Path | None = None  # for "file": the path renamed over (a symlink's target)
    identity: tuple | None = None  # what two targets share when they are the same file

    def __str__(self) -> str:
        return "standard output" if self.kind == "stdout" else str(self.path)


def _classify(role: str, path: Path) -> Target:
    if is_stdout(path):
        try:  # the same inode as /dev/stdout or /proc/self/fd/1 given as another output
            st = os.fstat(sys.stdout.fileno())
            ident = None if stat.S_ISCHR(st.st_mode) else ("inode", st.st_dev, st.st_ino)
        except (OSError, ValueError, AttributeError):  # no real descriptor (a test's captured stream)
            ident = ("stdout",)
        return Target(role, path, "stdout", None, ident)
    text = os.fspath(path)
    if not text:
        raise InputError(f"{role}: empty path")
    real = Path(os.path.realpath(text))
    try:
        st = os.stat(text)  # follows symlinks: what a write would reach
    except (FileNotFoundError, NotADirectoryError):  # new, or a folder on its path is a file (said below)
        st = None
    except OSError as err:
        raise InputError(f"{role} {path}: cannot use this path ({err.strerror or err})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(f"{role} {path}: is a folder; give a file name")
    if st is not None and (stat.S_ISBLK(st.st_mode) or stat.S_ISSOCK(st.st_mode)):
        what = "a block device" if stat.S_ISBLK(st.st_mode) else "a socket"
        raise InputError(f"{role} {path}: is {what}; refusing to write a report onto it")
    special_place = any(str(p).startswith(("/dev/", "/proc/")) for p in (Path(os.path.abspath(text)), real))
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode) or special_place):
        ident = None if stat.S_ISCHR(st.st_mode) else ("inode", st.st_dev, st.st_ino)
        return Target(role, path, "inplace", None, ident)
    if st is None and special_place:
        raise InputError(f"{role} {path}: does not exist under /dev or /proc; refusing to create it")
    return Target(role, path, "file", real, ("path", str(real)))


def _check_folder(target: Target) -> None:
    """The output folder can be written: probed in it, or, when it does not exist yet, in the nearest folder
    above it that does (nothing is created before the outputs are committed: a run that fails on its source
    must not leave ``new/deep/`` behind)."""
    folder = target.final.parent
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{target.role} {target.path}: the output folder {folder} is a file")
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{target.role} {target.path}: cannot make the output folder {folder} "
                         f"({existing} is a file)")
    try:
        probe = tempfile.NamedTemporaryFile(dir=existing, prefix=TMP_PREFIX + "probe-", delete=True)
        probe.close()
    except OSError as err:
        raise InputError(f"{target.role} {target.path}: cannot write to {existing} ({err.strerror or err})") from None


def _make_folders(folders: list[str]) -> list[Path]:
    """Create the output folders that do not exist yet; returns those made, deepest first (to undo)."""
    made: list[Path] = []
    for folder in folders:
        missing = []
        path = Path(folder)
        while not path.exists() and path.parent != path:
            missing.append(path)
            path = path.parent
        for path in reversed(missing):
            path.mkdir(exist_ok=True)
            made.insert(0, path)
    return made


def _remove_made(made: list[Path]) -> None:
    for path in made:
        with contextlib.suppress(OSError):
            path.rmdir()  # only when empty: another run may have put files there meanwhile


@dataclass(frozen=True)
class Input:
    """One input of a command, resolved once: ``inode`` is what a hard link or a symlink shares with it."""

    role: str
    path: str  # as given
    inode: tuple[int, int]
    folder: bool
    # a folder whose readers take some of its files only (a source): which (path, parts inside) they take;
    # None: every file inside it is an input
    reads: Callable[[Path, tuple[str, ...]], bool] | None = None


_COMMAND_INPUTS: ContextVar[tuple[Input, ...]] = ContextVar("command_inputs", default=())


def resolve_input(role: str, path, reads=None) -> Input | None:
    """``path`` as an input, or None when it names nothing here (an ``s3://`` URI, an ARN, a missing
    file: reported by whoever reads it). ``reads``: see ``Input``."""
    if path is None or is_stdout(path):
        return None
    try:
        st = os.stat(expanduser(os.fspath(path)))
    except (OSError, ValueError, InputError):
        return None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return None  # a FIFO or a device given as input is read, not replaced: nothing to protect
    return Input(role, os.fspath(path), (st.st_dev, st.st_ino), stat.S_ISDIR(st.st_mode), reads)


@contextlib.contextmanager
def command_inputs(inputs):
    """While the command runs, every ``OutputSet`` made (by the pipeline, compare, trend, check, record)
    refuses outputs that are, or lie inside, one of ``inputs`` (``(role, path)`` or ``(role, path, reads)``)."""
    resolved = tuple(i for i in (resolve_input(*entry) for entry in inputs) if i is not None)
    token = _COMMAND_INPUTS.set(resolved)
    try:
        yield resolved
    finally:
        _COMMAND_INPUTS.reset(token)


def _folders_up(path: Path) -> dict[tuple[int, int], Path]:
    """The inodes of ``path`` (when it exists) and of every folder above it, resolved (``..`` and
    symlinks as the kernel follows them)."""
    found: dict[tuple[int, int], Path] = {}
    here = Path(os.path.realpath(os.fspath(path)))
    for folder in (here, *here.parents):
        try:
            st = os.stat(folder)
        except OSError:
            continue
        found.setdefault((st.st_dev, st.st_ino), folder)
    return found


def _output_meets_input(role: str, shown, path: Path | None, inode: tuple[int, int] | None, inputs, *,
                        whole: bool = False, folder_output: bool = False) -> None:
    """Raise ``InputError`` when the output ``path`` (``inode``: its own, when it exists) is an input, lies
    inside an input folder or (``whole``: a folder replaced whole) holds an input."""
    above = _folders_up(path) if path is not None else {}
    for inp in inputs:
        what = "folder" if inp.folder else "file"
        if inode is not None and inode == inp.inode:
            how = "is"
        elif inp.folder and inp.inode in above and (folder_output or _read_there(path, above[inp.inode], inp)):
            how = "is inside"
        elif whole and path is not None and inode is not None and inode in _folders_up(expanduser(inp.path)):
            raise InputError(f"{role} {shown} holds the input {what} {inp.role} {inp.path}, and the folder is "
                             "replaced whole: give another folder")
        else:
            continue
        why = ("an output never replaces an input" if how == "is" else
               "an output never replaces or joins what the command reads")
        raise InputError(f"{role} {shown} {how} the input {what} {inp.role} {inp.path}: {why}; give another path")


def _read_there(path: Path, folder: Path, inp: Input) -> bool:
    """Whether the readers of the input folder ``inp`` (at ``folder``, resolved) take a file at ``path``."""
    if inp.reads is None:
        return True
    real = Path(os.path.realpath(os.fspath(path)))
    try:
        parts = real.relative_to(folder).parts
    except ValueError:  # reached through a bind mount or a hard-linked tree: judge by the name alone
        parts = (real.name,)
    return inp.reads(real, parts)


def _path_inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


class OutputSet:
    """Outputs of one command: ``add`` each (checked at once), then ``commit`` their contents.
    The command's inputs (``command_inputs``, ``protect``) are never an output, nor the folder of one."""

    def __init__(self) -> None:
        self.targets: list[Target] = []
        self.folders: list[tuple[str, Path, bool]] = []  # (role, folder, replaced whole)
        self.inputs: tuple[Input, ...] = _COMMAND_INPUTS.get()

    def protect(self, role: str, path) -> None:
        """One more input of the command (a caller without ``command_inputs``); outputs already added
        are checked against it too."""
        inp = resolve_input(role, path)
        if inp is None:
            return
        self.inputs = (*self.inputs, inp)
        for target in self.targets:
            self._refuse_input(target)
        for role_, folder, whole in self.folders:
            self._refuse_input_folder(role_, folder, whole)

    def add(self, role: str, path) -> Target:
        target = _classify(role, Path(path) if not is_stdout(path) else path)
        for other in self.targets:
            if target.identity is not None and target.identity == other.identity:
                same = ("standard output" if "stdout" in (target.kind, other.kind)
                        else f"the same file ({target.path})")
                raise InputError(f"{other.role} and {role} both name {same}; give them different paths")
        self._refuse_input(target)
        if target.kind == "file":
            _check_folder(target)
        self.targets.append(target)
        return target

    def add_folder(self, role: str, folder, *, whole: bool) -> None:
        """A folder the command fills (``analyze -o``, ``--rule-outputs``: ``whole``, swapped in as one;
        ``record --out``: files added): refused when it is, or lies inside, an input folder (``whole``:
        or holds an input)."""
        self._refuse_input_folder(role, Path(folder), whole)
        self.folders.append((role, Path(folder), whole))

    def add_appended(self, role: str, path) -> None:
        """A file the command appends to after the commit (``$GITHUB_STEP_SUMMARY``): checked against the
        inputs like every output (appending to report.json would damage it as surely as replacing it)."""
        path = Path(path)
        _output_meets_input(role, path, path, _path_inode(path), self.inputs)

    def _refuse_input(self, target: Target) -> None:
        path = target.final if target.kind == "file" else None
        inode = (_path_inode(path) if path is not None else
                 tuple(target.identity[1:]) if target.identity and target.identity[0] == "inode" else None)
        _output_meets_input(target.role, target, path, inode, self.inputs)

    def _refuse_input_folder(self, role: str, folder: Path, whole: bool) -> None:
        _output_meets_input(role, folder, folder, _path_inode(folder), self.inputs, whole=whole, folder_output=True)

    def keep_out_of(self, role: str, folder: Path) -> None:
        """A folder that another option fills and swaps in whole (``--rule-outputs``) must neither be nor
        hold one of these outputs: the swap would replace the file or move it away."""
        where = Path(os.path.realpath(os.fspath(folder)))
        for target in self.targets:
            if target.kind == "file" and target.final is not None and (
                    target.final == where or where in target.final.parents):
                raise InputError(f"{target.role} {target.path} is inside {role} {folder}; "
                                 "give the report and the rule outputs different places")

    def commit(self, contents: dict[str, str | bytes]) -> list[Target]:
        """Write ``contents[role]`` for every target that has one: all, or (on an error) none of the
        files replaced. Returns the targets written."""
        interrupts.check()  # Ctrl-C swallowed by a library on the way: an interrupted run writes nothing
        todo = [t for t in self.targets if t.role in contents]
        # backslashreplace: a source folder whose name is not UTF-8 is shown as \udcff, not a failed run
        data = {t.role: contents[t.role].encode("utf-8", "backslashreplace") if isinstance(contents[t.role], str)
                else contents[t.role] for t in todo}
        files = [t for t in todo if t.kind == "file"]
        folders = sorted({str(t.final.parent) for t in files})
        try:
            made = _make_folders(folders)
        except OSError as err:
            raise _write_error(err, todo) from None
        try:
            self._commit(todo, data, files, folders)
        except BaseException:
            _remove_made(made)
            raise
        return todo

    def _commit(self, todo: list[Target], data: dict, files: list[Target], folders: list[str]) -> None:
        with contextlib.ExitStack() as locks:
            for folder in folders:  # sorted: two runs lock shared folders in the same order
                locks.enter_context(folder_lock(Path(folder)))
                _remove_leftovers(Path(folder))
            temps: dict[str, str] = {}
            try:
                for t in files:
                    with naming(t.final):  # a full disk names the output it was writing, not a temporary name
                        temps[t.role] = _write_temp(t.final, data[t.role])
                for t in todo:
                    if t.kind != "file":
                        _write_in_place(t, data[t.role])
                for t in files:
                    os.replace(temps.pop(t.role), t.final)
            except OSError as err:
                _remove_all_leftovers(folders)
                raise _write_error(err, todo) from None
            except BaseException:  # a stop signal between two steps: no temporary file may stay behind
                _remove_all_leftovers(folders)
                raise
            finally:
                for tmp in temps.values():
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)


def _write_error(err: OSError, todo: list[Target]) -> InputError:
    where = f": {err.filename}" if getattr(err, "filename", None) else ""
    names = ", ".join(str(t) for t in todo if t.kind == "file")
    kept = f"; nothing was replaced ({names} unchanged)" if names else ""
    return InputError(f"cannot write the outputs ({err.strerror or err}{where}){kept}")


def _write_temp(final: Path, payload: bytes) -> str:
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f"{TMP_PREFIX}{final.name[:80]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())  # a full disk shows here, before anything is renamed
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are meant to be shared
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _write_in_place(target: Target, payload: bytes) -> None:
    if target.kind == "stdout":
        try:
            out = getattr(sys.stdout, "buffer", None)
            if out is None:
                sys.stdout.write(payload.decode("utf-8"))
            else:
                out.write(payload)
            sys.stdout.flush()
        except OSError as err:  # full (/dev/full) or closed: name it
            if not err.filename and "standard output" not in str(err.strerror):
                err.filename = "standard output"
            raise
        return
    path = os.fspath(target.path)
    flags = os.O_WRONLY | os.O_NOCTTY
    st = os.stat(path)
    if stat.S_ISFIFO(st.st_mode):
        try:  # a FIFO nobody reads would block the run for ever
            fd = os.open(path, flags | os.O_NONBLOCK)
        except OSError as err:
            if err.errno == errno.ENXIO:
                raise InputError(f"{target.role} {target.path}: a FIFO with no reader; "
                                 "nothing was written") from None
            raise
        os.set_blocking(fd, True)
    else:
        if stat.S_ISREG(st.st_mode):
            flags |= os.O_APPEND  # a file reached through /dev/stdout or /proc/self/fd/N: after what is there
        fd = os.open(path, flags)
    with os.fdopen(fd, "wb") as handle:
        handle.write(payload)


def _remove_all_leftovers(folders: list[str]) -> None:
    """Every temporary file in the folders this run holds locked (its own, wherever it was interrupted)."""
    for folder in folders:
        _remove_leftovers(Path(folder))


def _remove_leftovers(folder: Path) -> None:
    """Temporary files of a killed run (the caller holds the folder's lock, so none is in use)."""
    try:
        names = [e.name for e in os.scandir(folder) if e.name.startswith(TMP_PREFIX) and e.name.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(folder / name)
