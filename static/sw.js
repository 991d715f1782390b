// Countersign's service worker: shows a Web Push notification and opens
// the request's page when it is clicked. It caches nothing and handles no
// fetches: every page comes from the server, signed in.
'use strict';

self.addEventListener('install', function () { self.skipWaiting(); });
self.addEventListener('activate', function (event) { event.waitUntil(self.clients.claim()); });

// The payload carries names and the link, never argument values: the
// notification may show on a locked screen.
self.addEventListener('push', function (event) {
  var data = {};
  try { data = event.data ? event.data.json() : {}; } catch (err) { data = {}; }
  var body = [];
  if (data.connector) { body.push('From ' + data.connector); }
  if (data.agent_key) { body.push('agent key ' + data.agent_key); }
  if (data.expires_at) {
    var at = new Date(data.expires_at);
    if (!isNaN(at.getTime())) { body.push('expires ' + at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })); }
  }
  var title = data.title || 'A call waits for your answer';
  event.waitUntil(self.registration.showNotification(title, {
    body: body.join(' · ') + (body.length ? '. ' : '') + 'Open to see the call and decide.',
    tag: data.tag || 'countersign',
    icon: '/static/icon-192.png',
    badge: '/static/icon-192.png',
    requireInteraction: true,
    data: { url: data.url || '/' }
  }));
});

// Only a link into this app is opened: the page of the request, in a tab
// already showing it if there is one.
self.addEventListener('notificationclick', function (event) {
  event.notification.close();
  var target = new URL((event.notification.data && event.notification.data.url) || '/', self.location.origin);
  if (target.origin !== self.location.origin) { target = new URL('/', self.location.origin); }
  event.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (list) {
    for (var i = 0; i < list.length; i++) {
      if (list[i].url === target.href && 'focus' in list[i]) { return list[i].focus(); }
    }
    return self.clients.openWindow(target.href);
  }));
});
