"""Segment plans built from lengths that every caller keeps on the host. The public planner
takes `*args` and `**kwargs` and hands views of its own parameters to the private one: the
arguments it names still land where they say, and a slice or a dtype conversion of a parameter
lives where the parameter does. A clause that returns binds nothing the code after it sees."""

import torch


def _plan(qo_lens: torch.Tensor, kv_lens: torch.Tensor, heads: int, device=None):
    if device is not None and heads > 64:
        kv_lens = torch.zeros(4, dtype=torch.int32, device=device)
        return [kv_lens]
    # Host lengths from every caller: nothing waits here.
    return qo_lens.tolist(), kv_lens.tolist()


def plan(qo_lens: torch.Tensor, kv_lens: torch.Tensor, *args, split: int = 0, **kwargs):
    head = _plan(qo_lens[:split], kv_lens[:split], *args, **kwargs)
    tail_qo = qo_lens[split:]
    tail_kv = kv_lens[split:].to(torch.int32)
    return head, _plan(tail_qo, tail_kv, *args, **kwargs)


def segment_step(query_start_loc_cpu: torch.Tensor):  # graphready: step
    qo = query_start_loc_cpu[1:] - query_start_loc_cpu[:-1]
    return plan(qo, query_start_loc_cpu[1:], 8, split=2)
