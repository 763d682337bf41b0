const escapeAttr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * The console's one HTML page. Everything dynamic is rendered by console.js (served from its own
 * path, so the CSP needs no inline script); the page only says where the API lives.
 */
export function consolePage(basePath: string): string {
  const root = escapeAttr(`${basePath}/console`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="plantgate-console-root" content="${root}">
<title>plantgate console</title>
<link rel="icon" href="${root}/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${root}/assets/console.css">
<script src="${root}/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="topbar">
  <span class="brand">plantgate console</span>
  <nav id="nav" aria-label="Console" hidden>
    <ul>
      <li><a href="#/settings/security" id="nav-security">Settings › Security settings</a></li>
      <li><a href="#/accounts" id="nav-accounts">Accounts</a></li>
    </ul>
  </nav>
  <div id="whoami" class="whoami" hidden>
    <span id="whoami-name"></span>
    <button type="button" id="sign-out" class="secondary">Sign out</button>
  </div>
</header>
<main id="main" tabindex="-1">
  <p id="loading">Loading…</p>
  <noscript><p>The console needs JavaScript.</p></noscript>

  <section id="view-sign-in" hidden aria-labelledby="sign-in-title">
    <h1 id="sign-in-title">Sign in</h1>
    <p class="hint">Administrators only (accounts with the administrator role).</p>
    <form id="sign-in-form" class="card narrow" novalidate>
      <p id="sign-in-error" class="error" role="alert" hidden></p>
      <label for="sign-in-username">Username</label>
      <input id="sign-in-username" name="username" autocomplete="username" required>
      <label for="sign-in-password">Password</label>
      <input id="sign-in-password" name="password" type="password" autocomplete="current-password" required>
      <button type="submit" id="sign-in-submit">Sign in</button>
    </form>
  </section>

  <section id="view-security" hidden aria-labelledby="security-title">
    <p class="crumbs">Settings ›</p>
    <h1 id="security-title">Security settings</h1>
    <p id="security-status" class="status" role="status"></p>
    <h2 id="clients-title">Third-party applications</h2>
    <p class="hint">Each application signs in at the token endpoint with its client ID and secret. A secret is shown once, when it is created or regenerated; regenerate it if you suspect a leak (the old secret stops working at once).</p>
    <div class="table-wrap">
      <table id="clients-table" aria-labelledby="clients-title">
        <thead><tr><th scope="col">Name</th><th scope="col">Client ID</th><th scope="col">Grants</th><th scope="col">Scopes</th><th scope="col">Secret updated</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody id="clients-body"></tbody>
      </table>
    </div>
    <p id="clients-empty" class="hint" hidden>No applications yet.</p>

    <h2 id="new-client-title">Add an application</h2>
    <form id="client-form" class="card" novalidate aria-labelledby="new-client-title">
      <p id="client-error" class="error" role="alert" hidden></p>
      <label for="client-name">Name</label>
      <input id="client-name" name="name" required maxlength="200">
      <label for="client-id">Client ID <span class="optional">(optional; random when empty)</span></label>
      <input id="client-id" name="clientId" maxlength="200" autocomplete="off" spellcheck="false">
      <fieldset id="client-grants"><legend>Allowed grants</legend></fieldset>
      <fieldset id="client-scopes"><legend>Allowed scopes</legend></fieldset>
      <label for="client-ttl">Access-token lifetime in seconds <span class="optional">(optional; server default when empty)</span></label>
      <input id="client-ttl" name="accessTokenTtl" type="number" min="1" step="1" inputmode="numeric">
      <button type="submit" id="client-create">Create application</button>
    </form>

    <h2 id="keys-title">Token signing keys</h2>
    <p class="hint">Rotating creates a new key that signs from now on; tokens signed by older keys stay valid until they expire.</p>
    <div class="table-wrap">
      <table id="keys-table" aria-labelledby="keys-title">
        <thead><tr><th scope="col">Key ID</th><th scope="col">Algorithm</th><th scope="col">Created</th><th scope="col">Status</th></tr></thead>
        <tbody id="keys-body"></tbody>
      </table>
    </div>
    <button type="button" id="keys-rotate" class="secondary">Rotate signing key</button>
  </section>

  <section id="view-accounts" hidden aria-labelledby="accounts-title">
    <h1 id="accounts-title">Accounts</h1>
    <p id="accounts-status" class="status" role="status"></p>
    <div class="pager-size">
      <label for="accounts-page-size">Accounts per page</label>
      <select id="accounts-page-size"><option>10</option><option selected>20</option><option>50</option><option>100</option></select>
    </div>
    <div class="table-wrap">
      <table id="accounts-table" aria-labelledby="accounts-title">
        <thead><tr><th scope="col">Username</th><th scope="col">Display name</th><th scope="col">Email</th><th scope="col">Roles</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody id="accounts-body"></tbody>
      </table>
    </div>
    <nav class="pager" aria-label="Account pages">
      <button type="button" id="accounts-prev" class="secondary">Previous page</button>
      <span id="accounts-page-info" aria-live="polite"></span>
      <button type="button" id="accounts-next" class="secondary">Next page</button>
    </nav>

    <h2 id="new-account-title">Add an account</h2>
    <form id="account-form" class="card" novalidate aria-labelledby="new-account-title">
      <p id="account-error" class="error" role="alert" hidden></p>
      <label for="account-username">Username</label>
      <input id="account-username" name="username" required maxlength="200" autocomplete="off">
      <label for="account-password">Password <span class="optional">(8 characters or more)</span></label>
      <input id="account-password" name="password" type="password" required minlength="8" autocomplete="new-password">
      <label for="account-display-name">Display name <span class="optional">(optional)</span></label>
      <input id="account-display-name" name="displayName" maxlength="320">
      <label for="account-email">Email <span class="optional">(optional)</span></label>
      <input id="account-email" name="email" type="email" maxlength="320">
      <div class="check"><input id="account-admin" name="admin" type="checkbox"><label for="account-admin">Console administrator</label></div>
      <button type="submit" id="account-create">Create account</button>
    </form>
  </section>
</main>

<dialog id="secret-dialog" aria-labelledby="secret-title">
  <h2 id="secret-title">Client secret</h2>
  <p>Copy the secret now: it is shown only this once and cannot be displayed again.</p>
  <label for="secret-client-id">Client ID</label>
  <input id="secret-client-id" readonly spellcheck="false">
  <label for="secret-value">Client secret</label>
  <div class="copy-row">
    <input id="secret-value" readonly spellcheck="false">
    <button type="button" id="secret-copy" class="secondary">Copy</button>
  </div>
  <p id="secret-copied" class="status" role="status"></p>
  <div class="actions"><button type="button" id="secret-done">I have stored it</button></div>
</dialog>

<dialog id="confirm-dialog" aria-labelledby="confirm-title" aria-describedby="confirm-text">
  <h2 id="confirm-title"></h2>
  <p id="confirm-text"></p>
  <div class="actions">
    <button type="button" id="confirm-cancel" class="secondary">Cancel</button>
    <button type="button" id="confirm-ok" class="danger"></button>
  </div>
</dialog>
</body>
</html>
`;
}
