"""The negative control: DeepGEMM's original `pack_ue8m0_to_int`, whose value asserts read the
device on the host. Capture fails; the probe names the assert line."""

import torch

from graphready import ProbeTarget


def ceil_to_ue8m0(x: torch.Tensor) -> torch.Tensor:
    """Round each magnitude up to a power of two (a valid UE8M0 value) on the device."""
    bits = x.abs().float().view(torch.int)
    exponent = ((bits >> 23) & 0xFF) + (bits & 0x7FFFFF).bool().int()
    return (exponent.clamp(1, 254) << 23).view(torch.float)


def pack_ue8m0_to_int(x: torch.Tensor) -> torch.Tensor:
    assert x.dtype == torch.float and x.size(-1) % 4 == 0
    x_int = x.view(torch.int)
    assert (x_int >= 0).all() and (x_int & 0x7FFFFF == 0).all()  # expect: sync_scan profiler_scan capture
    return (x_int >> 23).to(torch.uint8).view(torch.int)


def factory(bucket: int) -> ProbeTarget:
    scales = ceil_to_ue8m0(torch.randn(bucket, 128, device="cuda"))

    def make_inputs():
        return [ceil_to_ue8m0(torch.randn(bucket, 128, device="cuda") * 8)]

    return ProbeTarget(step=pack_ue8m0_to_int, inputs=[scales], make_inputs=make_inputs)
