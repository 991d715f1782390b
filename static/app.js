// Countersign's own script: only progressive enhancement. Every page works
// without it; htmx and its SSE extension do the live updates.
(function () {
  function setLive(on) {
    document.querySelectorAll('[data-live]').forEach(function (el) {
      el.classList.toggle('on', on);
      el.textContent = on ? 'Live' : 'Reconnecting…';
    });
  }
  document.addEventListener('htmx:sseOpen', function () { setLive(true); });
  document.addEventListener('htmx:sseError', function () { setLive(false); });
  // A card being answered in this tab is replaced by the answer's
  // confirmation, not removed by the stream's notice of the same decision.
  document.addEventListener('htmx:oobBeforeSwap', function (e) {
    var el = e.detail.target;
    if (el && el.matches && el.matches('li.card') && el.querySelector('form.htmx-request')) {
      e.detail.shouldSwap = false;
    }
  });
  // A server-rendered dialog becomes modal: focus stays inside, Escape
  // closes it (and returns to the page, like Cancel).
  document.querySelectorAll('dialog[data-modal][open]').forEach(function (d) {
    d.close();
    d.showModal();
    d.addEventListener('cancel', function () { window.location.assign(d.dataset.cancel || window.location.pathname); });
  });
  // Keep focus sensible when a decided card is replaced.
  document.addEventListener('htmx:afterSwap', function (e) {
    var t = e.detail.target;
    if (t && t.matches && t.matches('[data-focus-after-swap]')) { t.focus(); }
  });
})();
