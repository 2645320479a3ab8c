"""Small real models, exported to ONNX by both torch exporters, for frontend tests.

Every model is built from a `transformers` config or a hand-written torch module with
random weights (fixed seeds, no downloads) and kept tiny so the whole corpus exports in
a few minutes on two cores. Each is exported with

* `dynamo`: `torch.onnx.export(..., dynamo=True, opset_version=18)`, the default
  exporter of torch 2.x (it runs onnxscript's optimizer);
* `legacy`: `torch.onnx.export(..., dynamo=False)` (TorchScript), at the opset each
  model names (13-17), so the importer sees the older operator signatures too.

The ResNet has one more pair: `resnet_fused` is the same net with BatchNormalization
folded into the convolutions (by torch.fx's `fuse` for dynamo; by the legacy exporter's
eval-mode peephole for legacy), so there is no BatchNormalization node. `resnet` keeps
them: its legacy export uses `TrainingMode.PRESERVE`, which skips that peephole, and its
dynamo export skips onnxscript's optimizer, which would fold them too.

Files are cached under `.cache/afc-corpus/torch-<version>/` (gitignored), keyed by the
model and exporter, and built on first use under a file lock (pytest-xdist workers may
ask for the same file at once). A model's inputs are saved beside it as `.npz`.

The tests check a corpus file with `graph_fused` (imported and run through graph-fusion)
and `assert_matches_ort` (afc's interpreter against ONNX Runtime).

    python tests/model_corpus.py          # build every file, print the paths
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

ROOT = Path(__file__).resolve().parent.parent
EXPORTERS = ("dynamo", "legacy")


@dataclass(frozen=True)
class ModelSpec:
    """How to build one corpus model and the inputs it is run on."""

    name: str
    build: Callable[[], object]  # () -> torch.nn.Module in eval mode
    inputs: Callable[[], dict[str, np.ndarray]]
    legacy_opset: int
    # build variant for the legacy exporter (None: same as `build`)
    legacy_build: Callable[[], object] | None = None
    # legacy TrainingMode: "eval" runs the eval peephole (folds BN into conv), "preserve" not
    legacy_training: str = "eval"
    # run onnxscript's optimizer after the dynamo export (it folds BatchNorm into Conv)
    dynamo_optimize: bool = True
    # export at each exporter's default opset (legacy_opset unused), as a new user does
    default_opsets: bool = False


# --------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------

SEQ = 8
VOCAB = 96


def _token_inputs(with_mask: bool, with_types: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    out = {"input_ids": rng.integers(0, VOCAB, (2, SEQ)).astype(np.int64)}
    if with_mask:
        mask = np.ones((2, SEQ), np.int64)
        mask[1, SEQ - 3 :] = 0  # a padded second sequence exercises the mask arithmetic
        out["attention_mask"] = mask
    if with_types:
        types = np.zeros((2, SEQ), np.int64)
        types[:, SEQ // 2 :] = 1
        out["token_type_ids"] = types
    return out


class _HiddenStates:
    """Wraps a transformers model so that it returns a plain tensor (its first output)."""

    @staticmethod
    def wrap(model: object, keys: tuple[str, ...]) -> object:
        import torch

        class Wrapper(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *args: torch.Tensor) -> torch.Tensor:
                out = self.model(**dict(zip(keys, args)), use_cache=False, return_dict=True)
                return out[0]

        return Wrapper().eval()


def _bert(attention: str = "eager") -> object:
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=32,
        attn_implementation=attention,
    )
    return _HiddenStates.wrap(
        BertModel(config).eval(), ("input_ids", "attention_mask", "token_type_ids")
    )


def _gpt2(attention: str = "eager") -> object:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=VOCAB,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=32,
        attn_implementation=attention,
    )
    return _HiddenStates.wrap(GPT2LMHeadModel(config).eval(), ("input_ids", "attention_mask"))


def _llama(attention: str = "eager") -> object:
    import torch
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention
        max_position_embeddings=64,
        attn_implementation=attention,
    )
    # with an attention mask, transformers skips its packed-sequence detection (aten::diff,
    # which the legacy exporter cannot export)
    return _HiddenStates.wrap(LlamaModel(config).eval(), ("input_ids", "attention_mask"))


def _vit() -> object:
    import torch
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=16,
        patch_size=4,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        attn_implementation="eager",
    )
    model = ViTModel(config, add_pooling_layer=True).eval()

    class Wrapper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
            return self.model(pixel_values=pixel_values, return_dict=True).pooler_output

    return Wrapper().eval()


def _image_inputs(size: int) -> Callable[[], dict[str, np.ndarray]]:
    def make() -> dict[str, np.ndarray]:
        rng = np.random.default_rng(2)
        return {"pixel_values": rng.standard_normal((2, 3, size, size)).astype(np.float32)}

    return make


def _randomize_batchnorm(model: object) -> None:
    """Give every BatchNorm non-trivial running statistics (fresh ones are 0 and 1)."""
    import torch

    assert isinstance(model, torch.nn.Module)
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


def _resnet() -> object:
    """A two-stage ResNet of basic blocks (He et al. 2015), BatchNorm after every conv."""
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down: nn.Module = nn.Identity()
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + self.down(x))

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 8, 3, 1, 1, bias=False),
                nn.BatchNorm2d(8),
                nn.ReLU(),
                nn.MaxPool2d(3, 2, 1),
            )
            self.layer1 = BasicBlock(8, 8, 1)
            self.layer2 = BasicBlock(8, 16, 2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(16, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.layer2(self.layer1(self.stem(x)))
            return self.fc(torch.flatten(self.pool(x), 1))

    torch.manual_seed(0)
    model = ResNet()
    _randomize_batchnorm(model)
    return model.eval()


def _resnet_fx_fused() -> object:
    """`_resnet` with BatchNorm folded into the convolutions by torch.fx."""
    from torch.fx.experimental.optimization import fuse

    return fuse(_resnet())  # type: ignore[arg-type]


def _mobilenet() -> object:
    """MobileNetV2-style inverted residual blocks (Sandler et al. 2018), written by hand."""
    import torch
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int, stride: int, groups: int, act: bool) -> nn.Module:
        layers: list[nn.Module] = [
            nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if act:
            layers.append(nn.ReLU6())
        return nn.Sequential(*layers)

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            self.use_res = stride == 1 and cin == cout
            self.block = nn.Sequential(
                conv_bn(cin, hidden, 1, 1, 1, True),  # pointwise expansion
                conv_bn(hidden, hidden, 3, stride, hidden, True),  # depthwise
                conv_bn(hidden, cout, 1, 1, 1, False),  # linear bottleneck
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.block(x)
            return x + y if self.use_res else y

    class MobileNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                conv_bn(3, 8, 3, 2, 1, True),
                InvertedResidual(8, 8, 1, 4),
                InvertedResidual(8, 16, 2, 4),
                InvertedResidual(16, 16, 1, 4),
                conv_bn(16, 32, 1, 1, 1, True),
            )
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, 10))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.pool(self.features(x))
            return self.classifier(torch.flatten(x, 1))

    torch.manual_seed(0)
    model = MobileNet()
    _randomize_batchnorm(model)
    return model.eval()


def _mlp() -> object:
    import torch
    from torch import nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 32)
            self.norm = nn.LayerNorm(32)
            self.fc3 = nn.Linear(32, 8)
            self.gelu = nn.GELU()
            self.silu = nn.SiLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.gelu(self.fc1(x))
            x = self.norm(self.silu(self.fc2(x)) + x)
            return torch.softmax(torch.tanh(self.fc3(x)), dim=-1)

    torch.manual_seed(0)
    return MLP().eval()


def _mlp_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(4)
    return {"x": rng.standard_normal((4, 16)).astype(np.float32)}


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("bert", _bert, lambda: _token_inputs(True, True), 14),
        ModelSpec("gpt2", _gpt2, lambda: _token_inputs(True, False), 14),
        ModelSpec("llama", _llama, lambda: _token_inputs(True, False), 17),
        ModelSpec("vit", _vit, _image_inputs(16), 15),
        ModelSpec(
            "resnet",
            _resnet,
            _image_inputs(16),
            16,
            legacy_training="preserve",
            dynamo_optimize=False,
        ),
        ModelSpec("resnet_fused", _resnet_fx_fused, _image_inputs(16), 13, legacy_build=_resnet),
        ModelSpec("mobilenet", _mobilenet, _image_inputs(16), 13),
        ModelSpec("mlp", _mlp, _mlp_inputs, 13),
    )
}


# --------------------------------------------------------------------------------------
# Export and cache
# --------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The corpus directory for the installed torch version."""
    import torch

    version = torch.__version__.split("+")[0]
    return Path(os.environ.get("AFC_CORPUS_DIR", ROOT / ".cache" / "afc-corpus")) / (
        f"torch-{version}"
    )


