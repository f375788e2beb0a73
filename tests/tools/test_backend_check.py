"""`tilecraft backend check`: every built-in backend that runs here passes its own audit, and each check
finds what it looks for (tilecraft/tools/audit.py, tilecraft/tools/boundary.py)."""

from __future__ import annotations

import io
import re
import textwrap

import pytest

from tests.required import skip_unless_required
from tilecraft.errors import BackendError
from tilecraft.testing.conformance import FAIL, PASS, SKIP, Verdict
from tilecraft.tools import audit, boundary
from tilecraft.tools.cli import CheckProgress, main


@pytest.mark.parametrize("name, execution", [("c", "cc"), ("opencl", "opencl")])
def test_a_builtin_backend_passes_its_own_check(name, execution, capsys):
    """The same verdicts as tests/conformance (the same kit): every row passes or skips with a reason."""
    from tilecraft.execution import get_spec

    status = get_spec(execution).check()
    if not status.ok:
        skip_unless_required(execution, f"execution backend {execution} unavailable: {status.reason}")
    code = main(["backend", "check", name, "--verbose"])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, out
    rows = [line for line in out.splitlines() if line.startswith(("codegen ", "compile ", "conformance "))]
    assert any(line.startswith(f"conformance {name}-{execution} ") and " pass " in line for line in rows), out
    assert " fail " not in out and "0 failed" in out, out
    # Progress on stderr while the rows run: with --verbose and no terminal, a line per kernel.
    progress = re.findall(
        rf"^  conformance {name}-{execution}: (\d+)/(\d+) kernels \(\w+\)$", captured.err, re.M
    )
    assert progress and progress[0][0] == "1" and progress[-1][0] == progress[-1][1], captured.err[-2000:]


def test_progress_is_one_line_rewritten_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    progress = CheckProgress(stream, verbose=False)
    progress("codegen", 1, 2, "gemm")
    progress("codegen", 2, 2, "softmax")
    progress.clear()
    assert (
        stream.getvalue()
        == "\r\033[Kcodegen: 1/2 kernels (gemm)\r\033[Kcodegen: 2/2 kernels (softmax)\r\033[K"
    )
    quiet = io.StringIO()  # a log without --verbose: nothing
    CheckProgress(quiet, verbose=False)("codegen", 1, 2, "gemm")
    assert quiet.getvalue() == ""


def test_each_reports_every_kernel_in_order():
    heard = []
    report = audit._reporter(lambda *a: heard.append(a), "conformance c-cc", total=3, before=1)
    for jobs in (1, 2):
        heard.clear()
        items = audit._each(["a", "b"], lambda t: Verdict(PASS), jobs, name=str, report=report)
        assert [i.name for i in items] == ["a", "b"]
        assert heard == [("conformance c-cc", 2, 3, "a"), ("conformance c-cc", 3, 3, "b")]


def test_a_kind_must_declare_its_capabilities_and_the_manifest_their_limits():
    """The target-kind row fails for a kind without a capabilities function, and for a record whose limit
    keys the manifest leaves out of `unsupported`."""
    import dataclasses

    from tilecraft.backend.registry import isolated_registry
    from tilecraft.backend.target_kind import TargetKind, register_target_kind
    from tilecraft.cuda.backend import CUDA_BACKEND

    row = audit._kind_row("cuda", CUDA_BACKEND)
    assert row.verdict.status == PASS and "capabilities declared" in row.verdict.reason
    undeclared = audit._kind_row("cuda", dataclasses.replace(CUDA_BACKEND, unsupported={}))
    assert undeclared.verdict.status == FAIL and "report limit(s) resource:shared-memory" in undeclared.verdict.reason
    with isolated_registry():
        register_target_kind(TargetKind("toynocaps", examples=("toynocaps",)))
        bare = audit._kind_row("toynocaps", CUDA_BACKEND)
    assert bare.verdict.status == FAIL and "kind toynocaps declares no capabilities" in bare.verdict.reason


