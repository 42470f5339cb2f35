/* The review page: answering with the keyboard, the saved / not saved indicator, and keeping every unsaved answer
   in this browser (localStorage, per assignment) until the server has it. Autosave itself is htmx (hx-trigger on
   the form); this file reacts to its events. */
(function () {
  "use strict";

  const SESSION_EXPIRED =
    "Not saved — your session expired; log in again in another tab, your answers are kept in this browser";
  const OFFLINE =
    "Not saved — the server cannot be reached; your answers are kept in this browser and will be saved when it is back";
  const RETRY_MS = 20000;
  const STEPS = "[data-question], [data-step]";

  const form = () => document.getElementById("review-form");
  if (!form() || !window.htmx) return;

  const pageUrl = form().getAttribute("action");
  const loginUrl = form().dataset.loginUrl || "/accounts/login/";
  const storageKey = "open-hypothesis:review-draft:" + form().dataset.assignment;
  // This tab, across reloads: the server tells this tab's own saves that cross (one sent as the page reloads, arriving
  // after the new page loaded) from another tab's change, keeping the newest answers instead of refusing them.
  const tabId = (() => {
    const key = "open-hypothesis:tab";
    try {
      let id = sessionStorage.getItem(key);
      if (!id) {
        id = crypto.randomUUID();
        sessionStorage.setItem(key, id);
      }
      return id;
    } catch {
      return "";
    }
  })();
  const editable = () => Boolean(form()) && form().dataset.editable === "true";

  let sentEditedAt = 0; // editedAt of the answers in the save in flight
  let failed = false; // the last save did not reach the server: retry
  let stale = false; // another tab changed the review: saving again would only be refused
  let pendingSection = null; // the section the server is about to swap in, to move focus into

  // ---- The copy kept in this browser ----

  function readStored() {
    try {
      return JSON.parse(localStorage.getItem(storageKey));
    } catch {
      return null;
    }
  }

  function writeStored(record) {
    try {
      localStorage.setItem(storageKey, JSON.stringify(record));
    } catch {
      /* storage full or disabled: the server copy is all there is */
    }
  }

  function clearStored() {
    try {
      localStorage.removeItem(storageKey);
    } catch {
      /* nothing to clear */
    }
  }

  function answersIn(root) {
    const fields = {};
    root.querySelectorAll("input[name], textarea[name]").forEach((el) => {
      if (el.type === "hidden" || el.disabled) return;
      if (el.type === "radio") {
        if (el.checked) fields[el.name] = el.value;
      } else if (el.type === "checkbox") {
        fields[el.name] = fields[el.name] || [];
        if (el.checked) fields[el.name].push(el.value);
      } else {
        fields[el.name] = el.value;
      }
    });
    return fields;
  }

  function remember() {
    if (!editable()) return;
    const stored = readStored() || { fields: {} };
    // Answers of sections not shown right now (e.g. criteria before they unlock) are kept from earlier copies.
    writeStored({ fields: { ...stored.fields, ...answersIn(form()) }, editedAt: Date.now(), dirty: true });
  }

  function isDirty() {
    const stored = readStored();
    return Boolean(stored && stored.dirty);
  }

  function markSaved() {
    const stored = readStored();
    if (stored && stored.editedAt <= sentEditedAt) writeStored({ ...stored, dirty: false });
  }

  // Put unsaved answers back into the inputs under root; true when anything changed.
  function restoreInto(root) {
    const stored = readStored();
    if (!stored || !stored.dirty) return false;
    let changed = false;
    for (const [name, value] of Object.entries(stored.fields)) {
      root.querySelectorAll(`[name="${CSS.escape(name)}"]`).forEach((el) => {
        if (el.disabled || el.type === "hidden") return;
        if (el.type === "radio") {
          if (el.value === value && !el.checked) {
            el.checked = true;
            changed = true;
          }
        } else if (el.type === "checkbox") {
          const on = Array.isArray(value) && value.includes(el.value);
          if (el.checked !== on) {
            el.checked = on;
            changed = true;
          }
        } else if (el.tagName === "TEXTAREA" && el.value !== value) {
          el.value = value;
          changed = true;
        }
      });
    }
    return changed;
  }

  // ---- Saving ----

  function setStatus(text, isError) {
    const status = document.getElementById("save-status");
    if (!status) return;
    const span = document.createElement("span");
    span.className = isError ? "not-saved" : "muted";
    span.textContent = text;
    status.replaceChildren(span);
  }

  function saveNow() {
    if (editable()) htmx.trigger(form(), "oh:save");
  }

  function csrfToken() {
    // The cookie is read fresh: after logging in again in another tab the token in the page is outdated.
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    return headers["X-CSRFToken"] || "";
  }

  // Closing the tab: the page is going away, so send what is unsaved without waiting for an answer.
  function saveOnExit() {
    if (!editable() || stale || !isDirty()) return;
    const body = new FormData(form());
    body.set("action", "save");
    body.set("csrfmiddlewaretoken", csrfToken());
    body.set("client", tabId);
    body.set("edited_at", String(readStored().editedAt));
    fetch(pageUrl, {
      method: "POST",
      body,
      keepalive: true,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), "HX-Request": "true" },
    }).catch(() => {});
  }

  const fromReviewForm = (event) => Boolean(event.detail.elt && event.detail.elt.closest("#review-form"));
  const landedOnLogin = (xhr) => Boolean(xhr.responseURL) && new URL(xhr.responseURL).pathname === loginUrl;

  document.addEventListener("htmx:configRequest", (event) => {
    if (!fromReviewForm(event)) return;
    // Django reads the form's token before the header, so both must be the current one.
    const token = csrfToken();
    const stored = readStored();
    const sent = { csrfmiddlewaretoken: token, client: tabId, edited_at: String(stored ? stored.editedAt : 0) };
    const params = event.detail.parameters;
    for (const [name, value] of Object.entries(sent)) {
      if (typeof params.set === "function") params.set(name, value);
      else params[name] = value;
    }
    event.detail.headers["X-CSRFToken"] = token;
  });

  document.addEventListener("htmx:beforeRequest", (event) => {
    if (!fromReviewForm(event)) return;
    const stored = readStored();
    sentEditedAt = stored ? stored.editedAt : Date.now();
    setStatus(event.detail.elt.id === "submit-review" ? "Submitting…" : "Saving…", false);
  });

  document.addEventListener("htmx:beforeSwap", (event) => {
    if (!fromReviewForm(event)) return;
    const xhr = event.detail.xhr;
    if (xhr.status === 401 || xhr.status === 403 || landedOnLogin(xhr)) {
      event.detail.shouldSwap = false;
      event.detail.isError = false;
      failed = true;
      setStatus(SESSION_EXPIRED, true);
    }
  });

  document.addEventListener("htmx:afterRequest", (event) => {
    if (!fromReviewForm(event)) return;
    const xhr = event.detail.xhr;
    if (!xhr || xhr.status === 0) return;
    if (xhr.status >= 200 && xhr.status < 300 && !landedOnLogin(xhr)) {
      failed = false;
      stale = false;
      if (xhr.getResponseHeader("HX-Redirect")) clearStored();
      else markSaved();
      clearFieldErrors();
    } else if (xhr.status === 409) {
      stale = true;
    }
  });

  // A save refused for a field's content (a control character pasted into a comment): the field is marked where it
  // is, as a page sent back by the server marks it (aria-invalid and the reason beside it), until a save goes through.
  const TEXT_ANSWERS = ".text-answer";

  function clearFieldErrors() {
    form()
      .querySelectorAll(TEXT_ANSWERS)
      .forEach((label) => {
        label.classList.remove("has-error");
        label.querySelectorAll(".error").forEach((note) => note.remove());
        label.querySelectorAll("[aria-invalid]").forEach((field) => {
          field.removeAttribute("aria-invalid");
          field.removeAttribute("aria-describedby");
        });
      });
  }

  function markFieldErrors(errors) {
    clearFieldErrors();
    for (const [name, message] of Object.entries(errors)) {
      const field = form().querySelector(`${TEXT_ANSWERS} [name="${CSS.escape(name)}"]`);
      if (!field) continue;
      const note = document.createElement("span");
      note.className = "error";
      note.id = "error-" + name;
      note.textContent = message;
      field.before(note);
      field.setAttribute("aria-invalid", "true");
      field.setAttribute("aria-describedby", note.id);
      field.closest(TEXT_ANSWERS).classList.add("has-error");
    }
  }

  document.addEventListener("oh:field-errors", (event) => {
    if (editable()) markFieldErrors(event.detail.errors || {});
  });

  document.addEventListener("htmx:sendError", (event) => {
    if (!fromReviewForm(event)) return;
    failed = true;
    setStatus(OFFLINE, true);
  });

  setInterval(() => {
    if (failed && !stale && isDirty()) saveNow();
  }, RETRY_MS);
  window.addEventListener("online", () => {
    if (isDirty()) saveNow();
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden" && isDirty()) saveNow();
  });
  window.addEventListener("pagehide", saveOnExit);
  window.addEventListener("pageshow", (event) => {
    // A page restored from the back/forward cache holds an old version: reload to get the current one.
    if (event.persisted) window.location.reload();
  });

  // Capture phase: the answer is kept before the save that carries it is built; that save's `sentEditedAt` then
  // covers it, and its success marks it saved. A choice saves at once, typing once it pauses. (These events, rather
  // than filters in hx-trigger: htmx evaluates filters as code, which the Content-Security-Policy forbids.)
  document.addEventListener(
    "input",
    (event) => {
      if (!event.target.closest("#review-form")) return;
      remember();
      if (event.target.tagName === "TEXTAREA") htmx.trigger(form(), "oh:typed");
    },
    true,
  );
  document.addEventListener(
    "change",
    (event) => {
      if (!event.target.closest("#review-form")) return;
      remember();
      if (event.target.tagName !== "TEXTAREA") htmx.trigger(form(), "oh:changed");
    },
    true,
  );

  // ---- Keyboard ----

  function focusStep(step, options) {
    if (!step) return;
    const target =
      step.querySelector("input:checked:not(:disabled)") ||
      step.querySelector("input:not([type=hidden]):not(:disabled), textarea:not(:disabled)");
    if (target) target.focus(options);
  }

  // On opening the page the research question and the proposal must stay in view: the first unanswered question
  // takes the focus without scrolling the page. Beside a sticky proposal (wide screens) the question is scrolled
  // into view too, which leaves the proposal where it is; on a phone the proposal comes first and the page stays
  // at its top.
  function focusOnOpening(step) {
    if (!step) return;
    focusStep(step, { preventScroll: true });
    const packet = document.querySelector(".packet");
    if (packet && getComputedStyle(packet).position === "sticky") step.scrollIntoView({ block: "nearest" });
  }

  // A refused submission marks its unanswered questions: the first of them is scrolled to the middle of the window
  // (clear of the sticky bar) and focused, wherever the reviewer was when they pressed Submit.
  function showFirstError(root) {
    const step = root.querySelector(".has-error");
    if (!step) return false;
    focusStep(step, { preventScroll: true });
    step.scrollIntoView({ block: "center" });
    return true;
  }

  function firstUnanswered() {
    return Array.from(form().querySelectorAll("[data-question]")).find((q) => !q.querySelector("input:checked"));
  }

  // The question digits answer: the one holding the focus, else (nothing focused) the first unanswered one.
  function currentQuestion() {
    const active = document.activeElement;
    if (active && active !== document.body && form().contains(active)) return active.closest("[data-question]");
    if (active && active !== document.body) return null;
    return firstUnanswered() || null;
  }

  function checkedValue(name) {
    const input = form().querySelector(`input[name="${name}"]:checked`);
    return input ? input.value : "";
  }

  function advanceFrom(question) {
    const name = question.dataset.question;
    const criteria = document.getElementById("criteria-section");
    if ((name === "overall" || name === "recommendation") && criteria && criteria.dataset.locked === "true") {
      if (checkedValue("overall") && checkedValue("recommendation")) {
        pendingSection = "criteria-section"; // unlocked by the save just sent
        return;
      }
    }
    if (name === "flaw_verdict") {
      const verdict = checkedValue("flaw_verdict");
      if (verdict === "absent") return focusStep(form().querySelector("[data-step=main_flaw]"));
      if (!document.querySelector("#checklist-section [data-step=checklist]")) {
        pendingSection = "checklist-section";
        return;
      }
    }
    const steps = Array.from(form().querySelectorAll(STEPS));
    focusStep(steps[steps.indexOf(question) + 1]);
  }

  function choose(question, key) {
    const input = question.querySelector(`input[data-key="${key}"]`);
    if (!input || input.disabled) return false;
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    advanceFrom(question);
    return true;
  }

  function toggleGuidelines() {
    const panel = document.getElementById("guidelines");
    if (panel) panel.open = !panel.open;
  }

  document.addEventListener("keydown", (event) => {
    if (!form()) return;
    const mod = event.ctrlKey || event.metaKey;
    if (mod && (event.key === "s" || event.key === "S")) {
      event.preventDefault();
      saveNow();
      return;
    }
    if (mod && event.key === "Enter") {
      event.preventDefault();
      const submit = document.getElementById("submit-review");
      if (submit) submit.click();
      return;
    }
    if (mod || event.altKey) return;
    // Typing in a text box is text, never a shortcut.
    if (event.target.closest("textarea, input[type=text], input[type=password], select, [contenteditable]")) return;
    if (event.key === "?") {
      event.preventDefault();
      toggleGuidelines();
      return;
    }
    if (/^[0-9]$/.test(event.key) && editable()) {
      const question = currentQuestion();
      if (question && choose(question, event.key)) event.preventDefault();
    }
  });

  // ---- New content from the server ----

  function localizeTimes(root) {
    root.querySelectorAll("time.local-time").forEach((el) => {
      const when = new Date(el.getAttribute("datetime"));
      if (!Number.isNaN(when.getTime())) el.textContent = when.toLocaleTimeString([], { hour12: false });
    });
  }

  htmx.onLoad((elt) => {
    localizeTimes(elt);
    if (elt === document.body) return start(); // htmx has processed the page: its triggers now listen
    if (elt.id === "criteria-section" || elt.id === "checklist-section") {
      // Answers kept in this browser for a section that was hidden go back in, and are saved.
      if (restoreInto(elt)) saveNow();
      if (pendingSection === elt.id) {
        pendingSection = null;
        const steps = Array.from(elt.querySelectorAll(STEPS));
        focusStep(steps.find((step) => !step.querySelector("input:checked")) || steps[0]);
      }
    } else if (elt.id === "review-form") {
      showFirstError(elt); // a refused submission
    }
  });

  function start() {
    if (!editable()) {
      clearStored(); // submitted or closed: this browser's copy can no longer be saved
      return;
    }
    const stored = readStored();
    // The server's answers as of their last edit (in the browser that saved them): this browser's copy is restored
    // only when it was edited later.
    const serverEdited = Number(form().dataset.serverEdited || 0);
    if (stored && stored.dirty && stored.editedAt > serverEdited) {
      if (restoreInto(form())) {
        setStatus("Saving answers kept in this browser…", false);
        saveNow();
      }
    } else if (stored) {
      clearStored();
    }
    if (!showFirstError(form())) focusOnOpening(firstUnanswered());
  }
})();
