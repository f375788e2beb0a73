"""Long fuzz hunts that keep every failure, for triage (the test stops at the first one).

    python -m tests.fuzz.hunt --examples 300 --targets c opencl --out hunt.json --minimize

Each example is seeded (case i of a family is RandomChooser(i)), so `--start i --examples 1` replays it.
With `--minimize`, a failing elementwise case is shrunk (simpler expression, layout and sizes) while it
keeps failing the same way; the smaller kernel is stored next to the original.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator

from tests.conformance.targets import declared_cases, resolve
from tests.fuzz.cases import FAMILIES, Case, Elementwise, elementwise_from
from tests.fuzz.choices import RandomChooser
from tests.fuzz.expressions import Node, const, input_leaf
from tests.fuzz.numerics import is_float
from tests.fuzz.runner import CompileFailure, Unsupported, problems


def outcome(case: Case, ctx, seed: int) -> tuple[str, list[str]]:
    """('ok' | 'fail' | 'compile' | 'error' | 'unsupported', details)."""
    try:
        found = problems(case, ctx, seed)
    except Unsupported as err:
        return "unsupported", [str(err).splitlines()[0]]
    except CompileFailure as err:
        return "compile", str(err).splitlines()[:4]
    except Exception as err:  # noqa: BLE001 - a crash of the run is a finding too
        return "error", traceback.format_exception_only(type(err), err)[-1:]
    return ("fail" if found else "ok"), found


# ------------------------------------------------------------------------------------ minimizing


def subtrees(node: Node, path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Node]]:
    yield path, node
    for k, arg in enumerate(node.args):
        yield from subtrees(arg, (*path, k))


def replaced(node: Node, path: tuple[int, ...], new: Node) -> Node:
    if not path:
        return new
    args = list(node.args)
    args[path[0]] = replaced(args[path[0]], path[1:], new)
    return dataclasses.replace(node, args=tuple(args))


def renumbered(node: Node, mapping: dict[int, int]) -> Node:
    """`node` with input k read as input mapping[k]."""
    if node.op == "input":
        return dataclasses.replace(node, attr=mapping[node.attr])
    return dataclasses.replace(node, args=tuple(renumbered(a, mapping) for a in node.args))


def simpler_nodes(node: Node, input_dtypes: list[str]) -> Iterator[Node]:
    """Replacements of `node` that keep every value safe: never larger in bound, never a guard."""
    if node.guard or node.op in ("input", "const"):
        return
    options = [a for a in node.args if a.dtype == node.dtype]
    if node.dtype != "bool":
        options += [input_leaf(d, k) for k, d in enumerate(input_dtypes) if d == node.dtype]
        options.append(const(node.dtype, 1.0 if is_float(node.dtype) else 1))
    for option in options:
        if not is_float(node.dtype) or option.bound <= node.bound:
            yield option


def simpler_specs(spec: Elementwise) -> Iterator[Elementwise]:
    first = spec.run_sizes[0]
    if spec.dynamic:
        yield dataclasses.replace(spec, dynamic=False, run_sizes=[first])
    if spec.layout != "direct1d":
        n = first["n"] * first.get("m", 1)
        yield dataclasses.replace(spec, layout="direct1d", block=(64,), broadcast=["full"] * len(spec.broadcast),
                                  run_sizes=[{"n": n}], pad=0)  # fmt: skip
    used = sorted(set().union(*(e.uses() for e in spec.exprs)))
    if len(used) < len(spec.input_dtypes) and used:
        yield dataclasses.replace(spec, exprs=[renumbered(e, {old: new for new, old in enumerate(used)}) for e in spec.exprs],
                                  input_dtypes=[spec.input_dtypes[k] for k in used], broadcast=[spec.broadcast[k] for k in used],
                                  scopes=[spec.scopes[k] for k in used])  # fmt: skip
    for k in range(len(spec.exprs) if len(spec.exprs) > 1 else 0):
        yield dataclasses.replace(
            spec, exprs=_without(spec.exprs, k), out_dtypes=_without(spec.out_dtypes, k)
        )
    for k, expr in enumerate(spec.exprs):
        for path, node in subtrees(expr):
            for option in simpler_nodes(node, spec.input_dtypes):
                exprs = list(spec.exprs)
                exprs[k] = replaced(expr, path, option)
                yield dataclasses.replace(spec, exprs=exprs)
    for key, value in first.items():
        if value > 1:
            yield dataclasses.replace(
                spec, run_sizes=[{**first, key: max(1, value // 2)}, *spec.run_sizes[1:]]
            )
    if spec.threads != 128 or spec.pad:
        yield dataclasses.replace(spec, threads=128, pad=0)


def _without(items: list, k: int) -> list:
    return items[:k] + items[k + 1 :]


def minimize(spec: Elementwise, still_fails: Callable[[Elementwise], bool], budget: int = 150) -> Elementwise:
    """The smallest variant found (within `budget` tries, each a compile) for which `still_fails`."""
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for candidate in simpler_specs(spec):
            tries += 1
            if still_fails(candidate):
                spec, improved = candidate, True
                break
            if tries >= budget:
                break
    return spec


# ---------------------------------------------------------------------------------------- driver


def contexts(kinds: list[str]) -> dict[str, object]:
    found = {}
    for case in declared_cases():
        if case.kind in kinds and case.kind not in found:
            try:
                found[case.kind] = resolve(case)
            except BaseException as err:  # noqa: BLE001 - pytest.skip says why a target is absent
                print(f"{case.id}: not available: {err}", file=sys.stderr)
    return found


def hunt(args: argparse.Namespace) -> list[dict]:
    records = []
    for kind, ctx in contexts(args.targets).items():
        for family in args.families:
            for seed in range(args.start, args.start + args.examples):
                case = FAMILIES[family](RandomChooser(seed))
                began = time.time()
                status, details = outcome(case, ctx, seed)
                record = {"target": kind, "family": family, "seed": seed, "status": status,
                          "details": details[:8], "source": case.source}  # fmt: skip
                if args.minimize and status in ("fail", "compile", "error") and family == "elementwise":
                    same = lambda spec: outcome(elementwise_from(spec), ctx, seed)[0] == status  # noqa: B023, E731
                    small = elementwise_from(minimize(case.spec, same))
                    record["minimized"] = small.source
                    record["minimized_details"] = outcome(small, ctx, seed)[1][:8]
                print(f"{kind} {family} {seed}: {status} ({time.time() - began:.1f} s)", flush=True)
                records.append(record)
                if args.out:
                    with open(args.out, "w") as f:
                        json.dump(records, f, indent=1)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=50, help="examples per family and target")
    parser.add_argument("--start", type=int, default=0, help="the first seed")
    parser.add_argument("--targets", nargs="+", default=["c", "opencl", "cuda"], help="target kinds")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--out", help="write the records (JSON) here as they come")
    parser.add_argument("--minimize", action="store_true", help="shrink failing elementwise cases")
    records = hunt(parser.parse_args(argv))
    print(Counter((r["target"], r["family"], r["status"]) for r in records))
    return 1 if any(r["status"] in ("fail", "compile", "error") for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
