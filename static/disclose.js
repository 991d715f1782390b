// Details on demand: a button marked data-disclose folds and unfolds the
// element its aria-controls names. Without this script the buttons stay
// hidden and every detail is shown.
document.querySelectorAll('button[data-disclose][aria-controls]').forEach((b) => {
  const more = document.getElementById(b.getAttribute('aria-controls'));
  if (!more) { return; }
  more.hidden = b.getAttribute('aria-expanded') !== 'true';
  b.hidden = false;
  b.addEventListener('click', () => {
    const open = b.getAttribute('aria-expanded') !== 'true';
    b.setAttribute('aria-expanded', open ? 'true' : 'false');
    more.hidden = !open;
  });
});
