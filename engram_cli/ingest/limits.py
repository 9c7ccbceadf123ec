"""How long a run may take: ``--max-seconds``, honoured between files, inside long logs, and by a backstop.

The loader checks the deadline before each file. Inside a file, the line reader that every
append-only importer uses (:func:`engram_cli.ingest.base.complete_lines`) checks it before each
line and, once it has passed, ends as if the file ended there, so the importer returns what it
read and a cursor to go on from. The deadline reaches the line reader through a context
variable, so the one-method Importer protocol stays as it is and no importer had to change.

What no line reader can bound (one huge JSON document being parsed, a read that blocks) is
caught by :func:`hard_stop`: a timer that interrupts the main thread a grace period after the
deadline, so that the file is abandoned (nothing of it written) and the run ends.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import FrameType


@dataclass(frozen=True)
class Deadline:
    """A moment on the monotonic clock after which a run should stop."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def left(self) -> float:
        return self.at - time.monotonic()


_CURRENT: ContextVar[Deadline | None] = ContextVar("engram_ingest_deadline", default=None)


@contextmanager
def reading_until(deadline: Deadline | None) -> Iterator[None]:
    """Within this block, line readers stop at ``deadline`` (None: they read to the end)."""
    token = _CURRENT.set(deadline)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Deadline | None:
    """The deadline line readers honour now, if any."""
    return _CURRENT.get()


class Abandoned(BaseException):
    """The backstop went off: the work in hand is dropped.

    A BaseException, like KeyboardInterrupt, so that the ``except Exception`` with which an
    importer guards against bad input cannot swallow it.
    """


# How often hard_stop's alarm rings again after the first, in case an alarm was swallowed.
RING_AGAIN_S = 0.05


@contextmanager
def hard_stop(seconds: float | None) -> Iterator[None]:
    """Raise :class:`Abandoned` inside this block once ``seconds`` have passed.

    Uses SIGALRM, so only on POSIX and in the main thread (signals are delivered there);
    elsewhere, and with ``seconds`` None (or infinite), the block simply runs. Python drops an exception
    raised while it runs a garbage collection callback or a finaliser (it reports it as unraisable), so an
    alarm can be lost: it rings again every :data:`RING_AGAIN_S` until the block ends, and a block that ends
    after an alarm rang raises :class:`Abandoned` as it leaves, the work having run past its time all the same.
    """
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if seconds is None or not math.isfinite(seconds) or not usable:
        yield
        return
    armed = True
    rung = False

    def ring(signum: int, frame: FrameType | None) -> None:
        nonlocal rung
        if armed:
            rung = True
            raise Abandoned

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001), RING_AGAIN_S)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if rung:
        raise Abandoned
