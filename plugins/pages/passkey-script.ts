// The browser side of the passkey ceremonies (issue 34), served as /login/assets/passkeys.js next to
// SimpleWebAuthn's browser bundle (/login/assets/webauthn.js, read once from node_modules). No inline script:
// the pages load both with <script src> (CSP script-src 'self') and say what to do in data attributes of one
// element, #passkey-config:
//   data-mode="sign-in"        the sign-in page: conditional UI (the e-mail field's autofill offers passkeys,
//                              when the browser supports it) and the "Use a passkey" button;
//   data-mode="second-factor"  the second-factor page: the "Use a passkey" button;
//   data-mode="register"       the sign-in methods page: the "Add a passkey" form.
// data-options (sign-in): the conditional request's options, made with the page; data-csrf: the page's CSRF
// token; data-endpoint: the ceremony's JSON endpoints (`${endpoint}/options`, `${endpoint}/verify`);
// data-request / data-return-to: where the sign-in goes on. Errors are shown in #passkey-error.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { html, type Html } from './kit.js';

/** SimpleWebAuthn's browser bundle (UMD: window.SimpleWebAuthnBrowser), read once. */
export function webauthnBundle(): string {
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser');
  return readFileSync(join(dirname(entry), '..', 'dist', 'bundle', 'index.umd.min.js'), 'utf8');
}

/** The element the script reads, the error line, and the two scripts. */
export function passkeyScripts(
  loginPath: string,
  o: {
    mode: 'sign-in' | 'second-factor' | 'register';
    endpoint: string;
    csrf: string;
    requestId?: string | undefined;
    returnTo?: string | undefined;
    /** The conditional request's options, made with the page (no request at load that a navigation would cut). */
    options?: unknown;
  },
): Html {
  return html`<div id="passkey-config" hidden data-mode="${o.mode}" data-endpoint="${o.endpoint}" \
data-csrf="${o.csrf}" data-request="${o.requestId ?? ''}" data-return-to="${o.returnTo ?? ''}" \
data-sign-in="${loginPath}/sign-in"\
${o.options ? html` data-options="${JSON.stringify(o.options)}"` : ''}></div>
<script src="${loginPath}/assets/webauthn.js" defer></script>
<script src="${loginPath}/assets/passkeys.js" defer></script>`;
}

export const PASSKEY_SCRIPT = `(function () {
  'use strict';
  var W = window.SimpleWebAuthnBrowser;
  var config = document.getElementById('passkey-config');
  if (!config || !W) return;
  var d = config.dataset;
  var errorLine = document.getElementById('passkey-error');

  function show(message) {
    if (!errorLine) return;
    errorLine.textContent = message;
    errorLine.hidden = false;
  }
  function post(path, body) {
    body.csrf = d.csrf;
    if (d.request) body.request = d.request;
    if (d.returnTo) body.return_to = d.returnTo;
    return fetch(d.endpoint + path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body)
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (json) {
        return { ok: res.ok, json: json };
      });
    });
  }
  function failed(error) {
    if (!error) return;
    if (error.name === 'AbortError') return;
    if (error.name === 'NotAllowedError') {
      show('The passkey was not used (cancelled or timed out). Try again.');
    } else {
      show(error.message || 'The passkey did not work. Try again.');
    }
  }
  function refused(answer) {
    if (answer.json.error === 'SECOND_FACTOR_ENDED') {
      window.location.assign(d.signIn + (d.request ? '?request=' + encodeURIComponent(d.request) : ''));
      return;
    }
    show(answer.json.message || 'The passkey did not work. Try again.');
  }
  function authenticate(autofill, preloaded) {
    var ready = preloaded ? Promise.resolve({ ok: true, json: preloaded }) : post('/options', {});
    return ready.then(function (answer) {
      if (!answer.ok) return refused(answer);
      var options = { optionsJSON: answer.json, useBrowserAutofill: autofill };
      return W.startAuthentication(options).then(function (response) {
        return post('/verify', { response: response }).then(function (result) {
          if (result.ok && result.json.redirectTo) window.location.assign(result.json.redirectTo);
          else refused(result);
        });
      });
    });
  }

  if (d.mode === 'sign-in' || d.mode === 'second-factor') {
    var button = document.getElementById('passkey-button');
    if (button) {
      button.hidden = false;
      button.addEventListener('click', function () {
        if (errorLine) errorLine.hidden = true;
        authenticate(false, null).catch(failed);
      });
    }
    // The autofill (conditional) request uses the options the page came with: no request to the server
    // until a passkey is chosen.
    if (d.mode === 'sign-in' && d.options && W.browserSupportsWebAuthnAutofill) {
      W.browserSupportsWebAuthnAutofill().then(function (supported) {
        if (supported) authenticate(true, JSON.parse(d.options)).catch(failed);
      });
    }
  }

  if (d.mode === 'register') {
    var form = document.getElementById('passkey-add');
    if (!form) return;
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      if (errorLine) errorLine.hidden = true;
      var nameInput = form.querySelector('input[name="name"]');
      post('/options', {}).then(function (answer) {
        // Not signed in recently: the form goes as it would without JavaScript (sign in again, come back).
        if (!answer.ok && answer.json.error === 'REAUTHENTICATION_REQUIRED') return form.submit();
        if (!answer.ok) return refused(answer);
        return W.startRegistration({ optionsJSON: answer.json }).then(function (response) {
          var body = { response: response, name: nameInput ? nameInput.value : '' };
          return post('/verify', body).then(function (result) {
            if (result.ok && result.json.redirectTo) window.location.assign(result.json.redirectTo);
            else refused(result);
          });
        });
      }).catch(failed);
    });
  }
})();
`;
