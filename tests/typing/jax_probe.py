"""Not a case: the JAX functions the cases call, called as they call them, checked beside the
cases. Whatever a checker reports here is JAX's typing, not pytreekit's (pyright's strict mode
finds ``jax.random`` or ``jax.nn`` partly unknown in JAX 0.5.3 and 0.7.2, for instance), and the
strict run of that checker then skips, saying so. Keep it in step with what the cases call."""

import jax

key = jax.random.key(0)
w = jax.random.normal(key, (2,))
y = jax.nn.relu(w) + jax.nn.softmax(w) + jax.nn.logsumexp(w)
leaves = jax.tree_util.tree_leaves([w])
