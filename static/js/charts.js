// Draws every plotly figure the page hands over with json_script: a <div data-figure="ID"> and a
// <script type="application/json" id="ID">. A click on a point whose trace is marked clickable
// follows the URL in its customdata[1]. Each figure gets its text alternative: its title as the
// figure's name and its data as a table under it ("The data as a table"). Runs again on content
// that htmx swaps in.
(function () {
  "use strict";
  const CONFIG = { displaylogo: false, responsive: true };
  const MAX_ROWS = 400;

  function text(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "number") return String(Math.round(value * 1000) / 1000);
    const s = String(value);
    return /^\d{4}-\d\d-\d\dT/.test(s) ? s.slice(0, 16).replace("T", " ") : s;
  }

  function columnsOf(trace) {
    if (trace.type === "barpolar") return [["dimension", trace.theta], ["score", trace.r]];
    if (trace.mode && trace.mode.indexOf("text") >= 0 && trace.mode.indexOf("markers") >= 0) return [["label", trace.text]];
    if (trace.orientation === "h") return [["", trace.y], ["value", trace.x]];
    return [["x", trace.x], ["y", trace.y]];
  }

  function table(el, figure) {
    const layout = figure.layout || {};
    const axis = (name) => (layout[name] && layout[name].title && (layout[name].title.text || layout[name].title)) || "";
    const body = [];
    let total = 0;
    (el._fullData || []).forEach(function (trace) {
      const role = trace.meta && trace.meta.role;
      if (role === "edges" || role === "edge_labels" || trace.visible === false) return;
      const columns = columnsOf(trace);
      const length = Math.max(...columns.map(([, values]) => (values ? values.length : 0)));
      for (let i = 0; i < length; i++) {
        total += 1;
        if (body.length < MAX_ROWS) body.push([trace.name || "", ...columns.map(([, values]) => text(values && values[i]))]);
      }
    });
    if (!body.length) return;
    const first = (el._fullData || []).find((t) => t.meta?.role !== "edges" && t.meta?.role !== "edge_labels");
    const heads = ["series", ...columnsOf(first).map(([name], i) => name === "x" ? (axis("xaxis") || "x")
      : name === "y" ? (axis("yaxis") || "y") : name || (i === 0 ? axis("yaxis") : ""))];
    const details = document.createElement("details");
    details.className = "chart-data";
    const summary = document.createElement("summary");
    summary.textContent = `The data as a table (${total} row${total === 1 ? "" : "s"}${total > MAX_ROWS ? `, the first ${MAX_ROWS} shown` : ""})`;
    const box = document.createElement("div");
    box.className = "table-scroll";
    box.tabIndex = 0;
    const tableEl = document.createElement("table");
    const caption = document.createElement("caption");
    caption.className = "visually-hidden";
    caption.textContent = el.getAttribute("aria-label") || "";
    const head = tableEl.createTHead().insertRow();
    heads.forEach((name) => { const th = document.createElement("th"); th.scope = "col"; th.textContent = name; head.append(th); });
    const tbody = tableEl.createTBody();
    body.forEach((cells) => { const row = tbody.insertRow(); cells.forEach((cell) => { row.insertCell().textContent = cell; }); });
    tableEl.prepend(caption);
    box.append(tableEl);
    details.append(summary, box);
    el.after(details);
  }

  // A phone's width (issue 50): the legend goes to the figure's foot, below the axis titles, with
  // room of its own; long category labels are cut so the plot keeps its width; dates tick flat.
  const NARROW = 560;

  function short(label, limit) {
    const s = String(label);
    return s.length <= limit ? s : s.slice(0, limit - 1) + "…";
  }

  function fitNarrow(el, figure) {
    if (el.clientWidth >= NARROW) return;
    const layout = figure.layout = figure.layout || {};
    const shown = (figure.data || []).filter((t) => t.showlegend !== false && t.name).length;
    if (shown && layout.showlegend !== false) {
      const rows = Math.ceil(shown / 2);
      layout.legend = Object.assign({}, layout.legend, { orientation: "h", x: 0, xanchor: "left",
                                                         yref: "container", y: 0, yanchor: "bottom" });
      const margin = layout.margin = Object.assign({}, layout.margin);
      margin.b = (margin.b || 44) + 22 * rows + 24;
      if (layout.height) layout.height += 22 * rows + 24;
    }
    ["yaxis", "yaxis2"].forEach(function (name) {
      const axis = layout[name];
      if (axis && Array.isArray(axis.categoryarray)) {
        axis.tickvals = axis.categoryarray;
        axis.ticktext = axis.categoryarray.map((label) => short(label, 14));
        axis.tickfont = Object.assign({}, axis.tickfont, { size: 10 });
      }
    });
    ["xaxis", "xaxis2"].forEach(function (name) {
      if (layout[name]) Object.assign(layout[name], { tickangle: 0, nticks: 4, automargin: true });
    });
  }

  function draw(root) {
    if (typeof Plotly === "undefined") return;
    root.querySelectorAll("[data-figure]").forEach(function (el) {
      if (el.dataset.drawn) return;
      const source = document.getElementById(el.dataset.figure);
      if (!source) return;
      const figure = JSON.parse(source.textContent);
      el.dataset.drawn = "1";
      const title = figure.layout && figure.layout.title && figure.layout.title.text;
      el.setAttribute("role", "figure");
      el.setAttribute("aria-label", `${title || "A chart"}: its data is in the table under it.`);
      fitNarrow(el, figure);
      Plotly.newPlot(el, figure.data || [], figure.layout || {}, CONFIG).then(function () {
        table(el, figure);
        el.classList.add("figure-ready");
        el.on("plotly_click", function (event) {
          const point = event.points && event.points[0];
          if (!point || !point.data.meta || !point.data.meta.clickable) return;
          const url = point.customdata && point.customdata[1];
          if (url) window.location.assign(url);
        });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSwap", function (event) { draw(event.target); });
})();
