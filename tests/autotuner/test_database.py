"""The tuning database: a tuning written as it goes, read back so that a later run does not tune,
resumed after an interruption, merged keeping the best entry per key; and `tilecraft tune`."""

from __future__ import annotations

import sqlite3
import textwrap
import warnings

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.autotuner.kernels import add_factory, reference
from tilecraft.autotuner import AutoTuner, InProcessExecutor
from tilecraft.autotuner.database import TuningDatabase, TuningDatabaseError, TuningKey, merge_databases
from tilecraft.autotuner.result import COMPILE_FAILED, OK
from tilecraft.autotuner.session import Session
from tilecraft.tools.cli import main

N = 256
CONFIGS = [dict(block=64), dict(block=32, fault="compile"), dict(block=128), dict(block=16)]


def make_kernel(db):
    @tilecraft.autotune(configs=[dict(block=64), dict(block=128)], ref_prog=reference, warmup=1, rep=3, db=db,
                        workers=0)  # fmt: skip
    @tilecraft.jit(out_idx=[-1], target="c")
    def add2(n, block=64):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = 2 * A[bx * block + i] + B[bx * block + i]

        return main

    return add2


def check(kernel, n):
    a = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    b = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), 2 * a + b, rtol=1e-6)


def rows(path, sql):
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def test_a_tuning_is_stored_and_a_deployment_never_tunes(tmp_path, monkeypatch):
    db = tmp_path / "tuning.sqlite"
    tuned = make_kernel(db)(300)  # 300: ragged for both blocks
    assert not tuned.tuning.from_database
    ((kernel, signature, device, arch, version, complete),) = rows(
        db, "SELECT kernel, signature, device, arch, version, complete FROM tunings")
    assert kernel.endswith("make_kernel.<locals>.add2") and "300" in signature and complete == 1
    assert device and arch and version == tilecraft.__version__
    stored = dict(rows(db, "SELECT config, latency FROM results WHERE status = 'ok'"))
    assert len(stored) == 2 and min(stored.values()) == tuned.latency

    def no_tuning(self):
        raise AssertionError("a deployment with the tuning database tuned")

    monkeypatch.setattr(Session, "_tune", no_tuning)
    with tilecraft.settings.override(TILECRAFT_TUNING_DB=db):  # the setting names the database too
        deployed = make_kernel(None)(300)
    assert deployed.tuning.from_database and deployed.config == tuned.config
    assert deployed.latency == tuned.latency
    check(deployed, 300)
    assert "from the tuning database" in deployed.tuning.summary()
    monkeypatch.undo()
    assert not make_kernel(db)(512).tuning.from_database  # other arguments: another key, tuned


class Interrupting(InProcessExecutor):
    """Measures one candidate, then the tuning is interrupted (Ctrl-C)."""

    def benchmark_all(self, jobs, ctx, measurement):
        for n, item in enumerate(super().benchmark_all(jobs, ctx, measurement)):
            if n == 1:
                raise KeyboardInterrupt
            yield item


class Recording(InProcessExecutor):
    def __init__(self):
        super().__init__()
        self.compiled = []

    def compile(self, jobs, ctx, timeout):
        self.compiled += [job.index for job in jobs]
        yield from super().compile(jobs, ctx, timeout)


def tuner(n=N):
    return (
        AutoTuner.from_kernel(add_factory(n), CONFIGS)
        .set_compile_args(out_idx=[-1], target="c")
        .set_profile_args(ref_prog=reference)
    )


def test_an_interrupted_tuning_resumes_where_it_stopped(tmp_path):
    db = tmp_path / "tuning.sqlite"
    with pytest.raises(KeyboardInterrupt):
        tuner().run(warmup=1, rep=2, executor=Interrupting(), db=db, retune=True)
    kept = rows(db, "SELECT status FROM results")
    assert sorted(s for (s,) in kept) == [COMPILE_FAILED, OK]  # the compile failure and one measurement
    assert rows(db, "SELECT complete FROM tunings") == [(0,)]
    recording = Recording()
    result = tuner().run(warmup=1, rep=2, executor=recording, db=db)
    assert sorted(recording.compiled) == [2, 3]  # only what the interrupted run had not finished
    assert [c.status for c in result.candidates] == [OK, COMPILE_FAILED, OK, OK]
    assert result.latency == min(c.latency for c in result.candidates if c.ok)
    assert rows(db, "SELECT complete FROM tunings") == [(1,)]
    check(result.kernel, N)


def key(kernel="k", device="dev"):
    return TuningKey(kernel, "[]", "c", device, "x86_64", "0.1.0")


