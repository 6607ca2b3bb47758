"""An optional serving mode a mixin adds to the scheduler in modes.py: its own loop runs the
same steps."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from engine.modes import ModeScheduler


class PipelinedModeMixin:
    def event_loop_pipelined(self: ModeScheduler, batches: list[torch.Tensor]):
        for batch in batches:
            result = self.run_batch(batch)
            self.process_result(result)
