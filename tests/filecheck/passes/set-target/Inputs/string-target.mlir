builtin.module attributes {afc.target = "Ascend910B1"} {
}
