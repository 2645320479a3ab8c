builtin.module attributes {afc.target = #afc.target<Ascend910B1>} {
}
