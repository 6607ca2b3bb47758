"""Entry point of the child process that `graphready probe` starts:

    python -m graphready.harness --target TARGET --bucket N [--bucket M ...]
        [--trace PATH ...] [--rerun-from PHASE] [--watchdog]
        [--distributed nccl|gloo [--dist-timeout SECS]]

`--trace PATH`: also record the lines executed under PATH (the `--check` paths, for the static
correlation). `--rerun-from PHASE`: a re-run after a device assert in a poisoning phase; only the
prerequisites and the phases from PHASE on run, PHASE without poisoning. `--watchdog`: answer
`dump` on stdin with a `hang_report` (and dump every thread's stack on SIGUSR1).
`--distributed BACKEND`: this process is one rank of a group, placed by the torchrun
environment (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`);
torch.distributed is initialised, and the rank given its GPU, before the factory is called.

Protocol lines go to the original stdout; the user's own stdout is moved to stderr first.
Exit status: 0 after the buckets ran (whatever they found), 3 after an `env_error` line.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import platform
import signal
import sys
import traceback
from typing import Optional, Sequence

from .protocol import HARNESS_VERSION, POISONING_PHASES, PROTOCOL_VERSION, Emitter
from .ranks import BACKENDS, LOOPBACK_ENV, NVLS_OFF, Activity, RankError, read_env
from .target import TargetError, check_target_exists, load_factory

ENV_ERROR_EXIT = 3


class _ArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # never print usage to the protocol stream
        raise _ArgumentError(message)


def _parse(argv: Optional[Sequence[str]]):
    parser = _Parser(prog="graphready.harness", add_help=False)
    parser.add_argument("--target", required=True)
    parser.add_argument("--bucket", type=int, action="append", required=True)
    parser.add_argument("--trace", action="append", default=[])
    parser.add_argument("--rerun-from", choices=POISONING_PHASES, default=None)
    parser.add_argument("--watchdog", action="store_true")
    parser.add_argument("--distributed", choices=BACKENDS, default=None)
    parser.add_argument("--dist-timeout", type=float, default=600.0)
    return parser.parse_args(argv)


def _protocol_stream():
    """Keep the real stdout for the protocol and point fd 1 (and `print`) at stderr."""
    sys.stdout.flush()
    stream = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    return stream


def environment_error(emitter, kind: str, message: str) -> int:
    emitter.send("env_error", kind=kind, message=message)
    return ENV_ERROR_EXIT


def _rank_fields(argv: Optional[Sequence[str]]) -> dict:
    """`rank` and `world_size` for `hello`, read before the arguments are checked."""
    if "--distributed" not in (argv if argv is not None else sys.argv[1:]):
        return {}
    try:
        env = read_env(os.environ)
    except RankError:
        return {}
    return {"rank": env.rank, "world_size": env.world_size}


def main(argv: Optional[Sequence[str]] = None, stream=None) -> int:
    emitter = Emitter(stream if stream is not None else _protocol_stream())
    if stream is None:
        # On a segfault, print the Python stack (the user's line) to stderr before dying.
        faulthandler.enable()
    emitter.send(
        "hello",
        protocol=PROTOCOL_VERSION,
        harness=HARNESS_VERSION,
        python=platform.python_version(),
        executable=sys.executable,
        **_rank_fields(argv),
    )
    try:
        args = _parse(argv)
    except _ArgumentError as exc:
        return environment_error(emitter, "bad_args", f"harness arguments: {exc}")
    if any(b < 1 for b in args.bucket):
        return environment_error(emitter, "bad_args", "buckets must be positive integers")
    rank_env = None
    if args.distributed:
        try:
            rank_env = read_env(os.environ)
        except RankError as exc:
            return environment_error(emitter, "bad_args", str(exc))
    # Before torch (and NCCL) load: NVLink multicast stays off in every child.
    os.environ.update(NVLS_OFF)
    if rank_env is not None:
        # Every rank is on this host: gloo and NCCL's bootstrap talk over loopback, not over
        # whatever interface the host name resolves to (unless the user chose one).
        for name in LOOPBACK_ENV:
            os.environ.setdefault(name, "lo")
    try:
        check_target_exists(args.target)
    except TargetError as exc:
        return environment_error(emitter, "bad_target", str(exc))

    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure means no usable torch
        return environment_error(
            emitter,
            "no_torch",
            f"PyTorch cannot be imported by {sys.executable} ({type(exc).__name__}: {exc}); "
            "install torch there or point --python / GRAPHREADY_PYTHON at an interpreter that has it",
        )
    if not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return environment_error(
            emitter,
            "no_cuda",
            f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"
            + (f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else "")
            + "; the probe needs a GPU",
        )
    from .frames import FrameFilter

    filt = FrameFilter.for_this_process()
    activity = Activity()
    watchdog = None
    if args.watchdog and stream is None:
        # From here on a stuck rank can say where it is (the rendezvous included).
        watchdog = _start_watchdog(emitter, activity, filt)
    group = None
    if rank_env is not None:
        from . import dist

        try:
            dist.check_devices(rank_env, args.distributed)
        except RankError as exc:
            return environment_error(emitter, "too_few_gpus", str(exc))
        try:
            group = dist.init_group(rank_env, args.distributed, args.dist_timeout, activity)
        except Exception as exc:  # noqa: BLE001 - the rendezvous or the backend failed
            return environment_error(
                emitter,
                "dist_init",
                f"rank {rank_env.rank}: torch.distributed.init_process_group({args.distributed!r}) failed "
                f"(MASTER_ADDR={rank_env.master_addr}, MASTER_PORT={rank_env.master_port}): {type(exc).__name__}: {exc}",
            )
    major, minor = torch.cuda.get_device_capability()
    emitter.send(
        "environment",
        torch=torch.__version__,
        cuda=torch.version.cuda,
        device=torch.cuda.get_device_name(),
        capability=f"{major}.{minor}",
        **({"distributed": group.describe()} if group is not None else {}),
    )

    try:
        factory = load_factory(args.target)
    except TargetError as exc:
        return environment_error(emitter, "bad_target", str(exc))
    except BaseException as exc:  # noqa: BLE001 - the user's module failed to import
        tail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-1500:]
        return environment_error(emitter, "bad_target", f"importing TARGET {args.target!r} failed:\n{tail}")

    from .bucket import run_bucket
    from .watch import CaptureStatus

    # Built again: the user's module may have imported libraries the filter must know.
    filt = FrameFilter.for_this_process()
    if watchdog is not None:
        watchdog.filt = filt
    status = CaptureStatus()
    try:
        for bucket in args.bucket:
            run_bucket(
                emitter, factory, bucket, filt, status, start=args.rerun_from, trace=args.trace, group=group, activity=activity
            )
    finally:
        if group is not None:
            from . import dist

            dist.shutdown(group)
    return 0


def _start_watchdog(emitter, activity, filt):
    from .watchdog import Watchdog

    watchdog = Watchdog(sys.stdin, emitter, activity, filt)
    watchdog.start()
    if hasattr(signal, "SIGUSR1"):
        # The fallback when the watchdog thread cannot run: every thread's stack to stderr.
        faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)
    return watchdog


if __name__ == "__main__":
    sys.exit(main())
