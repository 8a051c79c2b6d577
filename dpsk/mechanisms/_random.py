"""Where randomness comes from: secret noise and public randomness, kept apart.

Two kinds of randomness enter a fit, and they must never share a source:

* **Noise** (the privacy noise of every mechanism) comes from a
  :class:`NoiseSource`. By default its bits are read from ``os.urandom``, the
  operating system's cryptographically secure generator (``getrandom(2)`` on
  Linux), on every draw. There is no generator state: nothing stored, pickled or
  published can regenerate a draw, and a forked child reads fresh bits.
  numpy's bit generators (PCG64, Philox, SFC64, MT19937) are fast but not
  cryptographically secure: their state can in principle be reconstructed from
  enough output, and a ``Generator`` object carries its state into
  ``get_params()`` and pickles. Privacy noise is small (one vector of dimension
  ``d`` per release), so reading it from the OS costs microseconds.
* **Public randomness** (the random Fourier frequencies of
  :class:`~dpsk.DPKernelClassifier`, the random split of
  :class:`~dpsk.DPGridSearch`) is published or harmless to publish, so it comes
  from an ordinary numpy ``Generator`` seeded with its own fresh OS entropy.
  Recovering that generator's state from the published frequencies reveals
  nothing about the noise, which was never drawn from it.

``random_state`` is therefore either ``None`` (the only setting for a model
that is released) or a non-negative int, which makes both kinds reproducible
for tests and documentation: a model whose seed is known is not private.
Generators, ``RandomState`` and ``SeedSequence`` objects are refused, because
an estimator keeps its parameters in ``get_params()`` and its pickle, and such
an object would let whoever holds the saved model redraw the noise.

Privacy noise of a continuous law (Gaussian, Gamma-norm) is drawn exactly by
:mod:`dpsk.mechanisms._samplers` from integer bits (:meth:`NoiseSource.randbits`):
there is no floating-point inversion of a uniform anywhere on that path, whose
finite resolution would leave most fine grid cells of the tails unreachable.
:meth:`NoiseSource.random` (52-bit uniforms on ``(0, 1)``) remains for the
discrete selections that still use it (:meth:`NoiseSource.choice`, the
stopping rule of :class:`~dpsk.DPGridSearch`).
"""

import os
from numbers import Integral

import numpy as np

__all__ = ["NoiseSource", "validate_random_state", "noise_source", "public_rng"]

# Tags that separate the noise and public streams derived from one int seed.
_NOISE_TAG = 0x6E6F697365  # "noise"
_PUBLIC_TAG = 0x7075626C6963  # "public"
_TWO_POW_M52 = 2.0**-52


