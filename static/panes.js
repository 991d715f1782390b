// The dense inbox: a compact list of the waiting calls, one row per call,
// beside their cards (on a phone the list alone, whose rows open the
// request page). Each card carries its row in a template; the list
// follows the cards in #pending-list as the event stream adds, replaces
// and removes them, so it needs no stream of its own, and it moves only
// when the cards do (new calls wait behind "N new — show").
//
// Selection belongs to keys.js: a click on a row asks it to select the
// card ("countersign:select"), and it says which card it selected
// ("countersign:selected").
const panes = document.querySelector('[data-panes]');
const cardList = document.getElementById('pending-list');
const rows = document.getElementById('pending-rows');

function cards() {
  return cardList ? Array.from(cardList.querySelectorAll(':scope > li[data-approval-id]')) : [];
}
function rowFor(id) {
  return rows.querySelector('li[data-row-for="' + CSS.escape(id) + '"]');
}
function filters() {
  const out = {};
  panes.querySelectorAll('select[data-filter]').forEach((s) => { out[s.getAttribute('data-filter')] = s.value; });
  return out;
}
function matches(row, f) {
  return (!f.agent || row.getAttribute('data-agent') === f.agent) &&
    (!f.tool || row.getAttribute('data-tool') === f.tool) &&
    (!f.risk || row.getAttribute('data-risk').split(' ').includes(f.risk));
}

// choices fills the agent and tool filters with the calls listed, keeping
// what was chosen.
function choices(list) {
  [['agent', 'data-agent', 'data-agent'], ['tool', 'data-tool', 'data-tool-label']].forEach(([name, attr, label]) => {
    const sel = panes.querySelector('select[data-filter="' + name + '"]');
    const seen = new Map();
    list.forEach((r) => { seen.set(r.getAttribute(attr), r.getAttribute(label)); });
    const keep = sel.value;
    const want = [''].concat(Array.from(seen.keys()).sort());
    const have = Array.from(sel.options).map((o) => o.value);
    if (want.join('\n') === have.join('\n')) { return; }
    sel.replaceChildren();
    want.forEach((v) => {
      const o = document.createElement('option');
      o.value = v;
      o.textContent = v === '' ? 'All' : seen.get(v);
      sel.appendChild(o);
    });
    sel.value = want.includes(keep) ? keep : '';
  });
}

// order puts the cards in the chosen order: by expiry (as the server
// lists them) or newest first.
function order(list) {
  const sort = panes.querySelector('select[data-sort]').value;
  // Expiry as the server lists them: expires, then arrival; newest first:
  // arrival, latest on top.
  const keyed = list.map((li) => ({ li, exp: li.getAttribute('data-expires') || '', at: li.getAttribute('data-created') || '' }));
  const cmp = (x, y) => (x < y ? -1 : (x > y ? 1 : 0));
  keyed.sort((a, b) => (sort === 'arrival' ? cmp(b.at, a.at) || cmp(a.exp, b.exp) : cmp(a.exp, b.exp) || cmp(a.at, b.at)));
  return keyed.map((k) => k.li);
}

// differs shows, on each row, what tells it apart from the other calls of
// the same tool listed: the values of the keys that differ between them
// (service, version, a file's name…), before the gist.
function argsOf(row) {
  if (!row._args) {
    try { row._args = new Map(JSON.parse(row.getAttribute('data-args') || '[]')); } catch (err) { row._args = new Map(); }
  }
  return row._args;
}
function differs(list) {
  const groups = new Map();
  list.forEach((r) => {
    const k = r.getAttribute('data-tool');
    if (!groups.has(k)) { groups.set(k, []); }
    groups.get(k).push(r);
  });
  groups.forEach((group) => {
    const keys = [];
    if (group.length > 1) {
      const all = new Set();
      group.forEach((r) => argsOf(r).forEach((_, k) => all.add(k)));
      all.forEach((k) => {
        const first = argsOf(group[0]).get(k);
        if (group.some((r) => argsOf(r).get(k) !== first)) { keys.push(k); }
      });
    }
    group.forEach((r) => {
      const out = r.querySelector('[data-row-differs]');
      if (!out) { return; }
      const text = keys.slice(0, 3).filter((k) => argsOf(r).has(k)).map((k) => k + ': ' + argsOf(r).get(k)).join(' · ');
      if (out.textContent !== text) { out.textContent = text; }
      out.hidden = text === '';
    });
  });
}

