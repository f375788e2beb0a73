"""The shared passes of the HIP pipeline, Before/Expected: each runs the Before/Expected pair written for
the other SIMT targets (tests/transform/passes) on a hip target, where the pass must do exactly the same
(none of them depends on the wavefront width or on the target's instructions)."""

from __future__ import annotations

from tests.transform.passes import (
    test_apply_layout_annotations,
    test_guard_accesses,
    test_insert_barriers,
    test_lower_buffer_views,
    test_narrow_shared_scopes,
    test_rasterize_blocks,
    test_simplify,
    test_split_host_device,
    test_widen_index_arithmetic,
)
from tilecraft.testing.passes import pass_test

HIP = "hip -arch=gfx942"


@pass_test("rasterize-blocks", HIP)
def test_block_indices_are_renumbered_in_panels(target):
    """T.use_swizzle renumbers work-groups in panels, as on every SIMT target."""
    test_rasterize_blocks.test_block_indices_are_renumbered_in_panels(target)


@pass_test("simplify", HIP)
def test_indices_fold_and_a_proven_guard_is_gone(target):
    """Index arithmetic folds and a guard the bounds prove true disappears."""
    test_simplify.test_indices_fold_and_a_guard_the_bounds_prove_true_is_gone(target)


@pass_test("guard-accesses", HIP)
def test_loads_past_the_edge_read_zero_and_stores_past_it_are_skipped(target):
    """Global accesses past a tensor's edge are predicated."""
    test_guard_accesses.test_loads_past_the_edge_read_zero_and_stores_past_it_are_skipped(target)


@pass_test("apply-layout-annotations", HIP)
def test_a_fragment_layout_is_kept_for_inference(target):
    """A T.Fragment annotation is kept for layout inference, as on the other SIMT targets."""
    test_apply_layout_annotations.test_a_fragment_layout_is_kept_for_inference_on_simt_targets(target)


@pass_test("lower-buffer-views", HIP)
def test_a_view_access_reads_the_base_buffer(target):
    """An access through a T.Tensor view addresses the viewed buffer."""
    test_lower_buffer_views.test_a_view_access_reads_the_base_buffer_at_the_flattened_index(target)


@pass_test("widen-index-arithmetic", HIP)
def test_an_index_past_int32_is_computed_in_int64(target):
    """An index that may not fit int32 is computed in int64."""
    test_widen_index_arithmetic.test_an_index_past_int32_is_computed_in_int64(target)


@pass_test("narrow-shared-scopes", HIP)
def test_a_buffer_first_used_after_another_is_done_is_allocated_after_it(target):
    """LDS buffers live from first to last use, so a later one can reuse an earlier one's bytes."""
    test_narrow_shared_scopes.test_a_buffer_first_used_after_another_is_done_is_allocated_after_it(target)


@pass_test("insert-barriers", HIP)
def test_each_hazard_between_threads_gets_a_barrier(target):
    """Each LDS hazard between work-items gets a barrier before the second access."""
    test_insert_barriers.test_each_hazard_between_threads_gets_a_barrier_before_the_second_access(target)


@pass_test("split-host-device", HIP)
def test_each_kernel_is_a_device_function_launched_in_order_by_the_host(target):
    """Each T.Kernel becomes a device function the host function launches in order."""
    test_split_host_device.test_each_kernel_is_a_device_function_launched_in_order_by_the_host(target)
