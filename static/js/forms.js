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

// A table wider than its card scrolls inside it. Keyboard users must reach that scroll too, so a wrapper that
// overflows becomes a named, focusable region (arrow keys scroll it); one that fits stays out of the tab order.
(function () {
  function nameOf(wrapper) {
    var table = wrapper.querySelector("table");
    var caption = table && table.querySelector("caption");
    if (caption) return caption.textContent.trim();
    var section = wrapper.closest("section, article, .card");
    var heading = section && section.querySelector("h2, h3");
    return heading ? heading.textContent.trim().replace(/\s+/g, " ") : "Table";
  }

  function markScrollable() {
    document.querySelectorAll(".table-scroll").forEach(function (wrapper) {
      if (wrapper.scrollWidth > wrapper.clientWidth + 1) {
        wrapper.setAttribute("tabindex", "0");
        wrapper.setAttribute("role", "region");
        wrapper.setAttribute("aria-label", nameOf(wrapper) + " (scrolls sideways)");
      } else if (wrapper.getAttribute("role") === "region") {
        wrapper.removeAttribute("tabindex");
        wrapper.removeAttribute("role");
        wrapper.removeAttribute("aria-label");
      }
    });
  }

  var pending = false;
  function soon() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () {
      pending = false;
      markScrollable();
    });
  }

  document.addEventListener("DOMContentLoaded", markScrollable);
  window.addEventListener("resize", soon);
  document.addEventListener("htmx:afterSettle", soon);
})();

// Parts of a page that htmx refreshes (a run's live part polls) keep the sections the reader opened.
(function () {
  var open = [];
  document.addEventListener("htmx:beforeSwap", function (event) {
    open = Array.from(event.detail.target.querySelectorAll("details[open][id]")).map(function (details) {
      return details.id;
    });
  });
  document.addEventListener("htmx:afterSwap", function () {
    open.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) details.open = true;
    });
    open = [];
  });
})();

// A form the server refused comes back with its message marked data-show-on-load. The page opens on that message,
// focused (screen readers read it), instead of at its top where it would look as if nothing happened.
document.addEventListener("DOMContentLoaded", function () {
  var message = document.querySelector("[data-show-on-load]");
  if (!message) return;
  if (!message.hasAttribute("tabindex")) message.setAttribute("tabindex", "-1");
  message.scrollIntoView({ block: "center" });
  message.focus({ preventScroll: true });
});

// A form with data-busy="message" that takes a while to answer (a recomputation) shows the message with a progress
// bar and the seconds passed while the next page is computed, and its submit button cannot be pressed twice.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!form.dataset || !form.dataset.busy || event.defaultPrevented) return;
  var status = form.querySelector(".busy-status");
  if (!status) return;
  var started = Date.now();
  var text = status.querySelector(".busy-text");
  status.hidden = false;
  text.textContent = form.dataset.busy;
  form.querySelectorAll("button[type=submit]").forEach(function (button) {
    button.disabled = true;
  });
  window.setInterval(function () {
    text.textContent = form.dataset.busy + " " + Math.round((Date.now() - started) / 1000) + " s";
  }, 1000);
});
