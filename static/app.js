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
  // closes it (and returns to the page, like Cancel). When the control that
  // opened it is on the page behind (data-return-focus), closing returns
  // focus there, and the address becomes the page's own (data-cancel) so
  // that a reload does not post again.
  document.querySelectorAll('dialog[data-modal][open]').forEach(function (d) {
    d.close();
    d.showModal();
    var back = d.dataset.returnFocus ? document.querySelector(d.dataset.returnFocus) : null;
    function leave(e) {
      if (!back) { window.location.assign(d.dataset.cancel || window.location.pathname); return; }
      if (e) { e.preventDefault(); }
      d.close();
      if (d.dataset.cancel && window.history.replaceState) { window.history.replaceState(null, '', d.dataset.cancel); }
      if (!e || e.type !== 'keydown') { back.focus(); return; }
      // Pressed from the keyboard: focus returns once the key is up, so
      // that the rest of this key press cannot press the control too.
      var done = false;
      function restore() { if (!done) { done = true; document.removeEventListener('keyup', restore, true); back.focus(); } }
      document.addEventListener('keyup', restore, true);
      window.setTimeout(restore, 500);
    }
    d.addEventListener('cancel', function (e) { leave(e); });
    d.querySelectorAll('[data-dialog-cancel]').forEach(function (a) {
      a.addEventListener('click', leave);
      // A link follows Enter on key down; the key press that comes after
      // would land on the control focus returned to and press it too.
      a.addEventListener('keydown', function (e) { if (e.key === 'Enter') { leave(e); } });
    });
  });
  // Keep focus sensible when a decided card is replaced.
  document.addEventListener('htmx:afterSwap', function (e) {
    var t = e.detail.target;
    if (t && t.matches && t.matches('[data-focus-after-swap]')) { t.focus(); }
  });

  // The count of waiting calls: in the tab title and on the favicon, on
  // every signed-in page, kept current by the event stream's "count".
  var favicon = document.querySelector('link[data-favicon]');
  function badgeIcon(n) {
    var label = n > 99 ? '99+' : String(n);
    var size = label.length > 2 ? 11 : (label.length > 1 ? 14 : 17);
    var svg = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">' +
      '<rect width="32" height="32" rx="7" fill="#2f4fd1"/>' +
      '<circle cx="18" cy="14" r="14" fill="#d1242f"/>' +
      '<text x="18" y="14" dy=".35em" text-anchor="middle" font-family="Arial,sans-serif" font-weight="700" font-size="' + size + '" fill="#fff">' + label + '</text></svg>';
    return 'data:image/svg+xml,' + encodeURIComponent(svg);
  }
  function setCount(n) {
    if (!(n >= 0) || !document.body.hasAttribute('data-signed-in')) { return; }
    var base = document.documentElement.getAttribute('data-title') || document.title;
    document.title = (n > 0 ? '(' + n + ') ' : '') + base;
    document.body.setAttribute('data-pending', String(n));
    if (favicon) { favicon.href = n > 0 ? badgeIcon(n) : '/static/favicon.svg'; }
  }
  setCount(parseInt(document.body.getAttribute('data-pending'), 10));

  // A request's own page reloads its detail once the request is no longer
  // waiting: decided here or elsewhere, expired or cancelled.
  var refocus = false;
  document.addEventListener('htmx:afterSettle', function () {
    var outcome = refocus && document.querySelector('#approval-page [data-testid="outcome"]');
    if (outcome) { refocus = false; outcome.focus(); }
  });
  function refreshRequest() {
    var page = document.querySelector('#approval-page[data-pending]');
    if (!page || page.getAttribute('data-refreshing')) { return; }
    page.setAttribute('data-refreshing', '1');
    // Focus in the part being replaced moves to the outcome, not to nowhere.
    refocus = page.contains(document.activeElement) && document.activeElement !== document.body;
    htmx.ajax('GET', window.location.pathname, { target: '#approval-page', select: '#approval-page', swap: 'outerHTML' });
  }
  function onCount(e) {
    var data;
    try { data = JSON.parse(e.data); } catch (err) { return; }
    setCount(data.count);
    var page = document.querySelector('#approval-page[data-pending]');
    if (page && (data.ids || []).indexOf(page.getAttribute('data-approval-page')) < 0) { refreshRequest(); }
  }
  document.addEventListener('htmx:afterSwap', function (e) {
    var t = e.detail.target;
    if (t && t.closest && t.id !== 'approval-page' && t.closest('#approval-page[data-pending]')) { refreshRequest(); }
  });

  // Desktop notifications, only after a click on "Notify me"; the choice is
  // remembered in this browser. A notification names the tool and where it
  // comes from, never argument values (it may show on a locked screen).
  var notifyKey = 'countersign.notify';
  function stored() { try { return window.localStorage.getItem(notifyKey); } catch (err) { return null; } }
  function store(v) { try { window.localStorage.setItem(notifyKey, v); } catch (err) { /* private mode */ } }
  function notifyOn() { return 'Notification' in window && Notification.permission === 'granted' && stored() === 'on'; }
  var notifyButton = document.querySelector('[data-notify]');
  var notifyNote = document.querySelector('[data-notify-note]');
  function showNotify() {
    if (!notifyButton) { return; }
    var why = '';
    if (!('Notification' in window)) {
      why = 'This browser cannot show desktop notifications.';
    } else if (Notification.permission === 'denied') {
      why = 'Notifications are blocked for this site in the browser’s settings.';
    }
    notifyButton.hidden = why !== '';
    notifyNote.hidden = why === '';
    notifyNote.textContent = why;
    var on = notifyOn();
    notifyButton.textContent = on ? 'Notifications on' : 'Notify me';
    notifyButton.setAttribute('aria-pressed', on ? 'true' : 'false');
    notifyButton.title = on ? 'Click to stop desktop notifications in this browser' : 'Show a desktop notification when a call waits for you';
  }
  if (notifyButton) {
    notifyButton.addEventListener('click', function () {
      if (notifyOn()) { store('off'); showNotify(); return; }
      if (Notification.permission === 'granted') { store('on'); showNotify(); return; }
      Notification.requestPermission().then(function (p) {
        if (p === 'granted') { store('on'); }
        showNotify();
      });
    });
    showNotify();
    // The permission can change in the browser's settings meanwhile.
    window.addEventListener('focus', showNotify);
    document.addEventListener('visibilitychange', showNotify);
  }
  function onArrived(e) {
    var data;
    try { data = JSON.parse(e.data); } catch (err) { return; }
    // The tab being looked at shows the call already.
    if (!notifyOn() || (document.visibilityState === 'visible' && document.hasFocus())) { return; }
    var n = new Notification(data.tool + ' is waiting for your answer', {
      body: 'From ' + data.connector + '. Open to see the call and decide.', tag: 'countersign-' + data.id
    });
    n.onclick = function () { window.focus(); window.location.assign(data.url); n.close(); };
  }

  // The stream: the inbox's own (htmx), or a count-only one on other pages.
  var attached = typeof WeakSet === 'function' ? new WeakSet() : null;
  function attach(source) {
    if (!source || (attached && attached.has(source))) { return; }
    if (attached) { attached.add(source); }
    source.addEventListener('count', onCount);
    source.addEventListener('arrived', onArrived);
  }
  document.addEventListener('htmx:sseOpen', function (e) { attach(e.detail && e.detail.source); });
  if (document.body.hasAttribute('data-signed-in') && !document.querySelector('[sse-connect]') && 'EventSource' in window) {
    var own = new EventSource('/events?only=count');
    own.onopen = function () { setLive(true); };
    own.onerror = function () { setLive(false); };
    attach(own);
  }
})();

