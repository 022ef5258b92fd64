"""Fitting the learned heads: L2 logistic regression by Newton's method, and a one-hidden-layer
MLP, both in numpy with no randomness beyond a fixed seed.

Why here, once: the harm model (scripts/train_harm_model.py) and the safety detectors
(scripts/train_detectors.py) fit the same kind of head; one implementation keeps them from
drifting apart. Training-time only: the package reads the weights, never this module.
"""

from __future__ import annotations

import numpy as np

NEWTON_STEPS = 50


def standardise(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale per feature, so one penalty strength suits every part."""
    return features.mean(axis=0), features.std(axis=0) + 1e-6


def sigmoid(values: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(values, -40, 40)))


def fit_logistic(features: np.ndarray, labels: np.ndarray, strength: float,
                 sample_weights: np.ndarray | None = None,
                 intercept: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method; the bias is not penalised.

    Minimises the weighted mean log-loss + strength/2 * |w|^2. Newton's method from zero
    weights needs no learning rate and no randomness, so the same data gives the same weights
    every time. `intercept` (default all ones) is the bias column: a row of a pairwise
    comparison (features = worse - better, label 1) has 0 there, as a difference has no bias.
    """
    rows, width = features.shape
    weights_of_rows = np.ones(rows) if sample_weights is None else sample_weights / sample_weights.mean()
    bias_column = np.ones(rows) if intercept is None else intercept
    design = np.hstack([features, bias_column[:, None]])
    penalty = np.full(width + 1, strength)
    penalty[-1] = 0.0
    weights = np.zeros(width + 1)
    for _ in range(NEWTON_STEPS):
        probability = sigmoid(design @ weights)
        gradient = design.T @ (weights_of_rows * (probability - labels)) / rows + penalty * weights
        curvature = weights_of_rows * probability * (1 - probability)
        hessian = (design * curvature[:, None]).T @ design / rows + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-9:
            break
    return weights[:-1], float(weights[-1])


def fit_mlp(features: np.ndarray, labels: np.ndarray, hidden: int, strength: float,
            sample_weights: np.ndarray | None = None, seed: int = 0, epochs: int = 200,
            rate: float = 0.01) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One ReLU hidden layer and a logistic output, full-batch Adam on the weighted log-loss
    with L2 on the weights; initialised from `seed`, so a run is reproducible.

    Returns (hidden weights [width, hidden], hidden bias, output weights, output bias).
    """
    rng = np.random.default_rng(seed)
    rows, width = features.shape
    weights_of_rows = np.ones(rows) if sample_weights is None else sample_weights / sample_weights.mean()
    params = [rng.normal(0, np.sqrt(2.0 / width), (width, hidden)), np.zeros(hidden),
              rng.normal(0, np.sqrt(1.0 / hidden), hidden), np.zeros(1)]
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    for step in range(1, epochs + 1):
        layer = features @ params[0] + params[1]
        active = np.maximum(layer, 0.0)
        error = weights_of_rows * (sigmoid(active @ params[2] + params[3][0]) - labels) / rows
        grad_out = active.T @ error + strength * params[2]
        grad_back = np.outer(error, params[2]) * (layer > 0)
        grads = [features.T @ grad_back + strength * params[0], grad_back.sum(axis=0),
                 grad_out, np.array([error.sum()])]
        for index, grad in enumerate(grads):
            moments[index] = 0.9 * moments[index] + 0.1 * grad
            squares[index] = 0.999 * squares[index] + 0.001 * grad ** 2
            corrected = moments[index] / (1 - 0.9 ** step)
            scaled = np.sqrt(squares[index] / (1 - 0.999 ** step)) + 1e-8
            params[index] = params[index] - rate * corrected / scaled
    return params[0], params[1], params[2], float(params[3][0])
