"""`tilecraft backend new NAME --from KIND`: a pip-installable backend package that starts as a renamed
variant of the backend of KIND.

The new backend has its own target kind (NAME: the template kind's attributes, normalizer, detector and
capabilities, never picked by `"auto"`), its own manifest registered through its own entry point, and one module per
layer. What it reuses from the template, it imports: the dialect, the op table (copied into a dict of its
own), the device and host codegen, the execution backends. Only `pipeline.py` is copied, with its imports
of the template's kind and op table pointed at the new package, so the complete pass order is there to
read and edit. Reusing by import keeps the scaffold small and passing `tilecraft backend check` from the
start, and it follows the template's fixes; the price is that it changes when the template changes,
until the author replaces a piece with their own (docs/backends.md).

The template must have the layout of tilecraft's own backends: `<package>/target.py` with `KIND`,
`<package>/op` with `OP_TABLE`, `<package>/pipeline.py` with `PIPELINE`, and its manifest's entry point.
Nothing here names a backend: the template is found through the registry and the entry points.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template as TextTemplate

from tilecraft import __version__
from tilecraft.backend import BackendModule, lookup_target_kind
from tilecraft.backend._loader import BACKENDS, EXECUTION_BACKENDS, plugin_source
from tilecraft.backend.registry import registered_backends
from tilecraft.backend.target_kind import registered_target_kinds
from tilecraft.errors import BackendError
from tilecraft.tools.audit import find_backend

_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class TemplateBackend:
    """Where the template backend's pieces live."""

    manifest: BackendModule
    kind: str
    manifest_module: str
    manifest_attr: str
    package: str


def scaffold(name: str, template_kind: str, out: Path) -> list[Path]:
    """Write the package for backend `name` from the backend of `template_kind` into `out` (which must not
    exist, or be empty); returns the files written."""
    _check_name(name)
    template = _template(template_kind)
    if out.exists() and any(out.iterdir()):
        raise BackendError(f"{out} exists and is not empty; choose another --out")
    files = _files(name, template)
    written = []
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise BackendError(
            f"backend name {name!r} must match {_NAME.pattern} (it is also the target kind's name and part "
            "of the package name)"
        )
    taken = {m.name for m in registered_backends()}
    for kind in registered_target_kinds():
        taken |= {kind.name, *kind.aliases}
    if name in taken:
        raise BackendError(
            f"{name!r} is already a registered backend, target kind or alias; choose another name"
        )


def _template(template_kind: str) -> TemplateBackend:
    manifest = find_backend(template_kind)
    source = plugin_source(BACKENDS, manifest.name)
    if source is None:
        raise BackendError(f"backend {manifest.name!r} has no entry point, so its modules cannot be found")
    module, _, attr = source.partition(":")
    kind = manifest.target_kinds[0]
    if template_kind != manifest.name:
        kind = lookup_target_kind(template_kind).name
    package = module.rpartition(".")[0] or module
    for layer, wanted in (("target", "KIND"), ("op", "OP_TABLE"), ("pipeline", "PIPELINE")):
        if not hasattr(importlib.import_module(f"{package}.{layer}"), wanted):
            raise BackendError(
                f"backend {manifest.name!r} does not have tilecraft's backend layout ({package}.{layer} has no "
                f"{wanted}); start from another backend"
            )
    return TemplateBackend(manifest, kind, module, attr, package)


# ---------------------------------------------------------------- the files


def _files(name: str, t: TemplateBackend) -> dict[str, str]:
    package = f"tilecraft_{name}"
    values = {
        "name": name,
        "package": package,
        "dist": f"tilecraft-{name.replace('_', '-')}",
        "tkind": t.kind,
        "tname": t.manifest.name,
        "tpackage": t.package,
        "tmodule": t.manifest_module,
        "tattr": t.manifest_attr,
        "version": __version__,
        "api": str(t.manifest.api_version),
    }
    files = {
        "pyproject.toml": _fill(PYPROJECT, values),
        "README.md": _fill(README, values),
        f"{package}/__init__.py": _fill(INIT, values),
        f"{package}/target.py": _fill(TARGET, {**values, "examples": _examples(name, t.kind)}),
        f"{package}/language/__init__.py": _fill(
            LANGUAGE, {**values, "dialect": t.manifest.dialect or "tilecraft.language"}
        ),
        f"{package}/op.py": _fill(OP, values),
        f"{package}/pipeline.py": _pipeline(package, t),
        f"{package}/codegen.py": _codegen(t, values),
        f"{package}/backend.py": _backend(t, values),
        "tests/test_backend.py": _fill(TEST_BACKEND, values),
        "tests/test_conformance.py": _fill(TEST_CONFORMANCE, values),
    }
    return files


