"""`afc compile --check` time on two CNNs whose buffer kernels are many small tiles.

Two reproducers of issue 11 (point 4), built here as small torch modules with random
weights and exported with the default torch exporter:

* `convnext`: a ConvNeXt stack (4x4 stem, four stages of two blocks, 2x2 downsampling):
  12 convolutions, 7x7 depthwise ones, LayerNorm over channels both ways (NHWC
  `nn.LayerNorm` in the blocks, the channels-first mean/variance form around the
  downsampling), GELU MLPs and layer scale;
* `inception`: an Inception-style CNN: a stem, then three blocks of four parallel
  branches (1x1; 1x1 then 3x3; 1x1 then 5x5; 3x3 max pool then 1x1) joined by a concat.

The table gives, for `afc compile MODEL --check` in-process on the Ascend910B1 chip,
the time of the stages before the check, the check's wall and CPU time, and its
verdict.
The ONNX files are cached under `.cache/afc-check-bench/` (gitignored).

    python bench/check_speed.py               # both models, and examples/llama_layer.afc
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHIP = "Ascend910B1"


def convnext() -> object:
    """A ConvNeXt of four stages of two blocks on a 64x64 image (random weights)."""
    import torch
    from torch import nn

    class ChannelsFirstNorm(nn.Module):
        """LayerNorm over dim 1 written out, as transformers' ConvNextLayerNorm does."""

        def __init__(self, c: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(1 + 0.1 * torch.randn(c))
            self.bias = nn.Parameter(0.1 * torch.randn(c))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + 1e-6)
            return self.weight[:, None, None] * x + self.bias[:, None, None]

    class Block(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.dwconv = nn.Conv2d(c, c, 7, padding=3, groups=c)
            self.norm = nn.LayerNorm(c, eps=1e-6)
            self.pw1 = nn.Linear(c, 4 * c)
            self.act = nn.GELU()
            self.pw2 = nn.Linear(4 * c, c)
            self.gamma = nn.Parameter(0.5 * torch.ones(c))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.dwconv(x).permute(0, 2, 3, 1)
            y = self.pw2(self.act(self.pw1(self.norm(y))))
            return x + (self.gamma * y).permute(0, 3, 1, 2)

    class ConvNeXt(nn.Module):
        def __init__(self, dims: tuple[int, ...] = (16, 32, 48, 64), depth: int = 2) -> None:
            super().__init__()
            layers: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, stride=4)]
            layers.append(ChannelsFirstNorm(dims[0]))
            for i, c in enumerate(dims):
                if i:
                    layers += [ChannelsFirstNorm(dims[i - 1]), nn.Conv2d(dims[i - 1], c, 2, 2)]
                layers += [Block(c) for _ in range(depth)]
            self.body = nn.Sequential(*layers)
            self.head_norm = nn.LayerNorm(dims[-1], eps=1e-6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head_norm(self.body(x).mean((2, 3)))

    torch.manual_seed(0)
    return ConvNeXt().eval()


def inception() -> object:
    """Three Inception blocks (four branches each, joined by a concat) on a 32x32 image."""
    import torch
    from torch import nn

    def conv(cin: int, cout: int, k: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2), nn.ReLU())

    class Block(nn.Module):
        def __init__(self, cin: int, c1: int, c3: tuple[int, int], c5: tuple[int, int]) -> None:
            super().__init__()
            self.b1 = conv(cin, c1, 1)
            self.b3 = nn.Sequential(conv(cin, c3[0], 1), conv(c3[0], c3[1], 3))
            self.b5 = nn.Sequential(conv(cin, c5[0], 1), conv(c5[0], c5[1], 5))
            self.pool = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv(cin, c1, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.pool(x)], 1)

    class Inception(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(conv(3, 32, 3), nn.MaxPool2d(2, 2))
            self.blocks = nn.Sequential(
                Block(32, 16, (16, 32), (8, 16)),  # 80 channels out
                Block(80, 24, (24, 48), (8, 24)),  # 120
                nn.MaxPool2d(2, 2),
                Block(120, 32, (32, 64), (16, 32)),  # 160
            )
            self.fc = nn.Linear(160, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.blocks(self.stem(x)).mean((2, 3)))

    torch.manual_seed(0)
    return Inception().eval()


# name -> (builder, input shape)
MODELS: dict[str, tuple[Callable[[], object], tuple[int, ...]]] = {
    "convnext": (convnext, (1, 3, 64, 64)),
    "inception": (inception, (1, 3, 32, 32)),
}


def model_path(name: str) -> Path:
    """The cached ONNX export of reproducer `name`, built when missing."""
    build, shape = MODELS[name]
    return cached_export("afc-check-bench", name, build, shape)


def cached_export(
    cache: str, name: str, build: Callable[[], object], shape: tuple[int, ...]
) -> Path:
    """The ONNX export (torch's default exporter) of the module `build()` makes, on one
    random input of `shape`, cached under .cache/CACHE/ by torch version."""
    import torch

    version = torch.__version__.split("+")[0]
    directory = ROOT / ".cache" / cache / f"torch-{version}"
    path = directory / f"{name}.onnx"
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    model = build()
    assert isinstance(model, torch.nn.Module)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=directory)
    os.close(fd)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), tmp, input_names=["pixels"], external_data=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def timed_check(model: Path) -> tuple[float, float, float, str]:
    """`afc compile MODEL --check` in-process: (seconds of the compile before the check,
    seconds of the check, CPU seconds of the check, the check's verdict)."""
    from autofusion.driver.compile import CompileOptions, compile_model
    from autofusion.driver.numerics_check import check_numerics

    start = time.perf_counter()
    c = compile_model(str(model), CompileOptions(chip=CHIP))
    compiled, cpu = time.perf_counter(), time.process_time()
    report = check_numerics(c)
    return (
        compiled - start,
        time.perf_counter() - compiled,
        time.process_time() - cpu,
        str(report["verdict"]),
    )


def main() -> None:
    """One row per model: the compile's stages before the check, the check (wall and
    CPU: other processes share the machine), and its verdict."""
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print(f"check_speed: skipped ({e.name} is not installed)")
        return
    models = [(name, model_path(name)) for name in MODELS]
    models.append(("llama_layer", ROOT / "examples" / "llama_layer.afc"))
    timed_check(models[-1][1])  # warm up: imports and caches are not the first model's
    print(f"afc compile --check ({CHIP})")
    print(f"{'model':12} {'compile s':>10} {'check s':>8} {'check cpu s':>12}  verdict")
    for name, path in models:
        plain, check, cpu, verdict = timed_check(path)
        print(f"{name:12} {plain:10.1f} {check:8.1f} {cpu:12.1f}  {verdict}")


if __name__ == "__main__":
    main()