def test_merge_keeps_the_best_entry_per_key(tmp_path):
    a, b, out = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "c.sqlite"
    with TuningDatabase(a) as db:
        db.begin(key(), 3)
        db.record(key(), dict(block=64), OK, 2.0)
        db.record(key(), dict(block=128), OK, 1.5)
        db.record(key(), dict(block=32), COMPILE_FAILED, None, "boom")
        db.finish(key())
    with TuningDatabase(b) as db:
        db.begin(key(), 3)
        db.record(key(), dict(block=64), OK, 1.0)  # faster on the other machine
        db.record(key(), dict(block=128), COMPILE_FAILED, None, "lost")  # a failure never replaces a time
        db.record(key(), dict(block=32), OK, 3.0)  # a time replaces a failure
        db.begin(key("other"), 1)
        db.record(key("other"), dict(block=16), OK, 0.5)
        db.finish(key("other"))
    assert main(["tune", "--merge", str(a), str(b), "-o", str(out)]) == 0
    with TuningDatabase(out) as db:
        got = {r.config: (r.status, r.latency) for r in db.results(key()).values()}
        assert got == {'{"block": 64}': (OK, 1.0), '{"block": 128}': (OK, 1.5), '{"block": 32}': (OK, 3.0)}
        assert db.best(key()).latency == 1.0 and db.best(key("other")).latency == 0.5
    assert merge_databases([out, a], out) == 4  # merging into itself changes nothing


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database")
    with pytest.raises(TuningDatabaseError, match="is not a tilecraft tuning database"):
        TuningDatabase(bad)
    with pytest.raises(TuningDatabaseError, match="does not exist; create it first"):
        TuningDatabase(tmp_path / "missing" / "t.sqlite")


SPEC = textwrap.dedent(
    """
    import tilecraft
    import tilecraft.language as T


    def reference(a, b):
        return 2 * a + b


    @tilecraft.autotune(configs=[dict(block=64), dict(block=128)], ref_prog=reference, warmup=1, rep=3)
    @tilecraft.jit(out_idx=[-1], target="c")
    def spec_add(n, block=64):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = 2 * A[bx * block + i] + B[bx * block + i]

        return main


    TUNE = [(spec_add, (200,)), (spec_add, (), {"n": 384})]
    """
)


def test_tilecraft_tune_runs_a_spec_into_a_database(tmp_path, capsys):
    spec, db = tmp_path / "tune_spec.py", tmp_path / "tuning.sqlite"
    spec.write_text(SPEC)
    with tilecraft.settings.override(TILECRAFT_TUNE_WORKERS=2):
        assert main(["tune", str(spec), "--db", str(db), "--executor", "local"]) == 0
    out = capsys.readouterr().out
    assert "spec_add(200): best {'block'" in out and "spec_add(n=384): best" in out and "(tuned;" in out
    assert rows(db, "SELECT COUNT(*) FROM tunings WHERE complete = 1") == [(2,)]
    assert main(["tune", "--list", str(db)]) == 0
    listed = capsys.readouterr().out
    assert listed.count("tune_spec.spec_add") == 2 and "complete, best {'block'" in listed
    assert main(["tune", str(tmp_path / "nope.py"), "--db", str(db)]) == 1
    assert "tuning spec" in capsys.readouterr().err


def test_a_read_only_database_is_used_and_not_written(tmp_path):
    path = tmp_path / "shipped.sqlite"
    with TuningDatabase(path) as db:
        db.begin(key(), 1)
        db.record(key(), dict(block=64), OK, 1.0)
        db.finish(key())
    db = TuningDatabase(path)
    db._db.close()
    db._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)  # as root cannot chmod
    assert db.best(key()).latency == 1.0
    with pytest.warns(RuntimeWarning, match="is read-only .* new ones are not kept"):
        db.record(key("new"), dict(block=32), OK, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once only
        db.record(key("new"), dict(block=16), OK, 0.25)
    assert db.results(key("new")) == {} and db.read_only
    db.close()


class Failing(InProcessExecutor):
    """Every measurement fails (a device that was broken during this tuning)."""

    def benchmark_all(self, jobs, ctx, measurement):
        from tilecraft.autotuner.measure import Measured

        for job in jobs:
            yield job.index, Measured("run failed", error="the device was lost")


def test_a_complete_tuning_with_nothing_ok_is_tuned_afresh(tmp_path):
    db = tmp_path / "tuning.sqlite"
    with pytest.raises(tilecraft.autotuner.AutotuneError, match="the device was lost"):
        tuner(320).run(warmup=1, rep=2, executor=Failing(), db=db, retune=True)
    assert rows(db, "SELECT complete FROM tunings") == [(1,)]
    recording = Recording()
    # 320: a size no other test tunes, so that the kernel cache holds no tuning of it
    result = tuner(320).run(warmup=1, rep=2, executor=recording, db=db)
    assert sorted(recording.compiled) == [0, 1, 2, 3]  # nothing taken from the failed tuning
    assert [c.status for c in result.candidates] == [OK, COMPILE_FAILED, OK, OK]
