// Folded values: "N characters hidden — show" fetches the whole value into
// its line (htmx does the request). The expanded value takes focus, so
// that reading goes on from it, and stays expanded: only the inbox's full
// re-sync (after the stream reconnects) re-renders the cards, and it
// carries expanded values over to the new cards of the same calls.
document.addEventListener('htmx:afterSwap', (e) => {
  const t = e.detail.target;
  if (t && t.matches && t.matches('dd[id^="value-"]') && t.querySelector('[data-expanded]')) { t.focus(); }
});

let kept = null;
document.addEventListener('htmx:oobBeforeSwap', (e) => {
  const t = e.detail.target;
  if (!t || t.id !== 'pending-list') { return; }
  kept = new Map();
  t.querySelectorAll('dd[id^="value-"]').forEach((dd) => {
    if (dd.querySelector('[data-expanded]')) { kept.set(dd.id, dd.innerHTML); }
  });
});
document.addEventListener('htmx:oobAfterSwap', (e) => {
  const t = e.detail.target;
  if (!t || t.id !== 'pending-list' || !kept) { return; }
  kept.forEach((html, id) => {
    const dd = document.getElementById(id);
    if (dd && !dd.querySelector('[data-expanded]')) { dd.innerHTML = html; }
  });
  kept = null;
});
