"""mycc: a small compiler built on afc (docs/embedding.md). It adds one pass of its own,
fold-unary-pairs, that runs between afc's graph-fusion and ub-fusion."""
