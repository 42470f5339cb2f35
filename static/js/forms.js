// Small helpers for forms on every page (no inline handlers: the Content-Security-Policy forbids them).
// A button with data-check-all="NAME" ticks every checkbox named NAME in its form; data-check-none="NAME" clears them.
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-check-all], [data-check-none]");
  if (!button || !button.form) {
    return;
  }
  var checked = button.hasAttribute("data-check-all");
  var name = checked ? button.dataset.checkAll : button.dataset.checkNone;
  button.form.querySelectorAll('input[type="checkbox"]').forEach(function (box) {
    if (box.name === name) {
      box.checked = checked;
    }
  });
});