def _fill(text: str, values: dict[str, str]) -> str:
    return TextTemplate(text).substitute(values).lstrip("\n")


def _examples(name: str, template_kind: str) -> str:
    """The template kind's examples, spelled with the new kind (aliases too), as Python source."""
    kind = lookup_target_kind(template_kind)
    spellings = {kind.name, *kind.aliases}
    found: list[object] = []
    for example in kind.examples:
        if isinstance(example, str):
            words = example.split()
            renamed: object = " ".join([name, *words[1:]]) if words and words[0] in spellings else None
        else:
            renamed = {**example, "kind": name} if example.get("kind") in spellings else None
        if renamed is not None and renamed not in found:
            found.append(renamed)
    return "(" + "".join(f"\n            {e!r}," for e in found or [name]) + "\n        )"


def _pipeline(package: str, t: TemplateBackend) -> str:
    """The template's pipeline.py, its docstring replaced and its imports of the template's `KIND` and
    `OP_TABLE` pointed at the new package; every other import still names the template."""
    path = Path(importlib.import_module(f"{t.package}.pipeline").__file__)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines()
    redirect = {
        f"{t.package}.target": ("KIND", f"{package}.target"),
        f"{t.package}.op": ("OP_TABLE", f"{package}.op"),
    }
    edits: list[tuple[int, int, list[str]]] = []
    doc = ast.get_docstring(tree, clean=False)
    if doc is not None:
        first = tree.body[0]
        edits.append(
            (first.lineno, first.end_lineno, [PIPELINE_DOC.format(kind=t.kind, path=f"{t.package}.pipeline")])
        )
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in redirect:
            wanted, new_module = redirect[node.module]
            kept = [a for a in node.names if a.name != wanted]
            moved = [a for a in node.names if a.name == wanted]
            new = [f"from {new_module} import {_aliases(moved)}"] if moved else []
            new += [f"from {node.module} import {_aliases(kept)}"] if kept else []
            edits.append((node.lineno, node.end_lineno, new))
    for start, end, new in sorted(edits, reverse=True):
        lines[start - 1 : end] = new
    return "\n".join(lines) + "\n"


def _aliases(names: list[ast.alias]) -> str:
    return ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in names)


