"""
How many rows do I need?
========================

The noise of a private model shrinks as the training set grows, so a data
scientist with ``n`` rows asks the same question about ``n`` as about epsilon:
*how many rows do I need for the accuracy I want, at the epsilon I can afford?*
:func:`dpsk.utility.learning_curve` answers it on public data, at no privacy
cost, in the way :func:`~dpsk.utility.utility_curve` answers it for epsilon:
nested subsamples of the public training part, a Monte Carlo over the noise at
each size, every fit scored on the same held-out rows.
:meth:`~dpsk.utility.LearningCurve.rows_needed` inverts the curve with a
confidence interval.

Here part of Adult plays the public data. The ``random_state`` integers make
the page reproducible; a fixed seed is for documentation only.
"""

import matplotlib.pyplot as plt
from sklearn.model_selection import train_test_split

from dpsk import DPLogisticRegression
from dpsk.datasets import load_adult
from dpsk.utility import learning_curve

# %%
# Public data like the private data: 20,000 rows of Adult (the paper's
# preprocessing, rows of norm at most 1).
X, y = load_adult(return_X_y=True, preprocess=True)
X_public, _, y_public, _ = train_test_split(X, y, train_size=20_000, stratify=y,
                                            random_state=0)

# %%
# The default private model (``alpha="auto"``), at two values of epsilon, on
# five training-set sizes from 1,400 to 14,000 rows; three noise draws each.
curve = learning_curve(DPLogisticRegression(classes=[0, 1]), X_public, y_public,
                       train_sizes=[1_400, 2_800, 5_600, 9_800, 14_000],
                       epsilons=[0.1, 1.0], n_draws=3, random_state=0)

fig, ax = plt.subplots(figsize=(6, 4))
curve.plot(ax=ax)
ax.set_title("DPLogisticRegression on Adult: accuracy against training rows")
fig.tight_layout()

# %%
# The rows needed for held-out accuracy 0.80 at each epsilon. At epsilon 1 the
# mean curve crosses it near 9,000 rows (the pessimistic end of the band only
# beyond 14,000); at epsilon 0.1 it is not reached within 14,000 rows: a tenth
# of the budget asks for many times the data.
for epsilon in curve.epsilons:
    print(curve.rows_needed(epsilon, target_accuracy=0.8))