class NoiseSource:
    """Source of privacy noise: OS entropy by default, a seed for tests only.

    Use :meth:`secure` (what every fit uses with ``random_state=None``) or
    :meth:`seeded` (reproducible and therefore not private). The methods mirror
    the part of :class:`numpy.random.Generator` that the mechanisms use.

    A secure source has no state: pickling it (as joblib does when it sends a
    one-vs-rest problem to a worker process) makes a new secure source on the
    other side, which reads its own fresh OS entropy.
    """

    def __init__(self, _seed_sequence=None):
        self._seed_sequence = _seed_sequence
        self._stream = (
            None if _seed_sequence is None
            else np.random.Generator(np.random.PCG64(_seed_sequence))
        )

    @classmethod
    def secure(cls):
        """A source that reads ``os.urandom`` on every draw."""
        return cls()

    @classmethod
    def seeded(cls, seed):
        """A reproducible source, for tests and documentation only (not private).

        Parameters
        ----------
        seed : int, sequence of int or numpy.random.SeedSequence
        """
        if not isinstance(seed, np.random.SeedSequence):
            seed = np.random.SeedSequence(seed)
        return cls(seed)

    @property
    def is_secure(self):
        """True when draws come from the operating system's CSPRNG."""
        return self._seed_sequence is None

    def spawn(self, n_children):
        """``n_children`` independent sources (fresh secure ones, or seeded children)."""
        if self.is_secure:
            return [NoiseSource.secure() for _ in range(n_children)]
        return [NoiseSource(child) for child in self._seed_sequence.spawn(n_children)]

    def _bytes(self, n_bytes):
        if self._stream is None:
            return os.urandom(n_bytes)
        return self._stream.bytes(n_bytes)

    def randbits(self, k):
        """A uniform integer in ``[0, 2^k)`` as a Python int: the exact samplers' bits.

        The exact samplers (integer arithmetic, no floating point) consume
        their randomness through this method and :meth:`words` only.
        """
        k = int(k)
        if k < 0:
            raise ValueError("k must be >= 0.")
        if k == 0:
            return 0
        n_bytes = (k + 7) // 8
        value = int.from_bytes(self._bytes(n_bytes), "little")
        return value >> (8 * n_bytes - k)

    def words(self, count):
        """``count`` uniform 32-bit words (uint32): the exact samplers' batched bits.

        Word ``i`` is bits ``32 i`` to ``32 i + 31`` of the same little-endian byte
        stream :meth:`randbits` reads, so a word is what
        ``BitStream.take(32)`` would return at that point of the stream.
        """
        count = int(count)
        return np.frombuffer(self._bytes(4 * count), dtype="<u4")

    def randbelow(self, n):
        """A uniform integer in ``[0, n)`` for an int ``n >= 1``, by exact rejection."""
        n = int(n)
        if n < 1:
            raise ValueError("n must be >= 1.")
        k = (n - 1).bit_length()
        while True:
            value = self.randbits(k)
            if value < n:
                return value

    def random(self, size=None):
        """Uniform draws on the open interval (0, 1), with 52 random bits each."""
        count = 1 if size is None else int(np.prod(size, dtype=np.int64))
        words = np.frombuffer(self._bytes(8 * count), dtype=np.uint64)
        # (k + 1/2) 2^-52 for a 52-bit k is exact in float64 and never 0 or 1.
        u = ((words >> np.uint64(12)).astype(np.float64) + 0.5) * _TWO_POW_M52
        return float(u[0]) if size is None else u.reshape(size)


    def __reduce__(self):
        return (NoiseSource, (self._seed_sequence,))

    def __repr__(self):
        return "NoiseSource.secure()" if self.is_secure else "NoiseSource.seeded(...)"


class InvalidRandomStateError(TypeError, ValueError):
    """A ``random_state`` that is neither None nor an int >= 0.

    A subclass of both TypeError and ValueError, like scikit-learn's
    ``InvalidParameterError``, so either ``except`` clause catches it.
    """


def validate_random_state(random_state, name="random_state"):
    """Refuse any ``random_state`` other than None or a non-negative int.

    Raises
    ------
    InvalidRandomStateError
        For Generators, RandomState and SeedSequence objects, other types and
        negative ints.
    """
    if random_state is None:
        return
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise InvalidRandomStateError(
                f"{name} must be None or an int >= 0, got {random_state!r}."
            )
        return
    raise InvalidRandomStateError(
        f"{name} must be None (fresh secure noise: the only setting for a model you "
        "release) or an int >= 0 (reproducible noise for tests and documentation, not "
        f"private); got {type(random_state).__name__}. numpy Generators, RandomState and "
        "SeedSequence objects are refused: an estimator keeps random_state in "
        "get_params() and in its pickle, and anyone holding the saved model could "
        "redraw the noise from it."
    )


def noise_source(random_state):
    """The noise source of one fit: secure for None, seeded (not private) for an int."""
    validate_random_state(random_state)
    if random_state is None:
        return NoiseSource.secure()
    return NoiseSource.seeded([int(random_state), _NOISE_TAG])


def public_rng(random_state):
    """A numpy Generator for public randomness, independent of the noise.

    ``None`` seeds it with its own fresh OS entropy; an int derives it from the
    seed on a stream separate from :func:`noise_source`'s.
    """
    validate_random_state(random_state)
    if random_state is None:
        return np.random.default_rng()
    return np.random.default_rng([int(random_state), _PUBLIC_TAG])