def _located(fn: object) -> tuple[str, str] | None:
    """(module, name) a module-level function is importable by, or None."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or "." in qualname or "<" in qualname:
        return None
    try:
        return (module, qualname) if getattr(importlib.import_module(module), qualname, None) is fn else None
    except ImportError:
        return None


class _Imports:
    """Import lines collected while generating a module, one per module."""

    def __init__(self) -> None:
        self.names: dict[str, list[str]] = {}

    def add(self, module: str, name: str) -> str:
        self.names.setdefault(module, [])
        if name not in self.names[module]:
            self.names[module].append(name)
        return name

    def lines(self) -> str:
        return "\n".join(f"from {m} import {', '.join(sorted(n))}" for m, n in sorted(self.names.items()))


def _codegen(t: TemplateBackend, values: dict[str, str]) -> str:
    imports = _Imports()
    imports.add("tilecraft.backend", "DeviceCodegen")

    def step(fn: object, fallback: str) -> str:
        found = _located(fn)
        if found is not None:
            return imports.add(*found)
        imports.add(t.manifest_module, f"{t.manifest_attr} as TEMPLATE")  # reached through the manifest
        imports.add(f"{values['package']}.target", "TEMPLATE_KIND")
        return fallback

    device = t.manifest.device_codegens[t.kind]
    source_step = step(device.source, "TEMPLATE.device_codegens[TEMPLATE_KIND].source")
    compile_step = "None"
    if device.compile is not None:
        compile_step = step(device.compile, "TEMPLATE.device_codegens[TEMPLATE_KIND].compile")
    hosts = []
    for fmt, codegen in t.manifest.host_codegens.items():
        imports.add("tilecraft.backend", "HostCodegen")
        generate = step(codegen.generate, f"TEMPLATE.host_codegens[{fmt!r}].generate")
        hosts.append(f"    {fmt!r}: HostCodegen({fmt!r}, {generate}),")
    body = {
        "imports": imports.lines(),
        "source_step": source_step,
        "compile_step": compile_step,
        "source_formats": repr(tuple(device.source_formats)),
        "binary_formats": repr(tuple(device.binary_formats)),
        "hosts": "{\n" + "\n".join(hosts) + "\n}" if hosts else "{}",
    }
    return _fill(CODEGEN, {**values, **body})


def _backend(t: TemplateBackend, values: dict[str, str]) -> str:
    imports = _Imports()
    specs = []
    for spec in t.manifest.execution_backends:
        source = plugin_source(EXECUTION_BACKENDS, spec.name)
        module, _, attr = (source or "").partition(":")
        specs.append(imports.add(module, attr) if source else f"TEMPLATE.execution_backend({spec.name!r})")
    predicate = "" if t.manifest.predicate is None else "\n        predicate=TEMPLATE.predicate,"
    body = {
        "spec_imports": imports.lines(),
        "specs": ", ".join(specs) + ("," if len(specs) == 1 else ""),
        "predicate": predicate,
        "doc": f"a variant of the {t.manifest.name} backend ({t.manifest.doc or 'no description'})",
    }
    return _fill(BACKEND, {**values, **body})


# ---------------------------------------------------------------- the templates

PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "The $name target backend for tilecraft (started from the $tname backend)"
readme = "README.md"
requires-python = ">=3.10"
dependencies = ["tilecraft>=$version"]

# How tilecraft finds the backend: the entry point names its manifest (docs/backends.md in tilecraft).
[project.entry-points."tilecraft.backends"]
$name = "$package.backend:MANIFEST"

[tool.setuptools.packages.find]
include = ["$package*"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

INIT = '''
"""The $name target backend for tilecraft, started from the $tname backend by `tilecraft backend new`.

Import order, as in tilecraft's own backends: target, language, ops, pipeline and codegen (through the
manifest), then the manifest. README.md walks through the layers.
"""

# isort: off
from $package import target  # noqa: F401  (registers the target kind)
from $package import language  # noqa: F401
from $package import op  # noqa: F401
from $package import backend  # noqa: F401  (registers the manifest)
# isort: on
'''

TARGET = '''
"""Layer 2, the target: kind `$name`, a renamed copy of kind `$tkind` (its attributes, normalizer,
detector and capabilities), so the backend starts where $tkind works. `"auto"` never picks it: name it
(`target="$name"`).

Replace the normalizer and the detector with your hardware's: what attributes a target has, how they
become canonical (idempotent: `check_idempotent` runs them twice), how the device is found. Then say
what a target has in `capabilities`: the record check-target-support (the first pass of pipeline.py)
refuses kernels by, and the passes read.
"""

from __future__ import annotations

import $tpackage  # noqa: F401 - the template backend; importing it registers kind $tkind
from tilecraft.backend import Target, TargetKind, lookup_target_kind, register_target_kind

KIND = "$name"
TEMPLATE_KIND = "$tkind"
TEMPLATE = lookup_target_kind(TEMPLATE_KIND)


def detect() -> Target | str | None:
    """Present wherever the template's target is: what its detector finds, under this kind."""
    if TEMPLATE.detect is None:
        return f"kind {TEMPLATE_KIND} has no detector"
    found = TEMPLATE.detect()
    if not isinstance(found, Target):
        return found
    return Target.parse({**found.attrs_dict, "kind": KIND})


def capabilities(target: Target):
    """What a target of this kind has, a `tilecraft.backend.capabilities.Capabilities`: to start with,
    what kind $tkind's record says of the same attributes. Write your hardware's here (that module lists
    the fields: thread-group width, thread and memory limits, matrix instructions, dtypes, atomics, ...);
    every limit key a Lack reports must be in the manifest's `unsupported`."""
    return Target(TEMPLATE_KIND, target.attrs).capabilities


