"""A step that crashes the interpreter (think: a broken C++ extension). The probe records the
phase that died and still writes the report."""

import ctypes

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 16, device="cuda")

    def step(x):
        y = x * 2
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return y

    return ProbeTarget(step=step, inputs=[x])
