"""Defects the thirteenth attack found in the artifact loaders' first use: a state check quadratic
in the state's names; a tensor's hook attribute besides ``_backward_hooks``; code generated for a
layout an artifact taught; a ``Callable`` reading that took a class named only as an instance's
type. Each test fails without its fix."""

from __future__ import annotations

from typing import Any

from pytreekit._artifacts.static_data import state_refusal

FIELDS = "__pytreekit_fields__"


# -- F6. a state's names are checked in time linear in their number ------------------------------


class _TooMany(Exception):
    pass


def test_a_state_of_sixty_thousand_names_is_checked_with_a_linear_number_of_comparisons():
    count = 60_000
    budget = [4 * count]  # one comparison a key and one a name, with room; a quadratic check: 1.8e9

    class Counted(str):
        """A key counting the comparisons made with it; it stops a quadratic check early."""

        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            budget[0] -= 1
            if budget[0] < 0:
                raise _TooMany
            return str.__eq__(self, other)

    names = tuple(f"f{i}" for i in range(count))
    state: dict[Any, Any] = {Counted(name): None for name in names}
    state[FIELDS] = (names, (False,) * count)
    assert state_refusal(state) is None
    state["other"] = None
    assert state_refusal(state) == (
        "holds a value under 'other', which is not a field its layout names"
    )
