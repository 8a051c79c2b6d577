"""Private model selection: hyperparameter tuning that charges one privacy budget."""

from ._search import DPGridSearch, SearchCannotPayWarning

__all__ = ["DPGridSearch", "SearchCannotPayWarning"]
