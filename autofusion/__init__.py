"""afc: an operator auto-fusion compiler for Huawei Ascend NPUs, built on xDSL."""