let busy = false;
function build() {
  if (busy) { return; }
  busy = true;
  let list = cards();
  const sorted = order(list);
  // Cards move only when the order asked for differs from theirs.
  if (sorted.some((li, i) => li !== list[i])) {
    sorted.forEach((li) => cardList.appendChild(li));
    list = sorted;
  }
  const pairs = list.map((li) => {
    const id = li.getAttribute('data-approval-id');
    let row = rowFor(id);
    if (!row) {
      const tpl = li.querySelector(':scope > template[data-row-template]');
      row = tpl ? tpl.content.firstElementChild.cloneNode(true) : null;
    }
    if (row) { row.classList.toggle('is-selected', li.classList.contains('is-selected')); }
    return { li, row };
  }).filter((p) => p.row);
  const want = pairs.map((p) => p.row);
  // Rows of calls no longer listed go; the others stay where they are
  // (a focused row keeps its focus), new ones go in their place.
  Array.from(rows.children).forEach((r) => { if (!want.includes(r)) { r.remove(); } });
  want.forEach((r, i) => { if (rows.children[i] !== r) { rows.insertBefore(r, rows.children[i] || null); } });
  choices(want);
  differs(want);
  const f = filters();
  let shown = 0;
  pairs.forEach((p) => {
    const ok = matches(p.row, f);
    p.row.hidden = !ok;
    p.li.hidden = !ok;
    if (ok) { shown++; }
  });
  panes.querySelector('[data-rows-none]').hidden = shown > 0 || want.length === 0;
  busy = false;
}

// Rows say "expires in …", kept current.
function tick() {
  const now = Date.now();
  rows.querySelectorAll('[data-row-expires]').forEach((el) => {
    const s = Math.round((Date.parse(el.getAttribute('data-row-expires')) - now) / 1000);
    let text = 'expired';
    if (s >= 60) { text = 'expires in ' + Math.round(s / 60) + ' min'; } else if (s > 0) { text = 'expires in ' + s + ' s'; }
    if (el.textContent !== text) { el.textContent = text; }
    el.closest('li').classList.toggle('soon', s < 60);
  });
}

if (panes && cardList && rows && 'MutationObserver' in window) {
  panes.querySelector('[data-pane-list]').hidden = false;
  panes.classList.add('panes-on');
  build();
  tick();
  window.setInterval(tick, 5000);
  new MutationObserver(() => { build(); tick(); }).observe(cardList, { childList: true });
  panes.querySelectorAll('select').forEach((s) => s.addEventListener('change', build));
  // A pointer click on a row selects its card beside the list; from the
  // keyboard (Enter), and on a phone where the list is alone, the row's
  // link opens the request page.
  rows.addEventListener('click', (e) => {
    const link = e.target.closest && e.target.closest('a.row-link');
    if (!link || e.detail === 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) { return; }
    if (getComputedStyle(cardList).display === 'none') { return; }
    e.preventDefault();
    const id = link.closest('li').getAttribute('data-row-for');
    document.dispatchEvent(new CustomEvent('countersign:select', { detail: { id } }));
  });
  document.addEventListener('countersign:selected', (e) => {
    const id = e.detail && e.detail.id;
    rows.querySelectorAll(':scope > li.is-selected').forEach((r) => r.classList.remove('is-selected'));
    const row = id && rowFor(id);
    if (row) {
      row.classList.add('is-selected');
      const r = row.getBoundingClientRect(), box = rows.closest('[data-pane-list]').getBoundingClientRect();
      if (r.top < box.top || r.bottom > box.bottom) { row.scrollIntoView({ block: 'nearest' }); }
    }
  });
}
