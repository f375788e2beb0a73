"""Passes and pipelines: naming, running, timing, IR dumps and how errors inside passes are reported."""

import io
from dataclasses import dataclass

import pytest

from tilecraft import settings
from tilecraft.backend import Pass, PassContext, PassPipeline, Target, module_pass
from tilecraft.backend.errors import PassError
from tilecraft.backend.instrument import IRDumper, PassTiming
from tilecraft.errors import BackendError, KernelError, LoweringError
from tilecraft.ir import IRModule, Span


@pytest.fixture
def scripted(monkeypatch):
    """`IRModule.script()` made deterministic, so these tests do not depend on the printer."""
    monkeypatch.setattr(IRModule, "script", lambda self: f"steps = {self.attr('steps', ())!r}\n")


def step(name):
    @module_pass(name)
    def add_step(mod, ctx):
        """Appends its name to the module's `steps` attribute."""
        return mod.with_attr("steps", (*mod.attr("steps", ()), name))

    return add_step


def run(passes, mod=None, instrument=None, configs=None):
    ctx = PassContext(Target("toyk"), configs or {})
    return PassPipeline("toyk", passes).run(mod or IRModule(), ctx, instrument)


def test_passes_run_in_order():
    out = run((step("first"), step("second"), step("third")))
    assert out.attr("steps") == ("first", "second", "third")


def test_class_based_pass_with_options():
    @dataclass(frozen=True)
    class AddOffset(Pass):
        """The module's `offset` attribute grows by `amount`."""

        name = "add-offset"
        amount: int = 1

        def __call__(self, mod, ctx):
            return mod.with_attr("offset", mod.attr("offset", 0) + self.amount)

    out = run((AddOffset(), AddOffset(amount=5)))
    assert out.attr("offset") == 6
    assert AddOffset().doc == "The module's `offset` attribute grows by `amount`."


def test_pass_names_must_be_kebab_case():
    with pytest.raises(BackendError, match="must be kebab-case"):
        module_pass("Not_Kebab")
    with pytest.raises(BackendError, match="must be kebab-case"):

        class Bad(Pass):
            name = "bad name"


def test_describe_lists_the_order_with_docs():
    pipeline = PassPipeline("toyk", (step("first"), step("second")))
    assert pipeline.pass_names == ("first", "second")
    assert (
        pipeline.describe().splitlines()[1]
        == "  2 second  Appends its name to the module's `steps` attribute."
    )


def test_timing_instrument_records_every_pass():
    timing = PassTiming()
    run((step("first"), step("second")), instrument=timing)
    assert [name for name, _ in timing.records] == ["first", "second"]
    table = timing.table()
    assert "pass timing (pipeline 'toyk')" in table
    assert "first" in table and "second" in table and "total" in table


def test_pass_timing_setting_prints_a_table(capsys):
    with settings.override(TILECRAFT_PASS_TIMING=True):
        run((step("first"),))
    assert "pass timing (pipeline 'toyk')" in capsys.readouterr().err


def test_dump_ir_setting_writes_numbered_files(tmp_path, scripted):
    with settings.override(TILECRAFT_DUMP_IR=tmp_path / "dumps"):
        run((step("first"), step("second")))
    files = sorted(p.name for p in (tmp_path / "dumps").iterdir())
    assert files == ["00-input.py", "01-first.py", "02-second.py"]
    assert (tmp_path / "dumps" / "02-second.py").read_text().endswith("steps = ('first', 'second')\n")
    assert (tmp_path / "dumps" / "00-input.py").read_text().endswith("steps = ()\n")


def test_dump_ir_is_off_outside_the_override(tmp_path, scripted):
    with settings.override(TILECRAFT_DUMP_IR=tmp_path / "dumps"):
        pass
    run((step("first"),))
    assert not (tmp_path / "dumps").exists()


def test_dump_survives_a_failing_printer(tmp_path, monkeypatch):
    def broken(self):
        raise RuntimeError("printer not ready")

    monkeypatch.setattr(IRModule, "script", broken)
    dumper = IRDumper(tmp_path)
    run((step("first"),), instrument=dumper)
    assert "script() failed: RuntimeError: printer not ready" in (tmp_path / "01-first.py").read_text()
    assert len(dumper.written) == 2


def test_dump_numbers_widen_for_long_pipelines(tmp_path, scripted):
    run(tuple(step(f"p{i}") for i in range(100)), instrument=IRDumper(tmp_path))
    assert (tmp_path / "000-input.py").exists() and (tmp_path / "100-p99.py").exists()


def test_a_bug_in_a_pass_becomes_pass_error():
    @module_pass("divide-things")
    def divide(mod, ctx):
        return 1 / 0

    with pytest.raises(PassError) as info:
        run((step("first"), divide))
    err = info.value
    assert str(err).startswith("pass 'divide-things' failed")
    assert "ZeroDivisionError: division by zero" in str(err)
    assert "target toyk" in str(err)
    assert isinstance(err.__cause__, ZeroDivisionError)
    assert err.pass_name == "divide-things"


def test_a_non_tilecraft_error_with_a_span_keeps_the_location():
    class SpannedError(ValueError):
        span = Span("kernel.py", 12, 4)

    @module_pass("spanned")
    def spanned(mod, ctx):
        raise SpannedError("bad index")

    with pytest.raises(PassError, match=r"pass 'spanned' failed .*kernel.py:12:5: SpannedError: bad index"):
        run((spanned,))


def test_lowering_errors_keep_their_class_location_and_gain_the_pass_name():
    @module_pass("lower-tile-copy")
    def lower(mod, ctx):
        raise LoweringError("copy with a stride is not supported", Span("kernel.py", 7, 8), target="toyk")

    with pytest.raises(LoweringError) as info:
        run((lower,))
    text = str(info.value)
    assert text.startswith("kernel.py:7:9: copy with a stride is not supported (target: toyk)")
    assert text.endswith("note: raised in pass 'lower-tile-copy' of pipeline 'toyk'")
    assert info.value.pass_name == "lower-tile-copy"
    assert isinstance(info.value, KernelError)


def test_nested_pipelines_name_the_innermost_pass():
    @module_pass("inner-fails")
    def inner(mod, ctx):
        raise KernelError("inner problem")

    @module_pass("outer")
    def outer(mod, ctx):
        return PassPipeline("toyk", (inner,)).run(mod, ctx)

    with pytest.raises(KernelError) as info:
        run((outer,))
    assert info.value.pass_name == "inner-fails"
    assert str(info.value).count("note:") == 1


def test_a_pass_must_return_a_module():
    @module_pass("forgets-return")
    def forgets(mod, ctx):
        pass

    with pytest.raises(PassError, match="pass 'forgets-return' failed .*returned NoneType, not an IRModule"):
        run((forgets,))


def test_pass_context_configs_are_read_only():
    ctx = PassContext(Target("toyk"), {"a": 1})
    assert ctx.config("a") == 1 and ctx.config("b", 2) == 2
    with pytest.raises(TypeError):
        ctx.pass_configs["a"] = 2
    ctx.scratch["note"] = "passes may share facts here"


def test_timing_table_can_go_to_a_stream():
    stream = io.StringIO()
    run((step("first"),), instrument=PassTiming(stream=stream))
    assert "first" in stream.getvalue()