def test_an_unknown_backend_is_an_error_listing_the_registered_ones(capsys):
    assert main(["backend", "check", "no-such-backend"]) == 1
    err = capsys.readouterr().err
    assert "tilecraft backend check: error: no backend or target kind named 'no-such-backend'" in err
    assert "registered backends: cpu (kinds c)" in err


def test_an_execution_backend_the_backend_does_not_declare_is_an_error(capsys):
    assert main(["backend", "check", "c", "--execution", "nvrtc"]) == 1
    captured = capsys.readouterr()
    assert "backend 'cpu' declares no execution backend 'nvrtc'; declared: cc" in captured.err
    assert captured.out == ""


def test_a_backend_is_found_by_name_kind_or_alias():
    assert audit.find_backend("cpu") is audit.find_backend("c")
    with pytest.raises(BackendError, match="no backend or target kind named 'cpux'"):
        audit.find_backend("cpux")


def test_a_row_sums_up_its_kernels():
    items = [audit.Item("a", Verdict(PASS)), audit.Item("b", Verdict(SKIP, "declared unsupported"))]
    assert audit._row("codegen", items, "t: ").verdict == Verdict(PASS, "t: 1 pass, 1 skip")
    failed = audit._row("codegen", [*items, audit.Item("c", Verdict(FAIL, "LoweringError: x"))])
    assert failed.verdict == Verdict(FAIL, "1 pass, 1 fail, 1 skip: c")
    skipped = audit._row("codegen", [audit.Item("b", Verdict(SKIP, "no compiler here: nvcc not found"))])
    assert skipped.verdict == Verdict(SKIP, "no compiler here: nvcc not found")


@pytest.mark.parametrize("source, found", [
    ('doc = "lowered for the toyk target"', ["'toyk' in string"]),
    ('KIND = "toy-k"', ["'toy-k' in string"]),
    ("def launch_toyk(): pass", ["'toyk' in identifier 'launch_toyk'"]),
    ("class ToykBackend: pass", ["'toyk' in identifier 'ToykBackend'"]),
    ('fmt = "c"', ["'c' in string 'c'"]),
    ('doc = "toyks and toyking"', []),
    ('name = "TILECRAFT_TOYK_HOME"', []),
    ('fmt = "c-source"', []),
    ("c = a + b", []),
])  # fmt: skip
def test_naming_a_backend_is_found_as_a_word_or_an_identifier_part(source, found):
    problems = [problem for _, problem in boundary.naming_violations(source, ("toyk", "toy-k", "c"))]
    assert len(problems) == len(found), problems
    for words, problem in zip(found, problems):
        assert problem.startswith(words), problems


def test_shared_code_naming_a_backend_is_found(tmp_path):
    root = tmp_path / "tilecraft"
    for relative, text in {
        "transform/passes.py": '"""Lowers for toyk only."""\n',
        "toyk/backend.py": 'KIND = "toyk"\n',  # a backend package: exempt
        "compat/names.py": 'TOYK = "toyk"\n',  # the compatibility layer: exempt
    }.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    assert boundary.shared_code_naming(["toyk"], root) == [
        "tilecraft/transform/passes.py:1: 'toyk' in string 'Lowers for toyk only.'"
    ]


def test_private_tilecraft_imports_are_found(tmp_path, monkeypatch):
    package = tmp_path / "tcaudit_toy"
    package.mkdir()
    (package / "__init__.py").write_text("from tcaudit_toy import backend  # its own package: fine\n")
    (package / "backend.py").write_text(
        textwrap.dedent("""
        import tilecraft.backend._loader
        from tilecraft.backend import API_VERSION, BackendModule, __all__
        from tilecraft.backend.registry import _manifests
        from tilecraft.layout.linear import next_power_of_two, identity
        from tilecraft.testing import conformance
        from . import backend
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    problems = [p.split(": ", 1)[1] for p in boundary.private_imports("tcaudit_toy")]
    assert problems == [
        "imports tilecraft.backend._loader, a private module ('_loader' starts with an underscore)",
        "imports _manifests from tilecraft.backend.registry, a private name",
        "imports next_power_of_two from tilecraft.layout.linear, which does not list it in __all__",
    ]
