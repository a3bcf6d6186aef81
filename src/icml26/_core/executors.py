"""Executors: run independent cells serially, in local processes, or on a Ray cluster.

All three take a picklable function and a list of argument tuples and yield results *as they finish*, so the
runner can persist each finished cell at once (resume after an interrupt). Cells are pure functions of their
spec, so every executor gives identical results; only the order of completion differs.

- ``serial``: in this process, in order. The default, and what tests use. ``workers`` has no effect (a notice
  says so).
- ``process``: joblib's loky backend; each worker is limited to one BLAS/OpenMP thread (and so one torch thread:
  torch reads ``OMP_NUM_THREADS`` when a worker imports it), so N workers use N cores. Workers keep what cells
  cache on purpose (a converted model, fitted transforms): loky's leak guard, which restarts a worker whose memory
  grew 300 MB beyond its size after its first task, is switched off in our workers (see :class:`_KeepWorkerCaches`).
- ``ray``: attaches to ``RAY_ADDRESS`` when it is set (``auto`` on a node of a cluster, or ``ray://head:10001``
  through the Ray client, which needs ``pip install 'icml26[ray]'``; ``icml26`` must be installed on the nodes),
  and then runs at most ``workers`` cells at once when ``workers`` is given. A cluster with Ray's token
  authentication needs the token here (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``):
  when one is present and ``RAY_AUTH_MODE`` is unset, it is sent, as Ray's own head node does. Without
  ``RAY_ADDRESS`` it starts a local instance with ``workers`` CPUs (default: all), which costs several seconds
  before the first cell, and shuts it down afterwards. A Ray that cannot be reached is an :class:`ExecutorError`
  (one line). An interrupt while Ray starts is held until the start-up returns, then Ray is shut down and the
  interrupt goes on: stopping Ray half-way through its start-up crashed the interpreter and left Ray's agents
  running. Ray's own log lines are kept off stderr unless ``verbose``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "EXECUTORS",
    "Executor",
    "ExecutorError",
    "ProcessExecutor",
    "RayExecutor",
    "SerialExecutor",
    "get_executor",
]

EXECUTORS: tuple[str, ...] = ("serial", "process", "ray")
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


class ExecutorError(RuntimeError):
    """An executor that cannot start (Ray missing or unreachable): a configuration problem, one line."""


class Executor(Protocol):
    name: str

    def notices(self) -> list[str]:
        """What the user should know about how the options were read (an option that has no effect)."""
        ...

    def map_unordered(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[Any]: ...


class SerialExecutor:
    name = "serial"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers

    def notices(self) -> list[str]:
        if self.workers is not None and self.workers != 1:
            return [f"--workers {self.workers} has no effect with the serial executor (one cell at a time)"]
        return []

    def map_unordered(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        for args in items:
            yield fn(*args)


class _KeepWorkerCaches:
    """Runs ``fn`` in a loky worker with loky's leak guard switched off (once per worker).

    After a worker's first task loky measures its memory; when a later check finds it 300 MB larger, it takes the
    growth for a leak and replaces the worker. Our cells grow workers on purpose: a paper caches its expensive
    set-up per worker (SmolLM2 and its fitted transforms are ~0.5 GB), and in the main job a worker's first cell
    is usually another paper's, so every such cell was followed by a restart that dropped the cache (each LATMiX
    quick cell refitted its transforms: 30 s instead of 5 s). The guard's limit is a module constant of loky's
    worker loop (private; if it moves, this does nothing and only the speed is lost).
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> Any:
        try:
            from joblib.externals.loky import process_executor
        except ImportError:  # pragma: no cover - joblib without its vendored loky
            pass
        else:
            process_executor._MAX_MEMORY_LEAK_SIZE = 1 << 62
        return self.fn(*args)


