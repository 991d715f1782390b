// "While you're away": the end time is typed in the reader's own time zone
// (the form sends its offset along), and end times are shown in it
// ("Friday 18:00"). Without script, both are in UTC and the page says so.
const weekday = new Intl.DateTimeFormat(undefined, { weekday: 'long', hour: '2-digit', minute: '2-digit' });
const dated = new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });

function local(el) {
  const t = new Date(el.getAttribute('datetime'));
  if (Number.isNaN(t.getTime())) { return; }
  const soon = t.getTime() - Date.now() < 6 * 24 * 3600 * 1000;
  el.textContent = (soon ? weekday : dated).format(t);
}

document.querySelectorAll('time[data-local-time]').forEach(local);

document.querySelectorAll('form[data-away-form]').forEach((form) => {
  const offset = form.querySelector('[data-tz-offset]');
  const help = form.querySelector('[data-tz-help]');
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'your time zone';
  if (help) { help.textContent = 'In your time zone (' + zone + ').'; }
  form.addEventListener('submit', () => {
    const until = form.querySelector('input[name="until"]');
    const at = until && until.value ? new Date(until.value) : new Date();
    // The offset at the chosen time, not today's: a delegation may span a
    // change to or from summer time.
    if (offset) { offset.value = String(at.getTimezoneOffset()); }
  });
});
