"""Mechanisms: from epsilon (and delta) to the noise of one release.

One job: turn a privacy budget and public quantities into a noisy release.
``_noise`` calibrates noise scales from sensitivities and draws the noise on the
release grid; ``_random`` is the only source of noise; ``_discrete`` draws the
discrete laws (Bernoulli, geometric, discrete Laplace and Gaussian, the exponential
mechanism) exactly in integer arithmetic; ``_erm`` is the one path
every linear model's fit takes from epsilon to a released weight vector
(output, objective and Gaussian perturbation); ``_gradient`` is noisy gradient
descent; ``_beyond_erm`` releases the robust and tilted models. Mechanisms call
the certified solvers of :mod:`dpsk._optimize` and read the privacy profiles of
:mod:`dpsk.accounting`; nothing here imports an estimator.
"""
