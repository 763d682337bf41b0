/**
 * The console's script, served at `{base}/console/assets/console.js` (its own path, so the page's
 * CSP needs no 'unsafe-inline'). Plain DOM code: no framework, no build step, nothing fetched from
 * elsewhere. Every piece of server data goes through `textContent`, never `innerHTML`.
 */
export const CONSOLE_JS = String.raw`"use strict";
(() => {
  const root = document.querySelector('meta[name="plantgate-console-root"]').content;
  const api = root + "/api";
  const state = { session: null, page: 1, pageSize: 20 };
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k === "onclick") node.addEventListener("click", v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  const when = (iso) => iso.slice(0, 16).replace("T", " ") + " UTC";

  class ApiFailure extends Error {
    constructor(status, body) {
      super(body && typeof body.message === "string" ? body.message : "The request failed (HTTP " + status + ").");
      this.status = status;
      this.code = body && body.error;
    }
  }

  async function call(method, path, body) {
    const headers = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (method !== "GET" && state.session) headers["x-csrf-token"] = state.session.csrfToken;
    let res;
    try {
      res = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin", cache: "no-store" });
    } catch {
      throw new ApiFailure(0, { message: "The server could not be reached." });
    }
    const data = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) {
      // 1301: the session is gone (signed out elsewhere, expired, account disabled).
      if (res.status === 401 && data && data.error === 1301 && state.session) {
        state.session = null;
        showSignIn("Your session has ended; sign in again.");
      }
      throw new ApiFailure(res.status, data);
    }
    return data;
  }

  function showError(id, error) {
    const box = $(id);
    if (!error) {
      box.hidden = true;
      box.textContent = "";
      return;
    }
    box.textContent = error instanceof Error ? error.message : String(error);
    box.hidden = false;
  }

  function setStatus(id, text) {
    $(id).textContent = text;
  }

  const VIEWS = ["view-sign-in", "view-security", "view-accounts"];
  function show(view) {
    $("loading").hidden = true;
    for (const v of VIEWS) $(v).hidden = v !== view;
    const signedIn = state.session !== null;
    $("nav").hidden = !signedIn;
    $("whoami").hidden = !signedIn;
    if (signedIn) $("whoami-name").textContent = "Signed in as " + state.session.username;
    for (const [id, target] of [["nav-security", "view-security"], ["nav-accounts", "view-accounts"]]) {
      if (target === view) $(id).setAttribute("aria-current", "page");
      else $(id).removeAttribute("aria-current");
    }
  }

  function showSignIn(message) {
    show("view-sign-in");
    showError("sign-in-error", message || null);
    $("sign-in-username").focus();
  }

  function focusHeading(view) {
    const h = $(view).querySelector("h1");
    h.setAttribute("tabindex", "-1");
    h.focus();
  }

  async function route() {
    if (!state.session) return showSignIn();
    if (location.hash === "#/accounts") {
      show("view-accounts");
      focusHeading("view-accounts");
      await loadAccounts();
    } else {
      if (location.hash !== "#/settings/security") history.replaceState(null, "", "#/settings/security");
      show("view-security");
      focusHeading("view-security");
      await Promise.all([loadClients(), loadKeys()]);
    }
  }

  // ---- dialogs -------------------------------------------------------------------------------

  function confirmAction(title, text, okLabel) {
    const dialog = $("confirm-dialog");
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    $("confirm-ok").textContent = okLabel;
    return new Promise((resolve) => {
      const done = (answer) => {
        $("confirm-ok").removeEventListener("click", ok);
        $("confirm-cancel").removeEventListener("click", cancel);
        dialog.removeEventListener("cancel", cancel);
        dialog.close();
        resolve(answer);
      };
      const ok = () => done(true);
      const cancel = (event) => {
        if (event) event.preventDefault();
        done(false);
      };
      $("confirm-ok").addEventListener("click", ok);
      $("confirm-cancel").addEventListener("click", cancel);
      dialog.addEventListener("cancel", cancel);
      dialog.showModal();
      $("confirm-cancel").focus();
    });
  }

  let returnFocus = null;
  function showSecret(clientId, secret) {
    returnFocus = document.activeElement;
    $("secret-client-id").value = clientId;
    $("secret-value").value = secret;
    setStatus("secret-copied", "");
    $("secret-dialog").showModal();
    $("secret-value").focus();
    $("secret-value").select();
  }

  function closeSecret() {
    // The secret must not linger in the page once the administrator has stored it.
    $("secret-value").value = "";
    $("secret-client-id").value = "";
    if ($("secret-dialog").open) $("secret-dialog").close();
    if (returnFocus && document.contains(returnFocus)) returnFocus.focus();
    else focusHeading("view-security");
  }

  $("secret-done").addEventListener("click", closeSecret);
  $("secret-dialog").addEventListener("cancel", (event) => {
    event.preventDefault();
    closeSecret();
  });
  $("secret-copy").addEventListener("click", async () => {
    const input = $("secret-value");
    try {
      await navigator.clipboard.writeText(input.value);
      setStatus("secret-copied", "Copied to the clipboard.");
    } catch {
      input.focus();
      input.select();
      setStatus("secret-copied", "Copying is blocked here: the secret is selected, press Ctrl+C (or Cmd+C).");
    }
  });

  // ---- security settings ---------------------------------------------------------------------

  function buildClientForm() {
    const grants = $("client-grants");
    const scopes = $("client-scopes");
    for (const box of [grants, scopes]) for (const c of [...box.querySelectorAll(".check")]) c.remove();
    for (const g of state.session.grantTypes) {
      const id = "grant-" + g;
      grants.append(el("div", { class: "check" }, el("input", { type: "checkbox", id, name: "grantTypes", value: g, checked: true }), el("label", { for: id, text: g })));
    }
    for (const s of state.session.scopes) {
      const id = "scope-" + s;
      scopes.append(el("div", { class: "check" }, el("input", { type: "checkbox", id, name: "scopes", value: s, checked: true }), el("label", { for: id, text: s })));
    }
  }

  async function loadClients() {
    const body = $("clients-body");
    try {
      const { clients } = await call("GET", "/clients");
      body.replaceChildren(
        ...clients.map((c) =>
          el(
            "tr",
            {},
            el("td", { "data-label": "Name", text: c.name }),
            el("td", { "data-label": "Client ID" }, el("code", { class: "client-id", text: c.clientId })),
            el("td", { "data-label": "Grants", text: c.grantTypes.join(", ") }),
            el("td", { "data-label": "Scopes", text: c.scopes.join(" ") }),
            el("td", { "data-label": "Secret updated", text: when(c.secretUpdatedAt) }),
            el(
              "td",
              { class: "row-actions" },
              el("button", { type: "button", class: "secondary", "aria-label": "Regenerate the secret of " + c.name, text: "Regenerate secret", onclick: () => regenerate(c) }),
              el("button", { type: "button", class: "danger", "aria-label": "Delete " + c.name, text: "Delete", onclick: () => removeClient(c) }),
            ),
          ),
        ),
      );
      $("clients-empty").hidden = clients.length > 0;
    } catch (e) {
      setStatus("security-status", e.message);
    }
  }

  async function regenerate(c) {
    const yes = await confirmAction(
      "Regenerate the secret of " + c.name + "?",
      "The current secret of " + c.clientId + " stops working at once. Applications using it must be given the new one.",
      "Regenerate secret",
    );
    if (!yes) return;
    try {
      const r = await call("POST", "/clients/" + encodeURIComponent(c.clientId) + "/secret");
      setStatus("security-status", "The secret of " + c.name + " was regenerated.");
      showSecret(r.clientId, r.clientSecret);
      await loadClients();
    } catch (e) {
      setStatus("security-status", e.message);
    }
  }

  async function removeClient(c) {
    const yes = await confirmAction("Delete " + c.name + "?", "The application " + c.clientId + " can no longer get tokens, and its refresh tokens stop working. This cannot be undone.", "Delete application");
    if (!yes) return focusHeading("view-security");
    try {
      await call("DELETE", "/clients/" + encodeURIComponent(c.clientId));
      setStatus("security-status", c.name + " was deleted.");
      await loadClients();
      focusHeading("view-security");
    } catch (e) {
      setStatus("security-status", e.message);
    }
  }

  $("client-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    const name = $("client-name").value.trim();
    if (!name) {
      showError("client-error", "Enter a name.");
      return $("client-name").focus();
    }
    const checked = (n) => [...form.querySelectorAll('input[name="' + n + '"]:checked')].map((i) => i.value);
    const ttl = $("client-ttl").value.trim();
    const body = { name, grantTypes: checked("grantTypes"), scopes: checked("scopes") };
    const clientId = $("client-id").value.trim();
    if (clientId) body.clientId = clientId;
    if (ttl) body.accessTokenTtl = Number(ttl);
    $("client-create").disabled = true;
    try {
      const r = await call("POST", "/clients", body);
      showError("client-error", null);
      form.reset();
      buildClientForm();
      setStatus("security-status", r.client.name + " was created.");
      await loadClients();
      showSecret(r.client.clientId, r.clientSecret);
    } catch (e) {
      showError("client-error", e);
    } finally {
      $("client-create").disabled = false;
    }
  });

  async function loadKeys() {
    try {
      const { keys } = await call("GET", "/signing-keys");
      $("keys-body").replaceChildren(
        ...keys.map((k) =>
          el(
            "tr",
            {},
            el("td", { "data-label": "Key ID" }, el("code", { text: k.kid })),
            el("td", { "data-label": "Algorithm", text: k.alg }),
            el("td", { "data-label": "Created", text: when(k.createdAt) }),
            el("td", { "data-label": "Status", text: k.signing ? "Signing" : "Verifying only" }),
          ),
        ),
      );
    } catch (e) {
      setStatus("security-status", e.message);
    }
  }

  $("keys-rotate").addEventListener("click", async () => {
    const yes = await confirmAction("Rotate the signing key?", "A new key signs tokens from now on. Tokens signed by the current key stay valid until they expire.", "Rotate key");
    if (!yes) return $("keys-rotate").focus();
    try {
      const r = await call("POST", "/signing-keys");
      setStatus("security-status", "New signing key " + r.kid + " is active.");
      await loadKeys();
    } catch (e) {
      setStatus("security-status", e.message);
    }
    $("keys-rotate").focus();
  });

  // ---- accounts ------------------------------------------------------------------------------

  async function loadAccounts() {
    try {
      const r = await call("GET", "/accounts?page=" + state.page + "&pageSize=" + state.pageSize);
      if (r.accounts.length === 0 && r.totalPages > 0 && state.page > r.totalPages) {
        state.page = r.totalPages;
        return loadAccounts();
      }
      $("accounts-body").replaceChildren(
        ...r.accounts.map((a) => {
          const self = a.username === state.session.username;
          const action = self
            ? el("span", { class: "hint", text: "(you)" })
            : el("button", {
                type: "button",
                class: a.enabled ? "danger" : "secondary",
                "aria-label": (a.enabled ? "Disable " : "Enable ") + a.username,
                text: a.enabled ? "Disable" : "Enable",
                onclick: () => toggleAccount(a),
              });
          return el(
            "tr",
            {},
            el("td", { "data-label": "Username", text: a.username }),
            el("td", { "data-label": "Display name", text: a.displayName || "" }),
            el("td", { "data-label": "Email", text: a.email || "" }),
            el("td", { "data-label": "Roles", text: a.roles.join(", ") }),
            el("td", { "data-label": "Status", text: a.enabled ? "Enabled" : "Disabled" }),
            el("td", { "data-label": "Created", text: when(a.createdAt) }),
            el("td", { class: "row-actions" }, action),
          );
        }),
      );
      const pages = Math.max(r.totalPages, 1);
      $("accounts-page-info").textContent = "Page " + r.page + " of " + pages + " · " + r.total + (r.total === 1 ? " account" : " accounts");
      $("accounts-prev").disabled = r.page <= 1;
      $("accounts-next").disabled = r.page >= r.totalPages;
    } catch (e) {
      setStatus("accounts-status", e.message);
    }
  }

  async function toggleAccount(a) {
    if (a.enabled) {
      const yes = await confirmAction("Disable " + a.username + "?", "The account can no longer sign in or get tokens; its refresh tokens and console sessions end at once.", "Disable account");
      if (!yes) return focusHeading("view-accounts");
    }
    try {
      await call("POST", "/accounts/" + encodeURIComponent(a.id) + (a.enabled ? "/disable" : "/enable"));
      setStatus("accounts-status", a.username + (a.enabled ? " was disabled." : " was enabled."));
      await loadAccounts();
      focusHeading("view-accounts");
    } catch (e) {
      setStatus("accounts-status", e.message);
    }
  }

  $("accounts-prev").addEventListener("click", async () => {
    state.page = Math.max(1, state.page - 1);
    await loadAccounts();
    ($("accounts-prev").disabled ? $("accounts-next") : $("accounts-prev")).focus();
  });
  $("accounts-next").addEventListener("click", async () => {
    state.page += 1;
    await loadAccounts();
    ($("accounts-next").disabled ? $("accounts-prev") : $("accounts-next")).focus();
  });
  $("accounts-page-size").addEventListener("change", async () => {
    state.pageSize = Number($("accounts-page-size").value);
    state.page = 1;
    await loadAccounts();
  });

  $("account-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    const body = {
      username: $("account-username").value.trim(),
      password: $("account-password").value,
      displayName: $("account-display-name").value.trim(),
      email: $("account-email").value.trim(),
      roles: $("account-admin").checked ? [state.session.adminRole] : [],
    };
    $("account-create").disabled = true;
    try {
      const a = await call("POST", "/accounts", body);
      showError("account-error", null);
      form.reset();
      setStatus("accounts-status", a.username + " was created.");
      await loadAccounts();
    } catch (e) {
      showError("account-error", e);
    } finally {
      $("account-create").disabled = false;
    }
  });

  // ---- session -------------------------------------------------------------------------------

  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const username = $("sign-in-username").value;
    const password = $("sign-in-password").value;
    if (!username || !password) {
      showError("sign-in-error", "Enter your username and password.");
      return (username ? $("sign-in-password") : $("sign-in-username")).focus();
    }
    $("sign-in-submit").disabled = true;
    try {
      state.session = await call("POST", "/session", { username, password });
      $("sign-in-form").reset();
      showError("sign-in-error", null);
      buildClientForm();
      await route();
    } catch (e) {
      showError("sign-in-error", e);
      $("sign-in-password").value = "";
      $("sign-in-password").focus();
    } finally {
      $("sign-in-submit").disabled = false;
    }
  });

  $("sign-out").addEventListener("click", async () => {
    try {
      await call("POST", "/session/sign-out");
    } catch {
      // Signed out either way: the session is gone or unusable.
    }
    state.session = null;
    history.replaceState(null, "", location.pathname);
    showSignIn();
  });

  window.addEventListener("hashchange", () => {
    route();
  });

  (async () => {
    try {
      state.session = await call("GET", "/session");
      buildClientForm();
    } catch {
      state.session = null;
    }
    await route();
  })();
})();
`;
