"""The real-export corpus (issue 11): 21 architectures as users export them today.

Each model is built from a `transformers` config (or a small hand-written torch module)
with random weights, fixed seeds and no downloads, and exported by both torch exporters
at **the installed torch's default opset and default settings**:

* `dynamo`: `torch.onnx.export(model, args, path, dynamo=True)`;
* `legacy`: `torch.onnx.export(model, args, path, dynamo=False)` (TorchScript).

`tests/model_corpus.py` is the older corpus with pinned opsets and export variants for
the frontend tests; this one reuses its builders (BERT, GPT-2, Llama, ViT), its inputs
and its file lock. Files are cached under
`.cache/export-corpus/torch-<version>/<hash>/<model>-<exporter>.onnx` (gitignored), where
<hash> covers the source of both generators and the transformers version, so an edited
generator rebuilds its files instead of reading stale ones.

    python tests/export_corpus.py [MODEL ...]    # build (every model by default), print times
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import model_corpus
from model_corpus import VOCAB, _HiddenStates, _image_inputs, _locked, _token_inputs

ROOT = Path(__file__).resolve().parent.parent
EXPORTERS = ("dynamo", "legacy")


@dataclass(frozen=True)
class ExportSpec:
    """How to build one corpus model and the inputs it is exported with."""

    name: str
    family: str  # text, speech, vision, other
    build: Callable[[], object]  # () -> torch.nn.Module in eval mode
    inputs: Callable[[], dict[str, np.ndarray]]


# --------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------

_DECODER = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    attn_implementation="eager",
)


def _decoder(config_name: str, model_name: str, **extra: object) -> Callable[[], object]:
    """A decoder-only transformers model (hidden states out), called with a mask."""

    def build() -> object:
        import torch
        import transformers

        torch.manual_seed(0)
        config = getattr(transformers, config_name)(**{**_DECODER, **extra})
        model = getattr(transformers, model_name)(config).eval()
        return _HiddenStates.wrap(model, ("input_ids", "attention_mask"))

    return build


def _encoder(
    config_name: str, model_name: str, keys: tuple[str, ...], **config: object
) -> Callable[[], object]:
    """A BERT-like encoder (its last hidden state out)."""

    def build() -> object:
        import torch
        import transformers

        torch.manual_seed(0)
        cfg = getattr(transformers, config_name)(attn_implementation="eager", **config)
        return _encoder_of(getattr(transformers, model_name)(cfg).eval(), keys)

    return build


_BERT_SIZE = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=40,
)


def _t5_encoder() -> object:
    import torch
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(0)
    config = T5Config(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        feed_forward_proj="gated-gelu",  # T5 v1.1 / flan-T5: tanh GELU in a gated MLP
        attn_implementation="eager",
    )
    return _encoder_of(T5EncoderModel(config).eval(), ("input_ids", "attention_mask"))


def _encoder_of(model: object, keys: tuple[str, ...]) -> object:
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(keys, args)), return_dict=True)[0]

    return Wrapper().eval()


# --------------------------------------------------------------------------------------
# Speech
# --------------------------------------------------------------------------------------

MELS, FRAMES = 16, 32


def _whisper_encoder() -> object:
    import torch
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    torch.manual_seed(0)
    config = WhisperConfig(
        num_mel_bins=MELS,
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_layers=1,
        decoder_attention_heads=4,
        decoder_ffn_dim=64,
        max_source_positions=FRAMES // 2,  # the conv stem halves the frames
        vocab_size=VOCAB,
        attn_implementation="eager",
    )
    return _encoder_of(WhisperEncoder(config).eval(), ("input_features",))


def _whisper_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {"input_features": rng.standard_normal((2, MELS, FRAMES)).astype(np.float32)}


# --------------------------------------------------------------------------------------
# Vision
# --------------------------------------------------------------------------------------


def _vision(config_name: str, model_name: str, **config: object) -> Callable[[], object]:
    """A transformers vision backbone; its pooled output (or last hidden state) out."""

    def build() -> object:
        import torch
        import transformers

        torch.manual_seed(0)
        cfg = getattr(transformers, config_name)(**config)
        model = getattr(transformers, model_name)(cfg).eval()
        model_corpus._randomize_batchnorm(model)

        class Wrapper(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
                out = self.model(pixel_values=pixel_values, return_dict=True)
                pooled = getattr(out, "pooler_output", None)
                return out.last_hidden_state if pooled is None else pooled

        return Wrapper().eval()

    return build


# --------------------------------------------------------------------------------------
# Other
# --------------------------------------------------------------------------------------


def _unet_block() -> object:
    """A diffusion-UNet up block: GroupNorm, SiLU, conv, a residual, nearest upsample."""
    import torch
    from torch import nn

    class ResBlock(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.norm1 = nn.GroupNorm(4, channels)
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
            self.norm2 = nn.GroupNorm(4, channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
            self.act = nn.SiLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.conv1(self.act(self.norm1(x)))
            h = self.conv2(self.act(self.norm2(h)))
            return x + h

    class UpBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.res = ResBlock(16)
            self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
            self.conv = nn.Conv2d(16, 8, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(self.up(self.res(x)))

    torch.manual_seed(0)
    return UpBlock().eval()


def _unet_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(6)
    return {"x": rng.standard_normal((2, 16, 8, 8)).astype(np.float32)}


def _lstm() -> object:
    """An embedding, a two-layer LSTM and a linear head (a sequence tagger)."""
    import torch
    from torch import nn

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCAB, 16)
            self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)
            self.head = nn.Linear(24, 5)

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            out, _ = self.lstm(self.embed(input_ids))
            return self.head(out)

    torch.manual_seed(0)
    return Tagger().eval()


PAST = 32


def _decode_step(config_name: str, model_name: str, static: bool = False) -> Callable[[], object]:
    """One decode step of a transformers decoder: one new token against a KV cache of
    PAST positions.

    The cache comes in as plain (batch, kv_heads, PAST, head_dim) tensors per layer and
    the updated keys and values go out, as ONNX decode graphs (onnxruntime-genai) take it.
    A DynamicCache appends the new key and value (Concat); a StaticCache of PAST + 1
    positions writes them at the position (index_copy_: ScatterND from dynamo,
    ScatterElements from the legacy exporter).
    """

    def build() -> object:
        import torch
        import transformers

        torch.manual_seed(0)
        config = getattr(transformers, config_name)(**_DECODER)
        model = getattr(transformers, model_name)(config).eval()
        return _decode_module(model, config, static).eval()

    return build


def _fill_cache(config: object, past: tuple[object, ...], static: bool) -> object:
    """The transformers cache holding the past keys and values of every layer."""
    import torch
    from transformers import DynamicCache, StaticCache

    layers = config.num_hidden_layers  # type: ignore[attr-defined]
    if not static:
        cache = DynamicCache(config=config)
        for i in range(layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        return cache
    cache = StaticCache(config=config, max_cache_len=PAST + 1)
    for i in range(layers):
        k, v = past[2 * i], past[2 * i + 1]
        layer = cache.layers[i]
        layer.lazy_initialization(k, v)
        layer.keys = torch.nn.functional.pad(k, (0, 0, 0, 1))  # type: ignore[arg-type]
        layer.values = torch.nn.functional.pad(v, (0, 0, 0, 1))  # type: ignore[arg-type]
        # from the past's shape, not a constant: the legacy tracer would read a constant
        # after update()'s in-place add
        length = k.shape[2]  # type: ignore[attr-defined]
        layer.cumulative_length = torch.scalar_tensor(length, dtype=torch.long)
    return cache


def _decode_module(model: object, config: object, static: bool) -> object:
    """`model` called with a cache filled from the past inputs, returning the last hidden
    state and every layer's updated keys and values."""
    import torch

    layers = config.num_hidden_layers  # type: ignore[attr-defined]

    class DecodeStep(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *past: torch.Tensor
        ) -> tuple[torch.Tensor, ...]:
            cache = _fill_cache(config, past, static)
            positions = torch.full((input_ids.shape[0], 1), PAST, dtype=torch.long)
            out = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=positions,
                past_key_values=cache,
                use_cache=True,
                return_dict=True,
                cache_position=torch.tensor([PAST]),
            )
            kv = out.past_key_values
            new = [t for i in range(layers) for t in (kv.layers[i].keys, kv.layers[i].values)]
            return (out.last_hidden_state, *new)

    return DecodeStep()


