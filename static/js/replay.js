// The replay's controls: the slider picks an event (htmx fetches the tiers after it); the buttons
// step, jump and play through the log one event at a time.
(function () {
  "use strict";
  let timer = null;

  function slider() { return document.getElementById("replay-step"); }

  function go(step) {
    const range = slider();
    const max = parseInt(range.max, 10);
    range.value = String(Math.max(0, Math.min(max, step)));
    range.dispatchEvent(new Event("change", { bubbles: true }));
    return parseInt(range.value, 10) < max;
  }

  function stop(button) {
    clearInterval(timer);
    timer = null;
    if (button) { button.textContent = "▶ Play"; button.setAttribute("aria-pressed", "false"); }
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-replay]");
    if (!button || !slider()) return;
    const action = button.dataset.replay;
    const now = parseInt(slider().value, 10);
    if (action === "start") go(0);
    else if (action === "end") go(parseInt(slider().max, 10));
    else if (action === "back") go(now - 1);
    else if (action === "forward") go(now + 1);
    else if (action === "play") {
      if (timer) { stop(button); return; }
      if (now >= parseInt(slider().max, 10)) go(0);
      button.textContent = "‖ Pause";
      button.setAttribute("aria-pressed", "true");
      const speed = document.querySelector("[data-replay=speed]");
      timer = setInterval(function () {
        if (!go(parseInt(slider().value, 10) + 1)) stop(button);
      }, parseInt(speed ? speed.value : "250", 10));
    }
  });
})();
