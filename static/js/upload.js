/* File imports with a progress bar. A form marked data-upload-target="#outcome" is sent with XMLHttpRequest, whose
   upload events drive the form's <progress>; when the upload ends the bar says the server is checking the file, and
   the server's answer (the page's outcome partial: what was imported, or every problem found) replaces the target.
   Without JavaScript the form posts as usual and the whole page comes back with the same outcome. */
(function () {
  "use strict";

  function megabytes(bytes) {
    return (bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0) + " MB";
  }

  function parts(form) {
    return {
      box: form.querySelector(".upload-progress"),
      bar: form.querySelector(".upload-progress progress"),
      status: form.querySelector(".upload-progress .upload-status"),
      button: form.querySelector("button[type=submit], button:not([type])"),
    };
  }

  function show(form, text, percent) {
    const { box, bar, status } = parts(form);
    box.hidden = false;
    status.textContent = text;
    if (percent === null) {
      bar.removeAttribute("value"); // indeterminate: the server is working
    } else {
      bar.value = percent;
    }
  }

  function replaceTarget(selector, html) {
    const target = document.querySelector(selector);
    if (!target) return;
    const holder = document.createElement("div");
    holder.innerHTML = html;
    const fresh = holder.querySelector(selector) || holder.firstElementChild;
    if (!fresh) return;
    target.replaceWith(fresh);
    if (window.htmx) window.htmx.process(fresh);
    document.dispatchEvent(new CustomEvent("htmx:afterSettle", { detail: { elt: fresh } }));
  }

  function send(form) {
    const { button } = parts(form);
    const file = form.querySelector("input[type=file]").files[0];
    const limit = Number(form.dataset.maxBytes || 0);
    if (file && limit && file.size > limit) {
      show(form, `The file is ${megabytes(file.size)}; an import takes at most ${megabytes(limit)}.`, 0);
      return;
    }
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    // The page answers a request from this script with its outcome partial only, as it does for htmx.
    xhr.setRequestHeader("HX-Request", "true");
    xhr.setRequestHeader("HX-Target", form.dataset.uploadTarget.replace(/^#/, ""));
    xhr.upload.addEventListener("progress", (event) => {
      if (!event.lengthComputable) return show(form, `Uploading… ${megabytes(event.loaded)}`, null);
      const percent = Math.floor((100 * event.loaded) / event.total);
      show(form, `Uploading… ${percent}% (${megabytes(event.loaded)} of ${megabytes(event.total)})`, percent);
    });
    xhr.upload.addEventListener("load", () => {
      show(form, "Uploaded. Checking the whole file before anything is imported…", null);
    });
    xhr.addEventListener("load", () => {
      button.disabled = false;
      const onLoginPage = Boolean(xhr.responseURL) && new URL(xhr.responseURL).pathname === form.dataset.loginUrl;
      if (xhr.status === 403 || onLoginPage) {
        show(form, "Not imported: your session has expired. Log in again, then upload the file again.", 0);
      } else if (xhr.status === 413) {
        show(form, xhr.responseText || "The file is too large for an import.", 0);
      } else if (xhr.status >= 200 && xhr.status < 300) {
        show(form, "Done: the server's answer is below.", 100);
        replaceTarget(form.dataset.uploadTarget, xhr.responseText);
        const outcome = document.querySelector(form.dataset.uploadTarget);
        if (outcome) outcome.focus();
      } else {
        show(form, `Not imported: the server answered ${xhr.status}. Try again.`, 0);
      }
    });
    xhr.addEventListener("error", () => {
      button.disabled = false;
      show(form, "Not imported: the server could not be reached. Try again.", 0);
    });
    button.disabled = true;
    show(form, "Uploading… 0%", 0);
    xhr.send(new FormData(form));
  }

  document.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-upload-target]");
    if (!form || !window.FormData || !window.XMLHttpRequest) return;
    event.preventDefault();
    send(form);
  });
})();
