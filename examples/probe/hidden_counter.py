"""A step whose result depends on a Python counter it advances: the value is baked into the graph
at capture, and eager itself never repeats. No tensor state to restore, so the probe cannot judge
replay or uninitialised memory against eager: both phases are inconclusive and say why, and
nothing is blamed on uninitialised memory. (`ProbeTarget(reset=...)` would make eager
reproducible; serving it as a graph would still freeze the counter.)

expect-inconclusive: replay uninitialized
"""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 32, device="cuda")
    calls = {"n": 0}

    def step(x):
        calls["n"] += 1
        return x * calls["n"]

    return ProbeTarget(step=step, inputs=[x])
