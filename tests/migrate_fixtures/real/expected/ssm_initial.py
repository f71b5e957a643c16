# ruff: noqa
# fmt: off
# Source: https://github.com/lindermanlab/ssm-jax, ssm/hmm/initial.py (commit 3ee7580), MIT.
# Reduced to the base class and one registered class.
from __future__ import annotations
import jax.numpy as np
from jax.tree_util import register_pytree_node_class

import ssm.distributions as ssmd


class InitialCondition:
    """
    Base class for initial state distributions of an HMM.
    """
    def __init__(self, num_states: int) -> None:
        self._num_states = num_states

    @property
    def num_states(self):
        return self._num_states


# TODO[pytreekit-migrate] PTK106: flatten reads num_states, which InitialCondition
#   defines as a property
@register_pytree_node_class
class StandardInitialCondition(InitialCondition):
    """
    The standard model is a categorical distribution.
    """
    def __init__(self,
                 num_states: int,
                 initial_probs=None,
                 initial_distribution: ssmd.Categorical=None,
                 initial_distribution_prior: ssmd.Dirichlet=None) -> None:
        super(StandardInitialCondition, self).__init__(num_states)

        assert initial_probs is not None or initial_distribution is not None

        if initial_probs is not None:
            self._distribution = ssmd.Categorical(logits=np.log(initial_probs))
        else:
            self._distribution = initial_distribution
        num_states = self._distribution.probs_parameter().shape[-1]

        if initial_distribution_prior is None:
            initial_distribution_prior = ssmd.Dirichlet(1.1 * np.ones(num_states))
        self._distribution_prior = initial_distribution_prior

    def tree_flatten(self):
        children = (self._distribution, self._distribution_prior)
        aux_data = self.num_states
        return children, aux_data

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        distribution, prior = children
        return cls(aux_data,
                   initial_distribution=distribution,
                   initial_distribution_prior=prior)
