"""The fused legal-logit kernel (agents/pair_kernel.py) against the torch ops it replaces."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from agents.network import pair_logits, torch_pair_logits  # noqa: E402
from agents.pair_kernel import fused_eligible, fused_pair_logits, fused_sample  # noqa: E402


def _problem(seed: int, n: int = 64, width: int = 32, actions: int = 50) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    counts = torch.randint(0, 12, (n,), generator=gen)  # rows with no legal pair too
    rows = torch.repeat_interleave(torch.arange(n), counts)
    cols = torch.randint(0, actions, (rows.numel(),), generator=gen)  # repeated actions: gradients accumulate
    h = torch.randn(n, width, generator=gen)
    weight = torch.randn(actions, width, generator=gen)
    bias = torch.randn(actions, generator=gen)
    return h, rows, weight, bias, cols


def _grads(fn, h, rows, weight, bias, cols, want=(True, True, True)):  # type: ignore[no-untyped-def]
    leaves = [t.clone().requires_grad_(w) for t, w in zip((h, weight, bias), want, strict=True)]
    out = fn(leaves[0], rows, leaves[1], leaves[2], cols)
    upstream = torch.linspace(-1.0, 2.0, out.numel())
    (out * upstream).sum().backward()
    return out.detach(), [t.grad for t in leaves]


@pytest.mark.parametrize("seed", range(4))
def test_fused_pair_logits_equal_the_torch_ops_values_and_gradients(seed: int) -> None:
    problem = _problem(seed)
    out, grads = _grads(fused_pair_logits, *problem)
    expected, expected_grads = _grads(torch_pair_logits, *problem)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


ASKED = [(True, False, False), (False, True, False), (False, False, True), (True, True, False)]


@pytest.mark.parametrize("want", ASKED)
def test_fused_pair_logits_give_only_the_gradients_asked_for(want: tuple[bool, bool, bool]) -> None:
    problem = _problem(7)
    _, grads = _grads(fused_pair_logits, *problem, want=want)
    _, expected = _grads(torch_pair_logits, *problem, want=want)
    for got, wanted, asked in zip(grads, expected, want, strict=True):
        assert (got is None) == (not asked)
        if asked:
            torch.testing.assert_close(got, wanted, rtol=1e-5, atol=1e-5)


def test_fused_pair_logits_with_no_pair_and_in_inference_mode() -> None:
    h, _, weight, bias, _ = _problem(3)
    empty = torch.zeros(0, dtype=torch.int64)
    assert fused_pair_logits(h, empty, weight, bias, empty).shape == (0,)
    _, rows, _, _, cols = _problem(3)
    with torch.inference_mode():
        torch.testing.assert_close(
            fused_pair_logits(h, rows, weight, bias, cols), torch_pair_logits(h, rows, weight, bias, cols)
        )


def test_pair_logits_take_the_kernel_for_float32_on_the_cpu_only() -> None:
    """float64 (and any GPU tensor) keeps the torch ops; float32 on the CPU takes the kernel, which is
    not bit-equal to them (a different summation order), so the two paths can be told apart."""
    h, rows, weight, bias, cols = _problem(11, width=256)
    assert fused_eligible(h, weight, bias)
    assert not fused_eligible(h.double(), weight.double(), bias.double())
    assert torch.equal(pair_logits(h, rows, weight, bias, cols), fused_pair_logits(h, rows, weight, bias, cols))
    double = pair_logits(h.double(), rows, weight.double(), bias.double(), cols)
    assert torch.equal(double, torch_pair_logits(h.double(), rows, weight.double(), bias.double(), cols))


def test_fused_pair_logits_propagate_a_nan() -> None:
    """fastmath without ``nnan``: a NaN in the head reaches the logits that read it, and only those."""
    h, rows, weight, bias, cols = _problem(5)
    weight[cols[0]] = float("nan")
    out = fused_pair_logits(h, rows, weight, bias, cols)
    assert torch.equal(out.isnan(), cols == cols[0])


def test_the_environment_switch_keeps_the_torch_ops() -> None:
    """``BURAKO_PAIR_KERNEL=0`` (the benchmark's before) turns the kernel off for the process."""
    code = (
        "import torch; from agents.network import pair_logits, torch_pair_logits; from agents import pair_kernel; "
        "h = torch.randn(4, 256); w = torch.randn(9, 256); b = torch.randn(9); "
        "r = torch.tensor([0, 1, 1, 3]); c = torch.tensor([8, 0, 5, 5]); "
        "print(pair_kernel.ENABLED, torch.equal(pair_logits(h, r, w, b, c), torch_pair_logits(h, r, w, b, c)))"
    )
    for value, expected in (("0", "False True"), ("1", "True")):
        env = {**os.environ, "BURAKO_PAIR_KERNEL": value}
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert result.stdout.split()[0] == expected.split()[0]
        if value == "0":
            assert result.stdout.strip() == expected


def test_fused_sample_stops_at_nan_logits() -> None:
    """A NaN in the head makes a draw impossible for the rows that read it: an error naming the row,
    not an action drawn from garbage."""
    h, rows, weight, bias, cols = _problem(5)
    used = torch.unique(rows)  # rows with a legal pair, renumbered from 0
    h, rows = h[used], torch.searchsorted(used, rows)
    with torch.no_grad():
        fused_sample(h, rows, weight, bias, cols, torch.rand(rows.shape))  # finite: draws
        weight[:] = float("nan")
        with pytest.raises(ValueError, match=f"row {int(rows[0])} has no legal action, or NaN logits"):
            fused_sample(h, rows, weight, bias, cols, torch.rand(rows.shape))
