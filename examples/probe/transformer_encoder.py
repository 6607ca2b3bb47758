"""`torch.nn.TransformerEncoder`'s fast path with a padding mask: in eval mode without grad it
packs the batch into a nested tensor, which reads the mask on the host (a sync) and has a
data-dependent shape (the capture breaks). The user's line is the encoder call; the probe also
names the line inside torch's module that issued the operation.

expect-innermost: torch/nn/modules/transformer.py
"""

import torch

from graphready import ProbeTarget

D_MODEL = 64
SEQ = 16


def factory(bucket: int) -> ProbeTarget:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=128, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=True).cuda().eval()
    src = torch.randn(bucket, SEQ, D_MODEL, device="cuda")
    padding = torch.zeros(bucket, SEQ, dtype=torch.bool, device="cuda")
    padding[:, SEQ // 2 :] = True  # the second half of every sequence is padding

    def step(src, padding):
        with torch.no_grad():
            return encoder(src, src_key_padding_mask=padding)  # expect: sync_scan capture

    return ProbeTarget(step=step, inputs=[src, padding])
