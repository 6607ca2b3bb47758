"""A scheduler that overlaps its steps: it copies each step's sampled tokens to pinned host
memory, records an event after the copy, and waits on that event before it reads them. The
wait is a fence for that copy, not a stall worth reporting; a whole-device synchronise is,
unless a clock reading follows it: then it times the step, on purpose."""

import time

import torch


class OverlapScheduler:
    def __init__(self, model):
        self.model = model
        self.copy_done = torch.cuda.Event()
        self.host_tokens = torch.empty(8, dtype=torch.int64, pin_memory=True)

    def run_step(self, batch: torch.Tensor) -> torch.Tensor:
        tokens = self.model(batch)
        self.host_tokens.copy_(tokens, non_blocking=True)
        self.copy_done.record()
        return tokens

    def process_result(self):
        self.copy_done.synchronize()
        torch.cuda.synchronize()
        return self.host_tokens

    def timed_step(self, batch: torch.Tensor) -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        self.run_step(batch)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    def event_loop(self, batches: list, timed: bool):
        for batch in batches:
            if timed:
                self.timed_step(batch)
            else:
                self.run_step(batch)
            self.process_result()
