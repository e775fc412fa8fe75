package healthroute

// statusHTML is the status page template. Health is shown by colour and, for readers
// who cannot see colour, by the badge's words; the page works without scripts.
const statusHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{- if .Refresh}}
<meta http-equiv="refresh" content="{{.Refresh}}">
{{- end}}
<title>{{if .Unhealthy}}{{.Unhealthy}} unhealthy · {{end}}healthroute status</title>
<style>
:root {
	--fg: #1f2328; --muted: #59636e; --bg: #ffffff; --panel: #f6f8fa; --line: #d1d9e0;
	--ok: #1a7f37; --ok-bg: #dafbe1; --bad: #cf222e; --bad-bg: #ffebe9;
	--resort: #9a6700; --resort-bg: #fff8c5; --dyn: #0969da; --dyn-bg: #ddf4ff;
	--over: #8250df; --over-bg: #fbefff;
}
@media (prefers-color-scheme: dark) {
	:root {
		--fg: #f0f6fc; --muted: #9198a1; --bg: #0d1117; --panel: #151b23; --line: #3d444d;
		--ok: #3fb950; --ok-bg: #12261e; --bad: #f85149; --bad-bg: #301a1f;
		--resort: #d29922; --resort-bg: #2e2311; --dyn: #4493f8; --dyn-bg: #121d2f;
		--over: #ab7df8; --over-bg: #231a33;
	}
}
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header, main, footer { max-width: 72rem; margin: 0 auto; padding: 0 1rem; }
header { padding-top: 1rem; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
h2 { font-size: 1.2rem; margin: 1.75rem 0 .5rem; padding-bottom: .25rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 0 0 .25rem; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
a { color: var(--dyn); }
code, .target, .rname { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; overflow-wrap: anywhere; }
.meta, .muted { color: var(--muted); font-size: .9rem; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: .5rem; background: var(--bg); padding: .25rem .5rem; }
.summary { display: flex; flex-wrap: wrap; gap: .5rem; list-style: none; padding: 0; margin: .75rem 0 0; }
.summary li { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .25rem .75rem; }
.summary strong { font-size: 1.1rem; }
.summary .ok strong { color: var(--ok); } .summary .bad strong { color: var(--bad); }
.summary .resort strong { color: var(--resort); } .summary .over strong { color: var(--over); }
.badge { display: inline-block; border-radius: 999px; padding: 0 .55rem; font-size: .8rem; font-weight: 600; line-height: 1.6; white-space: nowrap; border: 1px solid; }
.badge.ok { color: var(--ok); background: var(--ok-bg); }
.badge.bad { color: var(--bad); background: var(--bad-bg); }
.badge.resort { color: var(--resort); background: var(--resort-bg); }
.badge.dyn { color: var(--dyn); background: var(--dyn-bg); }
.badge.over { color: var(--over); background: var(--over-bg); }
.badge.ok::before { content: "✓ "; } .badge.bad::before { content: "✗ "; } .badge.resort::before { content: "⚠ "; }
.alert { border: 2px solid var(--resort); background: var(--resort-bg); border-radius: 8px; padding: .25rem 1rem; margin-top: 1rem; }
.alert h2 { border: 0; margin-top: .5rem; color: var(--resort); }
.overrides { border: 2px solid var(--over); background: var(--over-bg); border-radius: 8px; padding: .25rem 1rem; margin-top: 1rem; }
.overrides h2 { border: 0; margin-top: .5rem; color: var(--over); }
.trees { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 30rem), 1fr)); gap: .75rem; }
.tree { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: .75rem; min-width: 0; }
.node.resort { background: var(--resort-bg); outline: 2px solid var(--resort); border-radius: 6px; padding: .25rem .4rem; }
.head { margin: 0; display: flex; flex-wrap: wrap; gap: .35rem; align-items: center; }
.policy { font-weight: 600; text-transform: uppercase; font-size: .75rem; letter-spacing: .04em; border: 1px solid var(--line); border-radius: 4px; padding: 0 .35rem; background: var(--bg); }
.rtype { color: var(--muted); font-weight: 400; }
ul.members { list-style: none; margin: .25rem 0 0 .45rem; padding: 0 0 0 .9rem; border-left: 2px solid var(--line); }
li.member { position: relative; margin: .3rem 0; }
li.member::before { content: ""; position: absolute; left: -.9rem; top: .8rem; width: .7rem; border-top: 2px solid var(--line); }
li.member > .line { display: flex; flex-wrap: wrap; gap: .35rem; align-items: center; padding: .15rem .4rem; border-radius: 4px; border-left: 4px solid var(--ok); background: var(--bg); }
li.member.is-bad > .line { border-left-color: var(--bad); background: var(--bad-bg); }
li.member > .node { margin: .3rem 0 0 .6rem; }
.key { font-weight: 600; }
.tag { font-size: .8rem; color: var(--muted); }
p.tag { margin: .2rem 0 0 .45rem; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; }
.scroll:focus { outline: 2px solid var(--dyn); }
table { border-collapse: collapse; width: 100%; min-width: 44rem; }
caption { text-align: left; padding: .5rem .75rem; color: var(--muted); font-size: .9rem; }
th, td { text-align: left; vertical-align: top; padding: .4rem .75rem; border-top: 1px solid var(--line); }
thead th { background: var(--panel); font-size: .85rem; }
tbody th { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-weight: 600; border-left: 4px solid var(--ok); white-space: nowrap; }
tr.is-bad > th { border-left-color: var(--bad); }
tr.is-bad { background: var(--bad-bg); }
.notes { display: block; font-size: .8rem; color: var(--muted); }
.err { color: var(--bad); overflow-wrap: anywhere; }
footer { padding-bottom: 2rem; }
@media (max-width: 40rem) {
	body { font-size: 14px; }
	header, main, footer { padding: 0 .6rem; }
	ul.members { margin-left: .2rem; padding-left: .6rem; }
	li.member::before { left: -.6rem; width: .45rem; }
	/* The check table becomes one card per check; the roles keep it a table to screen readers. */
	.scroll { overflow: visible; border: 0; }
	table { min-width: 0; }
	table, tbody, tr, th, td, caption { display: block; }
	caption { padding: 0 0 .5rem; }
	thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
	tbody tr { border: 1px solid var(--line); border-left: 4px solid var(--ok); border-radius: 8px; margin-bottom: .6rem; overflow: hidden; }
	tbody tr.is-bad { border-left-color: var(--bad); }
	tbody th { border: 0; }
	td { position: relative; padding-left: 7.5rem; min-height: 2rem; overflow-wrap: anywhere; }
	td::before { content: attr(data-label) / ""; position: absolute; left: .75rem; width: 6.25rem; font-size: .8rem; font-weight: 600; color: var(--muted); }
}
</style>
</head>
<body>
<a class="skip" href="#checks">Skip to checks</a>
<header>
<h1>healthroute status</h1>
<p class="meta">As of <time datetime="{{iso .Now}}">{{utc .Now}}</time>.
{{if .Refresh}}This page refreshes every {{.Refresh}} seconds (<a href="?refresh=0">stop refreshing</a>).{{else}}This page does not refresh (<a href="?">refresh every 5 seconds</a>).{{end}}
The same data as JSON: <a href="/v1/records">records</a>, <a href="/v1/checks">checks</a>.</p>
<ul class="summary" aria-label="Summary">
<li><strong>{{len .Checks}}</strong> checks</li>
<li class="ok"><strong>{{.Healthy}}</strong> healthy</li>
<li class="bad"><strong>{{.Unhealthy}}</strong> unhealthy</li>
<li class="resort"><strong>{{len .Resorts}}</strong> failing open</li>
<li class="over"><strong>{{len .Overrides}}</strong> overridden</li>
</ul>
</header>
<main>
{{- if .Resorts}}
<section class="alert" id="failing-open" aria-labelledby="failing-open-h">
<h2 id="failing-open-h">Failing open</h2>
<p>No member of these record groups is healthy, so each answers as if all were (the last resort):</p>
<ul>
{{- range .Resorts}}
<li><a href="#{{.Anchor}}">{{.Name}} {{.Type}}</a> ({{.Policy}})</li>
{{- end}}
</ul>
</section>
{{- end}}
{{- if .Overrides}}
<section class="overrides" id="overrides" aria-labelledby="overrides-h">
<h2 id="overrides-h">Operator overrides</h2>
<ul>
{{- range .Overrides}}
<li><a href="#check-{{.Name}}">{{.Name}}</a>: {{index .Notes 0}}{{if .Probed}}; {{index .Notes 1}}{{end}}</li>
{{- end}}
</ul>
<p class="muted">Remove one with <code>POST /v1/checks/NAME/override</code> and <code>none</code>.</p>
</section>
{{- end}}
<section id="records" aria-labelledby="records-h">
<h2 id="records-h">Record sets</h2>
{{- if not .Trees}}
<p>No record sets are configured.</p>
{{- end}}
<div class="trees">
{{- range .Trees}}
<article class="tree" id="{{.Anchor}}" aria-labelledby="{{.Anchor}}-h">
<h3 id="{{.Anchor}}-h">{{.Name}} <span class="rtype">{{.Type}}</span></h3>
{{template "node" .}}
</article>
{{- end}}
</div>
</section>
<section id="checks" aria-labelledby="checks-h">
<h2 id="checks-h">Checks</h2>
{{- if .Checks}}
<div class="scroll" role="region" aria-labelledby="checks-h" tabindex="0">
<table role="table">
<caption>{{len .Checks}} checks; {{.Unhealthy}} unhealthy. Health is what routing uses now, after invert, disabled and overrides.</caption>
<thead role="rowgroup"><tr role="row"><th scope="col" role="columnheader">Check</th><th scope="col" role="columnheader">Health</th><th scope="col" role="columnheader">Type and target</th><th scope="col" role="columnheader">Last change</th><th scope="col" role="columnheader">Last error</th><th scope="col" role="columnheader">Probes</th></tr></thead>
<tbody role="rowgroup">
{{- range .Checks}}
<tr id="check-{{.Name}}" class="check is-{{.Badge.Class}}" data-health="{{.Badge.Text}}" role="row">
<th scope="row" role="rowheader">{{.Name}}</th>
<td role="cell" data-label="Health"><span class="badge {{.Badge.Class}}">{{.Badge.Text}}</span>{{if .Override}} <span class="badge over">override</span>{{end}}{{range .Notes}}<span class="notes">{{.}}</span>{{end}}{{with .Fleet}}<span class="notes">fleet: {{.Decision}} ({{range $i, $m := .Members}}{{if $i}}, {{end}}{{$m.Member}}: {{if not $m.Counted}}not counted{{else if $m.Down}}down{{else}}up{{end}}{{end}})</span>{{end}}</td>
<td role="cell" data-label="Type, target">{{.Type}} {{if .Target}}<code>{{.Target}}</code>{{end}}{{if .Children}}of {{range $i, $c := .Children}}{{if $i}}, {{end}}<a href="#check-{{$c}}">{{$c}}</a>{{end}} (threshold {{.Threshold}}){{end}}{{with .Interval}}<span class="notes">every {{.}}</span>{{end}}</td>
<td role="cell" data-label="Last change">{{if .LastChange.IsZero}}<span class="muted">never</span>{{else}}<time datetime="{{iso .LastChange}}">{{utc .LastChange}}</time><span class="notes">{{ago $.Now .LastChange}}</span>{{end}}</td>
<td role="cell" data-label="Last error">{{with .LastError}}<span class="err">{{.}}</span>{{else}}<span class="muted">none</span>{{end}}</td>
<td role="cell" data-label="Probes">{{if .Interval}}{{.Probes}} run, {{.Failures}} failed{{if .LastProbe.IsZero}}{{else}}<span class="notes">last {{ago $.Now .LastProbe}}, {{.LastLatency}} ms</span>{{end}}{{else}}<span class="muted">not probed</span>{{end}}</td>
</tr>
{{- end}}
</tbody>
</table>
</div>
{{- else}}
<p>No checks are configured.</p>
{{- end}}
</section>
</main>
<footer>
<p class="meta">Why did a client get its answer? <code>GET /v1/explain?name=NAME&amp;type=A&amp;client=IP</code> returns the answer with each decision.</p>
</footer>
</body>
</html>
{{define "node" -}}
<div class="node{{if .LastResort}} resort{{end}}"{{if and .Nested .Anchor}} id="{{.Anchor}}"{{end}}>
<p class="head">{{if .Nested}}<span class="rname">{{.Name}}</span> <span class="rtype">{{.Type}}</span> {{end}}<span class="policy">{{.Policy}}</span> <span class="badge {{.Badge.Class}}">{{.Badge.Text}}</span></p>
{{- if .Ref}}
<p class="tag">Its {{len .RecordView.Members}} members are drawn <a href="#{{.Ref}}">above</a>.</p>
{{- else}}
<ul class="members" aria-label="{{.Name}} {{.Type}}, {{.Policy}}: {{len .Members}} members">
{{- range .Members}}
<li class="member is-{{.Badge.Class}}" data-health="{{.Badge.Text}}">
<div class="line"><span class="badge {{.Badge.Class}}">{{.Badge.Text}}</span>
{{- with .Key}} <span class="key">{{.}}</span>{{end}} <span class="target">{{.Target}}</span>
{{- with .Check}} <span class="tag">check <a href="#check-{{.Name}}">{{.Name}}</a>{{if .Override}} <span class="badge over">override: {{.Badge.Text}}</span>{{else if not .Healthy}} ({{.Badge.Text}}){{end}}</span>{{end}}
{{- if .ETH}} <span class="tag"><abbr title="evaluate target health">ETH</abbr></span>{{end}}
<span class="tag">id {{.ID}}</span></div>
{{- with .Child}}
{{template "node" .}}
{{- end}}
</li>
{{- end}}
</ul>
{{- end}}
</div>
{{- end}}`
