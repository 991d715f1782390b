// Inbox keys: j/k move, Enter/o open, a approve once, r reject (focus to
// the reason; Enter there sends the rejection), x select for a batch, ?
// lists the keys. No key acts while a field has the focus (typing "a" in
// the reason box types "a"), with a modifier held, or under a dialog.
//
// Safety: "a" approves only a card that is ready by the one rule every
// path shares (ready.js: its red flags and its end have been on screen,
// nothing of it folded), and only 0.5 s or more after the card was
// selected, so that a key pressed twice cannot approve the next card.
// Otherwise it does nothing and says why. Standing approvals never have
// a key.
import { look, why } from './ready.js';

const MIN_SELECTED_MS = 500;

// selectedAt is when the selected call was selected.
let selectedAt = 0;
let selectedID = '';
let lastIndex = 0;

function cards() {
  return Array.from(document.querySelectorAll('li[data-approval-id]')).filter((li) => !li.hidden && !li.closest('#pending-new'));
}
function selected() {
  return selectedID ? document.querySelector('li[data-approval-id="' + CSS.escape(selectedID) + '"]') : null;
}

// The status line says what a key did not do, and why.
let statusEl = null;
function say(msg) {
  if (!statusEl) {
    statusEl = document.createElement('p');
    statusEl.className = 'keys-status';
    statusEl.setAttribute('role', 'status');
    statusEl.setAttribute('data-testid', 'keys-status');
    document.body.appendChild(statusEl);
  }
  statusEl.textContent = msg;
  statusEl.hidden = msg === '';
  window.clearTimeout(say.timer);
  if (msg) { say.timer = window.setTimeout(() => { statusEl.hidden = true; }, 6000); }
}

// watch records what of the selected card is on screen (ready.js).
function watch() {
  const li = selected();
  if (li) { look(li); }
}

function select(li, focus, scroll) {
  const old = selected();
  if (old) { old.classList.remove('is-selected'); old.removeAttribute('aria-current'); }
  if (!li) {
    selectedID = '';
    document.dispatchEvent(new CustomEvent('countersign:selected', { detail: { id: '' } }));
    return;
  }
  selectedID = li.getAttribute('data-approval-id');
  lastIndex = Math.max(0, cards().indexOf(li));
  selectedAt = performance.now();
  li.classList.add('is-selected');
  li.setAttribute('aria-current', 'true');
  // A card taller than the screen is shown from its top.
  if (scroll) {
    const tall = li.getBoundingClientRect().height > (window.innerHeight || 0);
    li.scrollIntoView({ block: tall ? 'start' : 'nearest' });
  }
  // In the dense inbox focus goes to the call's row in the list (Enter
  // there opens it); elsewhere to the card's own link.
  const row = document.querySelector('#pending-rows li[data-row-for="' + CSS.escape(selectedID) + '"]:not([hidden]) a');
  const link = row && row.offsetParent !== null ? row : li.querySelector('.card-link');
  if (focus && link) { link.focus({ preventScroll: true }); }
  document.dispatchEvent(new CustomEvent('countersign:selected', { detail: { id: selectedID } }));
  watch();
}

// reselect keeps the selection on its call across a re-rendered list, and
// moves it to the call that took its place when it was decided or left.
function reselect() {
  if (!selectedID || selected()) { return; }
  const list = cards();
  if (list.length === 0) { selectedID = ''; return; }
  select(list[Math.min(lastIndex, list.length - 1)], false, false);
}

function move(step) {
  reselect();
  const list = cards();
  if (list.length === 0) { say('Nothing is waiting.'); return; }
  const cur = selected();
  let i = cur ? list.indexOf(cur) + step : 0;
  i = Math.max(0, Math.min(list.length - 1, i));
  select(list[i], true, true);
  say('');
}

function open() {
  reselect();
  const li = selected();
  const link = li && li.querySelector('.card-link');
  if (!link) { say('Select a call first: press j.'); return; }
  if (document.querySelector('#approval-page') && li.closest('#approval-page')) { return; }
  window.location.assign(link.getAttribute('href'));
}

function approve() {
  reselect();
  const li = selected();
  if (!li) { say('Not approved: select a call first (j, k).'); return; }
  const button = li.querySelector('form.decide button[value="approve"]');
  if (!button) { say('Not approved: this call offers no “Approve”.'); return; }
  const reason = why(li);
  if (reason) { say('Not approved: ' + reason + '.'); return; }
  if (performance.now() - selectedAt < MIN_SELECTED_MS) { say('Not approved: wait a moment after selecting a call, then press a.'); return; }
  say('');
  button.click();
}

