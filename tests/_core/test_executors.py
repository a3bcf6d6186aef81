"""Executors: what they say about their options, how Ray starts, attaches through ``ray://`` and stops."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from icml26._core.cards import card_fingerprint
from icml26._core.executors import RayExecutor, _sigint_held, _token_auth_env, get_executor
from icml26._core.runner import RunError, run
from tests._core.tiny_paper import tiny_card

ROOT = Path(__file__).resolve().parents[2]
# Ray's workers import the cell functions by module name: the checkout's src (this code, not another install)
# and the tests package.
RAY_PYTHONPATH = os.pathsep.join([str(ROOT / "src"), str(ROOT)])


def test_serial_says_workers_have_no_effect():
    assert get_executor("serial").notices() == []
    assert get_executor("serial", 1).notices() == []
    (notice,) = get_executor("serial", 4).notices()
    assert "--workers 4 has no effect" in notice
    assert get_executor("process", 2).notices() == []


def test_ray_on_a_cluster_says_workers_cap_the_cells_at_once(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    (notice,) = RayExecutor(3).notices()
    assert "ray://head:10001" in notice and "caps the cells run at once" in notice
    assert RayExecutor().notices() == []
    monkeypatch.delenv("RAY_ADDRESS")
    assert RayExecutor(3).notices() == []  # a local instance: 3 CPUs, nothing to say


def test_bad_executor_and_workers():
    with pytest.raises(ValueError, match="unknown executor"):
        get_executor("gpu")
    with pytest.raises(ValueError, match="workers"):
        get_executor("process", 0)


def test_sigint_is_held_and_recorded_then_restored():
    # a test session started in the background inherits SIGINT ignored; start from Python's own handler
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with _sigint_held() as came:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs between bytecodes: let it
        assert came == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt):  # noqa: PT012 - the signal arrives during the sleep
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_a_present_token_is_sent_unless_a_mode_is_set(tmp_path):
    assert _token_auth_env({}, tmp_path) == {}
    assert _token_auth_env({"RAY_AUTH_TOKEN": "t"}, tmp_path) == {"RAY_AUTH_MODE": "token"}
    assert _token_auth_env({"RAY_AUTH_TOKEN_PATH": "/p"}, tmp_path) == {"RAY_AUTH_MODE": "token"}
    assert _token_auth_env({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "t"}, tmp_path) == {}
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("t")
    assert _token_auth_env({}, tmp_path) == {"RAY_AUTH_MODE": "token"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _session_processes(sid: int) -> list[str]:
    """Processes still alive in session ``sid`` (what a run started there left behind)."""
    ps = subprocess.run(["ps", "-e", "-o", "sid=,pid=,args="], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in ps.splitlines() if line.split() and line.split()[0] == str(sid)]


def _wait_gone(sid: int, seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := _session_processes(sid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


@pytest.mark.ray
@pytest.mark.timeout(300)
def test_ray_client_address_runs_on_a_head_started_here(tmp_path, monkeypatch):
    """The README's cluster recipe: ``RAY_ADDRESS=ray://head:10001 icml26 reproduce --executor ray``, against a
    head started on loopback (``ray start --head``), bounded in time, stopped by its process group."""
    pytest.importorskip("ray")
    pytest.importorskip("grpc", reason="the Ray client needs ray[client] (grpcio)")
    ray_cli = Path(sys.executable).with_name("ray")
    if not ray_cli.exists():
        pytest.skip("no `ray` command next to this interpreter")
    temp = tempfile.mkdtemp(prefix="icr", dir="/tmp")  # short: Ray's socket paths are length-limited
    client_port = _free_port()
    # no token authentication on either side: whether a token lies in ~/.ray is this machine's business
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    env = {**os.environ, "PYTHONPATH": RAY_PYTHONPATH, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    log = (tmp_path / "head.log").open("w")
    head = subprocess.Popen(
        [
            str(ray_cli),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={_free_port()}",
            f"--ray-client-server-port={client_port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert head.poll() is None, f"ray start exited: {(tmp_path / 'head.log').read_text()[-2000:]}"
            assert time.monotonic() < deadline, "the Ray head did not open its client port within 180 s"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", client_port)) == 0:
                    break
            time.sleep(0.5)
        monkeypatch.setenv("RAY_ADDRESS", f"ray://127.0.0.1:{client_port}")
        serial = run([tiny_card()], profile="smoke", out=tmp_path / "s", report=False)
        try:
            on_ray = run([tiny_card()], profile="smoke", out=tmp_path / "r", executor="ray", workers=2, report=False)
        except RunError as exc:
            # Ray's proxy starts one server process per client; on a loaded machine that start-up sometimes fails
            # inside Ray ("Starting Ray client server failed"): a second client gets a fresh one
            if "Starting Ray client server failed" not in str(exc):
                raise
            time.sleep(5)
            on_ray = run([tiny_card()], profile="smoke", out=tmp_path / "r", executor="ray", workers=2, report=False)
        assert on_ray.failed == 0
        assert card_fingerprint(serial.cards[0]) == card_fingerprint(on_ray.cards[0])
        assert on_ray.cards[0]["provenance"]["executor"] == "ray"
    finally:
        # SIGINT to `ray start --block` alone: it shuts its node down (Ray's own processes ignore SIGINT and
        # SIGTERM of a group); whatever is left after 30 s is killed
        head.send_signal(signal.SIGINT)
        if _wait_gone(head.pid, 30):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(head.pid, signal.SIGKILL)
            _wait_gone(head.pid, 15)
        head.wait(timeout=30)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


INTERRUPTED_RAY_RUN = textwrap.dedent(
    """
    import sys
    import ray
    from icml26._core.runner import run
    from tests._core.tiny_paper import tiny_card

    start_up = ray.init
    def init(*args, **kwargs):
        print("INIT", flush=True)
        return start_up(*args, **kwargs)
    ray.init = init
    try:
        run([tiny_card(seeds=4)], profile="smoke", out=sys.argv[1], executor="ray", workers=2, report=False,
            on_cell=lambda record, done, total: print(done, flush=True))
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
        sys.exit(130)
    """
)


@pytest.mark.ray
@pytest.mark.timeout(300)
@pytest.mark.parametrize("when", ["early start-up", "late start-up", "cells"])
def test_group_sigint_stops_ray_cleanly(tmp_path, when):
    """Ctrl-C on a terminal reaches the whole process group: during Ray's start-up (this crashed the interpreter,
    exit 139) and while cells run. The run must end with the interrupt and leave no Ray process behind."""
    pytest.importorskip("ray")
    env = {**os.environ, "PYTHONPATH": RAY_PYTHONPATH, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    # 8 cells of 3 s on 2 CPUs: a run that cannot end before the signal, even where Ray starts in under 4 s
    # (it then lands among the cells, and must still end the run with the interrupt)
    env["TINY_SLEEP"] = "3"
    proc = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_RAY_RUN, str(tmp_path / "out")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # a test session started in the background inherits SIGINT ignored: restore the default in the child
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout.readline() == "INIT\n"
        if when != "cells":
            # inside ray.init (10-15 s on a busy 2-core machine): at 4 s its agents are starting, and the
            # code before this fix left two of them running
            time.sleep(1.5 if when == "early start-up" else 4.0)
        else:
            assert proc.stdout.readline() == "1\n", proc.stderr.read()  # a cell finished; others run
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, f"exit {proc.returncode}: {err[-3000:]}"
    assert "INTERRUPTED" in out
    left = _wait_gone(proc.pid, 20)
    assert left == [], f"Ray processes left running: {left}"


_WORKER_STATE: dict[str, Any] = {}


def _cache_once_per_worker(grow_mb: int) -> tuple[int, bool]:
    """A cell that, on its worker's second task, caches ``grow_mb`` MB (written, so resident) and waits past
    loky's 1 s leak-check delay; it reports its worker and whether the cache is still there."""
    tasks = _WORKER_STATE["tasks"] = _WORKER_STATE.get("tasks", 0) + 1
    if tasks == 2:
        _WORKER_STATE["cache"] = b"\x01" * (grow_mb << 20)
    time.sleep(1.1)
    return os.getpid(), "cache" in _WORKER_STATE


def test_process_workers_keep_what_cells_cache():
    """loky replaces a worker whose memory grew 300 MB after its first task (a leak guard); a paper's per-worker
    cache (a converted model) grows it on purpose, and a replaced worker loses it. Two workers, eight cells: the
    same two processes run them all, and the cache survives."""
    results = list(get_executor("process", 2).map_unordered(_cache_once_per_worker, [(400,)] * 8))
    pids = {pid for pid, _ in results}
    assert len(pids) == 2, f"a worker was replaced: {len(pids)} processes ran 8 cells"
    assert sum(cached for _, cached in results) >= 4  # from its second task on, each worker holds the cache
