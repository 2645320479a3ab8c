"""The decode benchmark's model (bench/llm_decode.py): a Qwen2.5-7B-shaped decode step
with a KV cache (examples/make_qwen2_5_7b.py decode_model_text) compiles, its attention
is the decode template, and the bench's per-token numbers come from the fused model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from autofusion.dialects import buffer, graph
from autofusion.driver.compile import CompileOptions, compile_model

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "bench"))

import llm_decode  # noqa: E402
import make_qwen2_5_7b  # noqa: E402


def test_decode_text_reads_the_cache_it_extends() -> None:
    text = make_qwen2_5_7b.decode_model_text(2, past=64)
    assert text == make_qwen2_5_7b.decode_model_text(2, past=64)  # deterministic
    for i in range(2):
        assert f"input l{i}_past_k: f16[1, 4, 64, 128]" in text
        assert f"l{i}_k_all = concat(l{i}_past_k, l{i}_k_rot, axis=2)" in text
        assert f"reshape(l{i}_v_all, shape=[0, 4, 1, -1, 128])" in text
        assert f"output l{i}_k_all" in text
    assert "input future: i1[1, 65]" in text and "future = greater" not in text


def test_one_decode_layer_compiles_to_ascend_c(tmp_path: Path) -> None:
    """One layer at the real shapes (2048 past positions) through lower-to-buffer: the
    KV-cache concat, the rope at the position offset and the attention over 2049 keys."""
    model = tmp_path / "decode.afc"
    model.write_text(make_qwen2_5_7b.decode_model_text(1), encoding="utf-8")
    c = compile_model(str(model), CompileOptions(chip="Ascend910B1"))
    assert c.fused is not None and c.buffer is not None
    attention = [op for op in c.fused.walk() if isinstance(op, graph.FlashAttentionOp)]
    assert len(attention) == 1
    kv = attention[0].operands[1].type
    assert 2049 in kv.get_shape()  # type: ignore[attr-defined]
    templates = [k.template.data for k in c.buffer.walk() if isinstance(k, buffer.KernelOp)]
    assert templates.count("decode_attention") == 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_bench_numbers_come_from_the_fused_step() -> None:
    before, after = llm_decode.measure(layers=1)
    assert after.templates.get("decode_attention") == 1
    assert after.kernels < before.kernels and after.us < before.us
    assert after.tokens_per_s == pytest.approx(1e6 / after.us)
    # weights dominate a decode step: each is read once before and after fusion
    assert after.hbm_bytes == pytest.approx(before.hbm_bytes, rel=0.01)
    assert after.hbm_bytes > 466e6  # one layer's weights (233M f16 parameters)
