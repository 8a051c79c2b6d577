"""Cost of the exact discrete samplers: random bits and time per draw.

For every sampler of ``dpsk/mechanisms/_discrete.py`` (and the exponential
mechanism and random stopping's plan, which use them) this counts the random
bits read through ``NoiseSource.randbits`` per draw, and times draws from the
secure source (``os.urandom``, what every release uses) and from a seeded one
(tests only; its bytes come from numpy's ``Generator.bytes``, which costs a few
microseconds per call and dominates the seeded timings).

Run ``python -m benchmarks.bench_discrete_samplers [--quick]``: a table on stdout,
nothing written.
"""

import argparse
import time
from fractions import Fraction

from dpsk.mechanisms._discrete import (
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    geometric,
)
from dpsk.mechanisms._noise import exponential_mechanism
from dpsk.mechanisms._random import NoiseSource
from dpsk.model_selection._stopping import noisy_count, random_stopping_plan


class CountingSource(NoiseSource):
    """A NoiseSource that counts the bits it hands out."""

    def __init__(self, inner):
        super().__init__(inner._seed_sequence)
        self._stream = inner._stream
        self.bits = 0

    def randbits(self, k):
        self.bits += int(k)
        return super().randbits(k)


CASES = {
    "bernoulli_exp(1/3)": lambda rng: bernoulli_exp(Fraction(1, 3), rng),
    "bernoulli_exp(5/2)": lambda rng: bernoulli_exp(Fraction(5, 2), rng),
    "bernoulli_exp(40)": lambda rng: bernoulli_exp(40, rng),
    "geometric(p=0.5)": lambda rng: geometric(0.5, rng),
    "geometric(p=0.02)": lambda rng: geometric(0.02, rng),
    "geometric(p=1e-9)": lambda rng: geometric(1e-9, rng),
    "discrete_laplace(t=1/0.3)": lambda rng: discrete_laplace(1 / Fraction(0.3), rng),
    "discrete_laplace(t=100)": lambda rng: discrete_laplace(100, rng),
    "discrete_gaussian(sigma2=1)": lambda rng: discrete_gaussian(1, rng),
    "discrete_gaussian(sigma2=1e6)": lambda rng: discrete_gaussian(10**6, rng),
    "noisy_count(eps0=0.3)": lambda rng: noisy_count(100, 0.3, rng),
    "exp. mechanism, m=5, gaps 1": lambda rng: exponential_mechanism(
        [0.0, -1.0, -2.0, -3.0, -4.0], 1.0, 1.0, rng),
    "exp. mechanism, m=20, one best by 50": lambda rng: exponential_mechanism(
        [50.0] + [0.0] * 19, 1.0, 1.0, rng),
    "vote, 3 classes, counts (7,2,1), eps=0.5": lambda rng: exponential_mechanism(
        [7.0, 2.0, 1.0], 0.5, 1.0, rng),
    "random-stopping plan, m=5, gamma=1/50": lambda rng: random_stopping_plan(5, 0.02, rng),
}


def measure(sampler, n_draws):
    """``(bits per draw, microseconds per secure draw, microseconds per seeded draw)``."""
    counting = CountingSource(NoiseSource.seeded(0))
    for _ in range(n_draws):
        sampler(counting)
    timings = []
    for source in (NoiseSource.secure(), NoiseSource.seeded(1)):
        started = time.perf_counter()
        for _ in range(n_draws):
            sampler(source)
        timings.append((time.perf_counter() - started) / n_draws * 1e6)
    return counting.bits / n_draws, timings[0], timings[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 draws instead of 5000")
    args = parser.parse_args(argv)
    n_draws = 200 if args.quick else 5000
    print(f"{'sampler':42s} {'bits/draw':>10s} {'us secure':>10s} {'us seeded':>10s}")
    for name, sampler in CASES.items():
        bits, secure, seeded = measure(sampler, n_draws)
        print(f"{name:42s} {bits:10.0f} {secure:10.1f} {seeded:10.1f}")


if __name__ == "__main__":
    main()
