"""A padding helper whose device its per-step callers choose: one passes `"cpu"` and copies
the padded rows up itself from pinned memory, so the helper's `.to(device)` is no upload there;
another helper's callers disagree, so its upload stays a finding."""

import numpy as np
import torch


def pad_rows(rows: list, *, device=None, pin_memory: bool = False) -> torch.Tensor:
    padded = np.zeros((len(rows), 8), dtype=np.int64)
    tensor = torch.from_numpy(padded).to(device)
    if pin_memory:
        tensor = tensor.pin_memory()
    return tensor


def pad_ids(rows: list, device=None) -> torch.Tensor:
    padded = np.zeros((len(rows), 8), dtype=np.int64)
    return torch.from_numpy(padded).to(device)


def output_tokens(rows: list, logits: torch.Tensor) -> torch.Tensor:  # graphready: step
    tokens = pad_rows(rows, device="cpu", pin_memory=True)
    ids = pad_ids(rows, "cpu")
    staging_device = "cpu"
    kept = torch.from_numpy(np.zeros(4, dtype=np.int64)).to(staging_device)
    return tokens.to(logits.device, non_blocking=True), ids, kept


def prompt_tokens(rows: list, logits: torch.Tensor) -> torch.Tensor:  # graphready: step
    return pad_ids(rows, logits.device)
