// Confirm dialogs that htmx swaps into the page (the delete dialog): shown modal, so the page behind
// is inert; Tab and Shift+Tab go round the dialog's own controls; Escape and "Keep it" close it and
// focus goes back to the button that opened it. The dialog scrolls inside the viewport (app.css).
(function () {
  "use strict";
  const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select, textarea, [tabindex]:not([tabindex='-1'])";
  let opener = null;

  document.addEventListener("click", function (event) {
    const button = event.target.closest("[hx-target='#dialog-slot']");
    if (button) opener = button;
  }, true);

  function close(dialog) {
    if (dialog.open) dialog.close();
    dialog.remove();
    if (opener && document.contains(opener)) opener.focus();
  }

  function trap(dialog) {
    dialog.addEventListener("keydown", function (event) {
      if (event.key !== "Tab") return;
      const items = [...dialog.querySelectorAll(FOCUSABLE)].filter((el) => el.offsetParent !== null);
      if (!items.length) return;
      const first = items[0];
      const last = items[items.length - 1];
      if (event.shiftKey && (document.activeElement === first || !dialog.contains(document.activeElement))) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && (document.activeElement === last || !dialog.contains(document.activeElement))) {
        event.preventDefault();
        first.focus();
      }
    });
    dialog.addEventListener("cancel", function (event) { event.preventDefault(); close(dialog); });
    dialog.addEventListener("click", function (event) {
      if (event.target.closest("[data-close-dialog]")) close(dialog);
    });
  }

  function show(root) {
    root.querySelectorAll("dialog.confirm:not([data-ready])").forEach(function (dialog) {
      dialog.dataset.ready = "1";
      if (dialog.open) dialog.close();
      dialog.showModal();
      trap(dialog);
      (dialog.querySelector("[autofocus]") || dialog.querySelector(FOCUSABLE) || dialog).focus();
    });
  }

  document.addEventListener("DOMContentLoaded", function () { show(document); });
  document.addEventListener("htmx:afterSwap", function (event) { show(event.target); });
})();
