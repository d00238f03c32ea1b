/* claimtrace's LLM provider settings (app-core.js lists the parts): where they and the key are
   kept, and the one dialog that sets them, opened from the header's "LLM settings" button on
   every page and from the evaluation page. A page that does not use the LLM loads this file only
   when that button is first used (app.js); the LLM pages link it before app-llm.js, which builds
   on the object it starts (claimtrace.llm).

   The key lives in one storage slot (KEY_SLOT) and goes only into the provider's request; every
   other record kept (settings, the audit log) is scrubbed of it before it is written. */
(function (claimtrace) {
  "use strict";

  var KEY_SLOT = "claimtrace.llm.key";
  var SETTINGS_SLOT = "claimtrace.llm.settings";
  /* Sent on document whenever the settings change, so that what a page says of them follows. */
  var CHANGED = "claimtrace:llm-settings";
  var llm = (claimtrace.llm = claimtrace.llm || {});
  llm.KEY_SLOT = KEY_SLOT;
  llm.SETTINGS_SLOT = SETTINGS_SLOT;

  /* ---------------------------------------------------------------- settings and the key */

  llm.readJSON = function (storage, slot) {
    try { return JSON.parse(storage.getItem(slot) || "null"); } catch (e) { return null; }
  };

  /* {provider, base_url, model, remember} and the key, or null when none is set. */
  llm.settings = function () {
    var remembered = llm.readJSON(window.localStorage, SETTINGS_SLOT);
    var settings = llm.readJSON(window.sessionStorage, SETTINGS_SLOT) || remembered;
    if (!settings) return null;
    var key = window.sessionStorage.getItem(KEY_SLOT) || window.localStorage.getItem(KEY_SLOT) || "";
    return { provider: settings.provider, base_url: settings.base_url || "", model: settings.model,
             remember: !!settings.remember, key: key };
  };

  llm.saveSettings = function (settings) {
    var record = JSON.stringify({ provider: settings.provider, base_url: settings.base_url || "",
                                  model: settings.model, remember: !!settings.remember });
    llm.forget();
    var storage = settings.remember ? window.localStorage : window.sessionStorage;
    storage.setItem(SETTINGS_SLOT, scrub(record, settings.key));
    if (settings.key) storage.setItem(KEY_SLOT, settings.key);
  };

  /* The key and the settings gone from both storages (the audit log stays: it never held the key). */
  llm.forget = function () {
    [window.sessionStorage, window.localStorage].forEach(function (storage) {
      storage.removeItem(KEY_SLOT);
      storage.removeItem(SETTINGS_SLOT);
    });
  };

  function scrub(text, key) {
    if (!key || typeof text !== "string") return text;
    return text.split(key).join("[key removed]");
  }
  llm.scrub = scrub;

  /* ---------------------------------------------------------------- the dialog */

  function describe(settings) {
    if (!settings) return "No provider set: a run needs one.";
    return "Provider: " + settings.provider + ", model " + settings.model +
      (settings.base_url ? " at " + settings.base_url : "") +
      (settings.key ? "; key kept in " + (settings.remember ? "this browser (localStorage)" : "this tab (sessionStorage)") : "; no key") + ".";
  }

  function changed() {
    document.dispatchEvent(new CustomEvent(CHANGED, { detail: llm.settings() }));
  }

  var PROVIDERS = [
    ["anthropic", "Anthropic Messages (api.anthropic.com)"],
    ["openai", "OpenAI Chat Completions (api.openai.com)"],
    ["openai-compatible", "OpenAI-compatible base URL (llama.cpp, Ollama, vLLM…)"]
  ];

  function label(target, text, note) {
    return claimtrace.el("label", { "for": target }, note ? [text + " ", claimtrace.el("small", { text: note })] : [text]);
  }

  function input(id, name, type) {
    var attrs = { id: id, name: name, autocomplete: "off", spellcheck: "false" };
    if (type) attrs.type = type;
    return claimtrace.el("input", attrs);
  }

  /* The dialog, made once on the page that first opens it (no page carries its markup). */
  function build() {
    var el = claimtrace.el, root = claimtrace.root;
    var model = input("llm-model", "model");
    model.required = true;
    var form = el("form", { method: "dialog", id: "llm-settings-form", cls: "llm-form" }, [
      el("h2", { id: "llm-settings-title", text: "LLM provider settings" }),
      el("p", { cls: "note", id: "llm-settings-now", role: "status", text: "" }),
      label("llm-provider", "API"),
      el("select", { id: "llm-provider", name: "provider" }, PROVIDERS.map(function (p) { return el("option", { value: p[0], text: p[1] }); })),
      label("llm-base-url", "Base URL", "(blank: the provider’s own; a local server’s, such as http://127.0.0.1:8080/v1)"),
      input("llm-base-url", "base_url", "url"),
      label("llm-model", "Model id"), model,
      label("llm-key", "Key", "(blank for a local server without one)"),
      input("llm-key", "key", "password"),
      el("label", { cls: "check" }, [el("input", { type: "checkbox", id: "llm-remember", name: "remember" }),
        " Remember on this browser (localStorage; otherwise this tab’s sessionStorage, gone when it closes)"]),
      el("p", { cls: "note" }, ["Used by the ", el("a", { href: root + "evaluation.html", text: "evaluation page" }),
        " and a claim page’s second opinion; every call is kept in ", el("a", { href: root + "ai-log.html", text: "this browser’s audit log" }),
        ". Served pages may reach only the providers’ own origins and the base URLs the server was started with (",
        el("code", { text: "claimtrace serve --llm-origin URL" }), "); the browser refuses any other."]),
      el("p", { cls: "buttons" }, [el("button", { cls: "llm-button", value: "save", id: "llm-save", text: "Save" }), " ",
        el("button", { cls: "llm-button", value: "cancel", formnovalidate: "", text: "Cancel" }), " ",
        el("button", { cls: "llm-button", type: "button", id: "llm-forget-in-dialog", text: "Forget the key" })])
    ]);
    var dialog = el("dialog", { id: "llm-settings", "aria-labelledby": "llm-settings-title" }, [form]);
    document.body.appendChild(dialog);
    /* Saved as the form is sent (the dialog's close event comes later, asynchronously). */
    form.addEventListener("submit", function (event) {
      if (!event.submitter || event.submitter.value !== "save") return;
      llm.saveSettings({ provider: form.elements.provider.value, base_url: form.elements.base_url.value.trim(),
                         model: form.elements.model.value.trim(), key: form.elements.key.value.trim(),
                         remember: form.elements.remember.checked });
      changed();
    });
    document.getElementById("llm-forget-in-dialog").addEventListener("click", function () {
      forget();
      fill(form);
    });
    dialog.addEventListener("close", function () {
      form.elements.key.value = ""; // the key stays only in its storage slot
      var back = dialog.returnFocus;
      dialog.returnFocus = null;
      if (back && back.isConnected) back.focus();
    });
    return dialog;
  }

  function fill(form) {
    var now = llm.settings() || { provider: "anthropic", base_url: "", model: "", remember: false, key: "" };
    form.elements.provider.value = now.provider;
    form.elements.base_url.value = now.base_url;
    form.elements.model.value = now.model;
    form.elements.key.value = now.key;
    form.elements.remember.checked = now.remember;
    document.getElementById("llm-settings-now").textContent = describe(llm.settings());
  }

  /* The dialog opened with the settings kept now; the focus goes back to opener when it closes
     (Save, Cancel or Escape). */
  function open(opener) {
    var dialog = document.getElementById("llm-settings") || build();
    fill(document.getElementById("llm-settings-form"));
    dialog.returnFocus = opener || document.activeElement;
    dialog.showModal();
  }

  function forget() {
    llm.forget();
    changed();
  }

  claimtrace.llmSettings = { open: open, forget: forget, describe: describe, CHANGED: CHANGED };
})(window.claimtrace);
