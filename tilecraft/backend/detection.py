"""Hardware detection for `"auto"` targets.

Detectors run lazily, in ascending `detect_priority` (ties by kind name): accelerators first, host
processors last (see tilecraft.backend.target_kind). The first detector that returns a Target wins;
when none does, the error lists every kind tried and why it did not match. Kinds registered with
`auto=False` are skipped by `"auto"`; `detection_report` still runs their detectors, after the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tilecraft.backend.errors import TargetError
from tilecraft.backend.target_kind import TargetKind, registered_target_kinds

if TYPE_CHECKING:
    from tilecraft.backend.target import Target


@dataclass(frozen=True)
class DetectionResult:
    """What one kind's detector said: the target found, or the reason nothing was."""

    kind: str
    priority: int
    target: Target | None
    reason: str
    auto: bool = True

    def describe(self) -> str:
        found = f"found {self.target}" if self.target is not None else f"no: {self.reason}"
        named_only = "" if self.auto else "; used only when named, 'auto' never picks it"
        return f"{self.kind} (priority {self.priority}{named_only}): {found}"


def _by_priority(kinds: list[TargetKind]) -> tuple[TargetKind, ...]:
    return tuple(sorted(kinds, key=lambda k: (k.detect_priority, k.name)))


def detection_order() -> tuple[TargetKind, ...]:
    """Kinds with a detector that `"auto"` may choose, in the order it tries them."""
    return _by_priority([k for k in registered_target_kinds() if k.detect is not None and k.auto])


def named_only_kinds() -> tuple[TargetKind, ...]:
    """Kinds with a detector that `"auto"` never chooses (`auto=False`), by priority."""
    return _by_priority([k for k in registered_target_kinds() if k.detect is not None and not k.auto])


def run_detector(kind: TargetKind) -> DetectionResult:
    """Run one detector; a None, a reason string or an exception all mean "not this kind"."""
    from tilecraft.backend.target import Target

    try:
        found = kind.detect()
    except Exception as err:  # a broken probe must not stop detection of the other kinds
        return DetectionResult(
            kind.name, kind.detect_priority, None, f"detector raised {type(err).__name__}: {err}", kind.auto
        )
    if isinstance(found, Target):
        return DetectionResult(kind.name, kind.detect_priority, Target.parse(found), "", kind.auto)
    reason = found if isinstance(found, str) and found else "detector found nothing"
    return DetectionResult(kind.name, kind.detect_priority, None, reason, kind.auto)


def detection_report() -> tuple[DetectionResult, ...]:
    """Every detector's result (for `tilecraft doctor`): in `"auto"` order, then the kinds `"auto"`
    never picks."""
    return tuple(run_detector(kind) for kind in (*detection_order(), *named_only_kinds()))


def detect_target() -> Target:
    """The first detected target in `"auto"` order; the error lists what each detector said."""
    tried = []
    for kind in detection_order():
        result = run_detector(kind)
        if result.target is not None:
            return result.target
        tried.append(result)
    raise TargetError(_nothing_detected(tried))


def _nothing_detected(tried: list[DetectionResult]) -> str:
    undetectable = [k.name for k in registered_target_kinds() if k.detect is None]
    named_only = [k.name for k in named_only_kinds()]
    lines = ["target 'auto' matched no registered target kind; tried in order:"]
    lines += [f"  {r.describe()}" for r in tried] or ["  (no registered kind has a detector)"]
    if undetectable:
        lines.append(f"kinds without a detector (name them explicitly): {', '.join(undetectable)}")
    if named_only:
        lines.append(f"kinds 'auto' never picks (name them explicitly): {', '.join(named_only)}")
    lines.append("fix: pass an explicit target (e.g. target='<kind> -key=value') or set TILECRAFT_TARGET")
    return "\n".join(lines)
