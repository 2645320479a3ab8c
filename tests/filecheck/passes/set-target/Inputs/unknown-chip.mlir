builtin.module attributes {afc.target = #afc.target<"Ascend911">} {
}
