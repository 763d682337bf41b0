// @ts-check
// The console's script, served at `{base}/console/assets/console.js` (its own path, so the page's
// CSP needs no 'unsafe-inline'). Plain DOM code: no framework, nothing fetched from elsewhere.
// Every piece of server data goes through `textContent`, never `innerHTML`. Type-checked by
// `tsc -p page/tsconfig.json` (part of the package's `typecheck`).
"use strict";
(() => {
  /**
   * What `GET /console/api/session` answers.
   * @typedef {{ username: string, displayName?: string, csrfToken: string, expiresAt: string, grantTypes: string[], scopes: string[], adminRole: string, accountPages?: { defaultPageSize: number, maxPageSize: number } }} Session
   */

  /**
   * The element with this id, of the kind the script expects. The page has every id the script
   * uses, so a missing or different element is a bug: it fails here, loudly.
   * @template {HTMLElement} T
   * @param {string} id
   * @param {{ new (): T, name: string }} kind
   * @returns {T}
   */
  function byId(id, kind) {
    const node = document.getElementById(id);
    if (!(node instanceof kind)) throw new Error("console page: #" + id + " is not a " + kind.name);
    return node;
  }
  /** @param {string} id */
  const $ = (id) => byId(id, HTMLElement);
  /** @param {string} id */
  const $input = (id) => byId(id, HTMLInputElement);
  /** @param {string} id */
  const $button = (id) => byId(id, HTMLButtonElement);
  /** @param {string} id */
  const $dialog = (id) => byId(id, HTMLDialogElement);
  /** @param {string} id */
  const $form = (id) => byId(id, HTMLFormElement);

  /**
   * The text of an error, for a status line or an error box. A server message names ids quoted as
   * JSON ('Signing key "x" does not exist.', 'signing key "a" may still sign ... since "b" took
   * over', where a quote or control character in one is escaped): each quoted string in it is
   * bidi-isolated, quotes included, as `q` does in the page's own sentences, so a direction override
   * in an id cannot reorder the rest of the message, whether or not the page sent that id. And each
   * of `names` (what the page sent) found in it as it is. One pass: nothing is isolated twice.
   * @param {unknown} error
   * @param {unknown[]} [names]
   */
  const messageOf = (error, names = []) => {
    const text = error instanceof Error ? error.message : String(error);
    const bare = /** @type {string[]} */ (names.filter((n) => typeof n === "string" && n !== "" && text.includes(n)));
    // Longest first, so a name inside another is isolated as the whole of the longer one.
    const escaped = bare.sort((a, b) => b.length - a.length).map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    return text.replace(new RegExp(['"(?:[^"\\\\]|\\\\.)*"', ...escaped].join("|"), "g"), (found) => q(found));
  };

  const meta = document.querySelector('meta[name="plantgate-console-root"]');
  if (!(meta instanceof HTMLMetaElement)) throw new Error("console page: no plantgate-console-root meta");
  const root = meta.content;
  const api = root + "/api";
  /** @type {{ session: Session | null, page: number, pageSize: number }} */
  const state = { session: null, page: 1, pageSize: 20 };

  /** The signed-in session; only called on views that need one. */
  function session() {
    if (!state.session) throw new Error("Sign in first.");
    return state.session;
  }

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
  /**
   * A time in epoch milliseconds as ISO text, never a RangeError: one past what a Date holds (a row
   * written by hand) is shown at the end of that range, one that is no number as the epoch, as the
   * server's own views show them (until 2026-12-03 such an event's time broke its whole page).
   * @param {number} ms
   */
  const isoOf = (ms) => new Date(typeof ms === "number" && !Number.isNaN(ms) ? Math.min(8.64e15, Math.max(-8.64e15, ms)) : 0).toISOString();

  /**
   * A value from the data, for a sentence around it: anything beyond printable ASCII is wrapped in
   * U+2068 FIRST STRONG ISOLATE ... U+2069 POP DIRECTIONAL ISOLATE (what <bdi> does), so a direction
   * override or right-to-left text in a name cannot reorder the words after it ("Delete X?" read as
   * something else). Cells that hold one value alone need none: each cell is its own paragraph.
   * The isolation holds whatever the value holds (a kid is any string): an isolate it leaves open
   * is closed before the final U+2069, one it closes that it did not open (a lone U+2069) closes an
   * extra U+2068 put in front, and each part between paragraph separators (UAX #9 class B: a line
   * feed, U+0085, U+2029, ...; they end every isolate and override) is isolated by itself. Until
   * 2026-11-30 a lone U+2069 or a separator before a U+202E in an id reversed the rest of the line.
   * @param {unknown} value
   */
  const q = (value) => {
    const text = String(value);
    if (/^[\x20-\x7e]*$/.test(text)) return text;
    return text
      .split(/([\n\r\x1c-\x1e\x85\u2029])/)
      .map((part, i) => {
        if (i % 2 === 1 || part === "") return part;
        let open = 0;
        let unopened = 0;
        for (const c of part) {
          if (c === "\u2066" || c === "\u2067" || c === "\u2068") open++;
          else if (c === "\u2069") open > 0 ? open-- : unopened++;
        }
        return "\u2068".repeat(1 + unopened) + part + "\u2069".repeat(1 + open);
      })
      .join("");
  };

  /**
   * The longest wait the page states. A Retry-After beyond it (a week; the brute-force window is
   * 15 minutes by default) is a misconfigured proxy or a hostile value, and is not shown.
   */
  const MAX_RETRY_AFTER = 7 * 24 * 3600;

  /**
   * The seconds a Retry-After header asks to wait (RFC 9110 §10.2.3: delay-seconds, or an HTTP-date
   * in any of its three forms), or null when there is none to state: absent, unparsable, not in the
   * future, or beyond MAX_RETRY_AFTER.
   * @param {string | null} value
   * @returns {number | null}
   */
  function retryAfterSeconds(value) {
    if (value === null) return null;
    const v = value.trim();
    let seconds = NaN;
    if (/^\d{1,12}$/.test(v)) seconds = Number(v);
    else if (/^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]{0,6},? [A-Za-z0-9 :-]{10,30}$/.test(v)) {
      // IMF-fixdate and RFC 850 dates end in GMT; an asctime date has no zone and means GMT too.
      const at = Date.parse(/ GMT$/.test(v) ? v : v + " GMT");
      if (Number.isFinite(at)) seconds = Math.ceil((at - Date.now()) / 1000);
    }
    return Number.isSafeInteger(seconds) && seconds >= 1 && seconds <= MAX_RETRY_AFTER ? seconds : null;
  }

  /** A wait in the unit a person reads it in: "45 s", "15 min", "3 h", "2 days" (rounded up). */
  function waitText(seconds) {
    if (seconds < 120) return seconds + " s";
    if (seconds < 120 * 60) return Math.ceil(seconds / 60) + " min";
    if (seconds < 48 * 3600) return Math.ceil(seconds / 3600) + " h";
    return Math.ceil(seconds / 86400) + " days";
  }

  /** The end of a server message that says to retry without saying when ("; retry later."). */
  const RETRY_TAIL = /;\s*(?:retry|try again)(?: later| shortly| in a (?:second|moment)| after the time in Retry-After)?\.?$/i;

  /**
   * A server message with when to try again (`again`: "try again in 15 min"), in place of a tail
   * that says to retry without saying when, or as a sentence of its own.
   * @param {string} message
   * @param {string} again
   */
  const withRetry = (message, again) =>
    RETRY_TAIL.test(message) ? message.replace(RETRY_TAIL, "; " + again + ".") : message.replace(/[.\s]*$/, "") + ". " + again.charAt(0).toUpperCase() + again.slice(1) + ".";

  class ApiFailure extends Error {
    /**
     * @param {number} status
     * @param {any} body
     * @param {number | null} [retryAfter] seconds from the answer's Retry-After (429 and 503 only)
     */
    constructor(status, body, retryAfter = null) {
      const said = body && typeof body.message === "string" ? body.message : "The request failed (HTTP " + status + ").";
      // When to try again, in the message itself: every view shows the message, and the page
      // never retries on its own (a refused sign-in repeated by a script would only extend a lock).
      super(retryAfter === null ? said : withRetry(said, "try again in " + waitText(retryAfter)));
      /** The server's message, without the wait. */
      this.said = said;
      this.status = status;
      this.code = body && body.error;
      this.retryAfter = retryAfter;
    }
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @param {AbortSignal} [signal] aborts the request (a list load superseded by a newer one)
   */
  async function call(method, path, body, signal) {
    /** @type {Record<string, string>} */
    const headers = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (method !== "GET" && state.session) headers["x-csrf-token"] = state.session.csrfToken;
    let res;
    try {
      res = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin", cache: "no-store", signal });
    } catch {
      throw new ApiFailure(0, { message: "The server could not be reached." });
    }
    const data = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) {
      // 1301: the session is gone (signed out elsewhere, expired, account disabled); 1302: the
      // account lost the administrator role, and the server deleted the session.
      if (state.session && data && ((res.status === 401 && data.error === 1301) || (res.status === 403 && data.error === 1302))) {
        state.session = null;
        cancelConfirm();
        showSignIn(data.error === 1302 ? "Your account is no longer a console administrator; your session has ended." : "Your session has ended; sign in again.");
      }
      // 1303: the CSRF token is not the session's. The page always sends its session's token, so the
      // browser's session cookie is no longer the one this tab holds: another tab signed out and in
      // again (as someone else, or the same administrator). Nothing was done; find out who the
      // browser is signed in as now and say so, rather than show the bare refusal.
      if (state.session && data && res.status === 403 && data.error === 1303) {
        const shown = state.session.username;
        const now = await recheckSession();
        if (now === "changed" && state.session) {
          throw new ApiFailure(res.status, { error: data.error, message: "Nothing was done: this browser is now signed in as " + q(state.session.username) + " (signed in from another tab), not " + q(shown) + ". Check the page, then try again." });
        }
        if (now === "renewed") throw new ApiFailure(res.status, { error: data.error, message: "Nothing was done: your session was renewed in another tab. Try again." });
        if (now === "ended") throw new ApiFailure(res.status, { error: data.error, message: "Nothing was done: your session has ended; sign in again." });
      }
      const retryAfter = res.status === 429 || res.status === 503 ? retryAfterSeconds(res.headers.get("retry-after")) : null;
      throw new ApiFailure(res.status, data, retryAfter);
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

  const VIEWS = ["view-sign-in", "view-security", "view-accounts", "view-events"];
  function show(view) {
    $("loading").hidden = true;
    // Signed in (here or from another tab): the wait after a refused sign-in is over, and the
    // notice of a session from another tab is done with.
    if (view !== "view-sign-in") {
      endSignInWait();
      showError("sign-in-wait", null);
      offerSession(null);
    }
    for (const v of VIEWS) $(v).hidden = v !== view;
    const signedIn = state.session !== null;
    $("nav").hidden = !signedIn;
    $("whoami").hidden = !signedIn;
    if (state.session) $("whoami-name").textContent = "Signed in as " + q(state.session.username);
    for (const [id, target] of [["nav-security", "view-security"], ["nav-accounts", "view-accounts"], ["nav-events", "view-events"]]) {
      if (target === view) $(id).setAttribute("aria-current", "page");
      else $(id).removeAttribute("aria-current");
    }
  }

  /**
   * How often the sign-in view was shown: a form's submit whose call saw it shown (the session
   * ended, the form was emptied) writes no refusal into that form, where it stayed for whoever
   * signed in next (until 2026-12-01); one that saw a session replaced without it (a 1303 answered
   * "Nothing was done: ...") still says so.
   */
  let signInsShown = 0;

  function showSignIn(message) {
    signInsShown++;
    forgetTypedWork();
    forgetViews();
    show("view-sign-in");
    showError("sign-in-error", message || null);
    $input("sign-in-username").focus();
  }

  /**
   * Empties the forms an administrator was filling in (a new client, a new account with its
   * password) and their refusals: the session they belonged to has ended (signed out here or in
   * another tab, expired, revoked) or the browser is now another administrator's. Until 2026-11-30
   * a half-typed account, its password included, stayed in the page for whoever signed in next at
   * this browser.
   */
  function forgetTypedWork() {
    $form("client-form").reset();
    $form("account-form").reset();
    showError("client-error", null);
    showError("account-error", null);
  }

  /**
   * Empties every view of what the session it belonged to loaded, as the page was when it was
   * loaded: the tables (applications, signing keys, accounts with their emails, security events
   * with their addresses), the pagers and their cursors, the accounts' page and page size, the
   * events' filters, the status lines and who was signed in; and aborts the list loads under way,
   * whose answers would fill a table again. Run when the session ends (signed out here or in
   * another tab, expired, revoked) and when another administrator's session takes the tab: until
   * 2026-12-02 the hidden views kept all of it, in the page for whoever signed in next in the tab,
   * who also started on the page, page size and filters left behind.
   */
  function forgetViews() {
    for (const controller of loads.values()) controller.abort();
    loads.clear();
    for (const id of ["clients", "keys", "accounts", "events"]) {
      $(id + "-table").removeAttribute("aria-busy");
      $(id + "-body").replaceChildren();
    }
    for (const id of ["clients-empty", "keys-empty", "events-empty", "keys-reencrypt"]) $(id).hidden = true;
    clientPages.reset();
    eventPages.reset();
    state.page = 1;
    state.pageSize = 20;
    byId("accounts-page-size", HTMLSelectElement).value = String(state.pageSize);
    $("accounts-page-info").textContent = "";
    $button("accounts-prev").disabled = false;
    $button("accounts-next").disabled = false;
    $form("events-filter").reset();
    eventsFilter = { type: "", client: "", account: "", since: "", until: "" };
    for (const id of ["security-status", "accounts-status", "events-status"]) setStatus(id, "");
    $("whoami-name").textContent = "";
    // The grants and scopes offered are the session's; the next sign-in builds them again.
    for (const box of [$("client-grants"), $("client-scopes")]) for (const c of [...box.querySelectorAll(".check")]) c.remove();
  }

  function focusHeading(view) {
    const h = $(view).querySelector("h1");
    if (!h) return;
    h.setAttribute("tabindex", "-1");
    h.focus();
  }

  async function route() {
    if (!state.session) return showSignIn();
    if (location.hash === "#/accounts") {
      show("view-accounts");
      focusHeading("view-accounts");
      await loadAccounts();
    } else if (location.hash === "#/events") {
      show("view-events");
      focusHeading("view-events");
      await loadFilteredEvents();
    } else {
      if (location.hash !== "#/settings/security") history.replaceState(null, "", "#/settings/security");
      show("view-security");
      focusHeading("view-security");
      await Promise.all([loadClients(), loadKeys()]);
    }
  }

  // ---- dialogs -------------------------------------------------------------------------------

  /** Declines the open confirmation, if any (the session it was asked under has ended or changed). */
  let cancelConfirm = () => {};

  function confirmAction(title, text, okLabel) {
    cancelConfirm();
    const dialog = $dialog("confirm-dialog");
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    $button("confirm-ok").textContent = okLabel;
    return new Promise((resolve) => {
      const done = (answer) => {
        cancelConfirm = () => {};
        $button("confirm-ok").removeEventListener("click", ok);
        $button("confirm-cancel").removeEventListener("click", cancel);
        dialog.removeEventListener("cancel", cancel);
        dialog.close();
        resolve(answer);
      };
      const ok = () => done(true);
      const cancel = (event) => {
        if (event) event.preventDefault();
        done(false);
      };
      $button("confirm-ok").addEventListener("click", ok);
      $button("confirm-cancel").addEventListener("click", cancel);
      dialog.addEventListener("cancel", cancel);
      cancelConfirm = () => done(false);
      dialog.showModal();
      $button("confirm-cancel").focus();
    });
  }

  /** @type {Element | null} */
  let returnFocus = null;
  /**
   * Secrets waiting for the dialog. It shows one at a time: a secret that arrives while another is
   * shown (two applications' actions answered at once) waits for "I have stored it" instead of
   * replacing it, which lost the first one for good.
   * @type {{ clientId: string, secret: string }[]}
   */
  const pendingSecrets = [];
  function showSecret(clientId, secret) {
    pendingSecrets.push({ clientId, secret });
    if (!$dialog("secret-dialog").open) {
      returnFocus = document.activeElement;
      showNextSecret();
    }
  }

  /** Puts the next waiting secret in the dialog (opening it); false when none waits. */
  function showNextSecret() {
    const next = pendingSecrets.shift();
    if (!next) return false;
    $input("secret-client-id").value = next.clientId;
    $input("secret-value").value = next.secret;
    setStatus("secret-copied", "");
    setStatus("secret-escape", "");
    if (!$dialog("secret-dialog").open) $dialog("secret-dialog").showModal();
    $input("secret-value").focus();
    $input("secret-value").select();
    return true;
  }

  function closeSecret() {
    // The secret must not linger in the page once the administrator has stored it.
    $input("secret-value").value = "";
    $input("secret-client-id").value = "";
    setStatus("secret-escape", "");
    if (showNextSecret()) return;
    if ($dialog("secret-dialog").open) $dialog("secret-dialog").close();
    if (returnFocus instanceof HTMLElement && returnFocus !== document.body && document.contains(returnFocus)) returnFocus.focus();
    else focusHeading("view-security");
  }

  /**
   * Targets with an action under way (`client:<id>`, `account:<id>`, `keys`), from the click
   * through the confirmation to the answer. Another click on an action of the same target is
   * ignored meanwhile, and its buttons say so (aria-disabled, which keeps them focusable), so no
   * action is sent twice: a second "Regenerate secret" killed the secret the first was about to
   * show, and its answer could arrive first, leaving a dead secret in the dialog.
   * @type {Set<string>}
   */
  const busy = new Set();
  function markBusy() {
    for (const b of document.querySelectorAll("button[data-busy]")) {
      if (!(b instanceof HTMLButtonElement)) continue;
      if (busy.has(b.dataset.busy || "")) b.setAttribute("aria-disabled", "true");
      else b.removeAttribute("aria-disabled");
    }
  }
  /**
   * Runs `action` unless one for `key` is under way.
   * @param {string} key
   * @param {() => Promise<unknown>} action
   */
  async function once(key, action) {
    if (busy.has(key)) return;
    busy.add(key);
    markBusy();
    try {
      await action();
    } finally {
      busy.delete(key);
      markBusy();
    }
  }

  $button("secret-done").addEventListener("click", closeSecret);

  /**
   * Only "I have stored it" closes the secret dialog: the secret in it is the only copy (the server
   * keeps its hash), and until 2026-12-02 Escape closed the dialog and emptied it, one key press
   * losing the secret for good. Escape now says how to close it instead. Its keydown is cancelled,
   * so no close request reaches the dialog: cancelling the dialog's `cancel` event alone is not
   * enough, as Chromium lets it be cancelled once per user activation and Escape is none (a second
   * Escape closed it). A close request that is no key press (a back gesture) gets its `cancel`
   * cancelled when the browser allows it, and a close that was not "I have stored it" (the secret
   * still in the dialog) opens the dialog again, with the secret. The dialog is modal: Tab moves
   * among its controls only.
   */
  const keepSecret = () => setStatus("secret-escape", "The secret is shown only this once: copy it, then press \u201cI have stored it\u201d to close this dialog.");
  window.addEventListener(
    "keydown",
    (event) => {
      if (event.key !== "Escape" || !$dialog("secret-dialog").open || $dialog("confirm-dialog").open) return;
      event.preventDefault();
      keepSecret();
    },
    true,
  );
  $dialog("secret-dialog").addEventListener("cancel", (event) => {
    event.preventDefault();
    keepSecret();
  });
  $dialog("secret-dialog").addEventListener("close", () => {
    const dialog = $dialog("secret-dialog");
    if (dialog.open || $input("secret-value").value === "") return;
    dialog.showModal();
    keepSecret();
    $input("secret-value").focus();
  });
  $button("secret-copy").addEventListener("click", async () => {
    const input = $input("secret-value");
    try {
      await navigator.clipboard.writeText(input.value);
      setStatus("secret-copied", "Copied to the clipboard.");
    } catch {
      input.focus();
      input.select();
      setStatus("secret-copied", "Copying is blocked here: the secret is selected, press Ctrl+C (or Cmd+C).");
    }
  });

  // ---- list loads ----------------------------------------------------------------------------

  /**
   * The load under way of each list (`clients`, `keys`, `accounts`, `events`). Loads of one list can
   * overlap (page 2 then page 3 clicked quickly, a filter changed while a page loads, two actions
   * each reloading the list), and their answers can arrive in any order: a new load aborts the one
   * before it, and an answer (or failure) of a load that is no longer the latest is dropped, so the
   * list shows the answer to the latest request only. While a load is under way its table is
   * `aria-busy`.
   * @type {Map<string, AbortController>}
   */
  const loads = new Map();
  /**
   * Starts a load of `list`, whose table is `tableId`.
   * @param {string} list
   * @param {string} tableId
   */
  function startLoad(list, tableId) {
    loads.get(list)?.abort();
    const controller = new AbortController();
    loads.set(list, controller);
    $(tableId).setAttribute("aria-busy", "true");
    return {
      signal: controller.signal,
      /** Whether a newer load of the list has started since. */
      superseded: () => controller.signal.aborted,
      /** Ends this load (when still the latest). */
      end: () => {
        if (loads.get(list) !== controller) return;
        loads.delete(list);
        $(tableId).removeAttribute("aria-busy");
      },
    };
  }

  // ---- cursor pagers -------------------------------------------------------------------------

  /**
   * The pager of a list read in keyset pages by cursor (the applications, the security events):
   * `cursors[i]` is the cursor of page i + 1 (null for the first page), `next` the cursor of the
   * page after the one shown (null on the last). A move asks the view's `load` for the page whose
   * cursor is last in the cursors it is given; the view calls `shown` once that page is on screen,
   * and only then, so a failed load (a 503, a refused filter) leaves the table, its page number and
   * the cursors in agreement: the next click continues from the page shown, never with a cursor
   * pushed twice. After a move focus stays on the button pressed, or goes to the other direction's
   * button when the pressed one is now disabled (the first or the last page).
   * One click is one page step: while a move is under way the pager's buttons are `aria-disabled`
   * (as an action's are, see `once`) and a further click on them is ignored; a second "Next page"
   * clicked before the first page arrived asked for that same page again and aborted the first.
   * A load of the list that is not a move (an action reloading the page, a filter) still
   * supersedes a move under way, which then ends.
   * @param {{ name: string, prev: string, next: string, first?: string, info: string, load: (cursors: (string | null)[]) => Promise<boolean | null>, moved?: (shown: boolean) => void }} options
   *   the list's name, the ids of the buttons and of the page number; `load` resolves to whether the page was shown,
   *   null when a newer load of the list superseded it (which then decides what is shown); `moved`
   *   runs after a move that was not superseded
   */
  function cursorPager(options) {
    const prev = $button(options.prev);
    const next = $button(options.next);
    const first = options.first === undefined ? null : $button(options.first);
    const key = "pager:" + options.name;
    for (const b of [first, prev, next]) if (b) b.dataset.busy = key;
    const pager = {
      /** @type {(string | null)[]} */
      cursors: [null],
      /** @type {string | null} */
      next: null,
      /**
       * Takes the page now on screen: the cursors that led to it, and the cursor of the page after it.
       * @param {(string | null)[]} cursors
       * @param {string | null} nextCursor
       */
      shown(cursors, nextCursor) {
        pager.cursors = cursors;
        pager.next = nextCursor;
        $(options.info).textContent = "Page " + cursors.length;
        if (first) first.disabled = cursors.length <= 1;
        prev.disabled = cursors.length <= 1;
        next.disabled = nextCursor === null;
      },
      /** Back to the first page, nothing shown (the session that paged has ended). */
      reset() {
        pager.cursors = [null];
        pager.next = null;
        $(options.info).textContent = "";
        for (const b of [first, prev, next]) if (b) b.disabled = false;
      },
    };
    /**
     * @param {(string | null)[]} cursors
     * @param {HTMLButtonElement} pressed
     */
    function move(cursors, pressed) {
      return once(key, async () => {
        const shown = await options.load(cursors);
        if (shown === null) return;
        options.moved?.(shown);
        (pressed.disabled ? (pressed === next ? prev : next) : pressed).focus();
      });
    }
    next.addEventListener("click", () => {
      if (pager.next !== null) move([...pager.cursors, pager.next], next);
    });
    prev.addEventListener("click", () => {
      move(pager.cursors.length > 1 ? pager.cursors.slice(0, -1) : [null], prev);
    });
    first?.addEventListener("click", () => {
      move([null], first);
    });
    return pager;
  }

  // ---- security settings ---------------------------------------------------------------------

  function buildClientForm() {
    const grants = $("client-grants");
    const scopes = $("client-scopes");
    for (const box of [grants, scopes]) for (const c of [...box.querySelectorAll(".check")]) c.remove();
    for (const g of session().grantTypes) {
      const id = "grant-" + g;
      grants.append(el("div", { class: "check" }, el("input", { type: "checkbox", id, name: "grantTypes", value: g, checked: true }), el("label", { for: id, text: g })));
    }
    for (const s of session().scopes) {
      const id = "scope-" + s;
      scopes.append(el("div", { class: "check" }, el("input", { type: "checkbox", id, name: "scopes", value: s, checked: true }), el("label", { for: id, text: s })));
    }
  }

  /**
   * The accounts list's page sizes as the session says the server takes them (`defaultPageSize`,
   * `maxPageSize`): 10, 20, 50 and 100 where they are within the maximum, the default, and the
   * maximum when it is under 100; the list starts at the default. Until 2026-12-03 the page asked
   * for 20 and offered 10-100 whatever the server took: with a `maxPageSize` under 10 no size
   * worked and the list could not be shown. A server that does not say (an older one) keeps 20.
   */
  function buildPageSizes() {
    const paging = session().accountPages;
    const max = paging && Number.isSafeInteger(paging.maxPageSize) && paging.maxPageSize > 0 ? paging.maxPageSize : 100;
    const first = paging && Number.isSafeInteger(paging.defaultPageSize) && paging.defaultPageSize > 0 && paging.defaultPageSize <= max ? paging.defaultPageSize : Math.min(20, max);
    const sizes = [...new Set([10, 20, 50, 100, first, ...(max < 100 ? [max] : [])])].filter((n) => n <= max).sort((a, b) => a - b);
    const select = byId("accounts-page-size", HTMLSelectElement);
    select.replaceChildren(...sizes.map((n) => el("option", { value: String(n), text: String(n) })));
    state.pageSize = first;
    select.value = String(first);
  }

  /** Applications per page (the API's default; it takes 1-200). */
  const CLIENTS_PER_PAGE = 50;

  /**
   * The pages of applications: the cursors are the API's `after` cursors (opaque, bounded whatever
   * the last client id on the page before; the page passes them back as given), so each page costs
   * the same at any depth, and an action reloads only the page shown. A move that
   * shows its page clears the status line.
   */
  const clientPages = cursorPager({
    name: "clients",
    first: "clients-first",
    prev: "clients-prev",
    next: "clients-next",
    info: "clients-page-info",
    load: (cursors) => loadClients(cursors),
    moved: (shown) => {
      if (shown) setStatus("security-status", "");
    },
  });

  /**
   * Shows the page whose cursor is last in `cursors` (by default the page shown: an action reloads
   * it and nothing else). `clientPages` takes the cursors only once the page is shown, so a failed
   * load leaves the table and the pager in agreement. A page left empty (its last application
   * deleted) gives way to the one before it.
   * @param {(string | null)[]} [cursors]
   * @returns {Promise<boolean | null>} whether a page was shown; null when superseded
   */
  async function loadClients(cursors = clientPages.cursors) {
    const body = $("clients-body");
    const after = cursors[cursors.length - 1];
    const params = new URLSearchParams({ limit: String(CLIENTS_PER_PAGE) });
    if (after) params.set("after", after);
    const load = startLoad("clients", "clients-table");
    try {
      const { clients, next } = await call("GET", "/clients?" + params.toString(), undefined, load.signal);
      if (load.superseded()) return null;
      if (clients.length === 0 && cursors.length > 1) return loadClients(cursors.slice(0, -1));
      body.replaceChildren(
        ...clients.map((c) =>
          el(
            "tr",
            {},
            el("td", { "data-label": "Name", text: c.name }),
            el("td", { "data-label": "Client ID" }, el("code", { class: "client-id", text: c.clientId })),
            el("td", { "data-label": "Grants", text: c.grantTypes.join(", ") }),
            el("td", { "data-label": "Scopes", text: c.scopes.join(" ") }),
            el("td", { "data-label": "Authentication" }, ...credentials(c)),
            el(
              "td",
              { class: "row-actions" },
              ...(c.authMethod === "client_secret"
                ? [
                    el("button", { type: "button", class: "secondary", "data-busy": "client:" + c.clientId, "aria-label": "Add a secret to " + c.name, text: "Add secret", onclick: () => once("client:" + c.clientId, () => addSecret(c)) }),
                    el("button", { type: "button", class: "secondary", "data-busy": "client:" + c.clientId, "aria-label": "Regenerate the secret of " + c.name, text: "Regenerate secret", onclick: () => once("client:" + c.clientId, () => regenerate(c)) }),
                  ]
                : []),
              el("button", { type: "button", class: "danger", "data-busy": "client:" + c.clientId, "aria-label": "Delete " + c.name, text: "Delete", onclick: () => once("client:" + c.clientId, () => removeClient(c)) }),
            ),
          ),
        ),
      );
      $("clients-empty").hidden = clients.length > 0;
      clientPages.shown(cursors, next);
      markBusy();
      return true;
    } catch (e) {
      if (load.superseded()) return null;
      setStatus("security-status", messageOf(e));
      return false;
    } finally {
      load.end();
    }
  }

  /**
   * What a client authenticates with: each secret's dates (never the secret) with a Revoke button,
   * or its key source for private_key_jwt.
   * @param {any} c
   */
  function credentials(c) {
    if (c.authMethod === "private_key_jwt") {
      return [el("span", { text: "private_key_jwt, " + (c.jwksUri ? "keys at " + q(c.jwksUri) : "keys registered inline") })];
    }
    if (c.secrets.length === 0) return [el("span", { text: "No secret: add one." })];
    return [
      el(
        "ul",
        { class: "secrets" },
        ...c.secrets.map((/** @type {any} */ x) =>
          el(
            "li",
            {},
            el("code", { text: x.id }),
            el("span", {
              text:
                " created " + when(x.createdAt) +
                (x.expiresAt ? (x.expired ? ", expired " : ", expires ") + when(x.expiresAt) : ", no expiry") +
                (x.lastUsedAt ? ", last used " + when(x.lastUsedAt) : ", never used") + " ",
            }),
            el("button", { type: "button", class: "danger", "data-busy": "client:" + c.clientId, "aria-label": "Revoke secret " + x.id + " of " + c.name, text: "Revoke", onclick: () => once("client:" + c.clientId, () => revokeSecret(c, x)) }),
          ),
        ),
      ),
    ];
  }

  /** @param {any} c */
  async function addSecret(c) {
    const yes = await confirmAction(
      "Add a secret to " + q(c.name) + "?",
      "The current secrets of " + q(c.clientId) + " keep working. Give the new one to the application, then revoke the old one.",
      "Add secret",
    );
    if (!yes) return;
    try {
      const r = await call("POST", "/clients/" + encodeURIComponent(c.clientId) + "/secrets", {});
      setStatus("security-status", "A secret was added to " + q(c.name) + ".");
      showSecret(r.clientId, r.clientSecret);
      await loadClients();
    } catch (e) {
      setStatus("security-status", messageOf(e, [c.name, c.clientId]));
    }
  }

  /** @param {any} c @param {any} x */
  async function revokeSecret(c, x) {
    const yes = await confirmAction("Revoke secret " + q(x.id) + " of " + q(c.name) + "?", "Applications using this secret can no longer get tokens with it. This cannot be undone.", "Revoke secret");
    if (!yes) return;
    try {
      await call("DELETE", "/clients/" + encodeURIComponent(c.clientId) + "/secrets/" + encodeURIComponent(x.id));
      setStatus("security-status", "Secret " + q(x.id) + " of " + q(c.name) + " was revoked.");
      await loadClients();
      focusHeading("view-security");
    } catch (e) {
      setStatus("security-status", messageOf(e, [c.name, c.clientId]));
    }
  }

  async function regenerate(c) {
    const yes = await confirmAction(
      "Regenerate the secret of " + q(c.name) + "?",
      "Every current secret of " + q(c.clientId) + " stops working at once. Applications using them must be given the new one.",
      "Regenerate secret",
    );
    if (!yes) return;
    try {
      const r = await call("POST", "/clients/" + encodeURIComponent(c.clientId) + "/secret");
      setStatus("security-status", "The secret of " + q(c.name) + " was regenerated.");
      showSecret(r.clientId, r.clientSecret);
      await loadClients();
    } catch (e) {
      setStatus("security-status", messageOf(e, [c.name, c.clientId]));
    }
  }

  async function removeClient(c) {
    const yes = await confirmAction("Delete " + q(c.name) + "?", "The application " + q(c.clientId) + " can no longer get tokens, and its refresh tokens stop working. This cannot be undone.", "Delete application");
    if (!yes) return focusHeading("view-security");
    try {
      await call("DELETE", "/clients/" + encodeURIComponent(c.clientId));
      setStatus("security-status", q(c.name) + " was deleted.");
      await loadClients();
      focusHeading("view-security");
    } catch (e) {
      setStatus("security-status", messageOf(e, [c.name, c.clientId]));
    }
  }

  $form("client-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = /** @type {HTMLFormElement} */ (event.currentTarget);
    const name = $input("client-name").value.trim();
    if (!name) {
      showError("client-error", "Enter a name.");
      return $input("client-name").focus();
    }
    /** @param {string} n */
    const checked = (n) => [...form.querySelectorAll('input[name="' + n + '"]:checked')].map((i) => /** @type {HTMLInputElement} */ (i).value);
    if ($input("client-ttl").validity.badInput) {
      showError("client-error", "Enter the access-token lifetime as a whole number of seconds, or leave it empty.");
      return $input("client-ttl").focus();
    }
    const ttl = $input("client-ttl").value.trim();
    /** @type {{ name: string, grantTypes: string[], scopes: string[], clientId?: string, accessTokenTtl?: number }} */
    const body = { name, grantTypes: checked("grantTypes"), scopes: checked("scopes") };
    const clientId = $input("client-id").value.trim();
    if (clientId) body.clientId = clientId;
    if (ttl) body.accessTokenTtl = Number(ttl);
    $button("client-create").disabled = true;
    const shown = signInsShown;
    try {
      const r = await call("POST", "/clients", body);
      // First of all, so nothing that fails after (the list's reload) can keep it from being shown.
      showSecret(r.client.clientId, r.clientSecret);
      showError("client-error", null);
      form.reset();
      buildClientForm();
      setStatus("security-status", q(r.client.name) + " was created.");
      await loadClients();
    } catch (e) {
      // Not when the session ended meanwhile: the sign-in view emptied the form and its error, and
      // a refusal written after that stayed for whoever signed in next (until 2026-12-01).
      if (signInsShown === shown) showError("client-error", messageOf(e, [body.name, body.clientId]));
    } finally {
      $button("client-create").disabled = false;
    }
  });

  async function loadKeys() {
    const load = startLoad("keys", "keys-table");
    try {
      const { keys } = await call("GET", "/signing-keys", undefined, load.signal);
      if (load.superseded()) return;
      $("keys-body").replaceChildren(
        ...keys.map((k) =>
          el(
            "tr",
            {},
            el("td", { "data-label": "Key ID" }, el("code", { text: k.kid })),
            el("td", { "data-label": "Algorithm", text: k.alg }),
            el("td", { "data-label": "Created", text: when(k.createdAt) }),
            el("td", { "data-label": "Signs from", text: when(k.activatesAt) }),
            el("td", { "data-label": "Status", text: KEY_STATUS[k.status] ?? k.status }),
            el("td", { "data-label": "At rest", text: atRestText(k) }),
            el(
              "td",
              { "data-label": "Actions" },
              // The key that signs now cannot be revoked: rotate now first.
              k.signing ? null : el("button", { type: "button", class: "danger", "data-busy": "keys", "aria-label": "Revoke signing key " + k.kid, text: "Revoke", onclick: () => once("keys", () => revokeKey(k)) }),
            ),
          ),
        ),
      );
      // The listing only reads: a store without keys stays so until the server first needs one.
      $("keys-empty").hidden = keys.length > 0;
      // A key under an older key encryption key (a KEK rotation under way): offer to move them all
      // under the current one, the step before the older KEK can be removed.
      $button("keys-reencrypt").hidden = !keys.some((k) => k.kekStatus === "older");
      markBusy();
    } catch (e) {
      if (!load.superseded()) setStatus("security-status", messageOf(e));
    } finally {
      load.end();
    }
  }

  /**
   * A kid in the page's own sentences: an empty one (a configured key's kid is any string) shows as
   * `""`, as the server's messages quote it, not as a double space.
   * @param {string} kid
   */
  const kidText = (kid) => (kid === "" ? '""' : q(kid));

  /** @param {any} k */
  async function revokeKey(k) {
    const yes = await confirmAction(
      "Revoke signing key " + kidText(k.kid) + "?",
      "The key leaves the published key set and every token it signed is refused (on other instances within a minute), so clients holding such tokens must get new ones. Do it when the key may have leaked. This cannot be undone.",
      "Revoke key",
    );
    if (!yes) return $button("keys-rotate").focus();
    try {
      // The kid in the query, not the path: URL parsing drops a segment "." or ".." (and %2E%2E),
      // and a configured key is stored under its own kid, any string.
      await call("DELETE", "/signing-keys?kid=" + encodeURIComponent(k.kid));
      setStatus("security-status", "Signing key " + kidText(k.kid) + " was revoked.");
      await loadKeys();
    } catch (e) {
      setStatus("security-status", messageOf(e, [k.kid]));
      // A refusal may have deleted keys (the prunable keys before it, at most 8 a request: revoke again).
      await loadKeys();
    }
    $button("keys-rotate").focus();
  }

  /** What each key status means to an administrator. */
  const KEY_STATUS = {
    next: "Next (published, not signing yet)",
    active: "Active (signing)",
    retired: "Retired (verifying only)",
    prunable: "Prunable (no live token uses it)",
  };

  /**
   * How a stored key's private part is kept (`atRest`); a configured key not stored yet has none.
   * @type {Record<string, string>}
   */
  const KEY_AT_REST = {
    encrypted: "Encrypted",
    clear: "In clear (not encrypted)",
    external: "Public key only (held by a signer)",
  };

  /**
   * The key encryption key a stored row is sealed under (`kekStatus`), as it stands in this
   * server's configuration, and what to do about it.
   * @type {Record<string, [string, string]>}
   */
  const KEK_STATUS = {
    current: ["the current key encryption key", ""],
    older: ["an older key encryption key", ": press Re-encrypt keys (or run keys reencrypt) before removing it"],
    missing: ["a key encryption key this server does not have", ""],
  };

  /**
   * The "At rest" cell: how the key is kept and, unless it is encrypted under the current key
   * encryption key (or not sealed at all), which KEK its row is sealed under, by id: a key under an
   * older one, or a signer's marker an earlier version sealed.
   * @param {any} k
   */
  function atRestText(k) {
    if (!k.stored) return "Not stored yet (configured key)";
    const kept = KEY_AT_REST[k.atRest] ?? k.atRest;
    if (k.kek === null || (k.atRest === "encrypted" && k.kekStatus === "current")) return kept;
    const [which, todo] = KEK_STATUS[k.kekStatus] ?? [String(k.kekStatus), ""];
    return (k.atRest === "encrypted" ? "Encrypted under " : kept + ", its row sealed under ") + which + " (id " + q(k.kek) + ")" + todo;
  }

  $button("keys-rotate").addEventListener("click", () => once("keys", async () => {
    const yes = await confirmAction(
      "Rotate the signing key?",
      "A new key is published now and signs after the activation delay, so resource servers that cached the key set already hold it. Tokens signed by the current key stay valid until they expire.",
      "Rotate key",
    );
    if (!yes) return $button("keys-rotate").focus();
    try {
      const r = await call("POST", "/signing-keys", {});
      setStatus("security-status", "New signing key " + q(r.kid) + " is published and signs from " + when(r.activatesAt) + ".");
      await loadKeys();
    } catch (e) {
      setStatus("security-status", messageOf(e));
    }
    $button("keys-rotate").focus();
  }));

  $button("keys-rotate-now").addEventListener("click", () => once("keys", async () => {
    const yes = await confirmAction(
      "Rotate the signing key now?",
      "Rotating now skips the activation delay: the new key signs at once (on other instances within a minute), and resource servers that cached the key set reject its tokens until they fetch it again (up to 5 minutes). Keys scheduled to sign later (next) are deleted, so none made before it takes over. Do it only when the current key may have leaked.",
      "Rotate now",
    );
    if (!yes) return $button("keys-rotate-now").focus();
    try {
      /** @type {{ kid: string, cancelled: string[] }} */
      const r = await call("POST", "/signing-keys", { now: true, confirm: true });
      // The next keys stored before it, which would have taken over from it, are named: they are
      // deleted, never having signed (until 2026-12-02 one took over minutes later).
      const n = r.cancelled.length;
      setStatus(
        "security-status",
        "New signing key " + q(r.kid) + " signs from now on." +
          (n === 0 ? "" : " " + (n === 1 ? "The next key " : "The next keys ") + r.cancelled.map(q).join(", ") + (n === 1 ? ", stored before it, was" : ", stored before it, were") + " deleted, never having signed."),
      );
      await loadKeys();
    } catch (e) {
      setStatus("security-status", messageOf(e));
    }
    $button("keys-rotate-now").focus();
  }));

  $button("keys-reencrypt").addEventListener("click", () => once("keys", async () => {
    const yes = await confirmAction(
      "Re-encrypt the signing keys?",
      "Every stored signing key is encrypted again under this server's current key encryption key (the first of PLANTGATE_KEY_ENCRYPTION_KEY). Afterwards a server that has only the older key encryption key cannot load the keys and answers every request with an error: do this once every running version has both keys (a gradual deployment finished), and do not roll back to a version with the older key alone.",
      "Re-encrypt keys",
    );
    if (!yes) return $button("keys-reencrypt").focus();
    try {
      /** @type {{ reencrypted: string[], unchanged: string[], left?: string[], complete?: boolean }} */
      const r = await call("POST", "/signing-keys/reencrypt");
      const n = r.reencrypted.length;
      const left = r.left?.length ?? 0;
      setStatus(
        "security-status",
        (n === 0 ? "No signing key needed moving" : n + (n === 1 ? " signing key was" : " signing keys were") + " re-encrypted under the current key encryption key") +
          (r.complete === false
            ? // At most 16 a request (a statement each, within a Worker's query budget).
              "; " + left + (left === 1 ? " key is" : " keys are") + " still to move (at most 16 a request): press Re-encrypt keys again."
            : // A rotation under way elsewhere may store its key meanwhile: the table is the check.
              "; once this table, reloaded a minute from now, shows no key under an older key encryption key, that key can be removed from PLANTGATE_KEY_ENCRYPTION_KEY."),
      );
    } catch (e) {
      setStatus("security-status", messageOf(e));
    }
    // Also after a refusal: the keys before the one that could not be opened were moved.
    await loadKeys();
    $button("keys-rotate").focus();
  }));

  // ---- accounts ------------------------------------------------------------------------------

  /**
   * Shows one page of the accounts. `state` takes the page and size only once they are shown: a
   * failed load (a 503) leaves the page on screen and the page number in agreement, so the next
   * "Next page" asks for the page after the one shown, not one further (which skipped a page).
   * @returns {Promise<boolean | null>} whether the page was shown; null when a newer load of the
   *   list superseded this one (which then decides what is shown)
   */
  async function loadAccounts(page = state.page, pageSize = state.pageSize) {
    const load = startLoad("accounts", "accounts-table");
    try {
      const r = await call("GET", "/accounts?page=" + page + "&pageSize=" + pageSize, undefined, load.signal);
      if (load.superseded()) return null;
      if (r.accounts.length === 0 && r.totalPages > 0 && page > r.totalPages) return loadAccounts(r.totalPages, pageSize);
      state.page = r.page;
      state.pageSize = pageSize;
      $("accounts-body").replaceChildren(
        ...r.accounts.map((a) => {
          const self = a.username === session().username;
          const action = self
            ? el("span", { class: "hint", text: "(you)" })
            : el("button", {
                type: "button",
                class: a.enabled ? "danger" : "secondary",
                "aria-label": (a.enabled ? "Disable " : "Enable ") + a.username,
                text: a.enabled ? "Disable" : "Enable",
                "data-busy": "account:" + a.id,
                onclick: () => once("account:" + a.id, () => toggleAccount(a)),
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
      markBusy();
      const pages = Math.max(r.totalPages, 1);
      $("accounts-page-info").textContent = "Page " + r.page + " of " + pages + " · " + r.total + (r.total === 1 ? " account" : " accounts");
      $button("accounts-prev").disabled = r.page <= 1;
      $button("accounts-next").disabled = r.page >= r.totalPages;
      return true;
    } catch (e) {
      if (load.superseded()) return null;
      setStatus("accounts-status", messageOf(e));
      return false;
    } finally {
      load.end();
    }
  }

  async function toggleAccount(a) {
    if (a.enabled) {
      const yes = await confirmAction("Disable " + q(a.username) + "?", "The account can no longer sign in or get tokens; its refresh tokens and console sessions end at once.", "Disable account");
      if (!yes) return focusHeading("view-accounts");
    }
    try {
      await call("POST", "/accounts/" + encodeURIComponent(a.id) + (a.enabled ? "/disable" : "/enable"));
      setStatus("accounts-status", q(a.username) + (a.enabled ? " was disabled." : " was enabled."));
      await loadAccounts();
      focusHeading("view-accounts");
    } catch (e) {
      setStatus("accounts-status", messageOf(e, [a.username]));
    }
  }

  // One click is one page step, as in `cursorPager`: a click while a move is under way is ignored.
  for (const id of ["accounts-prev", "accounts-next"]) $button(id).dataset.busy = "pager:accounts";
  $button("accounts-prev").addEventListener("click", () => once("pager:accounts", async () => {
    const shown = await loadAccounts(Math.max(1, state.page - 1));
    if (shown === null) return;
    if (shown) setStatus("accounts-status", "");
    ($button("accounts-prev").disabled ? $button("accounts-next") : $button("accounts-prev")).focus();
  }));
  $button("accounts-next").addEventListener("click", () => once("pager:accounts", async () => {
    const shown = await loadAccounts(state.page + 1);
    if (shown === null) return;
    if (shown) setStatus("accounts-status", "");
    ($button("accounts-next").disabled ? $button("accounts-prev") : $button("accounts-next")).focus();
  }));
  $("accounts-page-size").addEventListener("change", async () => {
    const select = byId("accounts-page-size", HTMLSelectElement);
    const shown = await loadAccounts(1, Number(select.value));
    if (shown) setStatus("accounts-status", "");
    // Not shown: the list keeps its size, and so does the select (unless a newer load decides).
    else if (shown === false) select.value = String(state.pageSize);
  });

  $form("account-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = /** @type {HTMLFormElement} */ (event.currentTarget);
    const body = {
      username: $input("account-username").value.trim(),
      password: $input("account-password").value,
      displayName: $input("account-display-name").value.trim(),
      email: $input("account-email").value.trim(),
      roles: $input("account-admin").checked ? [session().adminRole] : [],
    };
    $button("account-create").disabled = true;
    const shown = signInsShown;
    try {
      const a = await call("POST", "/accounts", body);
      showError("account-error", null);
      form.reset();
      setStatus("accounts-status", q(a.username) + " was created.");
      // Focus first: the list's reload may take a while, and the disabled button left focus on <body>.
      $input("account-username").focus();
      await loadAccounts();
    } catch (e) {
      // As the client form's: not into a form the session's end emptied.
      if (signInsShown === shown) showError("account-error", messageOf(e, [body.username, body.displayName, body.email]));
    } finally {
      $button("account-create").disabled = false;
    }
  });

  // ---- security events -----------------------------------------------------------------------

  // generated: core's SECURITY_EVENT_TYPES, written by `pnpm --filter @plantgate/console generate`; do not edit
  const EVENT_TYPES = [
    "token.issued",
    "token.refreshed",
    "refresh_token.reuse_detected",
    "client.authentication_failed",
    "account.login_failed",
    "account.locked_out",
    "token.revoked",
    "client.created",
    "client.deleted",
    "client.secret_rotated",
    "client.secret_added",
    "client.secret_revoked",
    "signing_key.rotated",
    "signing_key.revoked",
    "signing_key.reencrypted",
    "account.created",
    "account.disabled",
    "account.enabled",
    "console.signed_in",
    "console.signed_out",
  ];
  // end of generated SECURITY_EVENT_TYPES
  for (const t of EVENT_TYPES) byId("events-type", HTMLSelectElement).append(el("option", { value: t, text: t }));

  /** @typedef {{ type: string, client: string, account: string, since: string, until: string }} EventFilter */

  /**
   * The filters of the pages shown (what was applied, not what the form holds now): "Older events"
   * and "Newer events" go on with them.
   * @type {EventFilter}
   */
  let eventsFilter = { type: "", client: "", account: "", since: "", until: "" };

  /** The pages of events: the cursors are `before` cursors (the newest page's is null). */
  const eventPages = cursorPager({
    name: "events",
    prev: "events-newer",
    next: "events-older",
    info: "events-page-info",
    load: (cursors) => loadEvents(cursors, eventsFilter),
  });

  /**
   * A date-and-time field (`2026-12-01T09:30`, with seconds or not) read as UTC, as the table shows
   * times: epoch ms as text (a time before 1970 as 0), "" when empty, or null when it holds what
   * cannot be read (partly typed, or a year past 9999): then the page says so rather than leave
   * the filter out.
   * @param {string} id
   * @returns {string | null}
   */
  const utcMs = (id) => {
    const input = $input(id);
    if (input.validity.badInput) return null;
    if (input.value === "") return "";
    const ms = Date.parse(input.value + "Z");
    return Number.isFinite(ms) ? String(Math.max(0, ms)) : null;
  };

  /** @returns {EventFilter | string} the filters as the form holds them, or what is wrong with a time field */
  const eventFilter = () => {
    const since = utcMs("events-since");
    const until = utcMs("events-until");
    if (since === null || until === null) return `${since === null ? "From" : "Before"} (UTC) is not a date and time this page can read: give all of it, with a year up to 9999.`;
    return {
      type: byId("events-type", HTMLSelectElement).value,
      client: $input("events-client").value.trim(),
      account: $input("events-account").value.trim(),
      since,
      until,
    };
  };

  /** Shows the first page of the form's filters, or says what is wrong with a time field. */
  async function loadFilteredEvents() {
    const filter = eventFilter();
    if (typeof filter === "string") return void setStatus("events-status", filter);
    await loadEvents([null], filter);
  }
  const EVENT_COLUMNS = new Set(["type", "id", "time", "client_id", "account_id", "username", "client_ip"]);

  /** The fields of an event the table has no column for, as `name: value` text. */
  function eventDetails(e) {
    return Object.entries(e)
      .filter(([k]) => !EVENT_COLUMNS.has(k))
      .map(([k, v]) => k + ": " + (Array.isArray(v) ? q(v.join(" ")) : v === null ? "—" : typeof v === "number" && /_at$|_until$/.test(k) ? when(isoOf(v)) : q(v)))
      .join("; ");
  }

  /**
   * Shows the page whose cursor is last in `cursors`, with `filter`; `eventPages` and
   * `eventsFilter` take them only once the page is shown, so a failed load (a 503, a refused
   * filter) leaves the table, its page number and the cursors in agreement: "Older events" then
   * continues the pages on screen, never with a cursor pushed twice or another filter's cursor.
   * @param {(string | null)[]} cursors
   * @param {EventFilter} filter
   * @returns {Promise<boolean | null>} whether the page was shown; null when superseded
   */
  async function loadEvents(cursors, filter) {
    const params = new URLSearchParams({ limit: "20" });
    if (filter.type) params.set("type", filter.type);
    if (filter.client) params.set("client", filter.client);
    if (filter.account) params.set("account", filter.account);
    // From (inclusive) and Before (exclusive), epoch ms, since 2026-12-03.
    if (filter.since) params.set("since", filter.since);
    if (filter.until) params.set("until", filter.until);
    const before = cursors[cursors.length - 1];
    if (before) params.set("before", before);
    const load = startLoad("events", "events-table");
    try {
      const r = await call("GET", "/events?" + params.toString(), undefined, load.signal);
      if (load.superseded()) return null;
      setStatus("events-status", r.audit ? "" : "Events are not kept: the storage has no audit store.");
      const rows = r.events.map((e) =>
        el(
          "tr",
          {},
          el("td", { "data-label": "Time", text: when(isoOf(e.time)) }),
          el("td", { "data-label": "Type", text: e.type }),
          el("td", { "data-label": "Client", text: e.client_id || "" }),
          el("td", { "data-label": "Account", text: e.username || e.account_id || (typeof e.subject === "string" && !e.subject.startsWith("client:") ? e.subject : "") }),
          el("td", { "data-label": "Address", text: e.client_ip || "" }),
          el("td", { "data-label": "Details", text: eventDetails(e) }),
        ),
      );
      eventsFilter = filter;
      eventPages.shown(cursors, r.next);
      $("events-body").replaceChildren(...rows);
      $("events-empty").hidden = r.events.length > 0;
      return true;
    } catch (e) {
      if (load.superseded()) return null;
      setStatus("events-status", messageOf(e));
      return false;
    } finally {
      load.end();
    }
  }

  $form("events-filter").addEventListener("submit", async (event) => {
    event.preventDefault();
    await loadFilteredEvents();
  });

  // ---- session -------------------------------------------------------------------------------

  /** The status line of the view shown. */
  const viewStatus = () => (location.hash === "#/accounts" ? "accounts-status" : location.hash === "#/events" ? "events-status" : "security-status");

  /**
   * Compares the browser's session (one cookie, shared by every tab) with the one this tab holds,
   * after another tab signed in or out, or a CSRF refusal, and takes the browser's in, so the tab
   * never shows one administrator while acting as another:
   * - "ended": no session now; the sign-in view is shown (by `call`, or here when none was held);
   * - "changed": another administrator's session; the tab takes it, says so, declines an open
   *   confirmation (asked of the one shown before) and reloads the view;
   * - "renewed": the same administrator signed in anew; the tab takes the new CSRF token;
   * - "offered": signed in from another tab while this one shows the sign-in form with something
   *   typed in it; the tab keeps the form and offers the session (`offerSession`);
   * - "same": nothing changed; "unknown": the check failed (the server unreachable, a 503).
   * @returns {Promise<"ended" | "changed" | "renewed" | "offered" | "same" | "unknown">}
   */
  async function recheckSession() {
    const held = state.session;
    /** @type {Session} */
    let now;
    try {
      now = await call("GET", "/session");
    } catch (e) {
      if (!(e instanceof ApiFailure && e.status === 401)) return "unknown";
      offerSession(null);
      // With a session held, `call` has shown the sign-in view already (401 1301).
      if (state.session) {
        state.session = null;
        cancelConfirm();
        showSignIn("Your session has ended; sign in again.");
      }
      return "ended";
    }
    if (state.session !== held) return "unknown"; // this tab signed in or out meanwhile
    if (held && held.username === now.username) {
      if (held.csrfToken === now.csrfToken) return "same";
      state.session = now;
      return "renewed";
    }
    if (!held && signInTyped()) {
      offerSession(now);
      return "offered";
    }
    cancelConfirm();
    // Another administrator's session now (signed in from another tab): what this one was typing,
    // and what its views show (hidden ones too), is not theirs.
    if (held && held.username !== now.username) {
      forgetTypedWork();
      forgetViews();
    }
    state.session = now;
    for (const id of ["security-status", "accounts-status", "events-status"]) setStatus(id, "");
    showError("sign-in-error", null);
    showError("sign-out-error", null);
    buildClientForm();
    buildPageSizes();
    await route();
    if (held) setStatus(viewStatus(), "This browser is now signed in as " + q(now.username) + " (signed in from another tab), not " + q(held.username) + ".");
    return "changed";
  }

  /**
   * Tells the page's other tabs (same browser, same console) that this one signed in or out, so
   * they check the session at once instead of at their next action. The message carries nothing:
   * each tab asks the server.
   */
  const tabs = typeof BroadcastChannel === "function" ? new BroadcastChannel("plantgate-console " + root) : null;
  if (tabs) tabs.onmessage = () => void recheckSession();

  /** Whether the sign-in form holds something typed: a username or a password. */
  const signInTyped = () => $input("sign-in-username").value !== "" || $input("sign-in-password").value !== "";

  /**
   * Another tab signed the browser in while this one shows the sign-in form with something typed
   * in it: switching at once threw away what was typed (a half-typed password, or the sign-in of
   * another administrator). The tab says so instead, with a button to continue as that
   * administrator; the form stays as it is and can still be sent. An empty form switches at once.
   * @param {Session | null} offered the session signed in elsewhere; null: no notice
   */
  function offerSession(offered) {
    const box = $("sign-in-elsewhere");
    if (!offered) {
      box.hidden = true;
      return;
    }
    $("sign-in-elsewhere-text").textContent = "This browser was signed in as " + q(offered.username) + " in another tab.";
    $button("sign-in-elsewhere-continue").textContent = "Continue as " + q(offered.username);
    box.hidden = false;
  }

  $button("sign-in-elsewhere-continue").addEventListener("click", async () => {
    // What was typed is not wanted now; the session is checked again, as it may have changed.
    $form("sign-in-form").reset();
    offerSession(null);
    showError("sign-in-error", null);
    const now = await recheckSession();
    if (now === "ended") showSignIn("The session of the other tab has ended; sign in here.");
    // ("unknown" with a session: this tab took one meanwhile, from another message.)
    else if (now === "unknown" && !state.session) showSignIn("The console could not check the session; sign in here, or reload the page.");
  });

  /**
   * The wait after a sign-in refused with 429 and a `Retry-After` (a brute-force lock-out, or too
   * many password checks at once): until then the sign-in button is disabled, and the refusal
   * counts the wait down ("try again in 14 min": each minute, each second under two minutes);
   * then the button is enabled again and the message says so. The refusal and its count have a box
   * of their own (`sign-in-wait`), which nothing else writes: what the view says meanwhile (in
   * `sign-in-error`, e.g. that the session offered by another tab has ended) is shown beside the
   * count, not replaced by it within a second. The box stays until the next sign-in is sent or
   * another view is shown. Counted on this page's clock; a reload forgets it (the server still
   * refuses until then).
   * @type {{ timer: number } | null}
   */
  let signInWait = null;

  /** Ends the wait (its time is up, or the tab was signed in from another one), enabling the button. */
  function endSignInWait() {
    if (!signInWait) return;
    clearTimeout(signInWait.timer);
    signInWait = null;
    $("sign-in-wait").removeAttribute("aria-live");
    $button("sign-in-submit").disabled = false;
  }

  /** @param {ApiFailure} refusal a 429 with `retryAfter` */
  function waitToSignIn(refusal) {
    endSignInWait();
    const until = Date.now() + (refusal.retryAfter ?? 0) * 1000;
    const box = $("sign-in-wait");
    // The refusal, read out once (an alert, aria-live not "off"): in its own box, not in
    // sign-in-error as other refusals are.
    showError("sign-in-error", null);
    showError("sign-in-wait", refusal);
    const wait = { timer: 0 };
    signInWait = wait;
    $button("sign-in-submit").disabled = true;
    const tick = () => {
      if (signInWait !== wait) return;
      const left = until - Date.now();
      const text = left > 0 ? withRetry(refusal.said, "try again in " + waitText(Math.ceil(left / 1000))) : withRetry(refusal.said, "you can try again now");
      // Written only when it changes. The box is an alert, read out on each change: the refusal is
      // read once (written above), the count's changes are not (aria-live "off" while
      // counting: under two minutes a screen reader said every second), the end is again.
      if (box.textContent !== text) {
        if (left > 0) box.setAttribute("aria-live", "off");
        else box.removeAttribute("aria-live");
        box.textContent = text;
      }
      box.hidden = false;
      if (left <= 0) return endSignInWait();
      // Next at the second the count changes.
      wait.timer = setTimeout(tick, left % 1000 || 1000);
    };
    tick();
  }

  $form("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (signInWait) return;
    // The last wait's "you can try again now" is old news once the next sign-in is sent.
    showError("sign-in-wait", null);
    const username = $input("sign-in-username").value;
    const password = $input("sign-in-password").value;
    if (!username || !password) {
      showError("sign-in-error", "Enter your username and password.");
      return (username ? $input("sign-in-password") : $input("sign-in-username")).focus();
    }
    $button("sign-in-submit").disabled = true;
    try {
      state.session = await call("POST", "/session", { username, password });
      tabs?.postMessage("session");
      $form("sign-in-form").reset();
      showError("sign-in-error", null);
      // What the views said before the session ended (its refusal, above all) is not news now.
      for (const id of ["security-status", "accounts-status", "events-status"]) setStatus(id, "");
      showError("sign-out-error", null);
      buildClientForm();
      buildPageSizes();
      await route();
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 429 && e.retryAfter !== null) waitToSignIn(e);
      else showError("sign-in-error", e);
      $input("sign-in-password").value = "";
      $input("sign-in-password").focus();
    } finally {
      $button("sign-in-submit").disabled = signInWait !== null;
    }
  });

  /**
   * Signs out through `path` (`/session/sign-out`: this session; `/session/sign-out-everywhere`:
   * every session of the administrator) and shows the sign-in view.
   * @param {string} path
   * @param {string} failed what the refusal says went wrong ("Signing out failed")
   * @param {string} [ended] what the sign-in view says when this session had ended already (401);
   *   none: nothing (a sign-out of this session alone is done then)
   */
  async function signOut(path, failed, ended) {
    showError("sign-out-error", null);
    let said = "";
    try {
      await call("POST", path);
    } catch (e) {
      // 401: the session had ended already. Anything else (the server unreachable, a 503) may have
      // left it valid, and its cookie is HttpOnly: showing the sign-in view would let the next
      // person at this browser in with a reload. Say so instead.
      if (!(e instanceof ApiFailure && e.status === 401)) {
        showError("sign-out-error", failed + " (" + q(messageOf(e)) + "); you are still signed in. Try again.");
        return;
      }
      said = ended || "";
    }
    state.session = null;
    tabs?.postMessage("session");
    history.replaceState(null, "", location.pathname);
    showSignIn(said);
  }

  $button("sign-out").addEventListener("click", () => signOut("/session/sign-out", "Signing out failed"));

  // Every console session of this administrator ends, those of other browsers too (a laptop left
  // signed in); other administrators stay signed in. Asked first, as the other destructive actions.
  $button("sign-out-everywhere").addEventListener("click", async () => {
    if (!state.session) return;
    const yes = await confirmAction(
      "Sign out everywhere?",
      "Every console session of " + q(state.session.username) + " ends: in this browser and in any other where it is signed in. Other administrators stay signed in.",
      "Sign out everywhere",
    );
    if (!yes || !state.session) return;
    // A 401: this tab's session had ended (expired, signed out elsewhere) before the request came,
    // and the server finds the administrator's other sessions through the request's own only, so
    // none ended: a laptop left signed in still is. Until 2026-12-01 the page showed a bare
    // sign-in view then, as if every session had ended.
    await signOut(
      "/session/sign-out-everywhere",
      "Signing out everywhere failed",
      "Your session here had already ended, so no other session was signed out: sign in and use Sign out everywhere again.",
    );
  });

  // The skip link moves focus to the content; it is not a route (its "#main" made the page show
  // Security settings, or empty the sign-in message).
  document.querySelector("a.skip")?.addEventListener("click", (event) => {
    event.preventDefault();
    $("main").focus();
  });

  window.addEventListener("hashchange", () => {
    route();
  });

  // The script has started and set up every view: the note for a script that did not load or
  // could not run (index.html) goes. Here, not at the top, so a script that fails while setting up
  // still leaves it.
  document.getElementById("script-note")?.remove();

  (async () => {
    try {
      state.session = await call("GET", "/session");
      buildClientForm();
      buildPageSizes();
    } catch (e) {
      state.session = null;
      // 401: not signed in, the usual case. Anything else (a 503, a 429, the server unreachable)
      // says nothing about the session, which may well be valid: say so rather than show a bare
      // sign-in form as if the administrator had been signed out.
      if (!(e instanceof ApiFailure && e.status === 401)) {
        return showSignIn("The console could not check your session (" + q(messageOf(e)) + "); reload the page to try again.");
      }
    }
    await route();
  })();
})();
