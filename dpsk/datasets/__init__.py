"""Data sets bundled with dpsk, available offline."""

from ._adult import load_adult, preprocess_adult

__all__ = ["load_adult", "preprocess_adult"]
