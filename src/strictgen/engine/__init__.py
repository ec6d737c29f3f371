"""Model loading, chat templates and the constrained generation loop (see generate.py)."""

from strictgen.errors import BudgetError, ModelError

from .generate import GenerationConfig, GenerationResult, GenerationStats, generate
from .loader import load_model
from .model import ChatTemplate, Model
from .sampling import SamplingParams

__all__ = [
    "BudgetError",
    "ChatTemplate",
    "GenerationConfig",
    "GenerationResult",
    "GenerationStats",
    "Model",
    "ModelError",
    "SamplingParams",
    "generate",
    "load_model",
]
