"""The outcome of a verifier: which property, whether it holds, and why not."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Verdict:
    """``ok`` is True when every check passed; ``violations`` lists the first
    failures found (capped at ``MAX_REPORTED``) in words a reader can act on."""

    property: str
    ok: bool
    checked: int
    violations: tuple[str, ...] = field(default_factory=tuple)

    MAX_REPORTED = 20

    @classmethod
    def from_violations(cls, prop: str, checked: int, violations: list[str]) -> "Verdict":
        return cls(prop, not violations, checked, tuple(violations[: cls.MAX_REPORTED]))

    def as_dict(self) -> dict:
        return {"property": self.property, "ok": self.ok, "checked": self.checked,
                "violations": list(self.violations)}

    def __bool__(self) -> bool:
        return self.ok
