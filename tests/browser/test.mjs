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
function check(name, cond, why) {
  n++;
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

async function main() {
  fs.mkdirSync(ART, { recursive: true });
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
  const child = sql(db, 'SELECT id, parent_id FROM programs WHERE parent_id IS NOT NULL AND run_id=(SELECT max(id) FROM runs) ORDER BY id DESC LIMIT 1')[0];

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
    const ids = await page.$$eval('#tree .node', (els) => els.map((e) => Number(e.dataset.id)).sort((a, b) => a - b));
    const dbIds = sql(db, 'SELECT id FROM programs WHERE run_id=(SELECT max(id) FROM runs) ORDER BY id').map((r) => r[0]);
    check('the tree nodes are exactly the database ids', JSON.stringify(ids) === JSON.stringify(dbIds));
    const pts = await page.locator('#plot .pt').count();
    check(`the plot has one point per evaluated candidate (${pts} of ${evaluated})`, pts === evaluated && evaluated > 0);

    const bars = await page.locator('#bydir-svg .bar').count();
    const nvals = sql(db, "SELECT count(*) FROM (SELECT DISTINCT placement FROM programs WHERE status='ok' AND placement IS NOT NULL AND run_id=(SELECT max(id) FROM runs))")[0][0];
    check(`the directive chart has bars (${bars}, placement values with a score: ${nvals})`, bars >= nvals && nvals > 0);

    await page.locator(`#tree .node[data-id="${child[0]}"]`).click();
    await page.waitForSelector('#detail-title', { timeout: 10000 });
    const diff = await page.locator('#diff').textContent();
    const expected = child ? `+++ program ${child[0]}` : '';
    check(`clicking candidate #${child[0]} shows its diff to parent #${child[1]}`,
      diff.includes(`--- program ${child[1]}`) && diff.includes(expected) &&
      (await page.locator('#diff .add, #diff .del').count()) > 0, diff.slice(0, 300));
    const title = await page.locator('#detail-title').textContent();
    check('the detail names the candidate', title.startsWith(`#${child[0]}:`), title);
    check('database text never runs as script (no dialog)', dialogs === 0);

    await page.screenshot({ path: path.join(ART, 'main.png') });
    check('screenshot of the main view kept', fs.statSync(path.join(ART, 'main.png')).size > 10000);

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
    const report = path.join(ART, 'report.html');
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
    check(`the report has its figures (${svgs} SVG)`, svgs >= 4);
    const rnodes = await rp.locator('#lineage .node').count();
    check('the report tree has every candidate', rnodes === total + 1, `${rnodes}`);
    check('the report has no script at all', (await rp.evaluate(() => document.scripts.length)) === 0);
    check('the report shows the best diff', (await rp.locator('#best-diff pre.diff, #best-diff .note').count()) > 0);
    await rp.screenshot({ path: path.join(ART, 'report.png'), fullPage: true });
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
