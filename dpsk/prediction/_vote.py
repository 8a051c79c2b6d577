"""The private vote of subsample-and-aggregate prediction (Dwork and Feldman, 2018).

``r`` teachers, each trained on its own disjoint part of the data, vote on a
query row; the answer is drawn by the exponential mechanism on the vote counts.
These functions are the mechanism: :class:`~dpsk.DPPredictionEnsemble` is a
thin shell around them. Derivations in ``docs/prediction.rst``.
"""

import hashlib
import math
from fractions import Fraction

import numpy as np

from .._silence import silenced
from ..mechanisms._noise import exponential_mechanism
from ..mechanisms._random import NoiseSource
from ._laplace import discrete_laplace

__all__ = ["VOTE_SENSITIVITY", "SHARE_SENSITIVITY", "paper_n_teachers", "averaging_n_teachers",
           "vote_counts", "vote_probabilities", "private_vote", "noisy_vote_shares",
           "averaged_answers"]

#: How much one vote count can move when one training row is replaced: the row
#: lies in one part, so one teacher changes, and its vote leaves one class (or
#: abstention) for another: every count changes by at most 1.
VOTE_SENSITIVITY = 1.0

#: How much the vector of vote counts can move in L1 when one training row is
#: replaced: one teacher's vote leaves one class and joins another (either may
#: be abstention), so at most two counts change, by 1 each.
SHARE_SENSITIVITY = 2

# Separates the per-row noise streams of a seeded ensemble from every other stream.
_VOTE_TAG = 0x766F7465  # "vote"
_SHARE_TAG = 0x73686172  # "shar"
_AVERAGE_TAG = 0x61766572  # "aver"


def paper_n_teachers(epsilon, target_error, n_classes):
    """Number of teachers after Theorem 4.1 of Dwork and Feldman (2018), for K classes.

    ``ceil(6 ln(4 (K - 1) / target_error) / epsilon)``; for two classes this is
    the theorem's ``r = ceil(6 ln(4 / alpha) / epsilon)``. With that many
    teachers, at any query row where at least two thirds of them vote for one
    label, the private vote answers another label with probability at most
    ``target_error / 4``: the other counts trail by at least ``r / 3``, so each
    other label has probability at most ``exp(-epsilon r / 6)`` and the ``K - 1``
    of them together at most ``(K - 1) exp(-epsilon r / 6) <= target_error / 4``.
    If each teacher errs with probability at most ``target_error / 4`` (the
    theorem's realizable setting), Markov's inequality bounds the rows where a
    third or more of the teachers err by ``3 target_error / 4``, and the answers'
    error by ``target_error``.

    Parameters
    ----------
    epsilon : float
        Per-query privacy parameter, > 0.
    target_error : float
        In (0, 1).
    n_classes : int
        K >= 2.

    Returns
    -------
    r : int
    """
    if not (0.0 < target_error < 1.0) or not (epsilon > 0) or n_classes < 2:
        raise ValueError("Need epsilon > 0, target_error in (0, 1) and n_classes >= 2.")
    return int(math.ceil(6.0 * math.log(4.0 * (n_classes - 1) / target_error) / epsilon))


def averaging_n_teachers(epsilon, target_error):
    """Teachers of the agnostic averaging of Corollary 4.7: ``ceil(1 / (target_error eps))``.

    The share of teachers voting 1 moves by ``1 / r`` when one row is replaced;
    Laplace noise of scale ``1 / (r epsilon)`` then costs at most ``E|Z| = 1 / (r
    epsilon)`` in expected absolute loss (Lemma 4.5, with the scale
    ``gamma / epsilon``), which is ``target_error`` for this ``r``.
    """
    if not (0.0 < target_error < 1.0) or not (epsilon > 0):
        raise ValueError("Need epsilon > 0 and target_error in (0, 1).")
    return int(math.ceil(1.0 / (target_error * epsilon)))


def vote_counts(teachers, X, classes):
    """Count, for each row of ``X``, the teachers voting for each class.

    A teacher that is ``None``, that raises, or that predicts a label outside
    ``classes`` abstains on the rows concerned. Abstaining keeps the sensitivity
    at 1: a changed teacher still moves at most one vote out of one class and
    into another. Warnings are dropped (they could describe the teachers).

    Returns
    -------
    counts : ndarray of shape (n_rows, n_classes), dtype int64
        Private: never release it.
    """
    classes = np.asarray(classes)
    n_rows, n_classes = X.shape[0], classes.shape[0]
    counts = np.zeros((n_rows, n_classes), dtype=np.int64)
    rows = np.arange(n_rows)
    with silenced():
        for teacher in teachers:
            if teacher is None:
                continue
            try:
                predicted = np.asarray(teacher.predict(X)).reshape(-1)
                index = np.searchsorted(classes, predicted)
                capped = np.minimum(index, n_classes - 1)
                valid = (index < n_classes) & (classes[capped] == predicted)
            except Exception:  # noqa: BLE001 - a failing teacher abstains
                continue
            if predicted.shape[0] != n_rows:
                continue
            np.add.at(counts, (rows[valid], capped[valid]), 1)
    return counts


def vote_probabilities(counts, epsilon):
    """The law of the private answer: ``P(k)`` proportional to ``exp(eps c_k / 2)``.

    The exponential mechanism (McSherry and Talwar 2007) with utility ``c_k``
    and sensitivity :data:`VOTE_SENSITIVITY`. For two classes this is the
    mechanism of Theorem 4.1 of Dwork and Feldman (2018): answer 1 with
    probability ``exp(eps v / 2) / (1 + exp(eps v / 2))``, ``v = c_1 - c_0``.

    Returns
    -------
    probabilities : ndarray of shape (n_rows, n_classes)
        Private (a function of the counts): for tests and the docs only.
    """
    logits = epsilon * np.asarray(counts, dtype=float) / (2.0 * VOTE_SENSITIVITY)
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=1, keepdims=True)


