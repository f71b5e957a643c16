"""The victim's module for tests/test_artifacts_attack13.py: classes without annotations, whose
fields are what each instance sets (an artifact may name thousands)."""

from __future__ import annotations

from typing import Any

from pytreekit import pytree_class


@pytree_class(static=("act",))
class Net:
    def __init__(self, w: Any, act: Any = None, **extra: Any) -> None:
        self.w = w
        self.act = act
        for name, value in extra.items():
            setattr(self, name, value)


@pytree_class
class Small:
    def __init__(self, w: Any) -> None:
        self.w = w