// Admin screens and playbooks: copying a new key, schedule presets.
(function () {
  // Copy: the button names the element whose text it copies. It is shown
  // only when this script runs; without it the key is selectable text.
  document.querySelectorAll('[data-copy]').forEach(function (b) {
    var source = document.getElementById(b.getAttribute('data-copy'));
    var status = b.parentNode.querySelector('[data-copy-status]');
    if (!source) { return; }
    b.hidden = false;
    function said(msg) { if (status) { status.textContent = msg; } }
    function selectText() {
      var range = document.createRange();
      range.selectNodeContents(source);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    }
    b.addEventListener('click', function () {
      var text = source.textContent.trim();
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { said('Copied.'); },
          function () { selectText(); said('Copy was blocked: the key is selected, press Ctrl+C or ⌘C.'); });
      } else {
        selectText();
        said('The key is selected: press Ctrl+C or ⌘C to copy it.');
      }
    });
  });
  // Schedule presets put their expression in the cron field; the field's
  // change asks the server for the next run times.
  document.querySelectorAll('[data-cron-preset]').forEach(function (b) {
    b.hidden = false;
    b.addEventListener('click', function () {
      var field = document.getElementById(b.getAttribute('data-cron-target'));
      if (!field) { return; }
      field.value = b.getAttribute('data-cron-preset');
      field.dispatchEvent(new Event('change', { bubbles: true }));
      field.focus();
    });
  });
})();
