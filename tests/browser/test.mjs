// Browser tests of cuco serve and cuco report (TAP on stdout).
// Run through tests/browser/run.sh, which installs playwright-core.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const CUCO = process.env.CUCO_BIN || path.join(ROOT, 'build/cuco');
const ART = path.join(HERE, 'artifacts');
const FIXTURE = path.join(ROOT, 'tests/fixtures/make_run_db.py');
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu',
  '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];

let n = 0, failed = 0;
const LABEL = process.env.CUCO_BROWSER_LABEL || '';
function check(name, cond, why) {
  n++;
  name = LABEL + name;
  if (cond) console.log(`ok ${n} - ${name}`);
  else { failed++; console.log(`not ok ${n} - ${name}`); if (why) console.log('# ' + String(why).split('\n').join('\n# ')); }
}

// Independent counts, straight from the database file with Python's sqlite3.
function sql(db, query) {
  const out = execFileSync('python3', ['-c',
    'import sqlite3,sys,json;c=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro",uri=True);' +
    'print(json.dumps(c.execute(sys.argv[2]).fetchall()))', db, query]);
  return JSON.parse(out.toString());
}

function startServe(db) {
  return new Promise((resolve, reject) => {
    const p = spawn(CUCO, ['serve', db, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    const t = setTimeout(() => reject(new Error('cuco serve did not start: ' + err)), 10000);
    p.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) { clearTimeout(t); resolve({ proc: p, url: m[1] }); }
    });
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => { clearTimeout(t); reject(new Error(`cuco serve exited ${code}: ${err}`)); });
  });
}

// --live DB DONEFILE: DB is being written by a running `cuco evolve`; the
// page opened early must end up showing every candidate without a reload.
async function live(db, donefile) {
  const server = await startServe(db);
  const browser = await chromium.launch({ executablePath: process.env.CUCO_CHROMIUM || '/usr/bin/chromium', args: FLAGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 15000 });
    await page.evaluate(() => { window.__noReload = 1; });
    const first = await page.locator('#tree .node').count();
    // the page is up: the search, held until now, may go on (t0403)
    if (process.env.CUCO_BROWSER_READY) fs.writeFileSync(process.env.CUCO_BROWSER_READY, '');
    const t0 = Date.now();
    // 240 s (the part runs under timeout 300): on a loaded 2-core machine the
    // 23-candidate search has taken over 120 s
    while (!fs.existsSync(donefile) && Date.now() - t0 < 240000)
      await new Promise((r) => setTimeout(r, 250));
    check('the search finished while the page was open', fs.existsSync(donefile));
    const q = 'SELECT count(*) FROM programs WHERE run_id=(SELECT max(id) FROM runs)';
    const total = sql(db, q)[0][0];
    await page.waitForFunction((want) => document.querySelectorAll('#tree .node').length === want, total, { timeout: 10000 }).catch(() => {});
    const last = await page.locator('#tree .node').count();
    check(`a search in progress appears live: ${first} candidates at load, ${last} of ${total} at the end`, last === total && first < total);
    const unfinished = sql(db, "SELECT count(*) FROM programs WHERE status IN ('running','pending') AND run_id=(SELECT max(id) FROM runs)")[0][0];
    // The last candidate's finish arrives with the poll after its insert.
    await page.waitForFunction((want) => document.querySelectorAll('#tree .node.running, #tree .node.pending').length === want, unfinished, { timeout: 10000 }).catch(() => {});
    const okNodes = await page.locator('#tree .node.running, #tree .node.pending').count();
    check('finished candidates are no longer drawn as running', okNodes === unfinished, `${okNodes} vs ${unfinished}`);
    check('... without a reload', await page.evaluate(() => window.__noReload === 1));
    await page.waitForFunction(() => document.getElementById('live').textContent !== 'live', null, { timeout: 10000 }).catch(() => {});
    check('once the search ended the page no longer says live',
      (await page.locator('#live').textContent()).trim() !== 'live', await page.locator('#live').textContent());
    check('the live page logged no console error', errors.length === 0, errors.join('\n'));
    await page.screenshot({ path: path.join(ART, 'main-live.png') });
  } finally {
    await browser.close();
    server.proc.kill('SIGTERM');
  }
}

