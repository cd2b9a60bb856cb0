// tftrace's tab in TensorBoard. TensorBoard loads this module in an iframe whose <base> is
// /data/plugin/tftrace/, so relative URLs reach the plugin's routes. Its Content-Security-Policy
// allows no inline script: all behaviour lives here, the report pages themselves run none.

const POLL_MS = 5000; // how often the run list is fetched again: new runs appear without a reload

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  node.append(...children);
  return node;
}

function traceViewerHref(run) {
  // The Profile tab (XProf) reads run and tool from the TensorBoard page's own query string.
  let path = "/";
  try {
    path = window.top.location.pathname;
  } catch (e) {
    // TensorBoard embedded in a page of another origin: fall back to the server root.
  }
  return `${path}?run=${encodeURIComponent(run)}&tag=trace_viewer#profile`;
}

function fillSelect(select, names, keep, first) {
  const options = first ? [el("option", {value: ""}, first)] : [];
  for (const name of names) options.push(el("option", {value: name}, name));
  select.replaceChildren(...options);
  select.value = names.includes(keep) ? keep : (first ? "" : names[names.length - 1] || "");
}

export async function render() {
  document.head.append(el("link", {rel: "stylesheet", href: "style.css"}));
  document.title = "tftrace";
  const runSelect = el("select", {id: "tftrace-run", "aria-label": "Run"});
  const baseSelect = el("select", {id: "tftrace-baseline", "aria-label": "Compare with"});
  const traceLink = el("a", {id: "tftrace-trace", target: "_top"}, "Trace viewer (Profile tab)");
  const status = el("span", {id: "tftrace-status"});
  const frame = el("iframe", {id: "tftrace-page", title: "tftrace report"});
  document.body.append(
    el("div", {class: "bar"},
       el("label", {}, "Run ", runSelect),
       el("label", {}, "compare with ", baseSelect),
       traceLink, status),
    frame);

  let names = [];
  function show() {
    const run = runSelect.value;
    const baseline = baseSelect.value;
    traceLink.hidden = !run;
    if (!run) {
      frame.removeAttribute("src");
      return;
    }
    traceLink.href = traceViewerHref(run);
    // The selected run is the candidate, the one to compare with the baseline (as `tftrace diff A B`).
    const src = baseline
      ? `diff?a=${encodeURIComponent(baseline)}&b=${encodeURIComponent(run)}`
      : `report?run=${encodeURIComponent(run)}`;
    if (frame.getAttribute("src") !== src) frame.setAttribute("src", src);
  }

  async function refresh() {
    let fresh;
    try {
      const response = await fetch("runs");
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      fresh = await response.json();
    } catch (e) {
      status.textContent = `Cannot list the runs: ${e.message}`;
      return;
    }
    status.textContent = fresh.length ? "" : "No profiled runs in this logdir yet (plugins/profile/<run>/ folders).";
    if (JSON.stringify(fresh) === JSON.stringify(names)) return;
    names = fresh;
    fillSelect(runSelect, names, runSelect.value);
    fillSelect(baseSelect, names, baseSelect.value, "nothing (the run's report)");
    show();
  }

  runSelect.addEventListener("change", show);
  baseSelect.addEventListener("change", show);
  await refresh();
  setInterval(refresh, POLL_MS);
}
