// Countersign's own script: only progressive enhancement. Every page works
// without it; htmx and its SSE extension do the live updates.
(function () {
  // The live indicator says whether the event stream is open. The state is
  // kept, so that an indicator swapped in later (a request page's detail
  // is reloaded with one) says it too instead of "Connecting…".
  var live = null;
  function showLive() {
    if (live === null) { return; }
    document.querySelectorAll('[data-live]').forEach(function (el) {
      el.classList.toggle('on', live);
      el.textContent = live ? 'Live' : 'Reconnecting…';
    });
  }
  function setLive(on) { live = on; showLive(); }
  document.addEventListener('htmx:sseOpen', function () { setLive(true); });
  document.addEventListener('htmx:sseError', function () { setLive(false); });
  document.addEventListener('htmx:afterSettle', showLive);
  // A card being answered in this tab is replaced by the answer's
  // confirmation, not removed by the stream's notice of the same decision.
  document.addEventListener('htmx:oobBeforeSwap', function (e) {
    var el = e.detail.target;
    if (el && el.matches && el.matches('li.card') && el.querySelector('form.htmx-request')) {
      e.detail.shouldSwap = false;
    }
  });
  // The stream's notice that a call is gone may come after this tab's own
  // answer has already replaced its card: then there is nothing left to
  // replace, and the notice is dropped instead of swapped nowhere.
  document.addEventListener('htmx:sseBeforeMessage', function (e) {
    var m = e.detail;
    if (!m || m.type !== 'gone') { return; }
    var id = /id="gone-([^"]+)"/.exec(m.data || '');
    if (id && !document.getElementById('approval-' + id[1])) { e.preventDefault(); }
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
    document.querySelectorAll('[data-inbox-count]').forEach(function (el) { el.textContent = n > 0 ? n + ' waiting' : 'none waiting'; });
    if (favicon) { favicon.href = n > 0 ? badgeIcon(n) : '/static/favicon.svg'; }
  }
  setCount(parseInt(document.body.getAttribute('data-pending'), 10));

  // Each "count" goes on to the page's own behaviours (a request's page
  // reloads its detail when its item is no longer listed: request.js).
  function onCount(e) {
    var data;
    try { data = JSON.parse(e.data); } catch (err) { return; }
    setCount(data.count);
    document.dispatchEvent(new CustomEvent('countersign:count', { detail: { count: data.count, ids: data.ids || [] } }));
  }

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
    // The names come with hidden characters as markers; each is isolated
    // (FSI … PDI) so that its direction cannot spill into the words around.
    var n = new Notification('\u2068' + data.tool + '\u2069 is waiting for your answer', {
      body: 'From \u2068' + data.connector + '\u2069. Open to see the call and decide.', tag: 'countersign-' + data.id
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

  // ---- Inbox: a still list, live times, asking twice, full values ----

  // New calls are held below the list while others are waiting, so that
  // the card being read never moves; the bar says how many and shows them.
  var pendingList = document.getElementById('pending-list');
  var held = document.getElementById('pending-new');
  var newBar = document.querySelector('[data-new-bar]');
  function cardsIn(list) { return list ? list.querySelectorAll(':scope > li[data-approval-id]') : []; }
  function insertByExpiry(li) {
    var at = li.getAttribute('data-expires') || '';
    var cards = cardsIn(pendingList);
    for (var i = 0; i < cards.length; i++) {
      if ((cards[i].getAttribute('data-expires') || '') > at) { pendingList.insertBefore(li, cards[i]); return; }
    }
    pendingList.appendChild(li);
  }
  function showHeld(focusFirst) {
    var first = null;
    Array.prototype.slice.call(cardsIn(held)).forEach(function (li) { insertByExpiry(li); first = first || li; });
    updateHeld();
    var link = first && first.querySelector('.card-link');
    if (focusFirst && link) { link.focus(); }
  }
  function updateHeld() {
    if (!held || !pendingList) { return; }
    held.querySelectorAll(':scope > li:not([data-approval-id])').forEach(function (li) { li.remove(); });
    var n = cardsIn(held).length;
    if (n > 0 && cardsIn(pendingList).length === 0) { showHeld(false); return; }
    if (newBar) {
      newBar.hidden = n === 0;
      newBar.querySelector('[data-show-new]').textContent = n + ' new — show';
    }
  }
  if (held && pendingList && 'MutationObserver' in window) {
    new MutationObserver(updateHeld).observe(held, { childList: true });
    // A call held while the last waiting card was being answered shows as
    // soon as nothing else waits (the answered card is replaced by its
    // confirmation, which is no waiting call).
    new MutationObserver(updateHeld).observe(pendingList, { childList: true });
    document.querySelector('[data-show-new]').addEventListener('click', function () { showHeld(true); });
  }

  // Decided cards (here or elsewhere) fold away after a few seconds; the
  // answer stays in the recent decisions.
  function focusAfterLeaving(li) {
    var next = li.nextElementSibling || li.previousElementSibling;
    var link = next && next.querySelector('.card-link, button');
    if (link) { link.focus(); return; }
    var heading = document.getElementById('recent-heading');
    if (heading) { heading.setAttribute('tabindex', '-1'); heading.focus(); }
  }
  function leave(li) {
    if (li.getAttribute('data-leaving')) { return; }
    li.setAttribute('data-leaving', '1');
    window.setTimeout(function () {
      li.classList.add('leaving');
      window.setTimeout(function () {
        if (li.contains(document.activeElement)) { focusAfterLeaving(li); }
        li.remove();
      }, 400);
    }, 5000);
  }
  if (pendingList && 'MutationObserver' in window) {
    new MutationObserver(function () {
      pendingList.querySelectorAll(':scope > li[data-leave]').forEach(leave);
    }).observe(pendingList, { childList: true });
  }
  document.addEventListener('click', function (e) {
    var b = e.target.closest && e.target.closest('[data-dismiss]');
    if (!b) { return; }
    var li = b.closest('li');
    focusAfterLeaving(li);
    li.remove();
  });

  // Times say how long ago or how soon, kept current; the exact time in
  // the reader's own zone, named, and the value as sent are on hover and,
  // for phones (no hover), on a tap, which shows them in place until the
  // next tap. A call within a minute of its expiry is marked in words, not
  // by colour alone.
  var zoned = { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short' };
  function local(t, opts) {
    try { return new Date(t).toLocaleString([], opts || zoned); } catch (err) { return new Date(t).toString(); }
  }
  function relative(t, now) {
    var s = Math.round((t - now) / 1000);
    if (s > 0) {
      if (s < 60) { return 'in ' + s + ' s'; }
      if (s < 3600) { var m = Math.round(s / 60); return 'in ' + m + (m === 1 ? ' minute' : ' minutes'); }
      return 'at ' + local(t, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
    }
    s = -s;
    if (s < 45) { return 'just now'; }
    if (s < 3600) { var mm = Math.max(1, Math.round(s / 60)); return mm + (mm === 1 ? ' minute ago' : ' minutes ago'); }
    if (s < 86400) { var h = Math.floor(s / 3600); return h + (h === 1 ? ' hour ago' : ' hours ago'); }
    return local(t, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
  }
  function exact(el, t) { return local(t) + ' (sent as ' + el.getAttribute('datetime') + ')'; }
  function tickTimes() {
    var now = Date.now();
    document.querySelectorAll('time[data-rel], time[data-local]').forEach(function (el) {
      var t = Date.parse(el.getAttribute('datetime'));
      if (isNaN(t)) { return; }
      if (!el.hasAttribute('tabindex')) {
        el.setAttribute('tabindex', '0');
        el.title = exact(el, t);
      }
      var text = el.hasAttribute('data-open') ? exact(el, t) : (el.hasAttribute('data-rel') ? relative(t, now) : local(t));
      if (el.textContent !== text) { el.textContent = text; }
    });
    document.querySelectorAll('li[data-expires]').forEach(function (li) {
      var left = Date.parse(li.getAttribute('data-expires')) - now;
      var soon = left < 60000;
      li.classList.toggle('expiring', soon);
      var mark = li.querySelector('[data-soon]');
      if (mark) { mark.hidden = !soon; }
    });
  }
  function toggleTime(e) {
    var el = e.target.closest && e.target.closest('time[data-rel][tabindex], time[data-local][tabindex]');
    if (!el || (e.type === 'keydown' && e.key !== 'Enter' && e.key !== ' ')) { return; }
    if (e.type === 'keydown') { e.preventDefault(); }
    el.toggleAttribute('data-open');
    tickTimes();
  }
  document.addEventListener('click', toggleTime);
  document.addEventListener('keydown', toggleTime);
  tickTimes();
  window.setInterval(tickTimes, 1000);
  document.addEventListener('htmx:afterSettle', tickTimes);

  // A question in a modal dialog: focus starts on Cancel and stays inside,
  // Escape cancels, and focus returns to where it was.
  // Each question gets its own dialog element, removed when it closes: a
  // close event still queued from an earlier question can then never
  // answer a later one.
  function ask(opts) {
    var dialog = document.createElement('dialog');
    dialog.className = 'modal confirm';
    dialog.setAttribute('aria-labelledby', 'confirm-title');
    dialog.setAttribute('aria-describedby', 'confirm-body');
    dialog.setAttribute('data-testid', 'confirm-dialog');
    dialog.innerHTML = '<h2 id="confirm-title"></h2><div id="confirm-body"></div><div class="buttons"></div>';
    document.querySelectorAll('dialog[data-testid="confirm-dialog"]').forEach(function (old) { old.remove(); });
    document.body.appendChild(dialog);
    var opener = document.activeElement;
    dialog.querySelector('h2').textContent = opts.title;
    var body = dialog.querySelector('#confirm-body');
    opts.body.forEach(function (line) { var p = document.createElement('p'); p.textContent = line; body.appendChild(p); });
    var row = dialog.querySelector('.buttons');
    var cancel = document.createElement('button');
    cancel.type = 'button';
    cancel.className = 'btn';
    cancel.textContent = 'Cancel';
    cancel.setAttribute('data-testid', 'confirm-cancel');
    row.appendChild(cancel);
    return new Promise(function (resolve) {
      var answer = null;
      opts.actions.forEach(function (a) {
        var b = document.createElement('button');
        b.type = 'button';
        b.className = 'btn ' + (a.cls || '');
        b.textContent = a.label;
        b.setAttribute('data-testid', 'confirm-' + a.value);
        b.addEventListener('click', function () { answer = a.value; dialog.close(); });
        row.appendChild(b);
      });
      cancel.addEventListener('click', function () { dialog.close(); });
      dialog.addEventListener('close', function () {
        dialog.remove();
        if (opener && opener.focus && document.contains(opener)) { opener.focus(); }
        resolve(answer);
      }, { once: true });
      dialog.showModal();
      cancel.focus();
    });
  }

  // Before a decision is sent: a reason typed with an approval is not
  // dropped silently, and a standing approval of a tool that can't be
  // undone or sends data out is confirmed, naming the tool.
  function send(button) {
    button.setAttribute('data-passed', '1');
    button.click();
    button.removeAttribute('data-passed');
  }
  function confirmStanding(button) {
    var tool = button.getAttribute('data-confirm-tool');
    if (!tool) { send(button); return; }
    var scope = button.parentNode.querySelector('.scope');
    ask({
      title: button.textContent + ': ' + tool + '?',
      body: [button.getAttribute('data-confirm-why') || '', (scope ? scope.textContent : '')],
      actions: [{ label: button.textContent + ' ' + tool, value: 'standing', cls: 'btn-standing' }]
    }).then(function (a) { if (a === 'standing') { send(button); } });
  }
  document.addEventListener('click', function (e) {
    var button = e.target.closest && e.target.closest('form.decide button[name="decision"]');
    if (!button || button.getAttribute('data-passed')) { return; }
    var form = button.form;
    var reason = form.querySelector('[data-reason]');
    var typed = reason && reason.value.trim() !== '' && button.value !== 'reject';
    var standing = button.hasAttribute('data-confirm-tool');
    if (!typed && !standing) { return; }
    e.preventDefault();
    if (!typed) { confirmStanding(button); return; }
    var reject = form.querySelector('button[value="reject"]');
    ask({
      title: 'You typed a reason',
      body: ['“' + reason.value.trim() + '”', 'A reason goes with a rejection. If you approve, it is kept only as your own note with the decision; the agent does not see it.'],
      // The safe answer is the prominent one: a rejection runs nothing.
      // Approving anyway is a plain button, after it.
      actions: [{ label: 'Reject with this reason', value: 'reject', cls: 'btn-danger-solid' },
        { label: button.textContent + ' anyway, keep as a note', value: 'keep', cls: '' }]
    }).then(function (a) {
      if (a === 'reject' && reject) { send(reject); }
      if (a === 'keep') { confirmStanding(button); }
    });
  });
  // The chosen length is said in the scope next to each standing button.
  document.addEventListener('change', function (e) {
    var sel = e.target;
    if (!sel.matches || !sel.matches('select[data-duration]')) { return; }
    var opt = sel.options[sel.selectedIndex];
    var words = sel.value === '0' ? 'until you revoke it' : 'for ' + opt.textContent + ' or until you revoke it';
    sel.form.querySelectorAll('[data-duration-words]').forEach(function (el) { el.textContent = words; });
  });
})();

// Web Push (Settings → Devices): turn push on for this browser. Permission
// is asked only on the button's click. The service worker at /sw.js shows
// the pushes; the subscription is posted to the server with the CSRF
// token in a header.
(function () {
  'use strict';
  var box = document.querySelector('[data-push]');
  if (!box) { return; }
  var button = box.querySelector('[data-push-enable]');
  function show(state) {
    box.querySelectorAll('[data-push-state]').forEach(function (el) { el.hidden = el.getAttribute('data-push-state') !== state; });
    button.hidden = !(state === 'ready' || state === 'failed');
  }
  // Push needs a secure context (https; localhost counts as secure).
  if (!window.isSecureContext) { show('insecure'); return; }
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) { show('unsupported'); return; }
  if (Notification.permission === 'denied') { show('denied'); return; }

  function keyBytes(b64) {
    var s = b64.replace(/-/g, '+').replace(/_/g, '/');
    s += '===='.slice(0, (4 - s.length % 4) % 4);
    var raw = window.atob(s), out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) { out[i] = raw.charCodeAt(i); }
    return out;
  }
  function hex(buf) {
    return Array.prototype.map.call(new Uint8Array(buf), function (b) { return ('0' + b.toString(16)).slice(-2); }).join('');
  }
  // Mark this browser's row, if the server lists it: the rows carry a
  // hash of the endpoint, never the endpoint itself.
  function markThis(sub) {
    if (!sub) { return Promise.resolve(false); }
    return window.crypto.subtle.digest('SHA-256', new TextEncoder().encode(sub.endpoint)).then(function (d) {
      var h = hex(d), found = false;
      box.querySelectorAll('[data-push-endpoint]').forEach(function (row) {
        var mine = row.getAttribute('data-push-endpoint') === h;
        found = found || mine;
        var note = row.querySelector('[data-push-this]');
        if (note) { note.hidden = !mine; }
      });
      return found;
    });
  }

  var registration = navigator.serviceWorker.register('/sw.js', { scope: '/' });
  registration.then(function (reg) { return reg.pushManager.getSubscription(); })
    .then(markThis)
    .then(function (on) { show(on ? 'on' : 'ready'); })
    .catch(function () { show('unsupported'); });

  button.addEventListener('click', function () {
    button.disabled = true;
    Notification.requestPermission().then(function (p) {
      if (p !== 'granted') { show(p === 'denied' ? 'denied' : 'ready'); return null; }
      return registration.then(function (reg) {
        return reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(box.getAttribute('data-push-key')) });
      }).then(function (sub) {
        return fetch('/settings/push', {
          method: 'POST', credentials: 'same-origin',
          headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': box.getAttribute('data-csrf') },
          body: JSON.stringify(sub)
        });
      }).then(function (resp) {
        if (!resp.ok) { throw new Error('subscribe: ' + resp.status); }
        window.location.reload();
      });
    }).catch(function () { show('failed'); }).then(function () { button.disabled = false; });
  });
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
