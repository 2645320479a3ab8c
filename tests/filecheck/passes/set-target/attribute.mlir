// #afc.target<"CHIP">: parsed in any case, printed canonically (as CANN spells it),
// verified against the chips of autofusion/hardware/chips.toml.
// RUN: afc-opt %s | filecheck %s
// RUN: afc-opt %s --print-op-generic | afc-opt | filecheck %s
// RUN: not afc-opt %S/Inputs/unknown-chip.mlir 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not afc-opt %S/Inputs/bare-chip.mlir 2>&1 | filecheck %s --check-prefix=BARE
// RUN: not afc-opt %S/Inputs/string-target.mlir -p ub-fusion 2>&1 | filecheck %s --check-prefix=STRING

// CHECK: builtin.module attributes {afc.target = #afc.target<"Ascend910B4">} {

// UNKNOWN: unknown-chip.mlir:1:53: error: unknown chip 'Ascend911'; known chips: Ascend310P3, Ascend910, Ascend910B1, Ascend910B2, Ascend910B3, Ascend910B4
// BARE:    bare-chip.mlir:1:{{[0-9]+}}: error: {{.*}}a chip name
// STRING:  afc-opt: error: afc.target must be #afc.target<"CHIP">, not "Ascend910B1"

builtin.module attributes {afc.target = #afc.target<"ascend910b4">} {
}
