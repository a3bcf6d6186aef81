"""Executors: run independent cells serially, in local processes, or on a Ray cluster.

All three take a picklable function and a list of argument tuples and yield results *as they finish*, so the
runner can persist each finished cell at once (resume after an interrupt). Cells are pure functions of their
spec, so every executor gives identical results; only the order of completion differs.

- ``serial``: in this process, in order. The default, and what tests use.
- ``process``: joblib's loky backend; each worker is limited to one BLAS/OpenMP thread, so N workers use N cores.
- ``ray``: attaches to ``RAY_ADDRESS`` when it is set (an existing cluster: ``icml26`` must be installed on its
  nodes), else starts a local instance sized to the machine, and shuts down what it started.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

__all__ = ["EXECUTORS", "Executor", "ProcessExecutor", "RayExecutor", "SerialExecutor", "get_executor"]

EXECUTORS: tuple[str, ...] = ("serial", "process", "ray")
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


class Executor(Protocol):
    name: str

    def map_unordered(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[Any]: ...


class SerialExecutor:
    name = "serial"

    def map_unordered(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        for args in items:
            yield fn(*args)


class ProcessExecutor:
    name = "process"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1

    def map_unordered(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        if not items:
            return
        from joblib import Parallel, delayed, parallel_config

        with parallel_config(backend="loky", inner_max_num_threads=1):
            parallel = Parallel(n_jobs=min(self.workers, len(items)), return_as="generator_unordered")
            yield from parallel(delayed(fn)(*args) for args in items)


class RayExecutor:
    name = "ray"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers

    def map_unordered(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        if not items:
            return
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("the ray executor needs Ray: pip install 'icml26[ray]'") from exc

        started = False
        if not ray.is_initialized():
            runtime_env = {"env_vars": dict(_ONE_THREAD)}
            address = os.environ.get("RAY_ADDRESS")
            if address:
                ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
            else:
                ray.init(
                    num_cpus=self.workers or os.cpu_count() or 1,
                    include_dashboard=False,
                    log_to_driver=False,
                    runtime_env=runtime_env,
                )
            started = True
        try:
            remote = ray.remote(num_cpus=1, max_retries=0)(fn)
            pending = [remote.remote(*args) for args in items]
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield ray.get(done[0])
        finally:
            if started:
                ray.shutdown()


def get_executor(name: str, workers: int | None = None) -> Executor:
    """The executor called ``name`` (one of :data:`EXECUTORS`)."""
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if name == "serial":
        return SerialExecutor()
    if name == "process":
        return ProcessExecutor(workers)
    if name == "ray":
        return RayExecutor(workers)
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
