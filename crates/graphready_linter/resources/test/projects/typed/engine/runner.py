"""The runner replays the graph (or runs the model eagerly) and samples; the scheduler's loop
drives it. Constructors and weight loading run once."""

import torch

from engine.attention.base import AttentionBackend
from engine.batch import ForwardBatch
from engine.media import media_positions, media_schedule, token_positions
from engine.model import Model


class ModelRunner:
    def __init__(self, model: Model, backend: AttentionBackend):
        self.model = model
        self.backend = backend
        self.graph = None
        self.vocab = torch.arange(16, device="cuda")
        self._vocab_cpu = None

    def forward(self, x, positions, batch: ForwardBatch):
        self.backend.init_forward_metadata(batch)
        # Reading the property copies the device lengths to the host.
        self.host_lens = batch.seq_lens_cpu
        self.size = batch.batch_size
        # A lazily made copy on the runner, which lasts: made once, not every step.
        self.rows = self.vocab_cpu
        if self.graph is not None:
            self.graph.replay()
            return None
        return self.model(x, positions, batch)

    def sample(self, logits: torch.Tensor) -> int:
        return logits.argmax(-1).item()

    @property
    def vocab_cpu(self) -> torch.Tensor:
        if self._vocab_cpu is None:
            self._vocab_cpu = self.vocab.to("cpu")
        return self._vocab_cpu

    def load_weights(self, weights):
        # Load time: a sync here runs once.
        scale = weights.abs().max().item()
        return scale


class Scheduler:
    def __init__(self, runner: ModelRunner, eos: int):
        self.runner = runner
        self.eos = eos
        # Set-up: runs once.
        warm = torch.zeros(4, device="cuda")
        self.ready = warm.sum().item() == 0
        self.init_buffers(warm)

    def next_batch(self):
        return None

    def stopped(self, token: torch.Tensor) -> bool:
        if token == self.eos:
            return True
        return False

    def has_unfinished(self, finished: bool) -> bool:
        # Annotated `bool`, but the loop passes a device tensor: the test syncs.
        if finished:
            return False
        return True

    def run(self, x, positions, batch):
        while True:
            logits = self.runner.forward(x, positions, batch)
            token = self.runner.sample(logits)
            if self.stopped(logits[0]):
                break
            if not self.has_unfinished(logits.max() == self.eos):
                break
            self.media(x, logits)
            self.init_request(token)
            self.add_requests(token)
            self.last_position = positions.max().item()
            if self.next_batch() is None:
                self.on_idle(logits)

    def media(self, grid: torch.Tensor, lengths: torch.Tensor):
        for size in grid.tolist():
            media_positions(size, 2)
        token_positions(lengths)
        media_schedule(4)

    def init_request(self, slots: torch.Tensor):
        # `init_*`, but for a request: the loop calls it every step.
        self.slots = int(slots.sum())

    def add_requests(self, slots: torch.Tensor):
        # Named for per-step work with requests: what it calls runs every step, `init_*` or not.
        self.init_slots(slots)

    def init_slots(self, slots: torch.Tensor):
        self.first_slot = slots.min().item()

    def on_idle(self, pool: torch.Tensor):
        # Housekeeping while no batch runs: a leak check syncs, but stalls no step.
        self.leaked = pool.sum().item()

    def init_buffers(self, warm: torch.Tensor):
        # Only the constructor calls it: set-up.
        self.total = warm.sum().item()
