// One "ready to approve" rule (issue 39), for the a key, a click, a tap
// and a batch: a call may be approved once its own red flags (the card's
// [data-call-flags] block) and its end (everything above its decision
// form) have been on screen, and nothing of it is folded. This module is
// the rule's one home in the browser; keys.js and batch.js ask it, and it
// guards the Approve button itself. The server enforces what it can (a
// batch approves no flagged, folded or passkey call).
//
// On a phone's request page, where Approve sits in a bar fixed to the
// bottom of the screen, the button stays disabled until the call is ready,
// and a line above it says what is left to read. "On screen" means above
// that bar.

// seen holds, per call, whether its flags and its end have been on screen.
const seen = new Map();

function stateOf(id) {
  let s = seen.get(id);
  if (!s) { s = { flags: false, end: false }; seen.set(id, s); }
  return s;
}

// bottomEdge is the bottom of the part of the screen nothing covers: the
// fixed action bar hides what lies under it.
function bottomEdge(li) {
  const vh = window.innerHeight || document.documentElement.clientHeight;
  const bar = li && li.querySelector('form.decide .decide-actions');
  if (bar && getComputedStyle(bar).position === 'fixed') { return bar.getBoundingClientRect().top; }
  return vh;
}

// folded says what of the card's call is not shown whole ("" when all of
// it is): a value folded or cut short, keys not shown, a structure
// collapsed.
export function folded(li) {
  if (li.querySelector('.args [data-expand], [data-testid="expand-all"], [data-testid="expand-key"]')) {
    return 'part of this call is folded ("characters hidden — show"): show it and read it first';
  }
  if (li.querySelector('details.value-structure:not([open])')) {
    return 'part of this call is collapsed: open it and read it first';
  }
  return '';
}

// look records what of the card is on screen now. Within a pixel: layout
// puts edges at fractions of a pixel.
export function look(li) {
  if (!li || li.hidden) { return; }
  const id = li.getAttribute('data-approval-id');
  if (!id) { return; }
  const s = stateOf(id);
  const bottom = bottomEdge(li);
  const flags = li.querySelector('[data-call-flags]');
  if (!flags) {
    s.flags = true;
  } else {
    const r = flags.getBoundingClientRect();
    // A block taller than the screen counts once its end has been shown
    // after its start.
    if (r.top > -1 && r.top < bottom) { s.flagsTop = true; }
    if (s.flagsTop && r.bottom > 0 && r.bottom < bottom + 1) { s.flags = true; }
  }
  const form = li.querySelector('form.decide');
  const end = form ? form.getBoundingClientRect().top : li.getBoundingClientRect().bottom;
  if (end > 0 && end < bottom + 1) { s.end = true; }
}

// why says why the card's call is not ready to approve, or "" when it is.
export function why(li) {
  const f = folded(li);
  if (f) { return f; }
  look(li);
  const s = stateOf(li.getAttribute('data-approval-id'));
  if (!s.flags) { return 'its red flags have not been on screen yet: scroll up to them and read them first'; }
  if (!s.end) { return 'the whole call has not been on screen yet: scroll through it to its end first'; }
  return '';
}

// unread forgets that the card's end was seen: its content grew (a value
// shown in full), and the new end must be read.
export function unread(li) {
  const id = li && li.getAttribute('data-approval-id');
  if (id) { stateOf(id).end = false; }
}

// batchWhy says why a row's call will not be approved in a batch, by the
// server's own rule sent with the row ("" when it may be).
export function batchWhy(row) {
  return row.getAttribute('data-batch-refusal') || '';
}

function cardsShown() {
  return Array.from(document.querySelectorAll('li[data-approval-id]')).filter((li) => !li.hidden && !li.closest('#pending-new'));
}

// guard keeps a fixed Approve (a phone's request page) disabled, with a
// line saying why, until its call is ready.
function guard(li) {
  const button = li.querySelector('form.decide button[value="approve"]');
  const bar = li.querySelector('form.decide .decide-actions');
  if (!button || !bar) { return; }
  const fixed = getComputedStyle(bar).position === 'fixed';
  let note = bar.querySelector('[data-ready-note]');
  const reason = fixed ? why(li) : '';
  if (!fixed && !button.hasAttribute('data-ready-held')) { if (note) { note.hidden = true; } return; }
  if (reason) {
    button.disabled = true;
    button.setAttribute('data-ready-held', '');
    if (!note) {
      note = document.createElement('p');
      note.className = 'ready-note';
      note.setAttribute('data-ready-note', '');
      note.setAttribute('data-testid', 'ready-note');
      note.id = 'ready-note-' + li.getAttribute('data-approval-id');
      bar.prepend(note);
    }
    note.hidden = false;
    note.textContent = waitWords(li);
    button.setAttribute('aria-describedby', note.id);
  } else if (button.hasAttribute('data-ready-held')) {
    button.disabled = false;
    button.removeAttribute('data-ready-held');
    button.removeAttribute('aria-describedby');
    if (note) { note.hidden = true; }
  }
}

// waitWords says, above a held Approve, what is left to read.
function waitWords(li) {
  if (folded(li)) { return 'Approve waits until you show the folded part of this call and read it to its end.'; }
  if (!stateOf(li.getAttribute('data-approval-id')).flags) { return 'Approve waits until you have seen the red flags at the top of this call.'; }
  return 'Approve waits until you have scrolled to the end of this call.';
}

let queued = false;
function lookAll() {
  if (queued) { return; }
  queued = true;
  window.requestAnimationFrame(() => {
    queued = false;
    cardsShown().forEach((li) => { look(li); guard(li); });
  });
}

// say puts a refusal on the card's own status line.
function say(li, msg) {
  let out = li.querySelector('[data-ready-status]');
  if (!out) {
    out = document.createElement('p');
    out.className = 'note note-warn ready-status';
    out.setAttribute('role', 'status');
    out.setAttribute('data-ready-status', '');
    out.setAttribute('data-testid', 'ready-status');
    const form = li.querySelector('form.decide');
    if (!form) { return; }
    form.prepend(out);
  }
  out.textContent = msg;
}

// A click or tap on Approve (and the a key, which presses it) goes
// through the rule first; a call not ready is not sent, and the card says
// why. Capture: before htmx or the passkey prompt see the click.
document.addEventListener('click', (e) => {
  const button = e.target.closest && e.target.closest('form.decide button[value="approve"]');
  const li = button && button.closest('li[data-approval-id]');
  if (!li) { return; }
  const reason = why(li);
  if (reason) {
    e.preventDefault();
    e.stopImmediatePropagation();
    say(li, 'Not approved: ' + reason + '.');
  } else {
    const out = li.querySelector('[data-ready-status]');
    if (out) { out.remove(); }
  }
}, true);

window.addEventListener('scroll', lookAll, { passive: true });
window.addEventListener('resize', lookAll);
document.addEventListener('htmx:afterSettle', lookAll);
document.addEventListener('toggle', lookAll, true);
// A value shown in full makes the card longer: its new end must be read.
document.addEventListener('htmx:afterSwap', (e) => {
  const t = e.detail && e.detail.target;
  if (t && t.matches && t.matches('dd[id^="value-"]')) { unread(t.closest('li[data-approval-id]')); }
  lookAll();
});
lookAll();
