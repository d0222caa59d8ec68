"""CNNs of the paper's tables behind one registry (``create_model``)."""

from fullscale.models import preact_resnet, resnet, transfer, wide_resnet  # noqa: F401  (registration)
from fullscale.models.registry import Normalize, create_model, list_models, register_model

__all__ = ["Normalize", "create_model", "list_models", "register_model"]
