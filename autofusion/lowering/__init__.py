"""Lowering fusion groups to buffer kernels: one template per kernel shape."""
