"""A page allocator whose checks follow a debug switch through a local and an argument: off
as shipped, in the allocator and in the kernel wrapper it hands the switch to."""

import os

import torch

from engine.runner import ModelRunner


def clear_pages(pages: torch.Tensor, mapping: torch.Tensor, check_pages: bool = False):
    if check_pages:
        assert torch.all(pages < mapping.numel())
    mapping[pages] = 0
    return pages


class PageAllocator:
    def __init__(self, page_size: int):
        self.page_size = page_size
        self.debug_mode = os.environ.get("ENGINE_DEBUG_PAGES") == "1"
        self.mapping = torch.zeros(1024, dtype=torch.int64, device="cuda")

    def free(self, pages: torch.Tensor):
        check_pages = self.page_size > 1 and self.debug_mode
        freed = clear_pages(pages, self.mapping, check_pages=check_pages)
        if check_pages:
            assert torch.all(freed >= 0)
        # Not behind the switch: it runs every step.
        self.last_freed = int(freed.max())
        return freed


class PageScheduler:
    def __init__(self, runner: ModelRunner):
        self.runner = runner
        self.allocator = PageAllocator(16)

    def run(self, x, positions, batch, pages: torch.Tensor):
        while True:
            logits = self.runner.forward(x, positions, batch)
            self.allocator.free(pages)
            if logits is None:
                break