def _decode_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    kv_heads = int(_DECODER["num_key_value_heads"])  # type: ignore[call-overload]
    head_dim = int(_DECODER["hidden_size"]) // int(_DECODER["num_attention_heads"])  # type: ignore[call-overload]
    out: dict[str, np.ndarray] = {
        "input_ids": rng.integers(0, VOCAB, (2, 1)).astype(np.int64),
        "attention_mask": np.ones((2, PAST + 1), np.int64),
    }
    for i in range(int(_DECODER["num_hidden_layers"])):  # type: ignore[call-overload]
        for kind in ("key", "value"):
            shape = (2, kv_heads, PAST, head_dim)
            out[f"past_{kind}_{i}"] = rng.standard_normal(shape).astype(np.float32)
    return out


# --------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------


def _tokens(mask: bool, types: bool = False) -> Callable[[], dict[str, np.ndarray]]:
    return lambda: _token_inputs(mask, types)


SPECS: tuple[ExportSpec, ...] = (
    ExportSpec(
        "bert",
        "text",
        _encoder(
            "BertConfig",
            "BertModel",
            ("input_ids", "attention_mask", "token_type_ids"),
            **_BERT_SIZE,  # two token types: afc --check feeds token_type_ids in [0, 2)
        ),
        _tokens(True, True),
    ),
    ExportSpec(
        "roberta",
        "text",
        _encoder(
            "RobertaConfig",
            "RobertaModel",
            ("input_ids", "attention_mask"),
            pad_token_id=1,
            **_BERT_SIZE,
        ),
        _tokens(True),
    ),
    ExportSpec(
        "distilbert",
        "text",
        _encoder(
            "DistilBertConfig",
            "DistilBertModel",
            ("input_ids", "attention_mask"),
            vocab_size=VOCAB,
            dim=32,
            n_layers=2,
            n_heads=4,
            hidden_dim=320,  # the MLP's inner width
            max_position_embeddings=32,
        ),
        _tokens(True),
    ),
    ExportSpec("gpt2", "text", model_corpus._gpt2, _tokens(True)),
    ExportSpec("llama", "text", model_corpus._llama, _tokens(True)),
    ExportSpec("qwen2", "text", _decoder("Qwen2Config", "Qwen2Model"), _tokens(True)),
    ExportSpec(
        "mistral",
        "text",
        _decoder("MistralConfig", "MistralModel", sliding_window=4),  # < SEQ: the band mask
        _tokens(True),
    ),
    ExportSpec(
        "phi",
        "text",
        _decoder("PhiConfig", "PhiModel", partial_rotary_factor=0.5),
        _tokens(True),
    ),
    ExportSpec("gemma", "text", _decoder("GemmaConfig", "GemmaModel", head_dim=8), _tokens(True)),
    ExportSpec("t5_encoder", "text", _t5_encoder, _tokens(True)),
    ExportSpec("whisper_encoder", "speech", _whisper_encoder, _whisper_inputs),
    ExportSpec("vit", "vision", model_corpus._vit, _image_inputs(16)),
    ExportSpec(
        "deit",
        "vision",
        _vision(
            "DeiTConfig",
            "DeiTModel",
            image_size=16,
            patch_size=4,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            attn_implementation="eager",
        ),
        _image_inputs(16),
    ),
    ExportSpec(
        "swin",
        "vision",
        _vision(
            "SwinConfig",
            "SwinModel",
            image_size=32,
            patch_size=4,
            embed_dim=16,
            depths=[2, 1],
            num_heads=[2, 4],
            window_size=4,
            attn_implementation="eager",
        ),
        _image_inputs(32),
    ),
    ExportSpec(
        "convnext",
        "vision",
        _vision(
            "ConvNextConfig", "ConvNextModel", num_stages=2, hidden_sizes=[8, 16], depths=[1, 1]
        ),
        # 16x16: afc --check of the 7x7 depthwise convs took 56-72 s at 32x32 (under load)
        _image_inputs(16),
    ),
    ExportSpec(
        "resnet",
        "vision",
        _vision(
            "ResNetConfig",
            "ResNetModel",
            embedding_size=8,
            hidden_sizes=[8, 16],
            depths=[1, 1],
            layer_type="basic",
        ),
        _image_inputs(16),
    ),
    ExportSpec(
        "mobilenet_v2",
        "vision",
        _vision(
            "MobileNetV2Config",
            "MobileNetV2Model",
            image_size=16,
            depth_multiplier=0.25,
            depth_divisible_by=4,
            min_depth=4,
            expand_ratio=2.0,
            finegrained_output=False,  # else the head conv keeps 1280 channels
        ),
        # 16x16 and thin: afc --check of its 17 depthwise blocks ran past 4 min at 32x32
        _image_inputs(16),
    ),
    ExportSpec(
        "efficientnet",
        "vision",
        _vision(
            "EfficientNetConfig",
            "EfficientNetModel",
            image_size=16,
            width_coefficient=0.25,
            depth_coefficient=0.25,
            hidden_dim=320,  # = round_filters(1280): the head conv and its BatchNorm
            kernel_sizes=[3, 3, 5],
            in_channels=[32, 16, 24],
            out_channels=[16, 24, 40],
            depthwise_padding=[],
            strides=[1, 2, 2],
            num_block_repeats=[1, 1, 1],
            expand_ratios=[1, 6, 6],
        ),
        _image_inputs(16),
    ),
    ExportSpec("unet_block", "other", _unet_block, _unet_inputs),
    ExportSpec("lstm", "other", _lstm, _tokens(False)),
    ExportSpec("llama_decode", "other", _decode_step("LlamaConfig", "LlamaModel"), _decode_inputs),
    ExportSpec("qwen2_decode", "other", _decode_step("Qwen2Config", "Qwen2Model"), _decode_inputs),
    ExportSpec(
        "llama_decode_static",
        "other",
        _decode_step("LlamaConfig", "LlamaModel", static=True),
        _decode_inputs,
    ),
)
MODELS: dict[str, ExportSpec] = {s.name: s for s in SPECS}


