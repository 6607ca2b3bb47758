"""A speech encoder fed per request: its wrapper builds the lengths on the host and passes them
on, whole or a chunk at a time (`input_seq_lens[start:end]`, a view of the same host tensor),
so reading their maximum in the encoder copies nothing from the device."""

import torch
from torch import nn


class SpeechEncoder(nn.Module):
    def forward(self, features, input_seq_lens=None):
        if input_seq_lens is not None:
            longest = int(input_seq_lens.max().item())
            return features[:, :longest]
        return features


class SpeechFrontEnd(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = SpeechEncoder()

    def _encode(self, mel: torch.Tensor, input_seq_lens: torch.Tensor) -> torch.Tensor:
        if mel.shape[0] <= 8:
            return self.encoder(mel, input_seq_lens=input_seq_lens)
        chunks = []
        for start in range(0, mel.shape[0], 8):
            chunks.append(
                self.encoder(
                    mel[start : start + 8],
                    input_seq_lens=input_seq_lens[start : start + 8],
                )
            )
        return torch.cat(chunks)

    def encode_waveforms(self, waveforms: list[torch.Tensor]) -> torch.Tensor:
        lengths = [waveform.shape[0] for waveform in waveforms]
        mel = torch.stack(waveforms)
        input_seq_lens = torch.tensor(lengths, dtype=torch.long) * 2
        return self._encode(mel, input_seq_lens)


class SpeechRunner:
    def __init__(self, graph):
        self.front_end = SpeechFrontEnd()
        self.graph = graph

    def execute_model(self, waveforms: list[torch.Tensor]):
        self.front_end.encode_waveforms(waveforms)
        self.graph.replay()
