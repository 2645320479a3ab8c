"""The compile report: report.json, its Markdown rendering and the end-of-compile summary.

"Before" is the model as imported with every op its own kernel; "after" is the fused
graph (graph, split and UB fusion). GM bytes and times come from the fusion report
(autofusion/report.py), so they follow the cost model's rules (docs/ub-fusion.md).
Two traffic measures: logical GM bytes (what the kernels' DataCopies request, every byte
through L2) and HBM bytes (the part the L2 traffic model, autofusion/traffic_model.py,
sends to HBM: an LRU L2, bracketed by a scan-resistant one and one that writes dead dirty
data back).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autofusion.driver.pipeline import OPT_LEVELS

if TYPE_CHECKING:
    from autofusion.driver.pipeline import Compilation

# kernels listed in the summary; report.md lists them all
SUMMARY_KERNELS = 5
# ops shown per kernel in report.md before "... (N ops)"
OPS_SHOWN = 8


def compile_report_json(c: Compilation) -> dict[str, Any]:
    """report.json: totals before/after and every kernel of the fused model."""
    from autofusion.report import launch_overhead

    assert c.before is not None and c.after is not None
    before = c.before.totals()
    after = c.after.totals()
    launches = launch_overhead(c.after, c.buffer, c.chip)
    rewrites = Counter(a.rule for a in c.statistics.applications)
    return {
        "model": Path(c.model).name,
        "chip": c.chip.name,
        "opt_level": c.options.opt_level,
        "opt_level_summary": OPT_LEVELS[c.options.opt_level].summary,
        "totals": {
            "ops_before": before["ops"],
            "kernels_before": before["kernels"],
            "kernels_after": after["kernels"],
            "fused_kernels": after["fused_kernels"],
            "library_ops": after["library_ops"],
            "gm_bytes_before": before["gm_bytes_after"],
            "gm_bytes_after": after["gm_bytes_after"],
            "gm_bytes_lower_bound": after["gm_bytes_lower_bound"],
            "hbm_bytes_before": before["hbm_bytes_after"],
            "hbm_bytes_after": after["hbm_bytes_after"],
            "hbm_bytes_after_optimistic": after["hbm_bytes_after_optimistic"],
            "hbm_bytes_after_pessimistic": after["hbm_bytes_after_pessimistic"],
            "l2_bytes": after["l2_bytes"],
            "time_us_before": before["time_us_after"],
            # a super kernel's stages after the first cost no launch of their own
            "time_us_after": round(after["time_us_after"] - launches.saved_us, 3),
        },
        "launches": launches.to_json(),
        "graph_rewrites": dict(sorted(rewrites.items())),
        "kernels": [k.to_json() for k in c.after.kernels],
    }


def _mb(n: float) -> str:
    return f"{n / 1e6:,.3f} MB"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def _l2(n: int) -> str:
    return f"{n >> 20} MB" if n % (1 << 20) == 0 else f"{n:,} B"


def render_markdown(doc: dict[str, Any]) -> str:
    t = doc["totals"]
    bound = t["gm_bytes_lower_bound"]
    lines = [
        f"# afc compile report: {doc['model']}",
        "",
        f"Chip {doc['chip']}, opt level {doc['opt_level']} ({doc['opt_level_summary']}).",
        "",
        "| | kernels | GM traffic | x lower bound | HBM traffic | x lower bound | est. time |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| before fusion (one kernel per op) | {t['kernels_before']} | "
        f"{_mb(t['gm_bytes_before'])} | {_ratio(t['gm_bytes_before'], bound)} | "
        f"{_mb(t['hbm_bytes_before'])} | {_ratio(t['hbm_bytes_before'], bound)} | "
        f"{t['time_us_before']:,.1f} us |",
        f"| after fusion | {t['kernels_after']} | {_mb(t['gm_bytes_after'])} | "
        f"{_ratio(t['gm_bytes_after'], bound)} | {_mb(t['hbm_bytes_after'])} | "
        f"{_ratio(t['hbm_bytes_after'], bound)} | {t['time_us_after']:,.1f} us |",
        f"| lower bound (inputs, weights, outputs once) | | {_mb(bound)} | 1.00x | "
        f"{_mb(bound)} | 1.00x | |",
        "",
        f"HBM traffic: what reaches HBM through the {_l2(t['l2_bytes'])} L2 (an LRU model); "
        f"after fusion {_mb(t['hbm_bytes_after_optimistic'])} to "
        f"{_mb(t['hbm_bytes_after_pessimistic'])} between a scan-resistant L2 and one that "
        "writes dead data back.",
        "",
    ]
    lines += launch_lines(doc["launches"], t["time_us_after"])
    if doc["graph_rewrites"]:
        lines += ["## Graph rewrites", "", "| rule | applied |", "|---|---:|"]
        lines += [f"| {rule} | {n} |" for rule, n in doc["graph_rewrites"].items()]
        lines.append("")
    lines += [
        "## Kernels",
        "",
        "| kernel | template | ops | GM read | GM write | HBM read | HBM write | UB | est. time "
        "| unfused GM |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k in doc["kernels"]:
        ops = k["ops"][:OPS_SHOWN]
        shown = "<br>".join(o.replace("|", "\\|") for o in ops)
        if len(k["ops"]) > OPS_SHOWN:
            shown += f"<br>... ({len(k['ops'])} ops)"
        lines.append(
            f"| {k['name'].replace('|', chr(92) + '|')} | {k['template']} | {shown} | "
            f"{k['gm_read_bytes']:,} | {k['gm_write_bytes']:,} | {k['hbm_read_bytes']:,} | "
            f"{k['hbm_write_bytes']:,} | {k['ub_bytes']:,} | "
            f"{k['time_us']:,.2f} us | {k['unfused_gm_bytes']:,} |"
        )
    lines.append("")
    return "\n".join(lines)


def launch_lines(launches: dict[str, Any], time_us: float) -> list[str]:
    """report.md's launch section: launch overhead, and what super kernels save of it."""
    each = launches["launch_overhead_us"]
    lines = [
        "## Launches",
        "",
        f"{launches['launches']} launches (kernels and library ops) at {each:g} us launch "
        f"overhead each: {launches['overhead_us']:,.1f} us.",
    ]
    supers = launches["super_kernels"]
    if supers:
        shown = "; ".join(f"{s['name']} ({', '.join(s['stages'])})" for s in supers[:OPS_SHOWN])
        more = f"; ... ({len(supers)} super kernels)" if len(supers) > OPS_SHOWN else ""
        lines.append(
            f"Super kernels run {sum(len(s['stages']) for s in supers)} kernels in "
            f"{len(supers)} launches: {shown}{more}. {launches['launches_after']} launches, "
            f"{launches['overhead_us_after']:,.1f} us of overhead: {launches['saved_us']:,.1f} us "
            f"saved ({_share(launches['saved_us'], time_us + launches['saved_us'])} of the "
            "estimated time)."
        )
    else:
        lines.append("No super kernels (--super-kernel, or -O3 on Atlas A2/A3).")
    lines.append("")
    return lines


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def summary_lines(c: Compilation, out_dir: str) -> list[str]:
    """At most one screen: what was fused, what it saves, what was written."""
    doc = compile_report_json(c)
    t = doc["totals"]
    level = OPT_LEVELS[c.options.opt_level]
    lines = [
        f"afc compile {c.model} -> {out_dir} ({c.chip.name}, -O{c.options.opt_level}: "
        f"{level.summary})",
        f"  ops         {t['ops_before']} -> {t['kernels_after']} kernels "
        f"({t['fused_kernels']} generated, {t['library_ops']} library ops)",
    ]
    rewrites = doc["graph_rewrites"]
    if rewrites:
        shown = ", ".join(f"{rule} x{n}" for rule, n in list(rewrites.items())[:6])
        more = f", +{len(rewrites) - 6} more" if len(rewrites) > 6 else ""
        lines.append(f"  rewrites    {shown}{more}")
    lines += [
        f"  GM traffic  {_mb(t['gm_bytes_before'])} -> {_mb(t['gm_bytes_after'])} "
        f"(lower bound {_mb(t['gm_bytes_lower_bound'])}, fused is "
        f"{_ratio(t['gm_bytes_after'], t['gm_bytes_lower_bound'])})",
        f"  HBM traffic {_mb(t['hbm_bytes_before'])} -> {_mb(t['hbm_bytes_after'])} "
        f"(LRU L2 {_l2(t['l2_bytes'])}; after fusion {_mb(t['hbm_bytes_after_optimistic'])} "
        f"to {_mb(t['hbm_bytes_after_pessimistic'])}, fused is "
        f"{_ratio(t['hbm_bytes_after'], t['gm_bytes_lower_bound'])})",
        f"  est. time   {t['time_us_before']:,.1f} us -> {t['time_us_after']:,.1f} us",
    ]
    launches = doc["launches"]
    if launches["super_kernels"]:
        lines.append(
            f"  launches    {launches['launches']} -> {launches['launches_after']} "
            f"({len(launches['super_kernels'])} super kernels; launch overhead "
            f"{launches['overhead_us']:,.1f} us -> {launches['overhead_us_after']:,.1f} us)"
        )
    top = sorted(doc["kernels"], key=lambda k: (-k["time_us"], k["name"]))[:SUMMARY_KERNELS]
    if top:
        lines.append("  slowest kernels (estimated):")
        lines += [
            f"    {k['name'][:40]:<40} {k['template']:<16} {k['op_count']:>3} ops "
            f"{k['time_us']:>10,.2f} us"
            for k in top
        ]
    if c.check is not None:
        lines.append(f"  check       {c.check['verdict']}")
        for row in c.check["comparisons"]:
            lines.append(f"    {row['what']:<38} {row['result']}")
    total = sum(s.seconds for s in c.stages)
    parts = ", ".join(f"{s.name} {s.seconds:.2f}" for s in c.stages)
    lines.append(f"  compile     {total:.2f} s ({parts})")
    kernels = sum(1 for f in c.files if f.startswith("kernels/"))
    names = sorted({f.split("/")[0] + ("/" if "/" in f else "") for f in c.files})
    written = " ".join(f"{n} ({kernels} files)" if n == "kernels/" else n for n in names)
    lines.append(f"  wrote       {written}")
    lines += [f"  note        {n}" for n in c.notes]
    return lines
