"""Every ``__pytreekit_*__`` name pytreekit sets on a class, an instance or a function.

Persisted data stores some of them (``FIELDS`` in every pickled instance's state), so their
values never change; the Python names are what the rest of the package spells.
"""

from __future__ import annotations

from typing import Final

# On a decorated class: its ClassSpec, set last, once decoration succeeded (the commit point).
SPEC: Final = "__pytreekit_spec__"
# On a class without annotations, and on instances whose layout differs from the class's: the
# Layout the instance was built with.
LAYOUT: Final = "__pytreekit_layout__"
# In the state pickling writes: the layout's names and static flags.
FIELDS: Final = "__pytreekit_fields__"
# On a class whose set-up failed half-way: the namespace as the user wrote it, to replay.
PENDING: Final = "__pytreekit_pending__"
# On functions pytreekit wrote: the generated __init__, the wrapper around a user's __init__,
# the __getstate__/__setstate__ pair.
GENERATED: Final = "__pytreekit_generated__"
WRAPS_INIT: Final = "__pytreekit_wraps_init__"
STATE: Final = "__pytreekit_state__"
# On generated dunders: the class they were written for (a subclass inherits them).
OWNER: Final = "__pytreekit_owner__"
# On the aux-data functions given to jax.export: the class they serialize.
CLASS: Final = "__pytreekit_class__"
# On pytreekit's wrapper of jax.export.register_pytree_node_serialization.
GIVES_WAY: Final = "__pytreekit_gives_way__"
# On a functools.partial subclass that pickles as a plain functools.partial (one read from static
# data): pickling replaces its function by a stand-in as a plain partial's.
PLAIN_PARTIAL: Final = "__pytreekit_plain_partial__"
