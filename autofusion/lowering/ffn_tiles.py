"""The ffn template's static tiles: the largest output tiles, the widest band and the
deepest K stages that fit L0A/L0B/L0C and L1 (ffn_kernel.py docstring).
"""

from __future__ import annotations

from dataclasses import dataclass

from autofusion.hardware import ChipSpec
from autofusion.passes.fusion_rule import Refusal

# static tile candidates, in order of preference (tests force small ones)
MN_CANDIDATES = (
    (128, 128),
    (128, 64),
    (64, 128),
    (64, 64),
    (32, 64),
    (32, 32),
    (16, 32),
    (16, 16),
)


K_CANDIDATES = (128, 64, 32, 16)


STEP_K = (2, 1)


# band widths: the widest whose g tile stays in L1 (fewer accumulator read-modify-writes)
BAND_CANDIDATES = (1024, 512, 256, 128, 64, 32, 16)


ZERO_ELEMS = 2048  # float32 zeros one AIV writes per copy when it clears the accumulator


# cross-core flags: gate/up in the slot (AIC -> AIVs); g in the slot (AIVs -> AIC)
READY, G_READY = 0, 1


SLOTS = 2


@dataclass(frozen=True)
class FfnTiles:
    tm: int
    tn: int
    tk: int
    step_k: int
    bf: int

    @property
    def kl1(self) -> int:
        return self.tk * self.step_k


def l1_bytes(tm: int, tn: int, kl1: int, bf: int, w: int, parts: int) -> int:
    """L1 of the kernel: x stages, W1/W2 stages (one queue per projection), the g tile."""
    return 2 * tm * kl1 * w + parts * 2 * kl1 * tn * w + tm * bf * w


def choose_ffn_tiles(chip: ChipSpec, w: int, parts: int) -> FfnTiles | Refusal:
    """The largest output tiles, then the widest band, then the deepest K stages that fit
    L0A/L0B/L0C and L1."""
    for tm, tn in MN_CANDIDATES:
        if parts * tm * tn * 4 > chip.l0c_bytes:
            continue
        for bf in BAND_CANDIDATES:
            for tk in K_CANDIDATES:
                if 2 * tm * tk * w > chip.l0a_bytes or 2 * tk * tn * w > chip.l0b_bytes:
                    continue
                for step in STEP_K:
                    if bf >= tn and l1_bytes(tm, tn, tk * step, bf, w, parts) <= chip.l1_bytes:
                        return FfnTiles(tm, tn, tk, step, bf)
    return Refusal(f"L0/L1 of {chip.name} cannot hold the ffn's 16x16 tiles of {w}-byte data")


def ffn_footprint(t: FfnTiles, w: int, parts: int) -> dict[str, int]:
    """Bytes of L0A/L0B/L0C/L1 the tiles take: the bounds `choose_ffn_tiles` keeps."""
    return {
        "l0a": 2 * t.tm * t.tk * w,
        "l0b": 2 * t.tk * t.tn * w,
        "l0c": parts * t.tm * t.tn * 4,
        "l1": l1_bytes(t.tm, t.tn, t.kl1, t.bf, w, parts),
    }


# the tiling keys of the vector passes' row tiles (elements): activation, final, first
ACT_TILE, OUT_TILE, INIT_TILE = "act_tile_elems", "out_tile_elems", "init_tile_elems"
