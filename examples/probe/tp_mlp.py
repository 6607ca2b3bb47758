"""expect-ready: a tensor-parallel MLP decode step on every rank: the up projection is
column-parallel, the down projection row-parallel, and the partial sums meet in an all_reduce
inside the captured graph. Ready on any number of ranks (one GPU each).

    graphready probe examples/probe/tp_mlp.py:factory --nproc-per-node 2 --buckets 1,4
"""

import torch
import torch.distributed as dist

from graphready import ProbeTarget

HIDDEN = 512
FFN = 2048


def factory(bucket: int) -> ProbeTarget:
    rank, world = dist.get_rank(), dist.get_world_size()
    shard = FFN // world
    gen = torch.Generator(device="cpu").manual_seed(0)  # the same full weights on every rank
    w_up = torch.randn(HIDDEN, FFN, generator=gen) * 0.02
    w_down = torch.randn(FFN, HIDDEN, generator=gen) * 0.02
    w_up = w_up[:, rank * shard : (rank + 1) * shard].contiguous().cuda()  # column-parallel
    w_down = w_down[rank * shard : (rank + 1) * shard].contiguous().cuda()  # row-parallel
    x = torch.randn(bucket, HIDDEN, device="cuda")
    dist.broadcast(x, src=0)  # every rank sees the same activations
    out = torch.empty(bucket, HIDDEN, device="cuda")

    def step(x):
        h = torch.nn.functional.gelu(x @ w_up)
        torch.matmul(h, w_down, out=out)  # this rank's partial sum
        dist.all_reduce(out)  # NCCL, captured into the graph
        out.add_(x)
        return out

    def make_inputs():
        # Seeded alike on every rank by the probe, so the ranks agree on the new inputs.
        return [torch.randn(bucket, HIDDEN, device="cuda")]

    return ProbeTarget(step=step, inputs=[x], make_inputs=make_inputs, batch_dim=0)
