"""Noise calibration of the robust and tilted releases (law test, power check, mutations).

For each model, 1500 seeded releases on one small data set; the noise is the
release minus the exact minimiser. Gamma-norm noise (``delta = 0``) is tested by
a KS test on the norms, Gaussian noise (``delta > 0``) by a chi-square test of
the sum of squares; each law passes at the calibrated scale and is rejected at
0.9 times it (``test_robust.check_gamma_noise``, ``check_normal_noise``). The
mutation tests make the calibration 10% too small, or replace the derived
sensitivity by the plausible wrong one (the radius forgotten; ERM's for the
tilted objective), and check that the law test then fails.
"""

import pytest
import test_robust as robust
import test_tilted as tilted

MODELS = {"robust": robust, "tilted": tilted}
MUTATIONS = {"robust": robust._forget_radius, "tilted": tilted._erm_sensitivity}
SEEDS = {("robust", 0.0): 21, ("robust", 1e-5): 22, ("tilted", 0.0): 31, ("tilted", 1e-5): 32}


def _check(model, delta):
    module = MODELS[model]
    noise = module._noise(delta, SEEDS[(model, delta)])
    if delta == 0:
        robust.check_gamma_noise(noise, module._expected_beta())
    else:
        robust.check_normal_noise(noise, module._expected_sigma(delta))


@pytest.mark.parametrize("delta", [0.0, 1e-5])
@pytest.mark.parametrize("model", MODELS)
def test_noise_law(model, delta):
    _check(model, delta)


@pytest.mark.slow
@pytest.mark.parametrize("mutation", ["shrink", "sensitivity"])
@pytest.mark.parametrize("delta", [0.0, 1e-5])
@pytest.mark.parametrize("model", MODELS)
def test_mutation_is_caught(model, delta, mutation, monkeypatch):
    (robust.shrink_plan if mutation == "shrink" else MUTATIONS[model])(monkeypatch)
    with pytest.raises(AssertionError, match="calibrated law rejected"):
        _check(model, delta)
