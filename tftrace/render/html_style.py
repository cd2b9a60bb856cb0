"""The HTML report's inline stylesheet (system fonts only, so the page renders offline)."""

CSS = """
:root {
  --sans: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans",
          "DejaVu Sans", Arial, sans-serif;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace;
  --ink: #202124; --muted: #5f6368; --line: #e3e6ea; --bg: #f5f6f8; --card: #fff; --accent: #e8710a;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--ink); font: 14px/1.5 var(--sans); }
.wrap { max-width: 1160px; margin: 0 auto; padding: 0 24px; }
header.top { background: #fff; border-bottom: 1px solid var(--line); border-top: 3px solid var(--accent); }
header.top .wrap { display: flex; align-items: baseline; gap: 14px; padding-top: 12px; padding-bottom: 12px; }
.brand { font-weight: 700; font-size: 19px; letter-spacing: .2px; color: var(--accent); }
.sub { color: var(--muted); }
nav.runs { display: flex; flex-wrap: wrap; gap: 8px; margin: 18px 0 0; }
nav.runs a { padding: 3px 10px; border: 1px solid var(--line); border-radius: 12px; background: #fff;
  color: var(--ink); text-decoration: none; font-size: 13px; }
section.run { margin: 22px 0 34px; }
section.run + section.run { border-top: 1px solid var(--line); padding-top: 22px; }
.run-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px 14px; }
h2 { font-size: 22px; font-weight: 600; margin: 0; }
h2 .name { font-family: var(--mono); font-size: 20px; }
h3 { font-size: 15px; font-weight: 600; margin: 0 0 10px; }
h4 { font-size: 14px; font-weight: 600; margin: 0; }
code, .mono { font-family: var(--mono); font-size: 12.5px; }
code { background: #f1f3f4; border-radius: 3px; padding: 1px 4px; }
code.path { color: var(--muted); background: none; padding: 0; word-break: break-all; }
.muted { color: var(--muted); }
.cut-short { border-left: 3px solid #f28e2b; padding: 4px 10px; background: #fff6ec; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 1px;
  background: var(--line); border: 1px solid var(--line); border-radius: 8px; overflow: hidden; margin: 14px 0; }
.fact { background: var(--card); padding: 8px 12px; }
.fact dt { color: var(--muted); font-size: 11.5px; text-transform: uppercase; letter-spacing: .5px; }
.fact dd { margin: 2px 0 0; font-weight: 600; word-break: break-word; }
.fact dd small { font-weight: 400; color: var(--muted); font-size: 12px; }
.card, .verdict, .notes { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 16px 18px; margin: 14px 0; }
.verdict { border-left: 5px solid; }
.verdict p { margin: 8px 0 12px; font-size: 15px; }
.experiment { margin: 0 0 12px; padding: 8px 12px; background: var(--bg); border-radius: 6px; font-size: 13px; }
.experiment ul { margin: 4px 0 0; padding-left: 18px; }
.badge { display: inline-block; color: #fff; font-size: 12px; font-weight: 600; padding: 2px 10px;
  border-radius: 10px; text-transform: uppercase; letter-spacing: .5px; }
.strip { display: flex; height: 14px; border-radius: 4px; overflow: hidden; background: #eee; }
.strip .seg { display: block; height: 100%; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 8px 0 4px; font-size: 13px; color: var(--muted); }
.legend.small { font-size: 12px; gap: 2px 12px; margin-top: -4px; }
.legend .key { display: inline-flex; align-items: center; gap: 6px; }
.legend i { width: 11px; height: 11px; border-radius: 2px; display: inline-block; }
.legend b { color: var(--ink); font-weight: 600; }
h3 + .bottlenecks { margin-top: 0; }
section.run > h3 { margin-top: 22px; }
ol.bottlenecks { list-style: none; padding: 0; margin: 0; }
.bottleneck { display: flex; gap: 14px; background: var(--card); border: 1px solid var(--line);
  border-radius: 8px; padding: 14px 16px; margin: 0 0 10px; }
.rank { flex: none; width: 28px; height: 28px; border-radius: 50%; color: #fff; font-weight: 700;
  display: flex; align-items: center; justify-content: center; }
.bottleneck .body { flex: 1; min-width: 0; }
.title-row { display: flex; justify-content: space-between; align-items: baseline; gap: 12px; flex-wrap: wrap; }
.title-row h4 { word-break: break-word; }
.share { font-weight: 700; font-size: 15px; white-space: nowrap; }
.share small { font-weight: 400; color: var(--muted); font-size: 12px; }
.share small.gain { display: block; text-align: right; color: #188038; }
.meter { height: 4px; background: #eef0f2; border-radius: 2px; margin: 6px 0 8px; overflow: hidden; }
.meter span { display: block; height: 100%; }
.bottleneck p { display: grid; grid-template-columns: 82px 1fr; margin: 4px 0; word-break: break-word; }
.tag { color: var(--muted); font-size: 11px; line-height: 21px; text-transform: uppercase; letter-spacing: .6px; }
.tag.fix { color: #188038; font-weight: 600; }
.chart-box { overflow-x: auto; }
/* Charts shrink with the page down to a readable size, then scroll sideways instead. */
svg.chart { display: block; max-width: 100%; min-width: 600px; height: auto; font-family: var(--sans); }
svg.chart[data-chart=layers], svg.chart[data-chart=categories] { min-width: 400px; }
svg.chart text { font-size: 12px; fill: #3c4043; }
svg.chart .tick { fill: var(--muted); font-size: 11.5px; }
svg.chart .axis-label { fill: var(--muted); font-size: 12px; }
svg.chart .grid { stroke: #eceef1; }
svg.chart .axis { stroke: #9aa0a6; }
svg.chart .step:hover rect { opacity: .85; }
svg.chart .roof { stroke: #3c4043; stroke-width: 2; }
svg.chart .roof.precision { stroke: #9aa0a6; stroke-dasharray: 6 4; }
svg.chart .roof-label { fill: var(--muted); font-size: 11.5px; }
svg.chart .total { fill: var(--muted); font-size: 11px; }
svg.hbar .label { font-family: var(--mono); font-size: 11.5px; }
svg.hbar .value { fill: var(--muted); font-size: 11.5px; }
svg.hbar .bar:hover rect { opacity: .8; }
svg.timeline { min-width: 900px; }
svg.timeline .lane-label { font-family: var(--mono); font-size: 11px; }
svg.timeline .ev:hover { stroke: #202124; stroke-width: 1; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 0 14px; align-items: start; }
.table-box { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th { text-align: left; font-weight: 600; color: var(--muted); font-size: 11.5px; text-transform: uppercase;
  letter-spacing: .4px; border-bottom: 2px solid var(--line); padding: 6px 8px; white-space: nowrap; }
td { border-bottom: 1px solid #f0f1f3; padding: 6px 8px; vertical-align: top; }
td .mono { overflow-wrap: break-word; }
table[data-table=ops] td:nth-child(2) .mono { overflow-wrap: anywhere; }
tbody tr:hover { background: #fafbfc; }
th:not(:first-child), td:not(:first-child) { text-align: right; }
table[data-table=ops] td:nth-child(-n+7), table[data-table=ops] th:nth-child(-n+7) { text-align: left; }
table[data-table=ops] td:first-child { color: var(--muted); }
td { white-space: nowrap; }
td:first-child, table[data-table=ops] td:nth-child(5) { white-space: normal; }
table[data-table=ops] td:first-child { white-space: nowrap; }
table[data-table=ops] td:nth-child(2) { white-space: normal; min-width: 260px; }
table[data-table=ops] td:nth-child(5) { min-width: 90px; }
.cell-share { display: inline-flex; align-items: center; gap: 8px; }
.cell-share .pct { min-width: 42px; }
.mini { width: 44px; height: 6px; background: #eef0f2; border-radius: 3px; overflow: hidden; display: inline-block; }
.mini span { display: block; height: 100%; background: #4e79a7; }
.error { background: #fce8e6; border: 1px solid #f4c7c3; color: #a50e0e; border-radius: 8px; padding: 14px 18px;
  margin: 14px 0; word-break: break-word; }
.notes h4 { margin-bottom: 4px; }
.notes ul { margin: 0; padding-left: 20px; }
footer { color: var(--muted); font-size: 12px; padding-top: 8px; padding-bottom: 28px; }
@media (max-width: 640px) {
  .wrap { padding: 0 12px; } .pair { grid-template-columns: 1fr; }
  .bottleneck p { display: block; } .tag { display: block; }
}
"""
