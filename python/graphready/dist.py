"""Tensor-parallel probing with torch: `torch.distributed` initialised from the launcher's
environment (NCCL, or gloo), the rank's device, the probe's own gloo group on which the ranks
agree after every phase, and the wrappers that count the step's collectives (`ranks.py`).

Imported only after torch was found.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from .ranks import Activity, RankEnv, RankError, device_index, device_problem, patch_collectives, unrecorded

# The probe's own exchange never goes through the wrappers, so it is never counted as the step's.
_ALL_GATHER_OBJECT = distributed_c10d.all_gather_object


@dataclass
class Group:
    env: RankEnv
    backend: str
    device: int
    coord: Any  # the probe's gloo group
    restore: Optional[Callable[[], None]] = None

    @property
    def rank(self) -> int:
        return self.env.rank

    @property
    def world_size(self) -> int:
        return self.env.world_size

    def agree(self, value: Any) -> list:
        """Every rank's `value`, in rank order (a gloo all-gather of Python objects)."""
        out: list = [None] * self.world_size
        with unrecorded():
            _ALL_GATHER_OBJECT(out, value, group=self.coord)
        return out

    def describe(self) -> dict:
        return {
            "backend": self.backend,
            "rank": self.rank,
            "world_size": self.world_size,
            "local_rank": self.env.local_rank,
            "device": f"cuda:{self.device}",
        }


def check_devices(env: RankEnv, backend: str) -> None:
    """Before any rendezvous: too few GPUs is an environment error on every rank, not a hang."""
    problem = device_problem(backend, env, torch.cuda.device_count(), os.environ.get("CUDA_VISIBLE_DEVICES"))
    if problem:
        raise RankError(problem)


def init_group(env: RankEnv, backend: str, timeout_s: float, activity: Activity) -> Group:
    """Give the rank its device, initialise torch.distributed from the environment (env://:
    MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE) and create the probe's gloo group."""
    index = device_index(env, torch.cuda.device_count())
    torch.cuda.set_device(index)
    timeout = timedelta(seconds=max(1.0, timeout_s))
    kwargs: dict = {"backend": backend, "init_method": "env://", "rank": env.rank, "world_size": env.world_size, "timeout": timeout}
    if backend == "nccl" and "device_id" in inspect.signature(dist.init_process_group).parameters:
        # Bound to its device, NCCL's communicator is created now, not inside the first capture.
        kwargs["device_id"] = torch.device("cuda", index)
    dist.init_process_group(**kwargs)
    coord = dist.new_group(backend="gloo", timeout=timeout)
    group = Group(env=env, backend=backend, device=index, coord=coord)
    group.restore = patch_collectives((dist, distributed_c10d), activity)
    return group


def shutdown(group: Group) -> None:
    if group.restore is not None:
        group.restore()
    try:
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - the results are out; a failed teardown changes nothing
        pass
