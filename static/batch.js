// Decisions in batches: calls picked in the compact list (a row's box, or
// "x", or all like the selected one) are approved once or rejected in one
// step. The question lists
// every call; the server decides each on its own (its own item, digest
// and audit line, with a shared batch id) and answers with what became of
// each, a call decided, cancelled or expired meanwhile included. A batch
// never gives a standing approval.
//
// The question lists, for each call, its own red flags and its end (the
// last command, or the end of its last argument). A call that is not
// approved in a batch by the one rule (ready.js, enforced by the server:
// a red flag, anything folded, a passkey step) is marked "decide it on its
// own card"; rejecting it in a batch stays possible.
import { batchWhy } from './ready.js';

const box = document.querySelector('[data-batch]');
const rows = document.getElementById('pending-rows');

function picked() {
  return Array.from(rows.querySelectorAll(':scope > li:not([hidden]) input[data-batch-pick]:checked')).map((i) => i.closest('li'));
}

function update() {
  const n = picked().length;
  const bar = box.querySelector('[data-batch-bar]');
  bar.hidden = n === 0;
  box.querySelector('[data-batch-count]').textContent = n + ' selected';
  box.querySelector('[data-batch-decide="approve"]').textContent = 'Approve ' + n + '…';
  box.querySelector('[data-batch-decide="reject"]').textContent = 'Reject ' + n + '…';
  likeAll();
}

// "Select all N like this": the calls of the selected card's key and tool
// with the same arguments (data-like); "Select all N of this tool in this
// conversation": the calls of its key, owner, conversation and tool,
// whatever their arguments (data-conv-tool).
let selectedID = '';
function alike(attr = 'data-like') {
  const row = selectedID && rows.querySelector(':scope > li[data-row-for="' + CSS.escape(selectedID) + '"]');
  if (!row) { return []; }
  const like = row.getAttribute(attr);
  return Array.from(rows.querySelectorAll(':scope > li:not([hidden])')).filter((r) => r.getAttribute(attr) === like);
}
function offer(button, same, words) {
  const open = same.filter((r) => !r.querySelector('input[data-batch-pick]').checked);
  button.hidden = same.length < 2 || open.length === 0;
  button.textContent = 'Select all ' + same.length + words;
}
function likeAll() {
  const same = alike();
  offer(box.querySelector('[data-like-all]'), same, ' like this');
  // The same calls twice would be one offer under two names.
  const conv = alike('data-conv-tool');
  const b = box.querySelector('[data-conv-all]');
  offer(b, conv, ' of this tool in this conversation');
  if (conv.length === same.length && conv.every((r) => same.includes(r))) { b.hidden = true; }
}

function listItem(row, approving) {
  const li = document.createElement('li');
  const tool = document.createElement('strong');
  tool.textContent = row.querySelector('.row-tool').textContent;
  const agent = document.createElement('span');
  agent.className = 'meta';
  agent.textContent = ' · ' + row.querySelector('.row-agent').textContent;
  li.append(tool, agent);
  const gist = row.querySelector('.row-gist');
  if (gist) {
    const g = document.createElement('span');
    g.className = 'mono batch-gist';
    g.textContent = gist.textContent;
    li.appendChild(g);
  }
  const flags = (row.getAttribute('data-flag-words') || '').split('\n').filter((f) => f !== '');
  if (flags.length > 0) {
    const ul = document.createElement('ul');
    ul.className = 'batch-flags';
    ul.setAttribute('data-testid', 'batch-confirm-flags');
    flags.forEach((f) => { const x = document.createElement('li'); x.textContent = f; ul.appendChild(x); });
    li.appendChild(ul);
  }
  const end = row.getAttribute('data-end') || '';
  if (end) {
    const e = document.createElement('span');
    e.className = 'meta batch-end';
    e.setAttribute('data-testid', 'batch-confirm-end');
    const label = document.createElement('span');
    label.textContent = 'Ends with ';
    const code = document.createElement('code');
    code.className = 'mono';
    code.textContent = end;
    e.append(label, code);
    li.appendChild(e);
  }
  if (approving) {
    const why = batchWhy(row);
    if (why) {
      const w = document.createElement('span');
      w.className = 'badge warn batch-own-card';
      w.setAttribute('data-testid', 'batch-confirm-own-card');
      w.textContent = 'Not approved here — decide it on its own card';
      w.title = why;
      li.appendChild(w);
    }
  }
  li.setAttribute('data-testid', 'batch-confirm-item');
  return li;
}

