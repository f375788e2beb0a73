"""The tuner's profile options (TileLang's set_profile_args / @autotune arguments), the progress bar and
set_autotune_inputs. Candidates compile in this process (workers=0) to keep these tests quick."""

from __future__ import annotations

import io

import numpy as np
import pytest

import tilecraft
from tests.autotuner.kernels import add_factory, reference
from tilecraft.autotuner import AutoTuner, set_autotune_inputs
from tilecraft.autotuner.progress import Progress
from tilecraft.autotuner.result import OK, WRONG_RESULT

N = 256
CONFIGS = [dict(block=64), dict(block=32)]


def run(configs=CONFIGS, **profile):
    tuner = AutoTuner.from_kernel(add_factory(N), configs).set_compile_args(out_idx=[-1], target="c")
    return tuner.set_profile_args(**profile).run(warmup=1, rep=2, workers=0, retune=True)


def test_set_autotune_inputs_measures_on_the_callers_arrays():
    a, b = np.full(N, 2.0, np.float32), np.full(N, 3.0, np.float32)
    seen = []
    with set_autotune_inputs(a, b):
        run(ref_prog=lambda x, y: seen.append((x, y)) or reference(x, y))
    assert seen and all(x is a and y is b for x, y in seen)


def test_supply_prog_gets_the_input_parameters():
    got = []

    def supply(params):
        got.append([(p.name, str(p.dtype)) for p in params])
        return [np.ones(N, np.float32), np.zeros(N, np.float32)]

    result = run(supply_prog=supply, ref_prog=lambda x, y: np.full(N, 2.0, np.float32))
    assert got[0] == [("A", "float32"), ("B", "float32")]
    assert [c.status for c in result.candidates] == [OK, OK]


def test_cache_input_tensors_reuses_one_set_of_inputs():
    seen = []
    run(cache_input_tensors=True, ref_prog=lambda x, y: seen.append(id(x)) or reference(x, y))
    assert len(seen) >= 2 and len(set(seen)) == 1


def test_manual_check_prog_decides_what_is_wrong():
    def only_first_half(outputs, expected):
        np.testing.assert_allclose(np.asarray(outputs[0])[: N // 2], np.asarray(expected[0])[: N // 2])

    configs = [dict(block=64), dict(block=32, fault="wrong")]
    result = run(configs, ref_prog=reference, manual_check_prog=only_first_half)
    assert [c.status for c in result.candidates] == [OK, WRONG_RESULT]


def test_skip_check_measures_wrong_candidates_too():
    configs = [dict(block=64), dict(block=32, fault="wrong")]
    result = run(configs, ref_prog=reference, skip_check=True)
    assert [c.status for c in result.candidates] == [OK, OK]


def test_early_stop_still_picks_a_measured_candidate():
    tuner = AutoTuner.from_kernel(add_factory(N), CONFIGS).set_compile_args(out_idx=[-1], target="c")
    result = tuner.run(warmup=1, rep=2, workers=0, retune=True, early_stop=True, early_stop_factor=1.0)
    assert result.config in CONFIGS and all(c.ok for c in result.candidates)
    with pytest.raises(tilecraft.autotuner.ConfigError, match="early_stop_factor"):
        tuner.run(early_stop=True, early_stop_factor=0.5)


class Terminal(io.StringIO):
    def isatty(self):
        return True


def draw(stream):
    with Progress(4, "autotune k: compile", stream) as bar:
        for _ in range(4):
            bar.update("ok")
    return stream.getvalue()


def test_the_progress_bar_draws_on_a_terminal_only():
    assert "4/4" in draw(Terminal())  # tqdm's bar when it is installed, else ours
    assert draw(io.StringIO()) == ""  # a log file or a pipe gets no redrawn lines


def test_without_tqdm_a_small_bar_of_our_own(monkeypatch):
    import tilecraft.autotuner.progress as progress

    monkeypatch.setattr(progress, "_tqdm", lambda *args: None)
    drawn = draw(Terminal())
    assert drawn.startswith("\rautotune k: compile [######") and "] 4/4 " in drawn and drawn.endswith("\n")


def test_inputs_the_tuner_cannot_make_stop_the_tuning_with_the_fix():
    import tilecraft.language as T

    def scale(block=8):
        @T.prim_func
        def main(X: T.Tensor((64,), "float32"), alpha: T.float32, Y: T.Tensor((64,), "float32")):
            with T.Kernel(T.ceildiv(64, block), threads=8) as bx:
                for i in T.Parallel(block):
                    Y[bx * block + i] = X[bx * block + i] * alpha

        return main

    tuner = AutoTuner.from_kernel(scale, [dict(block=8), dict(block=16)]).set_compile_args(
        out_idx=[-1], target="c"
    )
    with pytest.raises(
        tilecraft.autotuner.AutotuneError, match="scalar parameter 'alpha'.*supply_prog=.*set_autotune_inputs"
    ):
        tuner.run(warmup=1, rep=1, workers=0, retune=True)
    x = np.ones(64, np.float32)
    with set_autotune_inputs(x, 2.0):
        assert tuner.run(warmup=1, rep=1, workers=0, retune=True).config in (dict(block=8), dict(block=16))
