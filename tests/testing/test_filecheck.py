"""The FileCheck-style helper: each directive holds or fails with a message that says where and why."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.testing.filecheck import FileCheckError, check_directives, filecheck

SOURCE = """\
__kernel void k(__global float* A, __global float* B) {
  __local float s[128];
  s[tx] = A[tx];
  barrier(CLK_LOCAL_MEM_FENCE);
  B[tx] = s[127 - tx];

  return;
}
"""


def fails(checks: str, text: str = SOURCE) -> str:
    with pytest.raises(FileCheckError) as info:
        filecheck(text, checks, name="k.cl")
    return str(info.value)


def test_checks_in_order_pass():
    filecheck(SOURCE, "CHECK: s[tx] = A[tx];\nCHECK: barrier(\nCHECK: B[tx] = s[")


def test_out_of_order_lines_fail_and_say_so():
    message = fails("CHECK: barrier(\nCHECK: s[tx] = A[tx];")
    assert "CHECK: s[tx] = A[tx];  (checks:2)" in message
    assert "occurs earlier, at line 3 (out of order?)" in message
    assert "previous match: the match of CHECK: barrier( (line 4)" in message


def test_a_missing_line_fails_naming_the_closest_line():
    message = fails("CHECK: s[tx] = A[tx];\nCHECK: B[tx] = s[127 + tx];")
    assert "not found after the previous match" in message
    assert "the closest line is 5: 'B[tx] = s[127 - tx];'" in message
    assert "k.cl around line 3:" in message


def test_the_failure_shows_the_text_around_the_position_with_markers():
    message = fails("CHECK: barrier(\nCHECK-NEXT: return;")
    assert "  * 4 | " in message  # the previous match
    assert "  > 5 |   B[tx] = s[127 - tx];" in message  # the line CHECK-NEXT looked at
    assert "it occurs at line 7" in message


def test_check_next_must_be_on_the_following_line():
    filecheck(SOURCE, "CHECK: s[tx] = A[tx];\nCHECK-NEXT: barrier(")
    assert "not found on the line after the previous match (line 2); it occurs at line 4" in fails(
        "CHECK: __local\nCHECK-NEXT: barrier("
    )


def test_check_same_continues_on_the_matched_line():
    filecheck(SOURCE, "CHECK: s[tx] =\nCHECK-SAME: A[tx]")
    # CHECK-SAME searches after the previous match, not before it
    assert "on the same line as" in fails("CHECK: A[tx]\nCHECK-SAME: s[tx]")


def test_check_not_holds_only_between_the_surrounding_matches():
    filecheck(SOURCE, "CHECK: barrier(\nCHECK-NOT: barrier(\nCHECK: return;")
    filecheck(SOURCE, "CHECK: B[tx]\nCHECK-NOT: A[tx]")  # A[tx] occurs only before
    message = fails("CHECK: s[tx] = A[tx];\nCHECK-NOT: barrier(\nCHECK: B[tx]")
    assert "CHECK-NOT: barrier(" in message
    assert "matched at line 4, between the match of CHECK: s[tx] = A[tx]; (line 3)" in message
    assert "and the match of CHECK: B[tx] (line 5)" in message


def test_a_trailing_check_not_covers_the_rest_of_the_text():
    message = fails("CHECK: s[tx] = A[tx];\nCHECK-NOT: return")
    assert "matched at line 7" in message and "the end of the text" in message


def test_a_leading_check_not_covers_the_text_before_the_first_match():
    filecheck(SOURCE, "CHECK-NOT: barrier(\nCHECK: s[tx] = A[tx];")
    assert "the start of the text" in fails("CHECK-NOT: __local\nCHECK: s[tx]")


def test_check_not_on_the_same_line_as_the_next_match_stops_at_it():
    filecheck("a b c", "CHECK: a\nCHECK-NOT: c\nCHECK: b")
    assert "matched at line 1" in fails("CHECK: a\nCHECK-NOT: c\nCHECK: b", "a c b")


def test_check_empty_wants_a_blank_next_line():
    filecheck(SOURCE, "CHECK: B[tx]\nCHECK-EMPTY:\nCHECK-NEXT: return;")
    assert "expected a blank line" in fails("CHECK: barrier(\nCHECK-EMPTY:")


def test_two_matches_on_one_line_advance_past_each_other():
    filecheck("x = f(a) + f(b)", "CHECK: f(a)\nCHECK: f(b)")
    assert "out of order" in fails("CHECK: f(b)\nCHECK: f(a)", "x = f(a) + f(b)")


def test_whitespace_runs_and_regex_parts():
    filecheck("int   x  =  3;", "CHECK: int x = {{[0-9]+}};")
    assert "not found" in fails("CHECK: int x = {{[a-z]+}};", "int x = 3;")


def test_patterns_are_literal_outside_regex_parts():
    filecheck("a[i] = (b + c) * 2;", "CHECK: a[i] = (b + c) * 2;")
    fails("CHECK: a.i", "abi")  # '.' is a dot, not any character


def test_relative_directives_cannot_come_first():
    assert "cannot be the first directive" in fails("CHECK-NEXT: s[tx]")


def test_misspelled_and_empty_directives_are_errors():
    with pytest.raises(FileCheckError, match="unknown directive CHECK-NXT:"):
        check_directives("CHECK: a\nCHECK-NXT: b")
    with pytest.raises(FileCheckError, match="empty pattern"):
        check_directives("CHECK:")
    with pytest.raises(FileCheckError, match="no CHECK: lines"):
        filecheck(SOURCE, "nothing to check here")


def test_other_prefixes_select_their_own_lines():
    checks = "SM80: cp.async\nSM90: tma_load\nCHECK: both"
    filecheck("cp.async\nboth", checks, prefix="SM80")
    filecheck("tma_load", checks, prefix="SM90")
    assert [d.kind for d in check_directives(checks, prefix="SM90")] == ["SM90"]


@T.prim_func
def staged(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
    # CHECK: s[tx] = A[tx];
    # CHECK-NEXT: barrier(
    # CHECK: B[tx] = s[
    with T.Kernel(1, threads=128):
        s = T.alloc_shared((128,), "float32")
        tx = T.get_thread_binding(0)
        s[tx] = A[tx]
        T.sync_threads()
        B[tx] = s[127 - tx]


def test_directives_are_read_from_a_kernels_comments():
    directives = check_directives(staged)
    assert [d.kind for d in directives] == ["CHECK", "CHECK-NEXT", "CHECK"]
    assert directives[0].where.endswith(f"test_filecheck.py:{staged.span.line + 1}")
    filecheck(SOURCE, staged)


def test_directives_are_read_from_a_python_function():
    def golden():
        # CHECK: return;
        pass

    filecheck(SOURCE, golden)
    assert check_directives(golden)[0].pattern == "return;"
