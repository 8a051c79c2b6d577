"""Private prediction: answer queries from models that stay secret (Dwork and Feldman 2018)."""

from ._ensemble import DPPredictionEnsemble, TeachersInPickleWarning
from ._stability import DPStabilityPredictor, ModelInPickleWarning

__all__ = ["DPPredictionEnsemble", "DPStabilityPredictor", "ModelInPickleWarning",
           "TeachersInPickleWarning"]
