"""expect-hang: only rank 0 issues the all_reduce. With two ranks or more, rank 0 waits for
peers that never join: it hangs in the warm-up, while the other ranks finish it and wait for
rank 0. The watchdog names each rank's last collective and where it waits, kills the group, and
the report is still written (exit 1). With one rank there is no one to wait for: it is ready.

    graphready probe examples/probe/tp_rank0_all_reduce.py:factory --nproc-per-node 2 --hang-timeout 30
    graphready probe ... --nproc-per-node 2 --dist-backend gloo   # on one GPU: a host-side hang
"""

import torch
import torch.distributed as dist

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 256, device="cuda")
    dist.broadcast(x, src=0)
    out = torch.empty(bucket, 256, device="cuda")

    def step(x):
        torch.mul(x, 2, out=out)
        if dist.get_rank() == 0:
            dist.all_reduce(out)  # expect-hang: warmup
        return out

    return ProbeTarget(step=step, inputs=[x])
