"""`tilecraft opt -p PASS[,PASS] FILE --target T`: passes run on printed IR, and its errors."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.tools.cli import main


@T.prim_func
def edge(A: T.Tensor((100,), "float32")):
    with T.Kernel(2, threads=64) as bx:
        for i in T.Parallel(64):
            A[bx * 64 + i] = 1.0


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main(["opt", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_passes_run_in_order_on_printed_ir(tmp_path, capsys):
    path = tmp_path / "edge.py"
    path.write_text(edge.script())
    status, out, err = run(capsys, "-p", "guard-accesses,split-host-device", str(path), "--target", "cpu")
    assert status == 0, err
    assert "if bx * 64 + i < 100:" in out
    assert "T.ir.KernelCall(symbol='edge_kernel0', args=(A,), grid=(2,), threads=(64,))" in out
    # its output is input again
    path.write_text(out)
    status, again, err = run(capsys, "-p", "plan-block-storage", str(path), "--target", "cpu")
    assert status == 0, err
    assert "'tilecraft.arena_bytes': 0" in again


def test_an_unknown_pass_lists_the_pipelines_passes(tmp_path, capsys):
    path = tmp_path / "edge.py"
    path.write_text(edge.script())
    status, _, err = run(capsys, "-p", "guard-access", str(path), "--target", "cpu")
    assert status == 1
    assert "has no pass 'guard-access'; its passes: check-target-support, flatten-thread-dims, lower-thread-allreduce, run-work-items" in err
    assert "guard-accesses" in err


def test_a_parse_error_names_the_file_line_and_column(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text(edge.script().replace("A[bx * 64 + i] = 1.0", "A[bx * 64 + i] = T.no_such(1.0)"))
    status, _, err = run(capsys, "-p", "guard-accesses", str(path), "--target", "cpu")
    assert status == 1
    assert f"{path}:8:30: " in err and "no_such" in err
    path.write_text("import tilecraft.language as T\n\ndef f(:\n")
    status, _, err = run(capsys, "-p", "guard-accesses", str(path), "--target", "cpu")
    assert status == 1
    assert f"{path}:3:7: invalid syntax" in err


def test_a_missing_file_is_an_error(tmp_path, capsys):
    status, _, err = run(capsys, "-p", "guard-accesses", str(tmp_path / "nope.py"), "--target", "cpu")
    assert status == 1
    assert f"no such file: {tmp_path / 'nope.py'}" in err
