"""Checks of the factual claims made in docs/user_guide.rst.

The user guide tells users how pure-epsilon noise reaches a prediction score,
that a random projection reads only the shape of its input, and what
``check_pipeline`` says about it. If scikit-learn or dpsk changes, these tests
say that the page must change too.
"""

import numpy as np
import pytest
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.random_projection import GaussianRandomProjection

from dpsk import DPLogisticRegression, check_pipeline
from dpsk.mechanisms._noise import gamma_norm_noise
from dpsk.mechanisms._random import noise_source


# d = 1024 draws four million exact normals (about a minute): slow.
@pytest.mark.parametrize("d", [4, 64, pytest.param(1024, marks=pytest.mark.slow)])
def test_gamma_noise_on_a_score_has_rms_sqrt_d_plus_one_over_beta(d):
    # Guide: E[(x . b)^2] = ||x||^2 (d + 1) / beta^2 for Gamma-norm noise.
    beta, draws = 2.0, 4000
    rng = noise_source(12345)
    x = np.zeros(d)
    x[0] = 1.0
    scores = np.array([x @ gamma_norm_noise(d, beta, rng) for _ in range(draws)])
    rms = np.sqrt(np.mean(scores ** 2))
    # Relative s.e. of a mean of squares of a near-Gaussian score: about
    # sqrt(2 / draws) / 2 ~ 1.1% on the rms; 6% leaves a wide margin.
    assert rms == pytest.approx(np.sqrt(d + 1) / beta, rel=0.06)


def test_gaussian_random_projection_reads_only_the_shape():
    rng = np.random.default_rng(0)
    zeros = GaussianRandomProjection(n_components=5, random_state=3).fit(np.zeros((30, 40)))
    data = GaussianRandomProjection(n_components=5, random_state=3).fit(
        rng.normal(size=(30, 40)) * 100)
    np.testing.assert_array_equal(zeros.components_, data.components_)


def test_projected_rows_bounded_by_public_spectral_norm():
    rng = np.random.default_rng(1)
    proj = GaussianRandomProjection(n_components=8, random_state=0).fit(np.zeros((1, 50)))
    X = rng.normal(size=(200, 50))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    bound = np.linalg.norm(proj.components_, 2)
    assert np.linalg.norm(proj.transform(X), axis=1).max() <= bound * (1 + 1e-12)


def test_check_pipeline_recognises_projection_and_hashing():
    hashing = make_pipeline(HashingVectorizer(n_features=2 ** 6), DPLogisticRegression())
    assert check_pipeline(hashing) == []
    projected = make_pipeline(HashingVectorizer(n_features=2 ** 6),
                              GaussianRandomProjection(n_components=4),
                              DPLogisticRegression())
    assert check_pipeline(projected) == []  # its fit reads only the shape
