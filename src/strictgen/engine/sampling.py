"""Choosing the next token from masked logits: greedy, or temperature / top-k / top-p with a seed.

Sampling uses the Gumbel-max trick: adding Gumbel noise to the log-probabilities and taking the
arg-max is a sample from their softmax. The same noisy scores also *rank* every candidate, and the
first candidate in that ranking which passes a further check (the truncation guard) is a sample
from the distribution restricted to the tokens that pass — with no resampling loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from strictgen.errors import StrictgenError


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    top_k: int = 0  # 0: no limit
    seed: int | None = None

    def __post_init__(self):
        if self.temperature < 0:
            raise StrictgenError(f"temperature must be >= 0, not {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise StrictgenError(f"top_p must be in (0, 1], not {self.top_p}")
        if self.top_k < 0:
            raise StrictgenError(f"top_k must be >= 0, not {self.top_k}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0 or self.top_k == 1


class Sampler:
    def __init__(self, params: SamplingParams):
        self.params = params
        self.rng = np.random.default_rng(params.seed)

    def scores(self, logits: np.ndarray) -> np.ndarray:
        """Scores whose arg-max is the chosen token (-inf for tokens that cannot be chosen)."""
        p = self.params
        if p.greedy:
            return logits
        scores = logits.astype(np.float64) / p.temperature
        finite = np.isfinite(scores)
        if p.top_k and p.top_k < int(finite.sum()):
            kth = np.partition(scores, -p.top_k)[-p.top_k]
            scores[scores < kth] = -np.inf
        if p.top_p < 1.0:
            live = np.flatnonzero(np.isfinite(scores))
            order = live[np.argsort(-scores[live], kind="stable")]
            probs = np.exp(scores[order] - scores[order[0]])
            probs /= probs.sum()
            keep = int(np.searchsorted(np.cumsum(probs), p.top_p)) + 1
            scores[order[keep:]] = -np.inf
        live = np.isfinite(scores)
        scores[live] += self.rng.gumbel(size=int(live.sum()))
        return scores

    @staticmethod
    def ranked(scores: np.ndarray, limit: int) -> list[int]:
        """Up to `limit` tokens with finite scores, best first."""
        live = np.flatnonzero(np.isfinite(scores))
        if len(live) > limit:
            live = live[np.argpartition(-scores[live], limit - 1)[:limit]]
        return live[np.argsort(-scores[live], kind="stable")].tolist()
