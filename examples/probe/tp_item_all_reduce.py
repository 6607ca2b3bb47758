"""A count read on the host (`.item()`) feeds a collective: every rank counts its large
activations, and the counts are summed with an all_reduce. The `.item()` syncs, and capture
fails there on every rank.

    graphready probe examples/probe/tp_item_all_reduce.py:factory --nproc-per-node 2
"""

import torch
import torch.distributed as dist

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 1024, device="cuda")
    total = torch.zeros(1, dtype=torch.int64, device="cuda")

    def step(x):
        n = int((x.abs() > 2).sum().item())  # expect: sync_scan profiler_scan capture
        total.fill_(n)
        dist.all_reduce(total)
        return x * total

    return ProbeTarget(step=step, inputs=[x])