def _row_sources(X, random_state, tag=_VOTE_TAG):
    """One noise source per row: fresh secure ones, or (test mode) seeded by the row.

    A seed derived from ``random_state`` and the row's bytes makes a seeded
    ensemble answer a row the same way whatever batch it comes in, so seeded
    answers are reproducible and invariant to the order and split of a batch.
    ``tag`` separates the streams of different mechanisms answering one row.
    """
    if random_state is None:
        source = NoiseSource.secure()  # stateless: every draw reads the OS anew
        return [source] * X.shape[0]
    sources = []
    for row in np.ascontiguousarray(X, dtype=np.float64):
        digest = np.frombuffer(hashlib.sha256(row.tobytes()).digest(), dtype=np.uint32)
        sources.append(NoiseSource.seeded([int(random_state), tag, *map(int, digest)]))
    return sources


def private_vote(counts, epsilon, X, random_state):
    """Draw one private answer per row from its vote counts.

    Guarantee (Dwork and Feldman 2018, Theorem 4.1, with the erratum of
    ``docs/prediction.rst``; McSherry and Talwar 2007 for K classes): if the
    teachers were trained on disjoint parts of the data, chosen without looking
    at it, each answer is ``epsilon``-differentially private with respect to
    the replacement of one training row. Answers to several rows compose
    (sequentially): the caller charges ``epsilon`` per row.

    Parameters
    ----------
    counts : ndarray of shape (n_rows, n_classes)
        From :func:`vote_counts`.
    epsilon : float
        Per-row privacy parameter, > 0.
    X : ndarray of shape (n_rows, n_features)
        The query rows (their bytes seed the noise in test mode only).
    random_state : int or None
        None: secure noise. An int: reproducible, not private.

    Returns
    -------
    index : ndarray of shape (n_rows,), dtype int
        The answered class indices.
    """
    counts = np.asarray(counts)
    answers = np.empty(counts.shape[0], dtype=np.intp)
    for i, source in enumerate(_row_sources(X, random_state)):
        answers[i], _ = exponential_mechanism(counts[i], epsilon, VOTE_SENSITIVITY, source)
    return answers


def noisy_vote_shares(counts, epsilon, X, random_state):
    """Vote shares from counts plus exact discrete Laplace noise: ``epsilon``-DP per row.

    Guarantee: each row's vector of noisy counts ``c_k + Z_k`` (``Z_k``
    independent discrete Laplace of scale ``2 / epsilon``) is
    ``epsilon``-differentially private with respect to the replacement of one
    training row: the counts move by at most :data:`SHARE_SENSITIVITY` in L1,
    and each ``Z_k`` changes a probability by ``exp(epsilon |c_k - c'_k| / 2)``
    at most, ``exp(epsilon)`` in all (the Laplace mechanism of Dwork, McSherry,
    Nissim and Smith 2006 on the integers). The shares, ``max(c_k + Z_k, 0)``
    normalised (uniform when every noisy count is <= 0), are post-processing.
    The caller charges ``epsilon`` per row.

    Parameters
    ----------
    counts : ndarray of shape (n_rows, n_classes)
        From :func:`vote_counts`.
    epsilon : float
        > 0.
    X : ndarray of shape (n_rows, n_features)
        The query rows (their bytes seed the noise in test mode only).
    random_state : int or None

    Returns
    -------
    shares : ndarray of shape (n_rows, n_classes)
        Rows sum to 1.
    """
    counts = np.asarray(counts)
    scale = Fraction(SHARE_SENSITIVITY) / Fraction(float(epsilon))
    noisy = np.empty(counts.shape, dtype=float)
    for i, source in enumerate(_row_sources(X, random_state, tag=_SHARE_TAG)):
        noisy[i] = [int(c) + discrete_laplace(scale, source) for c in counts[i]]
    noisy = np.maximum(noisy, 0.0)
    totals = noisy.sum(axis=1, keepdims=True)
    uniform = np.full_like(noisy, 1.0 / counts.shape[1])
    return np.where(totals > 0, noisy / np.where(totals > 0, totals, 1.0), uniform)


def averaged_answers(counts, n_teachers, epsilon, X, random_state):
    """Corollary 4.7 of Dwork and Feldman (2018): a noisy average, rounded at random.

    For two classes: ``t = c_1 + Z`` (``c_1`` the votes for ``classes[1]``, ``Z``
    exact discrete Laplace of scale ``1 / epsilon``), ``p = min(max(t, 0), r) /
    r``, and the answer is 1 with probability ``p`` (``randbelow(r) < p r``:
    exact). Guarantee: ``epsilon``-DP per row with respect to replacing one
    training row: one teacher changes, so ``c_1`` moves by at most 1 (a vote for
    1 becomes a vote for 0 or an abstention, or back), and the discrete Laplace
    mechanism with scale ``1 / epsilon`` covers a shift of 1; the clipping and
    the rounding use fresh randomness independent of the data
    (post-processing). The caller charges ``epsilon`` per row.

    Returns
    -------
    index : ndarray of shape (n_rows,), dtype int
        0 or 1.
    """
    counts = np.asarray(counts)
    r = int(n_teachers)
    scale = Fraction(1) / Fraction(float(epsilon))
    answers = np.empty(counts.shape[0], dtype=np.intp)
    for i, source in enumerate(_row_sources(X, random_state, tag=_AVERAGE_TAG)):
        noisy = min(max(int(counts[i, 1]) + discrete_laplace(scale, source), 0), r)
        answers[i] = int(source.randbelow(r) < noisy)
    return answers
