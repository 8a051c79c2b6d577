"""What the private predictors share: a non-private model kept as secret state.

A private predictor answers queries from a model of the training data that is
not itself private (teachers, or one model's weights). Its fitted state must
stay as secret as the data: pickling it warns. Nothing else is shared.
"""

import warnings

__all__ = ["SecretStateMixin"]


class SecretStateMixin:
    """Fitted-ness and a pickle warning for an estimator that keeps a secret model.

    Subclasses set ``_secret_attribute`` (the name of the secret fitted state),
    ``_pickle_warning`` (a :class:`UserWarning` subclass) and ``_pickle_message``.
    """

    _secret_attribute = None
    _pickle_warning = UserWarning
    _pickle_message = ""

    def __sklearn_is_fitted__(self):
        return hasattr(self, self._secret_attribute)

    def __getstate__(self):
        # The pickle holds the secret model: say so, every time.
        if self._secret_attribute in self.__dict__:
            warnings.warn(self._pickle_message, self._pickle_warning, stacklevel=2)
        return super().__getstate__()