// ask lists the calls in a modal dialog; Cancel has the focus.
function ask(decision, list) {
  const n = list.length;
  const dialog = document.createElement('dialog');
  dialog.className = 'modal confirm batch-confirm';
  dialog.setAttribute('aria-labelledby', 'batch-title');
  dialog.setAttribute('data-testid', 'batch-dialog');
  const reject = decision === 'reject';
  dialog.innerHTML = '<h2 id="batch-title"></h2><p class="meta"></p><ul class="batch-list"></ul>' +
    (reject ? '<label for="batch-reason">Reason (optional — each agent sees it)</label><textarea id="batch-reason" rows="2" maxlength="500"></textarea>' : '') +
    '<div class="buttons"><button type="button" class="btn" data-testid="batch-cancel">Cancel</button><button type="button" data-testid="batch-confirm"></button></div>';
  dialog.querySelector('h2').textContent = (reject ? 'Reject ' : 'Approve ') + n + (n === 1 ? ' call?' : ' calls?');
  const own = reject ? 0 : list.filter((r) => batchWhy(r)).length;
  dialog.querySelector('p').textContent = reject
    ? 'Each call is rejected on its own; none of them runs.'
    : 'Each call is approved once, on its own, as if you approved it alone. Nothing is allowed beyond these calls: a batch never stops Countersign asking.' +
      (own > 0 ? ' ' + own + (own === 1 ? ' call has' : ' calls have') + ' red flags, something folded or a passkey step: ' + (own === 1 ? 'it is' : 'they are') + ' not approved here; decide ' + (own === 1 ? 'it' : 'them') + ' on ' + (own === 1 ? 'its' : 'their') + ' own card.' : '');
  const ul = dialog.querySelector('ul');
  // A long list scrolls: it can be scrolled from the keyboard too.
  ul.setAttribute('tabindex', '0');
  ul.setAttribute('aria-label', 'The calls');
  list.forEach((r) => ul.appendChild(listItem(r, !reject)));
  const ok = dialog.querySelector('[data-testid="batch-confirm"]');
  ok.className = 'btn ' + (reject ? 'btn-danger-solid' : 'btn-primary');
  if (reject || own === 0) {
    ok.textContent = (reject ? 'Reject these ' : 'Approve these ') + n;
  } else if (own < n) {
    ok.textContent = 'Approve ' + (n - own) + ' of these ' + n;
  } else {
    // Nothing here can be approved in a batch: Cancel, and decide each on
    // its own card (or reject them together).
    ok.textContent = 'Approve none';
    ok.disabled = true;
  }
  document.body.appendChild(dialog);
  const opener = document.activeElement;
  return new Promise((resolve) => {
    let answer = null;
    ok.addEventListener('click', () => {
      const reason = dialog.querySelector('#batch-reason');
      answer = { reason: reason ? reason.value : '' };
      dialog.close();
    });
    dialog.querySelector('[data-testid="batch-cancel"]').addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      dialog.remove();
      if (opener && opener.focus && document.contains(opener)) { opener.focus(); }
      resolve(answer);
    }, { once: true });
    dialog.showModal();
    dialog.querySelector('[data-testid="batch-cancel"]').focus();
  });
}

async function decide(decision) {
  const list = picked();
  if (list.length === 0) { return; }
  const answer = await ask(decision, list);
  if (!answer) { return; }
  const form = new URLSearchParams();
  const token = document.querySelector('input[name="csrf_token"]');
  form.append('csrf_token', token ? token.value : '');
  form.append('decision', decision);
  if (decision === 'reject') { form.append('reason', answer.reason); }
  list.forEach((r) => form.append('id', r.getAttribute('data-row-for')));
  const out = box.querySelector('[data-batch-result]');
  let resp;
  try {
    resp = await fetch('/approvals/batch', { method: 'POST', credentials: 'same-origin', body: form,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  } catch (err) {
    resp = null;
  }
  if (!resp || !resp.ok) {
    out.textContent = 'The batch could not be sent; nothing in it was decided by this attempt. Reload the page to see each call as it is now.';
    out.setAttribute('role', 'alert');
    return;
  }
  out.removeAttribute('role');
  // The server's own escaped markup, as htmx would swap it.
  out.innerHTML = await resp.text();
  list.forEach((r) => { const i = r.querySelector('input[data-batch-pick]'); if (i) { i.checked = false; } });
  update();
  const result = out.querySelector('[data-testid="batch-result"]');
  if (result) { result.focus(); }
}

if (box && rows) {
  rows.addEventListener('change', (e) => { if (e.target.matches('input[data-batch-pick]')) { update(); } });
  new MutationObserver(update).observe(rows, { childList: true, subtree: true, attributes: true, attributeFilter: ['hidden'] });
  box.querySelectorAll('[data-batch-decide]').forEach((b) => b.addEventListener('click', () => decide(b.getAttribute('data-batch-decide'))));
  box.querySelector('[data-batch-clear]').addEventListener('click', () => {
    rows.querySelectorAll('input[data-batch-pick]:checked').forEach((i) => { i.checked = false; });
    update();
  });
  box.querySelector('[data-like-all]').addEventListener('click', () => {
    alike().forEach((r) => { r.querySelector('input[data-batch-pick]').checked = true; });
    update();
  });
  box.querySelector('[data-conv-all]').addEventListener('click', () => {
    alike('data-conv-tool').forEach((r) => { r.querySelector('input[data-batch-pick]').checked = true; });
    update();
  });
  box.addEventListener('click', (e) => {
    const d = e.target.closest && e.target.closest('[data-batch-dismiss]');
    if (d) { box.querySelector('[data-batch-result]').replaceChildren(); }
  });
  document.addEventListener('countersign:selected', (e) => { selectedID = (e.detail && e.detail.id) || ''; likeAll(); });
  update();
}
