"""
Choosing epsilon from public data
=================================

Before spending any budget on the private data, estimate how accurate a model
will be at each epsilon on *public* data that resembles it.
:func:`dpsk.utility.utility_curve` refits the estimator many times with fresh
noise on the public data (charging nothing to any ledger) and reports the
held-out accuracy with confidence bands; :func:`dpsk.utility.recommend_epsilon`
inverts the curve for a target accuracy.

Here one half of Adult plays the public data. The noise scale depends on the
number of training rows, so the public set should be about as large as the
private training set (or the curve read in ``n * epsilon``).

The ``random_state`` integers make this page reproducible: a fixed seed is for
documentation only.
"""

import matplotlib.pyplot as plt
from sklearn.model_selection import train_test_split

from dpsk import DPLogisticRegression
from dpsk.datasets import load_adult
from dpsk.utility import recommend_epsilon, utility_curve

X, y = load_adult(return_X_y=True, preprocess=True)
# The "public" half; the other half would be the private data.
X_public, X_private, y_public, y_private = train_test_split(
    X, y, train_size=0.5, random_state=0, stratify=y
)

# %%
# Output perturbation solves the non-private problem once and reuses it for
# every noise draw, so the curve is cheap.
estimator = DPLogisticRegression(alpha=1e-3, perturbation="output", classes=[0, 1])
epsilons = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
curve = utility_curve(
    estimator, X_public, y_public, epsilons=epsilons, n_draws=10,
    random_state=0,  # fixed seed: docs only
)
axes = curve.plot()
plt.tight_layout()

# %%
# The epsilon at which the mean accuracy reaches 79% (predicting the majority class gives
# 75%), with the interval where
# the ends of the confidence band cross it, and the epsilon at which a single
# fit reaches it with high probability.
rec = recommend_epsilon(
    estimator, X_public, y_public, target_accuracy=0.79, epsilons=epsilons,
    n_draws=10, random_state=0,  # fixed seed: docs only
)
print(f"epsilon for 79% accuracy: {rec.epsilon:.2f} (interval {rec.low:.2f} to {rec.high:.2f})")
print(f"a single fit reaches it with probability >= {(1 + rec.confidence) / 2:.2f} "
      f"at epsilon {rec.single_fit:.2f}")
