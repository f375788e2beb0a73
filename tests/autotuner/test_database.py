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
        db, "SELECT kernel, signature, device, arch, version, complete FROM tunings"
    )
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


# ---------------------------------------------------------------------- malformed rows (issue 31, item 7)

MALFORMED = [  # (config text, status, latency, error, compile_seconds): each row is wrong in one way
    ('{"block": 8}', OK, "fast", "", None),  # a latency that is not a number
    ('{"block": 4}', OK, -1.0, "", None),  # negative: it would win every comparison
    ('{"block": 2}', OK, float("inf"), "", None),
    ('{"block": 1}', OK, float("nan"), "", None),  # SQLite keeps NaN as NULL: ok without a latency
    ('{"block": 5', OK, 0.5, "", None),  # a truncated JSON config
    ('["block", 6]', OK, 0.5, "", None),  # JSON, but not a config
    ('{"block": 7}', "fine", 0.5, "", None),  # a status tilecraft never writes
    ('{"block": 9}', 5, None, "", None),  # a number where the status goes
    ('{"block": 10}', OK, 0.5, "", "slow"),  # a compile time that is not a number
]


def corrupt(path, digest, rows):
    with sqlite3.connect(path) as db:
        for row in rows:
            db.execute("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, 0)", (digest, *row))


def good_database(path):
    with TuningDatabase(path) as db:
        db.begin(key(), 2)
        db.record(key(), dict(block=64), OK, 2.0)
        db.record(key(), dict(block=128), OK, 1.5)
        db.finish(key())


def test_malformed_rows_are_skipped_with_one_warning_and_the_good_rows_kept(tmp_path):
    path = tmp_path / "edited.sqlite"
    good_database(path)
    corrupt(path, key().digest, MALFORMED)
    with TuningDatabase(path) as db, pytest.warns(RuntimeWarning) as caught:
        assert db.best(key()).latency == 1.5
        assert set(db.results(key())) == {'{"block": 64}', '{"block": 128}'}
    (warning,) = [str(w.message) for w in caught]  # one warning for every row, not one per read
    assert str(path) in warning and f"skipped {len(MALFORMED)} malformed row(s)" in warning
    for rowid in range(3, 3 + 5):  # the first five rows are named with their row ids (the rest counted)
        assert f"results row {rowid} " in warning
    assert "latency 'fast' is not a number" in warning and "-1.0 is not a finite number >= 0" in warning
    assert "and 4 more" in warning


def test_malformed_tunings_rows_are_skipped_when_listing_and_merging(tmp_path, capsys):
    a, b, out = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "out.sqlite"
    good_database(a)
    corrupt(a, key().digest, MALFORMED[:2])
    with sqlite3.connect(a) as db:  # a tuning whose `complete` is not 0/1 and one with a truncated signature
        db.execute("INSERT INTO tunings VALUES ('x', 'k2', '[]', 'c', 'dev', 'arch', 'v', 1, 'yes', 0)")
        db.execute("INSERT INTO tunings VALUES ('y', 'k3', '[1, ', 'c', 'dev', 'arch', 'v', 1, 1, 0)")
    with pytest.warns(RuntimeWarning) as caught:
        assert main(["tune", "--list", str(a)]) == 0
    tunings, results = sorted((str(w.message) for w in caught), key=lambda m: "results row" in m)
    assert (
        "a.sqlite: skipped 2 malformed row(s)" in tunings
        and "tunings row 2 (kernel 'k2'): complete 'yes'" in tunings
    )
    assert "tunings row 3 (kernel 'k3'): signature '[1, ' is not JSON" in tunings
    assert "results row 3" in results and "results row 4" in results
    listed = capsys.readouterr().out
    assert "complete, best {'block': 128} 1.5 ms" in listed and "k2" not in listed and "k3" not in listed
    with TuningDatabase(b) as db:  # b's row for block=64 is malformed: a's good one must stay
        db.begin(key(), 2)
        db.finish(key())
    corrupt(b, key().digest, [('{"block": 64}', OK, -3.0, "", None)])
    with pytest.warns(RuntimeWarning, match="malformed"):
        assert merge_databases([a, b], out) == 2
    with TuningDatabase(out) as db:
        assert {r.config: r.latency for r in db.results(key()).values()} == {'{"block": 64}': 2.0,
                                                                             '{"block": 128}': 1.5}  # fmt: skip
        assert [t["kernel"] for t in db.tunings()] == ["k"]


def test_a_database_whose_tables_lack_columns_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE results (key TEXT, config TEXT, status TEXT)")
    with pytest.raises(
        TuningDatabaseError, match="table results has no column latency, error, compile_seconds"
    ):
        TuningDatabase(path)


def test_a_deployment_uses_the_good_rows_of_an_edited_database(tmp_path, monkeypatch):
    db = tmp_path / "tuning.sqlite"
    tuned = make_kernel(db)(200)
    best = dict(rows(db, "SELECT config, latency FROM results"))
    slower = max(best, key=best.get)
    with sqlite3.connect(db) as conn:  # the best row's latency becomes text: it must be skipped, not raise
        conn.execute("UPDATE results SET latency = 'fast' WHERE config = ?", (min(best, key=best.get),))

    def no_tuning(self):
        raise AssertionError("a deployment with the tuning database tuned")

    monkeypatch.setattr(Session, "_tune", no_tuning)
    with pytest.warns(RuntimeWarning, match="latency 'fast' is not a number"):
        deployed = make_kernel(db)(200)
    assert deployed.tuning.from_database and deployed.latency == best[slower] != tuned.latency
    check(deployed, 200)


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-1.5"])
def test_the_tuning_caches_record_refuses_latencies_that_are_not_times(bad):
    """The kernel cache's `autotune.json` (read with JSON, which takes NaN and Infinity): a record whose
    best or candidate latency is not a finite time >= 0 is a miss (tuned again), not a best of NaN."""
    from tilecraft.autotuner import record as rec
    from tilecraft.autotuner.result import CandidateResult

    configs = [dict(block=64), dict(block=128)]
    candidates = [CandidateResult(0, configs[0], OK, 2.0), CandidateResult(1, configs[1], OK, 1.0)]
    raw = rec.record_files(1, 1.0, None, "f", candidates)[rec.RECORD_FILE].decode()
    assert rec.parse_record(raw.encode(), configs).best == 1
    assert rec.parse_record(raw.replace('"latency": 1.0', f'"latency": {bad}').encode(), configs) is None
    assert rec.parse_record(raw.replace('"latency": 2.0', f'"latency": {bad}').encode(), configs) is None