# --------------------------------------------------------------------------------------
# Export and cache
# --------------------------------------------------------------------------------------


@functools.cache
def _source_hash() -> str:
    """A key over everything that decides the exported files but torch's version."""
    import transformers

    digest = hashlib.sha256(transformers.__version__.encode())
    for path in (Path(__file__), Path(model_corpus.__file__)):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cache_dir() -> Path:
    """The corpus directory for the installed torch and this generator's source."""
    import torch

    version = torch.__version__.split("+")[0]
    base = Path(os.environ.get("AFC_EXPORT_CORPUS_DIR", ROOT / ".cache" / "export-corpus"))
    return base / f"torch-{version}" / _source_hash()


def entries() -> list[tuple[str, str]]:
    """Every (model, exporter) pair of the corpus."""
    return [(m, e) for m in MODELS for e in EXPORTERS]


def _export(spec: ExportSpec, exporter: str, target: Path) -> None:
    """Export `spec` with `exporter` into `target` with torch's defaults."""
    import torch

    model = spec.build()
    assert isinstance(model, torch.nn.Module)
    feeds = spec.inputs()
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, args, str(target), dynamo=exporter == "dynamo", input_names=list(feeds)
        )


def model_path(model: str, exporter: str) -> Path:
    """The cached ONNX file of `model` exported by `exporter`, built when missing."""
    directory = cache_dir()
    path = directory / f"{model}-{exporter}.onnx"
    if path.exists():
        return path
    with _locked(directory):
        if path.exists():  # another worker built it while we waited
            return path
        tmp = Path(tempfile.mkdtemp(prefix=f".{model}-{exporter}.", dir=directory))
        try:
            # an external .data file (when the exporter writes one) keeps its name
            _export(MODELS[model], exporter, tmp / path.name)
            for built in tmp.iterdir():
                os.replace(built, directory / built.name)
        finally:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return path


def main() -> None:
    """Build the named models (every model by default) and print what was built."""
    import time

    names = sys.argv[1:] or list(MODELS)
    total = time.perf_counter()
    for model in names:
        for exporter in EXPORTERS:
            start = time.perf_counter()
            try:
                path = model_path(model, exporter)
                what = str(path)
            except Exception as e:  # report every failure, build the rest
                what = f"FAILED {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
            print(f"{model:16} {exporter:7} {time.perf_counter() - start:6.1f}s  {what}")
    print(f"total {time.perf_counter() - total:.1f}s")


if __name__ == "__main__":
    main()
