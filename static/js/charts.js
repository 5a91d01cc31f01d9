// Draws every plotly figure the page hands over with json_script: a <div data-figure="ID"> and a
// <script type="application/json" id="ID">. A click on a point whose trace is marked clickable
// follows the URL in its customdata[1]. Runs again on content that htmx swaps in.
(function () {
  "use strict";
  const CONFIG = { displaylogo: false, responsive: true };

  function draw(root) {
    if (typeof Plotly === "undefined") return;
    root.querySelectorAll("[data-figure]").forEach(function (el) {
      if (el.dataset.drawn) return;
      const source = document.getElementById(el.dataset.figure);
      if (!source) return;
      const figure = JSON.parse(source.textContent);
      el.dataset.drawn = "1";
      Plotly.newPlot(el, figure.data || [], figure.layout || {}, CONFIG).then(function () {
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