TARGET_KIND = register_target_kind(
    TargetKind(
        KIND,
        attributes=TEMPLATE.attributes,
        normalize=TEMPLATE.normalize,
        detect=detect,
        detect_priority=TEMPLATE.detect_priority,
        auto=False,  # installing the plugin does not change what "auto" picks
        doc=f"a variant of {TEMPLATE_KIND}: {TEMPLATE.doc}",
        examples=$examples,
        capabilities=capabilities,
    )
)
'''

LANGUAGE = '''
"""Layer 1, the dialect: `from $package import language as T`. It starts as the $tname backend's (the
common language and that backend's extensions); add this backend's own `T.*` extensions here, and keep
the common names: `tilecraft backend check` checks that the dialect exports all of them."""

from $dialect import *  # noqa: F403
from $dialect import __all__  # noqa: F401
'''

OP = '''
"""Layer 4, the op table: how each tile op lowers (tile-op class -> lowering function), read by the
pipeline's lowering pass. It starts as the $tname backend's; replace an entry with your own lowering, or
remove one this target cannot lower (and declare it in the manifest's `unsupported` as "op:<Class>")."""

from $tpackage.op import OP_TABLE as TEMPLATE_OP_TABLE

OP_TABLE = dict(TEMPLATE_OP_TABLE)
'''

PIPELINE_DOC = '''"""Layer 3, the pipeline: this backend's complete pass order, copied from {path} by
`tilecraft backend new`; the passes are imported from there (shared passes from tilecraft.transform), the
target kind and op table are this package's. Edit the list: replace a pass with your own, reorder, add.
Every pass's output can be dumped by name (TILECRAFT_DUMP_IR=dir).
"""'''

CODEGEN = '''
"""Layer 5, codegen: the device codegen (a source step, IR -> source by format, and an optional compile
step, source -> binary) and the host codegens, reused from the $tname backend. Replace the steps with
your own when this target's code differs; keep the formats the execution backends consume."""

$imports

DEVICE_CODEGEN = DeviceCodegen(
    $source_step,
    $compile_step,
    $source_formats,
    $binary_formats,
)

HOST_CODEGENS = $hosts
'''

BACKEND = '''
"""Layer 6, the manifest and its compatibility contract: the one place that assembles and registers the
backend. It declares which shared execution backends run its output, in `auto` order (layer 7: they
build, load and launch; reuse one whenever its artifact formats fit), and what it does not support."""

from $tmodule import $tattr as TEMPLATE
from tilecraft.backend import API_VERSION, BackendModule, register_backend
$spec_imports
from $package.codegen import DEVICE_CODEGEN, HOST_CODEGENS
from $package.pipeline import PIPELINE
from $package.target import KIND

MANIFEST = register_backend(
    BackendModule(
        name="$name",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={KIND: DEVICE_CODEGEN},
        host_codegens=HOST_CODEGENS,
        host_codegen_hooks=TEMPLATE.host_codegen_hooks,
        execution_backends=($specs),$predicate
        callbacks=TEMPLATE.callbacks,
        pass_configs=TEMPLATE.pass_configs,  # the keys the copied pipeline reads
        # What this backend does not support: a LoweringError raised with `unsupported=` one of these keys
        # is a skip in the conformance kit; any other lowering error fails it.
        unsupported=TEMPLATE.unsupported,
        dialect="$package.language",
        doc="$doc",
        api_version=API_VERSION,
    )
)
'''

TEST_BACKEND = '''
"""Registration and target rules of the $name backend (what `tilecraft backend check $name` checks first)."""

from tilecraft.backend import backend_for, check_idempotent, lookup_target_kind
from $package.backend import MANIFEST
from $package.target import KIND, TARGET_KIND


def test_the_target_kind_is_registered():
    assert lookup_target_kind(KIND) is TARGET_KIND


def test_examples_normalize_idempotently_and_select_this_backend():
    for target in check_idempotent(KIND):
        assert backend_for(target) is MANIFEST


def test_the_kind_declares_its_capabilities_and_the_manifest_its_limits():
    assert TARGET_KIND.capabilities is not None
    for target in check_idempotent(KIND):
        assert target.capabilities.limit_keys() <= set(MANIFEST.unsupported)
'''

TEST_CONFORMANCE = '''
"""The conformance kit (tilecraft.testing.conformance) on every declared pair of this backend's kind and
its execution backends that can run here, as `tilecraft backend check $name` runs it."""

import pytest

from tilecraft.testing import conformance as kit

PAIRS = kit.declared_cases("$name")


