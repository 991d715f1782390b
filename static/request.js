// A request's own page (/approvals/{id}): its detail is reloaded only when
// the request stopped waiting, and only on the two signals that say so —
// the event stream's count no longer lists it (decided elsewhere, expired,
// cancelled), or this page's own decision form got its answer. Any other
// swap on the page (a value expanded in place, say) leaves it as it is.
const page = () => document.querySelector('#approval-page[data-pending]');
let refocus = false;

function refresh() {
  const p = page();
  if (!p || p.hasAttribute('data-refreshing') || !window.htmx) { return; }
  p.setAttribute('data-refreshing', '1');
  // Focus in the part being replaced moves to the outcome, not to nowhere.
  refocus = p.contains(document.activeElement) && document.activeElement !== document.body;
  window.htmx.ajax('GET', window.location.pathname, { target: '#approval-page', select: '#approval-page', swap: 'outerHTML' });
}

// The count stream (app.js passes each "count" event on as
// countersign:count): the page's item left the waiting list.
document.addEventListener('countersign:count', (e) => {
  const p = page();
  if (p && !((e.detail && e.detail.ids) || []).includes(p.getAttribute('data-approval-page'))) { refresh(); }
});

// The answer to this item's decision form: recorded (200), or it had
// already ended (409). htmx reports it from the nearest element still on
// the page, so the request is matched by its path, not by the element.
document.addEventListener('htmx:afterRequest', (e) => {
  const p = page();
  const cfg = e.detail && e.detail.requestConfig;
  if (!p || !cfg || String(cfg.verb).toLowerCase() !== 'post') { return; }
  if (cfg.path !== '/approvals/' + p.getAttribute('data-approval-page') + '/decision') { return; }
  const status = e.detail.xhr && e.detail.xhr.status;
  if (status === 200 || status === 409) { refresh(); }
});

document.addEventListener('htmx:afterSettle', () => {
  const outcome = refocus && document.querySelector('#approval-page [data-testid="outcome"]');
  if (outcome) { refocus = false; outcome.focus(); }
});
