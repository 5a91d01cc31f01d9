"""Which server process holds each live turn, so that a turn whose process died is resumed within a
minute instead of after the pending timeout (a quarter of an hour).

A server's due-work thread (memory/runtime/due_work.py) marks its process alive every
MEMORYOS_DUE_WORK_HEARTBEAT_S (a ServerProcess row's `seen_at`). While it does, the pages its turns
store are held by it (DialoguePage.held_by, set by page_start); a pending page whose holder has
not been seen for MEMORYOS["PROCESS_DEAD_S"] belongs to a process that stopped (kill -9, a lost
machine) and is completed without a reply by maintenance, once (memory/services/maintenance.py
re-checks each page under the user's lock). A process that does not beat (a command, a server
with due work off) holds nothing: its pages wait for PENDING_TIMEOUT_S as before.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

from django.utils import timezone

from memory.models import ServerProcess

_PROCESS_ID = uuid.uuid4()
# Whether this process beats: set and read whole by any thread (one name's binding), so no lock.
_beating = {"now": False}
# Rows of processes not seen for this long are deleted as the living beat (their pages were
# resumed long before).
FORGET_AFTER = timedelta(days=1)


def process_beat() -> None:
    """Mark this process alive now; from the first beat on, the turns it stores are its own."""
    now = timezone.now()
    updated = ServerProcess.objects.filter(id=_PROCESS_ID).update(seen_at=now)
    if not updated:
        ServerProcess.objects.bulk_create([ServerProcess(id=_PROCESS_ID, host=socket.gethostname()[:255],
                                                         pid=os.getpid(), started_at=now, seen_at=now)],
                                          ignore_conflicts=True)
        ServerProcess.objects.filter(seen_at__lt=now - FORGET_AFTER).delete()
    _beating["now"] = True


def process_stop_beating() -> None:
    """This process stops holding new turns (its due-work thread ends); its row stays until it is
    forgotten, so that the pages it held are resumed once it counts as stopped."""
    _beating["now"] = False


def turn_holder() -> uuid.UUID | None:
    """The id a new page is held by: this process's while it beats, else None."""
    return _PROCESS_ID if _beating["now"] else None
