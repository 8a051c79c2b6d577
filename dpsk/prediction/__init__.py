"""Private prediction: answer queries from models that stay secret (Dwork and Feldman 2018)."""

from ._ensemble import DPPredictionEnsemble, TeachersInPickleWarning

__all__ = ["DPPredictionEnsemble", "TeachersInPickleWarning"]
