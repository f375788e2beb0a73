"""`tilecraft opt -p PASS[,PASS] FILE [--target T]`: run passes of a target's pipeline on printed IR.

FILE holds printed IR (`func.script()`, a `TILECRAFT_DUMP_IR` file, or this command's own output; `-` reads
standard input). The named passes run in the order given, each the pass of that name in the pipeline that
lowers for the target (the first, where a pipeline runs one twice), with a pass context like the one
`tilecraft.lower` makes; the result is printed. Before/after pass tests are written from its output
(docs/testing.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tilecraft.errors import TilecraftError


class OptError(TilecraftError):
    """A `tilecraft opt` input the command cannot use."""


def add_parser(commands: Any) -> None:
    text = "run passes of a target's pipeline on printed IR and print the result"
    opt = commands.add_parser("opt", help=text, description=text)
    opt.add_argument("file", help="printed IR (func.script(), a TILECRAFT_DUMP_IR file); - reads stdin")
    opt.add_argument("-p", "--passes", required=True, metavar="PASS[,PASS]",
                     help="the passes to run, in order, by name (see the target's pipeline)")  # fmt: skip
    opt.add_argument("--target", default="auto", help="the target whose pipeline the passes come from")
    opt.add_argument("-o", "--output", type=Path, help="write the result here instead of stdout")
    opt.set_defaults(run=cmd_opt, takes_args=True)


def cmd_opt(args: Any) -> int:
    text, path = _read(args.file)
    result = run_passes(text, [p for p in args.passes.split(",") if p], args.target, path)
    if args.output is None:
        sys.stdout.write(result)
    else:
        args.output.write_text(result)
    return 0


def run_passes(text: str, pass_names: list[str], target: str = "auto", path: str | None = None) -> str:
    """The printed IR after running `pass_names` of `target`'s pipeline on the printed IR `text`."""
    from tilecraft.backend import create_backend_context
    from tilecraft.backend.pipeline import PassContext, PassPipeline
    from tilecraft.ir import IRModule
    from tilecraft.ir.printer import print_ir
    from tilecraft.language import parse_script

    ctx = create_backend_context(target, require_available=False)
    pipeline = ctx.backend.pipelines[ctx.target.kind]
    if not pass_names:
        raise OptError("-p names no pass")
    passes = []
    for name in pass_names:
        if name not in pipeline.pass_names:
            valid = ", ".join(dict.fromkeys(pipeline.pass_names))
            raise OptError(f"the pipeline of {ctx.target} has no pass {name!r}; its passes: {valid}")
        passes.append(pipeline.passes[pipeline.pass_names.index(name)])
    parsed = parse_script(text, path)
    mod = parsed if isinstance(parsed, IRModule) else IRModule.from_func(parsed)
    mod = PassPipeline(pipeline.name, tuple(passes)).run(mod, PassContext(ctx.target, {}, ctx))
    return print_ir(mod)


def _read(file: str) -> tuple[str, str]:
    if file == "-":
        return sys.stdin.read(), "<stdin>"
    path = Path(file)
    if not path.is_file():
        raise OptError(f"no such file: {file}")
    return path.read_text(), str(path)