@pytest.fixture(scope="module", params=PAIRS, ids=[p.id for p in PAIRS])
def ctx(request):
    try:
        return kit.resolve(request.param)
    except kit.NotHere as why:
        pytest.skip(str(why))


@pytest.mark.parametrize("case", kit.CASES, ids=[c.name for c in kit.CASES])
def test_case(case, ctx):
    try:
        kit.check_case(case, ctx)
    except kit.Unsupported as limit:
        pytest.skip(str(limit))


@pytest.mark.parametrize("name", sorted(kit.CHECKS))
def test_check(name, ctx):
    try:
        kit.CHECKS[name](ctx)
    except kit.Unsupported as limit:
        pytest.skip(str(limit))
'''

README = """
# $dist: the $name backend for tilecraft

Written by `tilecraft backend new $name --from $tkind`: a renamed variant of the `$tname` backend with
its own target kind (`$name`), its own manifest and its own entry point, so it runs and passes
`tilecraft backend check $name` as generated. Make it yours one layer at a time, running the check after
each step.

```bash
pip install -e .                      # registers the entry point: tilecraft finds the backend
tilecraft backends                    # lists it, with its execution backends
tilecraft backend check $name         # manifest, boundaries, codegen, compile, conformance: one table
pytest                                # the same conformance kit, as tests
```

Use it by naming its kind: `tilecraft.compile(kernel, target="$name")`; `"auto"` never picks it.

## The seven layers

A target backend is four compiler-owned layers (dialect, target, pipeline, codegen) joined by a
compatibility contract to shared execution backends that build, load and launch (TileLang's backend
model; tilecraft's docs/architecture.md and docs/backends.md). In this package:

1. **Language dialect**, `$package/language/`: `from $package import language as T`. It re-exports the
   $tname dialect; add this backend's own extensions here. The common language stays whole.
2. **Target**, `$package/target.py`: kind `$name` with the attributes, normalizer, detector and
   capabilities of `$tkind`. Write your own normalizer (canonical attributes, idempotent, rejecting
   impossible values with the choices), detector (lazy, returns a `Target` or the reason there is none)
   and `capabilities` (what a target has, `tilecraft.backend.capabilities.Capabilities`: the pipeline's
   first pass, check-target-support, refuses what it lacks, at the kernel's line).
3. **Pass pipeline**, `$package/pipeline.py`: the complete pass order, copied from the $tname backend,
   its passes imported (the shared ones from `tilecraft.transform`). Replace passes as the hardware
   needs; the last ones must split host from device and mark every function's role.
4. **Op table**, `$package/op.py`: tile op class -> lowering, a copy of the $tname table read by the
   pipeline's lowering pass. Override entries one by one.
5. **Codegen**, `$package/codegen.py`: the device codegen (source step, optional compile step) and the
   host codegens, reused from $tname. Write your own printer (`tilecraft.codegen.c_family` has the shared
   C-family base) when the target's language differs.
6. **Compatibility contract**, `$package/backend.py`: the manifest. It lists the execution backends that
   can consume the output, in `auto` order, the pass configs the pipeline reads, and `unsupported`: what
   this backend cannot do (`"dtype:float64"`, `"op:Cumsum"`, `"feature:..."`, `"resource:..."` -> why).
   Only a lowering error that reports a declared limit is a skip in the conformance kit; anything else
   fails. Keep `api_version=API_VERSION`: tilecraft refuses a manifest written for another plugin API.
7. **Execution backend** (build, load, launch): reused, the ones `$tname` declares. Write a new one only
   when no shared execution backend can consume your artifact formats; it registers through the
   `tilecraft.execution_backends` entry-point group.

## What is reused, and the trade-off

Everything but `pipeline.py` is imported from the `$tname` backend (`$tpackage`): the package is small,
it passes the check from the start, and it follows the template's fixes. It also changes when the
template changes; replace a layer with your own code to own it. `tilecraft backend check` audits that
the package imports only tilecraft's public API (no module or name with a leading underscore, and only
names a module's `__all__` lists) and that no shared tilecraft module names this backend: adding a
backend edits no file of tilecraft.

## Tests

`tests/test_backend.py` checks registration and the target rules; `tests/test_conformance.py` runs the
conformance kit (`tilecraft.testing.conformance`: kernels with float64 NumPy references) on every declared
execution backend available here, skipping the others with the reason.
"""