def entries() -> list[tuple[str, str]]:
    """Every (model, exporter) pair of the corpus."""
    return [(m, e) for m in MODELS for e in EXPORTERS]


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _export(spec: ModelSpec, exporter: str, target: Path) -> None:
    """Export `spec` with `exporter` into `target` (a .onnx path in a fresh directory)."""
    import torch

    builder = spec.legacy_build if exporter == "legacy" and spec.legacy_build else spec.build
    model = builder()
    assert isinstance(model, torch.nn.Module)
    feeds = spec.inputs()
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    names = list(feeds)
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            program = torch.onnx.export(
                model,
                args,
                dynamo=True,
                opset_version=None if spec.default_opsets else 18,
                input_names=names,
                optimize=spec.dynamo_optimize,
                verbose=False,
            )
            assert program is not None
            # all weights in an external .data file beside the model, as large models have
            program.save(str(target), external_data=True)
        else:
            training = (
                torch.onnx.TrainingMode.PRESERVE
                if spec.legacy_training == "preserve"
                else torch.onnx.TrainingMode.EVAL
            )
            torch.onnx.export(
                model,
                args,
                str(target),
                dynamo=False,
                opset_version=None if spec.default_opsets else spec.legacy_opset,
                input_names=names,
                output_names=["output"],
                training=training,
                do_constant_folding=True,
            )


