"""Writing the rewritten files. The files whose rewrites depend on each other (a hierarchy over
several modules) are written together or not at all, as far as a file system allows: every file
is checked and every temporary file written before any file is replaced, with SIGINT and
SIGTERM held back until the group is done."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import tempfile
import threading
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from types import FrameType

from ._analyze import Outcome
from ._scan import Module, Project, encode

# what a file system refuses to carry over (a security label, an unsupported namespace)
_XATTR_SKIPPED = {errno.EPERM, errno.ENOTSUP, errno.ENODATA, errno.EINVAL}


def groups(
    project: Project, outcomes: Sequence[Outcome], modules: Sequence[Module]
) -> list[list[Module]]:
    """``modules`` in groups written together: the modules of a rewritten class, of its
    registration and removed functions, and of every rewritten class of its hierarchy. In a
    group, a module whose classes are deeper in their hierarchy comes first: a subclass
    rewritten over a base still registered by hand imports, the reverse registers it twice."""
    parent: dict[Module, Module] = {module: module for module in modules}

    def root(module: Module) -> Module:
        while parent.setdefault(module, module) is not module:
            module = parent[module]
        return module

    def join(one: Module, two: Module) -> None:
        parent[root(one)] = root(two)

    rewritten = {
        o.rewrite.cls: o for o in outcomes if o.verdict == "rewritten" and o.rewrite is not None
    }
    depth: dict[Module, int] = {}
    for info, outcome in rewritten.items():
        assert outcome.rewrite is not None
        mro = project.mro(info)
        depth[info.module] = min(depth.get(info.module, len(mro)), len(mro))
        join(info.module, outcome.registration.module)
        for module, _ in outcome.rewrite.remove_functions:
            join(info.module, module)
        for other in [*mro[1:], *project.subclasses(info)]:
            if other in rewritten:
                join(info.module, other.module)
    found: dict[Module, list[Module]] = {}
    for module in modules:
        found.setdefault(root(module), []).append(module)
    return [sorted(group, key=lambda m: (-depth.get(m, 0), m.display)) for group in found.values()]


@dataclass
class _Target:
    module: Module
    data: bytes
    temporary: str = ""
    replaced: bool = False


def write_group(items: Sequence[tuple[Module, str]]) -> dict[Module, str]:
    """Write every module's new source, or none: why each module was not written (empty when
    all were). A file not written is as it was, every byte, and no temporary file is left.
    SIGINT and SIGTERM wait for the group: the default SIGTERM would end the process with no
    cleanup, and either one between two renames would leave the group half written."""
    with _signals_held():
        return _write_group(items)


def _write_group(items: Sequence[tuple[Module, str]]) -> dict[Module, str]:
    targets: list[_Target] = []
    try:
        for module, new in items:
            why = _refusal(module)
            if why is None:
                try:
                    targets.append(_Target(module, encode(module, new)))
                except UnicodeEncodeError as error:
                    why = f"not written: {error}"
            if why is not None:
                return _withdrawn(items, module, why)
        for target in targets:
            try:
                target.temporary = _temporary(target.module, target.data)
            except OSError as error:
                return _withdrawn(items, target.module, f"not written: {explain(error)}")
        for target in targets:  # again: an editor may have saved one meanwhile
            why = _refusal(target.module)
            if why is not None:
                return _withdrawn(items, target.module, why)
        for index, target in enumerate(targets):
            try:
                os.replace(target.temporary, target.module.path)
            except OSError as error:
                _restore(targets[:index])
                return _withdrawn(items, target.module, f"not written: {explain(error)}")
            target.replaced = True
    finally:
        # any exception, KeyboardInterrupt too: no temporary file is left beside the originals
        for target in targets:
            if target.temporary and not target.replaced:
                with contextlib.suppress(OSError):
                    os.unlink(target.temporary)
    return {}


def _refusal(module: Module) -> str | None:
    """Why the module's file is not to be written, if it is not."""
    path = module.path
    try:
        status = path.stat()
        # the mode bits too: a superuser may write a read-only file, but was not asked to
        if not os.access(path, os.W_OK) or not status.st_mode & 0o222:
            return "read-only: not written (make it writable and run again)"
        if status.st_nlink > 1:
            return (
                f"has {status.st_nlink} hard links: not written (a rewritten file is a new one, "
                f"and the other names would keep the old text); make it a file of its own or "
                f"rewrite it through one name with the others removed, and run again"
            )
        if path.read_bytes() != encode(module, module.source):
            return "changed on disk while the codemod ran: not written (run again)"
    except (OSError, UnicodeEncodeError) as error:
        return f"not written: {explain(error)}"
    return None


def _temporary(module: Module, data: bytes) -> str:
    """A complete copy of the new file beside the old one, with its owner, group, mode and
    extended attributes (ACLs among them): its name, to rename over the old one."""
    path = module.path
    status = path.stat()
    handle, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".migrate"
    )
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        if hasattr(os, "geteuid") and (status.st_uid, status.st_gid) != (
            os.geteuid(),
            os.getegid(),
        ):  # POSIX only: Windows has no owner to keep here
            # only a superuser may give a file away; anyone may keep their own group
            with contextlib.suppress(PermissionError):
                os.chown(temporary, status.st_uid, status.st_gid)
        os.chmod(temporary, status.st_mode & 0o7777)  # after chown, which clears set-id bits
        _copy_xattrs(str(path), temporary)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return temporary


def _copy_xattrs(source: str, destination: str) -> None:
    if not hasattr(os, "listxattr"):  # not on macOS or Windows
        return
    try:
        names = os.listxattr(source)
    except OSError as error:
        if error.errno in _XATTR_SKIPPED:
            return
        raise
    for name in names:
        try:
            os.setxattr(destination, name, os.getxattr(source, name))
        except OSError as error:
            if error.errno not in _XATTR_SKIPPED:
                raise


def _restore(targets: Sequence[_Target]) -> None:
    """Put the old text back in files already replaced (a later rename of the group failed)."""
    for target in targets:
        with contextlib.suppress(OSError):
            old = encode(target.module, target.module.source)
            os.replace(_temporary(target.module, old), target.module.path)
            target.replaced = False


def _withdrawn(items: Sequence[tuple[Module, str]], failed: Module, why: str) -> dict[Module, str]:
    """Every module of the group not written: ``failed`` for ``why``, the others for it."""
    cause = why.removeprefix("not written: ")
    return {
        module: why
        if module is failed
        else f"not written: {failed.display}, rewritten with it, could not be written ({cause}); "
        f"the files of a hierarchy are written together or not at all"
        for module, _ in items
    }


@contextlib.contextmanager
def _signals_held() -> Generator[None, None, None]:
    """SIGINT and SIGTERM wait until the block is done, then act as they would have."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers, and only it receives them
        return
    caught: list[int] = []

    def hold(number: int, _frame: FrameType | None) -> None:
        caught.append(number)

    numbers = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, hold) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        for held in dict.fromkeys(caught):
            signal.raise_signal(held)


def explain(error: Exception) -> str:
    """An error as a report line gives it: the system's words and the file."""
    if isinstance(error, OSError):
        return f"{error.strerror or error}" + (f" ({error.filename})" if error.filename else "")
    return str(error)
