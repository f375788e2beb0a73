"""Worker processes that run at once share the cores: each gets OMP_NUM_THREADS = cores // processes
(at least 1), compile workers and benchmark workers alike, unless the user set OMP_NUM_THREADS."""

from __future__ import annotations

from tests.autotuner.kernels import NoteThreadsOnUnpickle, add_factory, reference
from tilecraft.autotuner import AutoTuner
from tilecraft.autotuner import executor as executors


def test_the_budget_is_the_cores_shared_by_the_workers(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(executors, "available_cores", lambda: 16)
    assert executors.thread_budget(4) == {"OMP_NUM_THREADS": "4"}
    assert executors.thread_budget(5) == {"OMP_NUM_THREADS": "3"}
    assert executors.thread_budget(32) == {"OMP_NUM_THREADS": "1"}
    assert executors.thread_budget(1) == {"OMP_NUM_THREADS": "16"}


def test_a_thread_count_the_user_set_is_left_alone(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert executors.thread_budget(4) == {}  # the workers inherit the user's 3


def test_each_worker_gets_its_share(tmp_path, monkeypatch):
    """Two compile workers on 8 cores get 4 threads each; the one benchmark worker (the host) gets 8."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(executors, "available_cores", lambda: 8)
    notes = tmp_path / "threads"
    add = add_factory()
    tuner = (
        AutoTuner.from_kernel(
            lambda block: add(block).with_attr("test.die", NoteThreadsOnUnpickle(notes)),
            [dict(block=64), dict(block=32)],
        )
        .set_compile_args(out_idx=[-1], target="c")
        .set_profile_args(ref_prog=reference)
    )
    result = tuner.run(warmup=1, rep=2, workers=2, retune=True)
    assert all(c.ok for c in result.candidates), result.summary()
    # compiles first (a line per candidate from its compile worker), then measurements
    assert notes.read_text().split() == ["4", "4", "8", "8"]
