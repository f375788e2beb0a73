"""The shared passes of the Metal pipeline, Before/Expected: the shared passes' own tests run again on
the `metal` pipeline (same kernels, same expected IR: these passes know no target, and Metal's SIMD
groups of 32 and 16-byte accesses give the layouts OpenCL's work-groups get). The test modules are
imported as modules, so pytest does not collect their tests twice here."""

from __future__ import annotations

import tests.transform.passes.test_apply_layout_annotations as apply_layout_annotations
import tests.transform.passes.test_guard_accesses as guard_accesses
import tests.transform.passes.test_infer_layouts as infer_layouts
import tests.transform.passes.test_insert_barriers as insert_barriers
import tests.transform.passes.test_lower_buffer_views as lower_buffer_views
import tests.transform.passes.test_lower_to_threads as lower_to_threads
import tests.transform.passes.test_narrow_shared_scopes as narrow_shared_scopes
import tests.transform.passes.test_rasterize_blocks as rasterize_blocks
import tests.transform.passes.test_simplify as simplify
import tests.transform.passes.test_split_host_device as split_host_device
import tests.transform.passes.test_widen_index_arithmetic as widen_index_arithmetic
from tilecraft.testing.passes import pass_test

METAL = "metal -family=apple7"


@pass_test("rasterize-blocks", METAL)
def test_block_indices_are_renumbered_in_panels(target):
    """T.use_swizzle renumbers threadgroups in panels; kernels without it keep their numbering."""
    rasterize_blocks.test_block_indices_are_renumbered_in_panels(target)
    rasterize_blocks.test_kernels_without_the_hint_keep_their_numbering(target)


@pass_test("simplify", METAL)
def test_indices_fold_and_decided_branches_go(target):
    """Indices fold, a guard the bounds prove true is gone, a branch decided false keeps its else."""
    simplify.test_indices_fold_and_a_guard_the_bounds_prove_true_is_gone(target)
    simplify.test_a_branch_the_facts_decide_false_keeps_only_its_else(target)


@pass_test("guard-accesses", METAL)
def test_accesses_past_the_edge_are_guarded(target):
    """Loads past a tensor's edge read zero, stores past it are skipped, accesses inside stay as they are."""
    guard_accesses.test_loads_past_the_edge_read_zero_and_stores_past_it_are_skipped(target)
    guard_accesses.test_accesses_that_stay_inside_are_not_guarded(target)


@pass_test("apply-layout-annotations", METAL)
def test_layout_annotations(target):
    """A permuted global buffer is addressed through its layout; a fragment layout is kept for inference."""
    apply_layout_annotations.test_a_permuted_global_buffer_is_addressed_through_its_layout(target)
    apply_layout_annotations.test_a_fragment_layout_is_kept_for_inference_on_simt_targets(target)


@pass_test("infer-layouts", METAL)
def test_a_fragment_and_its_nests_share_the_default_layout(target):
    """A fragment and the T.Parallel nests over it share the default layout over SIMD groups of 32."""
    infer_layouts.test_a_fragment_and_the_nests_over_it_share_the_default_layout(target)


@pass_test("lower-to-threads", METAL)
def test_a_parallel_nest_runs_per_thread(target):
    """A T.Parallel nest runs one element per thread and the fragment becomes a register."""
    lower_to_threads.test_a_parallel_nest_runs_one_element_per_thread_and_the_fragment_is_a_register(target)


@pass_test("lower-buffer-views", METAL)
def test_views_address_their_base(target):
    """Loads and stores through a view address the base buffer at the flattened index."""
    lower_buffer_views.test_a_view_access_reads_the_base_buffer_at_the_flattened_index(target)
    lower_buffer_views.test_a_store_through_a_view_writes_the_base_buffer(target)


@pass_test("widen-index-arithmetic", METAL)
def test_only_indices_past_int32_widen(target):
    """An index past int32 is computed in int64; indices that fit stay int32."""
    widen_index_arithmetic.test_an_index_past_int32_is_computed_in_int64(target)
    widen_index_arithmetic.test_indices_that_fit_stay_int32(target)


@pass_test("narrow-shared-scopes", METAL)
def test_threadgroup_buffers_are_in_scope_only_while_used(target):
    """A buffer first used after another is done is allocated after it; buffers used together stay nested."""
    narrow_shared_scopes.test_a_buffer_first_used_after_another_is_done_is_allocated_after_it(target)
    narrow_shared_scopes.test_buffers_in_use_at_the_same_time_stay_nested(target)


@pass_test("insert-barriers", METAL)
def test_barriers_separate_threadgroup_hazards(target):
    """Each hazard gets one barrier before its second access, hoisted out of loops and thread conditions."""
    insert_barriers.test_each_hazard_between_threads_gets_a_barrier_before_the_second_access(target)
    insert_barriers.test_a_hazard_before_a_loop_is_resolved_before_it_not_in_every_iteration(target)
    insert_barriers.test_a_loop_that_refills_the_tile_it_reads_has_barriers_in_its_body(target)
    insert_barriers.test_no_barrier_under_a_condition_that_depends_on_the_thread(target)
    insert_barriers.test_code_without_shared_memory_gets_no_barrier(target)


@pass_test("split-host-device", METAL)
def test_each_kernel_is_a_device_function(target):
    """Each T.Kernel is a device function the host function launches in order."""
    split_host_device.test_each_kernel_is_a_device_function_launched_in_order_by_the_host(target)
