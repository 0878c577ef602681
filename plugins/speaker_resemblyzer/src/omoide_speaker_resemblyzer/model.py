"""The GE2E voice encoder's forward pass in numpy: a 3-layer LSTM, a projection, ReLU.

As Resemblyzer's ``VoiceEncoder.forward`` (``torch.nn.LSTM(40, 256, 3,
batch_first=True)``, then ``Linear(256, 256)`` and ReLU on the last layer's final
hidden state, L2-normalised). Gates in torch's order (input, forget, cell, output);
each layer's input projection is one matrix product over all time steps, the
recurrence one (windows, 256) x (256, 1024) product per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from omoide.api import ComponentError, FloatArray

LAYERS = 3
HIDDEN = 256
EMBEDDING = 256
N_MELS = 40


@dataclass(frozen=True)
class LSTMLayer:
    w_ih_t: FloatArray  # (inputs, 4 * hidden)
    w_hh_t: FloatArray  # (hidden, 4 * hidden)
    bias: FloatArray  # (4 * hidden,): b_ih + b_hh


@dataclass(frozen=True)
class VoiceEncoderWeights:
    layers: tuple[LSTMLayer, ...]
    linear_t: FloatArray  # (hidden, embedding)
    linear_bias: FloatArray

    @classmethod
    def from_state(cls, state: Mapping[str, FloatArray]) -> VoiceEncoderWeights:
        """From the checkpoint's ``model_state`` tensors (torch's names and shapes)."""
        try:
            layers = tuple(LSTMLayer(
                np.ascontiguousarray(state[f"lstm.weight_ih_l{i}"].T, dtype=np.float32),
                np.ascontiguousarray(state[f"lstm.weight_hh_l{i}"].T, dtype=np.float32),
                (state[f"lstm.bias_ih_l{i}"] + state[f"lstm.bias_hh_l{i}"]).astype(np.float32))
                for i in range(LAYERS))
            weights = cls(layers, np.ascontiguousarray(state["linear.weight"].T, np.float32),
                          state["linear.bias"].astype(np.float32))
        except KeyError as exc:
            raise ComponentError(f"speaker resemblyzer: the checkpoint has no {exc}") from exc
        weights.check()
        return weights

    def check(self) -> None:
        inputs = N_MELS
        for i, layer in enumerate(self.layers):
            if (layer.w_ih_t.shape != (inputs, 4 * HIDDEN)
                    or layer.w_hh_t.shape != (HIDDEN, 4 * HIDDEN)
                    or layer.bias.shape != (4 * HIDDEN,)):
                raise ComponentError(f"speaker resemblyzer: LSTM layer {i} has shapes "
                                     f"{layer.w_ih_t.shape}, {layer.w_hh_t.shape}")
            inputs = HIDDEN
        if self.linear_t.shape != (HIDDEN, EMBEDDING):
            raise ComponentError(f"speaker resemblyzer: projection {self.linear_t.shape}")


def _halve_sigmoid_gates(matrix: FloatArray) -> FloatArray:
    """``matrix`` with the input, forget and output gates' columns halved: then one tanh
    over all gates gives the cell gate and, as 0.5 * tanh(x / 2) + 0.5, the sigmoids."""
    scale = np.full(4 * HIDDEN, 0.5, np.float32)
    scale[2 * HIDDEN:3 * HIDDEN] = 1.0
    out: FloatArray = np.ascontiguousarray(matrix * scale, dtype=np.float32)
    return out


def _layer(layer: LSTMLayer, x: FloatArray) -> FloatArray:
    """All hidden states (batch, steps, hidden) of one LSTM layer over ``x``."""
    batch, steps, _ = x.shape
    w_hh = _halve_sigmoid_gates(layer.w_hh_t)
    projected = (x.reshape(batch * steps, -1) @ _halve_sigmoid_gates(layer.w_ih_t)
                 + _halve_sigmoid_gates(layer.bias)).reshape(batch, steps, 4 * HIDDEN)
    h = np.zeros((batch, HIDDEN), np.float32)
    c = np.zeros((batch, HIDDEN), np.float32)
    gates = np.empty((batch, 4 * HIDDEN), np.float32)
    out = np.empty((batch, steps, HIDDEN), np.float32)
    for t in range(steps):
        np.matmul(h, w_hh, out=gates)
        gates += projected[:, t]
        np.tanh(gates, out=gates)
        sig = gates * 0.5
        sig += 0.5
        c *= sig[:, HIDDEN:2 * HIDDEN]
        c += sig[:, :HIDDEN] * gates[:, 2 * HIDDEN:3 * HIDDEN]
        h = sig[:, 3 * HIDDEN:] * np.tanh(c)
        out[:, t] = h
    return out


def forward(weights: VoiceEncoderWeights, mels: FloatArray) -> FloatArray:
    """Unit vectors (batch, 256) of mel windows (batch, frames, 40)."""
    x = np.asarray(mels, dtype=np.float32)
    for layer in weights.layers:
        x = _layer(layer, x)
    raw = np.maximum(x[:, -1] @ weights.linear_t + weights.linear_bias, 0.0)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    out: FloatArray = (raw / np.maximum(norms, 1e-12)).astype(np.float32)
    return out