class ProcessExecutor:
    name = "process"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1

    def notices(self) -> list[str]:
        return []

    def map_unordered(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        if not items:
            return
        from joblib import Parallel, delayed, parallel_config

        with parallel_config(backend="loky", inner_max_num_threads=1):
            parallel = Parallel(n_jobs=min(self.workers, len(items)), return_as="generator_unordered")
            keep = _KeepWorkerCaches(fn)
            yield from parallel(delayed(keep)(*args) for args in items)


@contextlib.contextmanager
def _sigint_held() -> Iterator[list[int]]:
    """Hold SIGINT for the duration (main thread only); the list it yields records the signals that came."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield came
    finally:
        signal.signal(signal.SIGINT, previous)


def _token_auth_env(environ: dict[str, str] | os._Environ[str], home: Path) -> dict[str, str]:
    """``{"RAY_AUTH_MODE": "token"}`` when attaching should send a token: one is present and no mode is set.

    A head started where a token exists enables token authentication by default, but Ray's client only sends
    the token when ``RAY_AUTH_MODE=token``: without it, ``ray://`` fails after 30 s with a "connection timeout".
    """
    if environ.get("RAY_AUTH_MODE"):
        return {}
    has_token = environ.get("RAY_AUTH_TOKEN") or environ.get("RAY_AUTH_TOKEN_PATH")
    if has_token or (home / ".ray" / "auth_token").is_file():
        return {"RAY_AUTH_MODE": "token"}
    return {}


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


class RayExecutor:
    name = "ray"

    def __init__(self, workers: int | None = None, verbose: bool = False) -> None:
        self.workers = workers
        self.verbose = verbose

    @property
    def address(self) -> str | None:
        return os.environ.get("RAY_ADDRESS") or None

    def notices(self) -> list[str]:
        if self.address and self.workers is not None:
            return [f"on the Ray cluster at {self.address}, --workers {self.workers} caps the cells run at once"]
        return []

    def _connect(self, ray: Any) -> bool:
        """Start or attach to Ray; True if this call did (and so must shut it down)."""
        if ray.is_initialized():
            return False
        quiet = not self.verbose
        kwargs: dict[str, Any] = {
            "runtime_env": {"env_vars": dict(_ONE_THREAD)},
            "log_to_driver": self.verbose,
            "logging_level": logging.INFO if self.verbose else logging.ERROR,
        }
        if self.address:
            where = f"the Ray cluster at RAY_ADDRESS={self.address!r}"
            kwargs["address"] = self.address
        else:
            where = "a local Ray instance"
            # "local": a new instance even if a `ray start` cluster runs on this machine (unset RAY_ADDRESS
            # would attach to it)
            kwargs.update(address="local", num_cpus=self.workers or os.cpu_count() or 1, include_dashboard=False)
        if quiet:  # Ray's start-up banners and accelerator tips are not ours to print
            os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
        with _sigint_held() as interrupted:
            try:
                with _quiet_stderr(quiet):
                    ray.init(**kwargs)
            except Exception as exc:
                with contextlib.suppress(Exception):
                    ray.shutdown()
                raise ExecutorError(f"cannot start the ray executor on {where}: {_one_line(exc)}") from None
        if interrupted:
            ray.shutdown()
            raise KeyboardInterrupt
        return True

    def map_unordered(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        if not items:
            return
        if self.address:  # before Ray reads its configuration on import
            os.environ.update(_token_auth_env(os.environ, Path.home()))
        try:
            import ray
        except ImportError:
            raise ExecutorError("the ray executor needs Ray: pip install 'icml26[ray]'") from None

        started = self._connect(ray)
        try:
            remote = ray.remote(num_cpus=1, max_retries=0)(fn)
            window = self.workers if (self.address and self.workers) else len(items)
            queue = iter(items)
            pending = [remote.remote(*args) for args in _take(queue, window)]
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                pending.extend(remote.remote(*args) for args in _take(queue, 1))
                yield ray.get(done[0])
        finally:
            if started:
                with _sigint_held():
                    ray.shutdown()


def _take(it: Iterator[tuple[Any, ...]], n: int) -> list[tuple[Any, ...]]:
    out = []
    for _ in range(n):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


@contextlib.contextmanager
def _quiet_stderr(quiet: bool) -> Iterator[None]:
    """Keep Ray's start-up warnings off stderr (its loggers are set by ``logging_level``; its C++ side logs to
    files)."""
    if not quiet:
        yield
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def get_executor(name: str, workers: int | None = None, verbose: bool = False) -> Executor:
    """The executor called ``name`` (one of :data:`EXECUTORS`)."""
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if name == "serial":
        return SerialExecutor(workers)
    if name == "process":
        return ProcessExecutor(workers)
    if name == "ray":
        return RayExecutor(workers, verbose=verbose)
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