async function main() {
  fs.mkdirSync(ART, { recursive: true });
  if (process.argv[2] === '--live') return live(process.argv[3], process.argv[4]);
  let db = process.argv[2];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuco-browser-'));
  if (!db) {
    db = path.join(tmp, 'run.db');
    execFileSync('python3', [FIXTURE, db]);
  } else {
    // Work on a copy: the live-update test appends a candidate.
    const copy = path.join(tmp, 'run.db');
    fs.copyFileSync(db, copy);
    for (const ext of ['-wal', '-shm']) if (fs.existsSync(db + ext)) fs.copyFileSync(db + ext, copy + ext);
    db = copy;
  }
  const total = sql(db, 'SELECT count(*) FROM programs WHERE run_id=(SELECT max(id) FROM runs)')[0][0];
  const evaluated = sql(db, "SELECT count(*) FROM programs WHERE run_id=(SELECT max(id) FROM runs) AND status IN ('ok','failed','rejected')")[0][0];
  // The candidate to click: one whose code differs from its parent's (a
  // migrate copy, or a tuner's candidate that only repeats its parent's
  // directives, has nothing to show), preferably written by an LLM.
  const child = sql(db, "SELECT p.id, p.parent_id, c.prompt, c.response FROM programs p JOIN programs pp ON pp.id = p.parent_id LEFT JOIN llm_calls c ON c.id = p.llm_call_id WHERE p.code IS NOT NULL AND p.code IS NOT pp.code AND p.run_id=(SELECT max(id) FROM runs) ORDER BY c.id IS NULL, p.id DESC LIMIT 1")[0];

  const server = await startServe(db);
  const browser = await chromium.launch({ executablePath: process.env.CUCO_CHROMIUM || '/usr/bin/chromium', args: FLAGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(e.message));
    let dialogs = 0;
    page.on('dialog', (d) => { dialogs++; d.dismiss(); });
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 15000 });

    const nodes = await page.locator('#tree .node').count();
    check(`the tree shows every candidate (${nodes} of ${total})`, nodes === total && total > 0);
    // The bar line names the bar baseline of every size (or the first
    // baseline, for a database from before the bar).
    const bj = sql(db, 'SELECT baseline_json FROM runs WHERE id=(SELECT max(id) FROM runs)')[0][0];
    const barLine = await page.locator('#bar').textContent();
    // without one it speaks of the seed, never of a bar
    const bwant = bj ? Object.entries(JSON.parse(bj)).map(([sz, r]) => `${sz} ${r.bar || 'the first baseline'} `) : ['against the seed'];
    check(`the bar line names each size's bar (${barLine})`, bwant.every((w) => barLine.includes(w)) &&
      (bj || !/\bbar\b/.test(barLine)), bwant.join('|'));
    // The headline: what /api/run says (the confirmed figure with its
    // interval, else the search's labelled unconfirmed), at the top.
    const run = await (await fetch(server.url + 'api/run')).json();
    const hl = ((await page.locator('#headline').textContent()) || '').trim();
    check(`the headline is /api/run's (${hl})`, run.headline && run.headline.program_id > 0 &&
      hl === `Speedup: best #${run.headline.program_id}: ${run.headline.text}` &&
      /confirmed over \d+ rounds$|unconfirmed/.test(hl), JSON.stringify(run.headline));
    // Every tree node shows its id below it.
    const nids = await page.$$eval('#tree text.nid', (els) => els.map((e) => Number(e.textContent)).sort((a, b) => a - b));
    check(`the tree labels every node with its id (${nids.length})`, nids.length === nodes &&
      JSON.stringify(nids) === JSON.stringify(sql(db, 'SELECT id FROM programs WHERE run_id=(SELECT max(id) FROM runs) ORDER BY id').map((r) => r[0])));
    const ids = await page.$$eval('#tree .node', (els) => els.map((e) => Number(e.dataset.id)).sort((a, b) => a - b));
    const dbIds = sql(db, 'SELECT id FROM programs WHERE run_id=(SELECT max(id) FROM runs) ORDER BY id').map((r) => r[0]);
    check('the tree nodes are exactly the database ids', JSON.stringify(ids) === JSON.stringify(dbIds));
    const pts = await page.locator('#plot .pt').count();
    check(`the plot has one point per evaluated candidate (${pts} of ${evaluated})`, pts === evaluated && evaluated > 0);

    // What a screenshot would show: the plot's axis titles and its island
    // legend are there and visible, every panel has content, and a finished
    // run does not claim to be live.
    for (const sel of ['#plot-x-title', '#plot-y-title', '#plot-legend'])
      check(`the score plot shows ${sel}`, await page.locator(sel).isVisible());
    const nisl = sql(db, 'SELECT count(DISTINCT island) FROM programs WHERE run_id=(SELECT max(id) FROM runs) AND status IN (\'ok\',\'failed\',\'rejected\')')[0][0];
    const legend = await page.locator('#plot-legend .legend-item').allTextContents();
    check(`the legend names every island (${legend.join(', ')})`,
      legend.filter((t) => t.startsWith('island ')).length === nisl, `${nisl} islands`);
    for (const sel of ['#tree', '#plot', '#bydir', '#summary']) {
      const box = await page.locator(sel).boundingBox();
      const text = ((await page.locator(sel).textContent()) || '').trim();
      const inner = await page.locator(`${sel} svg, ${sel} p`).count();
      check(`panel ${sel} is not empty`, box && box.width > 50 && box.height > 10 && (text.length > 0 || inner > 0),
        JSON.stringify(box));
    }
    const fin = sql(db, 'SELECT finished_at IS NOT NULL FROM runs WHERE id=(SELECT max(id) FROM runs)')[0][0];
    const liveText = (await page.locator('#live').textContent()).trim();
    check(`the run's state is shown (${liveText})`, fin ? liveText !== 'live' : liveText === 'live');

    const bars = await page.locator('#bydir-svg .bar').count();
    const nok = sql(db, "SELECT count(*) FROM programs WHERE status='ok' AND run_id=(SELECT max(id) FROM runs)")[0][0];
    check(`the directive chart has bars (${bars})`, bars > 0 || nok === 0);

    await page.locator(`#tree .node[data-id="${child[0]}"]`).click();
    await page.waitForSelector('#detail-title', { timeout: 10000 });
    const diff = await page.locator('#diff').textContent();
    const expected = child ? `+++ program ${child[0]}` : '';
    check(`clicking candidate #${child[0]} shows its diff to parent #${child[1]}`,
      diff.includes(`--- program ${child[1]}`) && diff.includes(expected) &&
      (await page.locator('#diff .add, #diff .del').count()) > 0, diff.slice(0, 300));
    const title = await page.locator('#detail-title').textContent();
    check('the detail names the candidate', title.startsWith(`#${child[0]}:`), title);
    if (child[2]) {
      const prompt = await page.locator('#detail pre.prompt').textContent();
      const response = await page.locator('#detail pre.response').textContent();
      check("the detail shows the LLM's prompt and response, as text",
        prompt === child[2] && response === child[3], prompt.slice(0, 200));
    }
    check('database text never runs as script (no dialog)', dialogs === 0);

    const shot = path.join(ART, `main${process.env.CUCO_BROWSER_SHOT || ''}.png`);
    await page.screenshot({ path: shot });
    check(`screenshot of the main view kept (${path.relative(ROOT, shot)})`, fs.statSync(shot).size > 10000);

    // Filter by status: only the failed candidates stay at full opacity.
    const nfailed = sql(db, "SELECT count(*) FROM programs WHERE run_id=(SELECT max(id) FROM runs) AND status='failed'")[0][0];
    await page.selectOption('#f-status', 'failed');
    await page.waitForFunction((want) => document.querySelectorAll('#tree .node:not(.dim)').length === want, nfailed, { timeout: 5000 }).catch(() => {});
    const shown = await page.locator('#tree .node:not(.dim)').count();
    check(`the status filter keeps the ${nfailed} failed candidates`, shown === nfailed, `shown ${shown}`);
    await page.selectOption('#f-status', '');

    // Live update: a candidate written while the page is open appears.
    await page.evaluate(() => { window.__noReload = 1; });
    const added = Number(execFileSync('python3', [FIXTURE, db, '--add-candidate']).toString().trim());
    let appeared = true;
    try {
      await page.waitForSelector(`#tree .node[data-id="${added}"]`, { timeout: 10000 });
    } catch (e) { appeared = false; }
    check(`a candidate inserted while the page is open (#${added}) appears`, appeared);
    check('... without a reload', await page.evaluate(() => window.__noReload === 1));
    check('... and the plot gains its point', (await page.locator('#plot .pt').count()) === evaluated + 1);

    // A candidate that finishes while the page is open changes its mark.
    const running = sql(db, "SELECT id FROM programs WHERE status='running' AND run_id=(SELECT max(id) FROM runs) LIMIT 1");
    if (running.length) {
      const rid = running[0][0];
      execFileSync('python3', ['-c',
        'import sqlite3,sys,time;c=sqlite3.connect(sys.argv[1],timeout=10);' +
        "c.execute(\"UPDATE programs SET status='failed', stage='verify', error='late failure', finished_at=? WHERE id=?\", (time.time()+1e6, int(sys.argv[2])));c.commit()",
        db, String(rid)]);
      let changed = true;
      try {
        await page.waitForSelector(`#tree .node.failed[data-id="${rid}"]`, { timeout: 10000 });
      } catch (e) { changed = false; }
      check(`a running candidate (#${rid}) that fails meanwhile is redrawn as failed`, changed);
    }
    check('the UI logged no console error', errors.length === 0, errors.join('\n'));

    // The static report, with the network off.
    const report = path.join(ART, `report${process.env.CUCO_BROWSER_SHOT || ''}.html`);
    execFileSync(CUCO, ['report', db, '-o', report]);
    const ctx = await browser.newContext({ offline: true });
    const rp = await ctx.newPage();
    const rerr = [];
    const requests = [];
    rp.on('console', (m) => { if (m.type() === 'error') rerr.push(m.text()); });
    rp.on('pageerror', (e) => rerr.push(e.message));
    rp.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
    await rp.goto('file://' + report);
    check('the report renders with no console error', rerr.length === 0, rerr.join('\n'));
    check('the report loads nothing from the network', requests.length === 0, requests.join('\n'));
    const svgs = await rp.locator('svg').count();
    const calls = sql(db, 'SELECT count(*) FROM llm_calls WHERE run_id=(SELECT max(id) FROM runs)')[0][0];
    // Scores, lineage, directives, and the cost curve when an LLM was used.
    check(`the report has its figures (${svgs} SVG)`, svgs === 3 + (calls > 0 ? 1 : 0));
    const rnodes = await rp.locator('#lineage .node').count();
    check('the report tree has every candidate', rnodes === total + 1, `${rnodes}`);
    check('the report has no script at all', (await rp.evaluate(() => document.scripts.length)) === 0);
    check('the report shows the best diff', (await rp.locator('#best-diff pre.diff, #best-diff .note').count()) > 0);
    await rp.screenshot({ path: path.join(ART, `report${process.env.CUCO_BROWSER_SHOT || ''}.png`), fullPage: true });
    await ctx.close();
  } finally {
    await browser.close();
    server.proc.kill('SIGTERM');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(() => {
  console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
}, (e) => {
  console.log(`not ok ${n + 1} - browser test crashed`);
  console.log('# ' + String(e.stack || e).split('\n').join('\n# '));
  console.log(`1..${n + 1}`);
  process.exit(1);
});
