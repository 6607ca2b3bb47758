"""The tensor-parallel MLP of `tp_mlp.py` with a host collective inside the step: every rank
gathers the others' batch sizes as Python objects. `all_gather_object` pickles on the host and
copies through pageable memory: syncs in the scan, and capture fails on every rank ("Cannot copy
between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned").

    graphready probe examples/probe/tp_all_gather_object.py:factory --nproc-per-node 2
"""

import torch
import torch.distributed as dist

from graphready import ProbeTarget

HIDDEN = 512
FFN = 2048


def factory(bucket: int) -> ProbeTarget:
    rank, world = dist.get_rank(), dist.get_world_size()
    shard = FFN // world
    gen = torch.Generator(device="cpu").manual_seed(0)
    w_up = (torch.randn(HIDDEN, FFN, generator=gen) * 0.02)[:, rank * shard : (rank + 1) * shard].contiguous().cuda()
    w_down = (torch.randn(FFN, HIDDEN, generator=gen) * 0.02)[rank * shard : (rank + 1) * shard].contiguous().cuda()
    x = torch.randn(bucket, HIDDEN, device="cuda")
    out = torch.empty(bucket, HIDDEN, device="cuda")

    def step(x):
        sizes = [None] * world
        dist.all_gather_object(sizes, x.shape[0])  # expect: sync_scan capture
        h = torch.nn.functional.gelu(x @ w_up)
        torch.matmul(h, w_down, out=out)
        dist.all_reduce(out)
        return out

    return ProbeTarget(step=step, inputs=[x])
