// Passkeys: adding one on Settings, and approving a call that needs one.
//
// Approve on a card whose approval needs a passkey (button
// data-passkey-challenge) first asks the browser for an assertion with user
// verification over the challenge the server derived from this call and
// "approve"; only then is the form sent, with the assertion in its
// "assertion" field. A cancelled or failed prompt sends nothing, and the
// card's status line says why; so does a refusal from the server. The
// keyboard's "a" presses the same button, so it asks the same way.

const enc = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const dec = (s) => {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4));
  return Uint8Array.from(b, (ch) => ch.charCodeAt(0));
};

function statusOf(form) {
  return form.querySelector('[data-passkey-status]') || (form.closest('li, article, section') || document).querySelector('[data-passkey-status]');
}

function say(form, msg) {
  const out = statusOf(form);
  if (out) { out.textContent = msg; }
}

function unsupported() {
  return !window.PublicKeyCredential || !navigator.credentials;
}

async function approveWithPasskey(button) {
  const form = button.form;
  const field = form.querySelector('[data-passkey-assertion]');
  if (unsupported()) { say(form, 'Not approved: this browser cannot use passkeys.'); return; }
  say(form, 'Confirm with your passkey…');
  let cred;
  try {
    cred = await navigator.credentials.get({ publicKey: {
      challenge: dec(button.dataset.passkeyChallenge), rpId: button.dataset.passkeyRp,
      userVerification: 'required', timeout: 120000 } });
  } catch (err) {
    say(form, 'Not approved: the passkey prompt was cancelled or failed. Nothing was decided; press Approve to try again.');
    return;
  }
  const r = cred.response;
  field.value = JSON.stringify({ id: cred.id, rawId: enc(cred.rawId), type: cred.type, response: {
    authenticatorData: enc(r.authenticatorData), clientDataJSON: enc(r.clientDataJSON), signature: enc(r.signature),
    userHandle: r.userHandle ? enc(r.userHandle) : '' } });
  say(form, 'Sending…');
  // A second click, now with the assertion attached: htmx (or the
  // browser) sends the form as for any decision; the values are read
  // during the click, so the field is emptied right after — an assertion
  // is used once.
  button.click();
  field.value = '';
}

document.addEventListener('click', (e) => {
  const button = e.target.closest && e.target.closest('button[data-passkey-challenge]');
  if (!button || !button.form) { return; }
  const field = button.form.querySelector('[data-passkey-assertion]');
  if (field && field.value) { return; }
  e.preventDefault();
  approveWithPasskey(button);
}, true);

// A refused decision (403, 409, 422) is not swapped in by htmx: its
// message goes to the card's status line.
document.body.addEventListener('htmx:responseError', (e) => {
  const form = e.detail.elt;
  if (!form || !form.querySelector || !form.querySelector('[data-passkey-assertion]')) { return; }
  const doc = new DOMParser().parseFromString(e.detail.xhr.responseText, 'text/html');
  const text = (doc.body.textContent || '').replace(/\s+/g, ' ').trim();
  say(form, 'Not approved: ' + (text || 'the server refused the answer.'));
});

// Settings: "Add a passkey" runs the registration ceremony, then posts the
// form with the browser's answer.
const register = document.querySelector('form[data-passkey-register]');
if (register) {
  register.addEventListener('submit', async (e) => {
    const field = register.querySelector('[data-passkey-credential]');
    if (field.value) { return; }
    e.preventDefault();
    if (unsupported()) { say(register, 'This browser cannot create passkeys.'); return; }
    if (!register.reportValidity()) { return; }
    say(register, 'Follow your browser’s prompt…');
    let options;
    try {
      const resp = await fetch('/settings/passkeys/options', { method: 'POST', credentials: 'same-origin',
        headers: { 'X-CSRF-Token': register.querySelector('input[name="csrf_token"]').value } });
      if (!resp.ok) { throw new Error('options'); }
      options = (await resp.json()).publicKey;
    } catch (err) {
      say(register, 'The passkey could not be started. Reload the page and try again.');
      return;
    }
    options.challenge = dec(options.challenge);
    options.user.id = dec(options.user.id);
    (options.excludeCredentials || []).forEach((c) => { c.id = dec(c.id); });
    let cred;
    try {
      cred = await navigator.credentials.create({ publicKey: options });
    } catch (err) {
      say(register, 'No passkey was added: the prompt was cancelled or failed.');
      return;
    }
    const r = cred.response;
    field.value = JSON.stringify({ id: cred.id, rawId: enc(cred.rawId), type: cred.type, response: {
      attestationObject: enc(r.attestationObject), clientDataJSON: enc(r.clientDataJSON),
      transports: r.getTransports ? r.getTransports() : [] } });
    register.submit();
  });
}