function reject() {
  reselect();
  const li = selected();
  const reason = li && li.querySelector('form.decide [data-reason]');
  if (!reason) { say(li ? 'This call offers no “Reject”.' : 'Select a call first: press j.'); return; }
  reason.focus();
  say('Type the reason the agent will see, then press Enter to reject (Escape to leave the box).');
}

function pick() {
  reselect();
  const li = selected();
  const box = li && document.querySelector('#pending-rows li[data-row-for="' + CSS.escape(selectedID) + '"]:not([hidden]) input[data-batch-pick]');
  if (!box) { say(li ? 'This call cannot be decided in a batch here.' : 'Select a call first: press j.'); return; }
  box.click();
}

// help lists the keys in a modal dialog.
let helpDialog = null;
function help() {
  if (!helpDialog) {
    helpDialog = document.createElement('dialog');
    helpDialog.className = 'modal keys-help';
    helpDialog.setAttribute('aria-labelledby', 'keys-help-title');
    helpDialog.setAttribute('data-testid', 'keys-help');
    helpDialog.innerHTML = '<h2 id="keys-help-title">Keys</h2><dl class="keys-list"></dl>' +
      '<p class="meta">Keys never act while you type in a field. “a” approves only a call whose red flags and end you have seen, nothing folded, half a second after selecting it. Standing approvals have no key.</p>' +
      '<div class="buttons"><button type="button" class="btn" data-testid="keys-help-close">Close</button></div>';
    const dl = helpDialog.querySelector('dl');
    [['j / k', 'next / previous call'], ['Enter / o', 'open the call’s own page'], ['a', 'approve once'],
      ['r', 'reject: type the reason, Enter sends'], ['x', 'select for a batch'], ['?', 'this list']].forEach(([k, what]) => {
      const row = document.createElement('div');
      const dt = document.createElement('dt');
      const kbd = document.createElement('kbd');
      kbd.textContent = k;
      dt.appendChild(kbd);
      const dd = document.createElement('dd');
      dd.textContent = what;
      row.append(dt, dd);
      dl.appendChild(row);
    });
    helpDialog.querySelector('button').addEventListener('click', () => helpDialog.close());
    document.body.appendChild(helpDialog);
  }
  if (helpDialog.open) { helpDialog.close(); return; }
  helpDialog.showModal();
  helpDialog.querySelector('button').focus();
}

function typing(el) {
  return !!(el && el.closest && el.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"]'));
}

document.addEventListener('keydown', (e) => {
  if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) { return; }
  const t = e.target;
  // Enter in a reason box sends the rejection (Shift+Enter: a new line).
  if (e.key === 'Enter' && !e.shiftKey && t.matches && t.matches('form.decide textarea[data-reason]')) {
    const button = t.form && t.form.querySelector('button[value="reject"]');
    if (button && !button.disabled) { e.preventDefault(); button.click(); }
    return;
  }
  if (e.key === 'Escape' && t.matches && t.matches('form.decide textarea[data-reason]')) {
    const li = t.closest('li[data-approval-id]');
    const link = li && li.querySelector('.card-link');
    if (link) { link.focus(); }
    return;
  }
  if (typing(t) || document.querySelector('dialog[open]:not(.keys-help)')) { return; }
  if (!document.querySelector('li[data-approval-id], #pending-list')) { return; }
  switch (e.key) {
    case 'j': move(1); break;
    case 'k': move(-1); break;
    case 'o': open(); break;
    case 'Enter':
      // Enter on a button or a link presses it; only elsewhere it opens.
      if (t.closest && t.closest('a, button, summary, time[tabindex], [role="button"]')) { return; }
      open();
      break;
    case 'a':
      // A held key repeats; a repeat never approves.
      if (e.repeat) { return; }
      approve();
      break;
    case 'r': reject(); break;
    case 'x': pick(); break;
    case '?': help(); break;
    default: return;
  }
  e.preventDefault();
});

window.addEventListener('scroll', watch, { passive: true });
window.addEventListener('resize', watch);

// A decided or re-rendered card passes the selection on (a card that
// grew is ready.js's to re-read).
document.addEventListener('htmx:afterSettle', () => { reselect(); watch(); });

// A click in a card selects it, so that keys act on what was clicked.
document.addEventListener('click', (e) => {
  const li = e.target.closest && e.target.closest('li[data-approval-id]');
  if (li && li.getAttribute('data-approval-id') !== selectedID && !li.closest('#pending-new')) {
    select(li, false, false);
  }
});

// A row clicked in the compact list selects its card beside the list.
document.addEventListener('countersign:select', (e) => {
  const id = e.detail && e.detail.id;
  const li = id && document.querySelector('li[data-approval-id="' + CSS.escape(id) + '"]');
  if (li) { select(li, false, true); }
});

// On a request's page its one card is selected from the start.
const only = document.querySelector('#approval-page li[data-approval-id]');
if (only) { select(only, false, false); }