def model_path(model: str, exporter: str) -> Path:
    """The cached ONNX file of `model` exported by `exporter`, built when missing."""
    return spec_path(MODELS[model], exporter)


def spec_path(spec: ModelSpec, exporter: str) -> Path:
    """The cached ONNX file of `spec` exported by `exporter`, built when missing."""
    model = spec.name
    directory = cache_dir() / f"{model}-{exporter}"
    path = directory / "model.onnx"
    if path.exists():
        return path
    with _locked(cache_dir()):
        if path.exists():  # another worker built it while we waited
            return path
        tmp = Path(tempfile.mkdtemp(prefix=f".{model}-{exporter}.", dir=cache_dir()))
        try:
            _export(spec, exporter, tmp / "model.onnx")
            np.savez(tmp / "inputs.npz", **spec.inputs())  # type: ignore[arg-type]
            os.replace(tmp, directory)
        finally:
            if tmp.exists():
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
    return path


def model_inputs(model: str) -> dict[str, np.ndarray]:
    """The inputs `model` is run on (deterministic)."""
    return MODELS[model].inputs()


# --------------------------------------------------------------------------------------
# Checks on a corpus file
# --------------------------------------------------------------------------------------


def graph_fused(path: Path) -> tuple[ModuleOp, Counter[str]]:
    """The ONNX file imported and run through the whole `graph-fusion` pass (verified),
    and its op counts after."""
    from autofusion.mlir_io import default_context
    from autofusion.passes.graph_fusion import GraphFusionPass
    from frontends.onnx import import_onnx_file

    module = import_onnx_file(default_context(), path)
    GraphFusionPass().run(module)
    module.verify()
    return module, Counter(op.name for op in module.walk())


def assert_matches_ort(
    module: ModuleOp,
    path: Path,
    feeds: dict[str, np.ndarray],
    tolerance: tuple[float, float] = (1e-4, 1e-4),
    label: str = "",
) -> None:
    """afc's interpreter on `module` (imported from the ONNX file `path`, perhaps
    rewritten since) gives ONNX Runtime's outputs, with its graph optimizations off, in
    order, within `tolerance` (rtol, atol)."""
    import pytest

    from autofusion.interpreter import run_function

    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    got = list(run_function(module, feeds).values())
    assert len(got) == len(want), label
    rtol, atol = tolerance
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape, label
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=label)


def main() -> None:
    """Build the whole corpus and print what was built."""
    import time

    for model, exporter in entries():
        start = time.perf_counter()
        path = model_path(model, exporter)
        print(f"{model:14} {exporter:7} {time.perf_counter() - start:6.1f}s  {path}")


if __name__ == "__main__":
    main()
