"""The rank's watchdog: a thread that answers the driver's `dump` request.

When the driver decides a rank hangs (another rank finished the phase long ago, or the time limit
ran out), it writes `dump` to the rank's stdin before killing the group. This thread, which
waits on stdin the whole time, answers with a `hang_report` line: the phase in progress, where
the main thread waits (its whole stack, read with `sys._current_frames()`), and the last
collective the rank issued. A main thread stuck in CUDA or NCCL has released the GIL, so the
thread can run; when it cannot, the driver falls back to faulthandler's dump (SIGUSR1).

No torch here.
"""

from __future__ import annotations

import sys
import threading
from typing import IO, Optional

from .frames import FrameFilter
from .ranks import Activity, hang_report

DUMP = "dump"


class Watchdog(threading.Thread):
    def __init__(self, requests: IO[str], emitter, activity: Activity, filt: FrameFilter, main_ident: Optional[int] = None):
        super().__init__(name="graphready-watchdog", daemon=True)
        self.requests = requests
        self.emitter = emitter
        self.activity = activity
        self.filt = filt
        self.main_ident = main_ident if main_ident is not None else threading.main_thread().ident

    def report(self) -> dict:
        frame = sys._current_frames().get(self.main_ident)
        return hang_report(self.activity, self.filt, frame)

    def run(self) -> None:
        for line in self.requests:
            if line.strip() != DUMP:
                continue
            try:
                self.emitter.send("hang_report", **self.report())
            except Exception:  # noqa: BLE001 - never take the rank down; the driver falls back
                pass
