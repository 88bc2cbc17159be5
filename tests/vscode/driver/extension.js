// End-to-end driver for the Kiwi extension, run inside a real VS Code (code-server) by
// tests/vscode/run.sh. It drives the editor through its public commands and writes every
// check to $KIWI_E2E_OUT as JSON: {"ok": bool, "checks": [{"name", "ok", "detail"}]}.
//
// Environment (from run.sh): KIWI_E2E_OUT, KIWI_E2E_PROJECT (the opened folder, a copy of
// fixtures/lsp with a .venv), KIWI_E2E_BIN (the kiwi binary the extension must use),
// KIWI_E2E_EXPECT_CODES (the diagnostic codes `kiwi check` reports for greet.md).
const vscode = require('vscode');
const fs = require('fs');
const path = require('path');
const cp = require('child_process');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, f, ms = 30000, every = 250) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await f();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(every);
  }
  throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
}

function withTimeout(p, ms, what) {
  return Promise.race([p, sleep(ms).then(() => { throw new Error(`${what}: no answer in ${ms} ms`); })]);
}

async function activate(context) {
  const out = process.env.KIWI_E2E_OUT;
  const proj = process.env.KIWI_E2E_PROJECT;
  const bin = process.env.KIWI_E2E_BIN;
  const expectCodes = (process.env.KIWI_E2E_EXPECT_CODES || '').split(',').filter(Boolean).sort();
  const result = { vscode: vscode.version, started: new Date().toISOString(), checks: [] };
  const write = () => fs.writeFileSync(out + '.tmp', JSON.stringify(result, null, 2));
  const check = async (name, f) => {
    const t0 = Date.now();
    try {
      const detail = await f();
      result.checks.push({ name, ok: true, ms: Date.now() - t0, detail });
    } catch (e) {
      result.checks.push({ name, ok: false, ms: Date.now() - t0, detail: String((e && e.stack) || e) });
    }
    write();
  };
  const assert = (cond, msg) => { if (!cond) throw new Error(msg); };
  const file = (rel) => vscode.Uri.file(path.join(proj, rel));
  // The output channel logs of this window: VS Code writes each output channel to a file.
  const logsRoot = path.dirname(context.logUri.fsPath);

  let api;
  await check('extension activates from the .vsix', async () => {
    const ext = vscode.extensions.getExtension('kiwi.kiwi');
    assert(ext, 'kiwi.kiwi is not installed');
    api = await ext.activate();
    const pj = ext.packageJSON;
    assert(api && typeof api.mcpServerDefinitions === 'function', 'the extension exports no API');
    const grammar = (pj.contributes.grammars || [])[0];
    assert(grammar && fs.existsSync(path.join(ext.extensionPath, grammar.path)), 'the injection grammar is not in the .vsix');
    assert((pj.contributes.mcpServerDefinitionProviders || []).some((p) => p.id === 'kiwi.mcp'), 'no mcpServerDefinitionProviders contribution');
    const b = api.binary();
    assert(b && b.path === bin, `the extension uses ${b && b.path}, expected ${bin}`);
    const client = await waitFor('the language client to run', () => { const c = api.client(); return c && c.isRunning() && c; });
    return { version: pj.version, binary: b, server: client.initializeResult && client.initializeResult.serverInfo };
  });

  await check('diagnostics on a directive (codes as kiwi check reports them)', async () => {
    const uri = file('.ai/directives/greet.md');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const diags = await waitFor('diagnostics on greet.md', () => {
      const d = vscode.languages.getDiagnostics(uri);
      return d.length >= expectCodes.length && d.length > 0 && d;
    });
    const codes = diags.map((d) => String(typeof d.code === 'object' ? d.code.value : d.code)).sort();
    assert(expectCodes.includes('K003'), `kiwi check gave ${expectCodes}, expected K003 among them`);
    assert(JSON.stringify(codes) === JSON.stringify(expectCodes), `VS Code shows ${codes}, kiwi check reports ${expectCodes}`);
    return diags.map((d) => ({ code: d.code, line: d.range.start.line, source: d.source, message: d.message }));
  });

  await check('hover on the ENV_CONFIG interpreter shows the project .venv python', async () => {
    const uri = file('.ai/tools/rt/py_rt.py');
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    const pos = doc.positionAt(doc.getText().indexOf('venv_python') + 2);
    const want = path.join(proj, '.venv', 'bin', 'python');
    const text = await waitFor('a hover naming the .venv interpreter', async () => {
      const hovers = await vscode.commands.executeCommand('vscode.executeHoverProvider', uri, pos);
      const t = (hovers || []).flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value))).join('\n');
      return t.includes(want) && t;
    }, 20000, 500);
    // Issue 15: one ordered list, the one used marked once, what the type looks for.
    assert(text.includes('`venv_python` looks for') && text.includes('Candidates, in the order tried'), `hover: ${text}`);
    assert((text.match(/\*\*used\*\*/g) || []).length === 1, `the candidate used is not marked once: ${text}`);
    const editor = vscode.window.activeTextEditor;
    editor.selection = new vscode.Selection(pos, pos);
    await vscode.commands.executeCommand('editor.action.showHover');
    await sleep(1500);
    const shot = await screenshot('interpreter-hover');
    return { text: text.slice(0, 1200), screenshot: shot };
  });

  await check('a SKILL.md gets the server: hover on its script shows the interpreter trail, ▶ Run on it (issue 28)', async () => {
    const uri = file('.agents/skills/report/SKILL.md');
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    const pos = doc.positionAt(doc.getText().indexOf('scripts/build.py') + 9);
    const want = path.join(proj, '.venv', 'bin', 'python');
    let last = '';
    const text = await waitFor('a hover on the script naming the .venv interpreter', async () => {
      const hovers = await vscode.commands.executeCommand('vscode.executeHoverProvider', uri, pos);
      const t = (hovers || []).flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value))).join('\n');
      last = t;
      return t.includes(want) && t;
    }, 20000, 500).catch((e) => { throw new Error(`${e.message}; the last hover: ${JSON.stringify(last.slice(0, 600))} (language ${doc.languageId})`); });
    assert(text.includes('a script of the skill `report`') && text.includes('KIWI_PYTHON'), `hover: ${text}`);
    const skillLenses = await waitFor('lenses on the SKILL.md', async () => {
      const l = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
      return l && l.length > 0 && l;
    });
    const titles = skillLenses.map((l) => l.command && l.command.title);
    assert(titles.includes('▶ Run') && titles.includes('▶ Run…'), `lenses: ${titles}`);
    // ▶ Run… asks for the script's arguments (an input box; here the line is given as the
    // box would give it): the server splits it as a shell splits words.
    const channel = () => { const f = findChannelLog(logsRoot, api.outputChannelName); return f ? fs.readFileSync(f, 'utf8').slice(-2000) : '(no channel log)'; };
    const plain = skillLenses.find((l) => l.command && l.command.title === '▶ Run').command.arguments[0];
    const p = await withTimeout(vscode.commands.executeCommand('kiwi.runTool', plain), 30000, 'the script run');
    assert(p && p.exit_code === 0 && p.stdout.includes('built []'), `result: ${JSON.stringify(p)}; the Kiwi channel: ${channel()}`);
    const ask = skillLenses.find((l) => l.command && l.command.title === '▶ Run…').command.arguments[0];
    assert(ask.askArgs === true, `▶ Run… argument: ${JSON.stringify(ask)}`);
    const r = await withTimeout(vscode.commands.executeCommand('kiwi.runTool', { ...ask, argsLine: "Q3 'north east'" }), 30000, 'the script run with arguments');
    assert(r && r.exit_code === 0 && r.stdout.includes("built ['Q3', 'north east']"), `result: ${JSON.stringify(r)}; the Kiwi channel: ${channel()}`);
    // The PEP 723 script: its hover says it runs through uv, and its ▶ Run runs it so.
    const inlinePos = doc.positionAt(doc.getText().indexOf('scripts/inline.py') + 9);
    const inline = await waitFor('a hover on the PEP 723 script', async () => {
      const hovers = await vscode.commands.executeCommand('vscode.executeHoverProvider', uri, inlinePos);
      const t = (hovers || []).flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value))).join('\n');
      return t.includes('uv run --script') && t.includes('PEP 723') && t;
    }, 20000, 500);
    const inlineLens = skillLenses.find((l) => l.command && l.command.title === '▶ Run' && String(l.command.arguments[0].path).endsWith('inline.py'));
    assert(inlineLens, `no ▶ Run on the PEP 723 script: ${titles}`);
    // Run through the LSP's command: uv runs it where VS Code's PATH has uv, else the reason
    // names what is missing. (code-server's extension host takes PATH from the login shell,
    // where the uv this suite installs under target/ is not: the Neovim suite runs it.)
    const u = await withTimeout(vscode.commands.executeCommand('kiwi.runTool', { ...inlineLens.command.arguments[0], args: ['Q4'] }), 60000, 'the PEP 723 script run');
    const ran = u && u.exit_code === 0 && u.stdout.includes("inline ['Q4']");
    // The reason is `kiwi run`'s: the script declares PEP 723 metadata and uv is not on PATH.
    const said = u && u.error && u.error.message.includes('PEP 723') && u.error.message.includes('`uv` is not on PATH') && u.exit_code === undefined;
    assert(ran || said, `result: ${JSON.stringify(u)}; PATH=${process.env.PATH}`);
    return { text: text.slice(0, 800), lenses: titles, stdout: r.stdout, inline: inline.slice(0, 300), inlineRun: ran ? u.stdout : u.error.message };
  });

  await check('▶ Run on HOST: the run goes to the environment the lens names, not the local machine', async () => {
    // No such host is configured: the server says so and runs nothing. The extension dropped
    // the lens's environment, and the tool ran here (exit 3).
    const r = await withTimeout(vscode.commands.executeCommand('kiwi.runTool', { id: 'text/fail', environment: 'ssh:kiwi-e2e-nohost' }), 30000, 'the run on a host');
    assert(r && r.error && r.error.message.includes('kiwi-e2e-nohost') && r.exit_code === undefined, `result: ${JSON.stringify(r)}`);
    return r.error.message;
  });

  let lenses;
  await check('code lenses on a tool: ▶ Run, ▶ Run… (with CONFIG_SCHEMA), ⚙ Environment', async () => {
    const uri = file('.ai/tools/text/echo.py');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    lenses = await waitFor('code lenses', async () => {
      const l = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
      return l && l.length && l;
    });
    const titles = lenses.map((l) => l.command && l.command.title);
    assert(JSON.stringify(titles) === JSON.stringify(['▶ Run', '▶ Run…', '⚙ Environment']), `titles: ${titles}`);
    const ask = lenses[1].command.arguments[0];
    assert(ask.ask === true && ask.schema && ask.schema.properties && ask.schema.properties.name, `▶ Run… arguments carry no schema: ${JSON.stringify(ask)}`);
    return lenses.map((l) => ({ title: l.command.title, command: l.command.command, arguments: l.command.arguments }));
  });

  await check('▶ Run executes the tool and its output reaches the Kiwi output channel', async () => {
    const run = lenses.find((l) => l.command.title === '▶ Run').command;
    const r = await withTimeout(vscode.commands.executeCommand(run.command, ...run.arguments), 60000, 'the run');
    assert(r && r.exit_code === 0 && r.stdout.includes('hello world'), `result: ${JSON.stringify(r)}`);
    // The channel's content, as VS Code stored it (not what the extension says it wrote).
    const log = await waitFor('"hello world" in the Kiwi output channel', () => {
      const f = findChannelLog(logsRoot, api.outputChannelName);
      const t = f && fs.readFileSync(f, 'utf8');
      return t && t.includes('line one\nhello world\n') && t.includes('✓ text/echo: exit 0') && { file: f, text: t };
    }, 15000, 500);
    return { exit_code: r.exit_code, stdout: r.stdout, channelFile: path.relative(logsRoot, log.file), channel: log.text };
  });

  await check('▶ Run… asks the parameters from CONFIG_SCHEMA (typed, defaults) and runs with them', async () => {
    const uri = file('.ai/tools/text/repeat.py');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const ls = await waitFor('lenses on repeat.py', async () => {
      const l = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
      return l && l.find((x) => x.command && x.command.title === '▶ Run…') && l;
    });
    const ask = ls.find((l) => l.command.title === '▶ Run…').command;
    let done = false;
    const running = vscode.commands.executeCommand(ask.command, ...ask.arguments).finally(() => { done = true; });
    // Accept each prompt as offered: the defaults ("kiwi", 2) and the first choice (true).
    for (let i = 0; i < 40 && !done; i++) {
      await sleep(400);
      if (!done) await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
    }
    const r = await withTimeout(running, 30000, 'the run with parameters');
    assert(r && r.exit_code === 0, `result: ${JSON.stringify(r)}`);
    assert(r.stdout.trim() === 'KIWI KIWI', `stdout ${JSON.stringify(r.stdout)}, expected "KIWI KIWI" (word=kiwi, times=2, shout=true)`);
    return { stdout: r.stdout };
  });

  await check('Kiwi: Run Tool with Parameters… from the palette, on the active editor', async () => {
    const uri = file('.ai/tools/text/echo.py');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    let done = false;
    const running = vscode.commands.executeCommand('kiwi.runToolWithParameters').finally(() => { done = true; });
    // echo's one parameter, `name`, is an optional string with no default: Enter leaves it unset.
    for (let i = 0; i < 30 && !done; i++) {
      await sleep(400);
      if (!done) await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
    }
    const r = await withTimeout(running, 30000, 'the run from the palette');
    assert(r && r.exit_code === 0 && r.stdout.includes('hello world'), `result: ${JSON.stringify(r)}`);
    return { stdout: r.stdout };
  });

  await check('▶ Run… cancelled at the first prompt runs nothing', async () => {
    const uri = file('.ai/tools/text/repeat.py');
    const ls = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
    const ask = ls.find((l) => l.command.title === '▶ Run…').command;
    const marker = path.join(proj, 'repeat.ran');
    fs.rmSync(marker, { force: true });
    let done = false;
    const running = vscode.commands.executeCommand(ask.command, ...ask.arguments).finally(() => { done = true; });
    for (let i = 0; i < 20 && !done; i++) {
      await sleep(400);
      if (!done) await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    }
    const r = await withTimeout(running, 10000, 'the cancelled run');
    assert(r === undefined, `expected no result, got ${JSON.stringify(r)}`);
    await sleep(1000);
    assert(!fs.existsSync(marker), 'the tool ran although the prompt was cancelled');
    return 'no run';
  });

  await check('a failing run gives its result (exit code) and does not throw', async () => {
    const r = await withTimeout(vscode.commands.executeCommand('kiwi.runTool', { id: 'text/fail' }), 30000, 'the failing run');
    assert(r && r.exit_code === 3 && r.stderr.includes('boom'), `result: ${JSON.stringify(r)}`);
    const f = findChannelLog(logsRoot, api.outputChannelName);
    const t = fs.readFileSync(f, 'utf8');
    assert(t.includes('[stderr] boom') && t.includes('✗ text/fail: exit 3'), 'the failure is not in the Kiwi output channel');
    return { exit_code: r.exit_code };
  });

  await check('⚙ Environment and ✓ Validate lenses', async () => {
    const envCmd = lenses.find((l) => l.command.title === '⚙ Environment').command;
    const env = await withTimeout(vscode.commands.executeCommand(envCmd.command, ...envCmd.arguments), 20000, 'the environment');
    assert(env && env.markdown.includes(path.join(proj, '.venv', 'bin', 'python')), `environment: ${JSON.stringify(env)}`);
    const uri = file('.ai/directives/greet.md');
    const dl = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
    const v = (dl || []).find((l) => l.command && l.command.title === '✓ Validate');
    assert(v, `no ✓ Validate lens: ${JSON.stringify((dl || []).map((l) => l.command && l.command.title))}`);
    const r = await withTimeout(vscode.commands.executeCommand(v.command.command, ...v.command.arguments), 20000, 'validate');
    assert(r && r.valid === false && r.diagnostics.some((d) => d.code === 'K003'), `validate: ${JSON.stringify(r)}`);
    return { validate: r.diagnostics.map((d) => d.code) };
  });

  await check('✓ Validate: the notification offers "Show Problems", which opens the Problems view', async () => {
    const cdp = process.env.KIWI_E2E_CDP;
    assert(cdp, 'no KIWI_E2E_CDP');
    await vscode.commands.executeCommand('workbench.action.closePanel');
    await vscode.commands.executeCommand('notifications.clearAll');
    await sleep(500);
    const uri = file('.ai/directives/greet.md');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const dl = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
    const v = (dl || []).find((l) => l.command && l.command.title === '✓ Validate');
    assert(v, 'no ✓ Validate lens');
    await withTimeout(vscode.commands.executeCommand(v.command.command, ...v.command.arguments), 20000, 'validate');
    // The notification as a person sees it: its text and buttons in the page.
    const find = `[...document.querySelectorAll('.notification-list-item')].filter((t) => t.innerText.includes('greet.md: '))`;
    let opened = false;
    const t0 = Date.now();
    const buttons = await waitFor('the validate notification', async () => {
      const b = await cdpEvaluate(cdp, `(() => {
        const items = ${find};
        return items.length ? [...items[0].querySelectorAll('.monaco-button')].map((x) => x.innerText.trim()) : null;
      })()`);
      if (!b && !opened && Date.now() - t0 > 4000) {
        opened = true;
        await vscode.commands.executeCommand('notifications.showList');
      }
      return b;
    }, 15000, 250);
    const shot = await screenshot('validate-notification');
    assert(buttons.includes('Show Problems'), `the notification's buttons: ${JSON.stringify(buttons)}`);
    await cdpEvaluate(cdp, `(() => {
      const b = [...${find}[0].querySelectorAll('.monaco-button')].find((x) => x.innerText.trim() === 'Show Problems');
      b.click();
      return true;
    })()`);
    const problems = await waitFor('the Problems view listing K003', () => cdpEvaluate(cdp, `(() => {
      const m = [...document.querySelectorAll('.markers-panel')].find((x) => x.offsetParent !== null);
      return m && m.innerText.includes('K003') ? m.innerText.slice(0, 400) : '';
    })()`), 10000, 250);
    await sleep(300);
    const shot2 = await screenshot('problems-view');
    await vscode.commands.executeCommand('workbench.action.closePanel');
    await vscode.commands.executeCommand('notifications.clearAll');
    return { buttons, problems, screenshots: [shot, shot2] };
  });

  await check('a runtime gets ⚙ Environment only (no ▶ Run of the runtime file itself)', async () => {
    const uri = file('.ai/tools/rt/py_rt.py');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const ls = await waitFor('lenses on the runtime', async () => {
      const l = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
      return l && l.length && l;
    });
    const titles = ls.map((l) => l.command && l.command.title);
    assert(JSON.stringify(titles) === JSON.stringify(['⚙ Environment']), `titles: ${titles}`);
    await vscode.commands.executeCommand('notifications.clearAll');
    await sleep(500);
    return { titles, screenshot: await screenshot('runtime-lenses') };
  });

  await check('⚙ Environment opens rendered and read-only: a markdown preview of a kiwi-env: document, never dirty', async () => {
    await vscode.commands.executeCommand('notifications.clearAll');
    // The tool alone beside the view, for the screenshot the docs show.
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('workbench.action.closeAuxiliaryBar');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(file('.ai/tools/text/echo.py')));
    const envCmd = lenses.find((l) => l.command.title === '⚙ Environment').command;
    await withTimeout(vscode.commands.executeCommand(envCmd.command, ...envCmd.arguments), 20000, 'the environment');
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'kiwi-env');
    assert(doc, 'no kiwi-env: document');
    assert(!doc.isUntitled && !doc.isDirty, `untitled ${doc.isUntitled}, dirty ${doc.isDirty}`);
    assert(doc.getText().includes(path.join(proj, '.venv', 'bin', 'python')), 'the view lacks the interpreter');
    // What is on screen: the rendered preview (a webview), not the markdown source.
    const tab = await waitFor('the markdown preview tab', () => {
      const t = vscode.window.tabGroups.activeTabGroup.activeTab;
      return t && t.input instanceof vscode.TabInputWebview && /markdown\.preview/.test(t.input.viewType) && t;
    }, 10000);
    const source = vscode.window.visibleTextEditors.some((e) => e.document.uri.scheme === 'kiwi-env');
    assert(!source, 'the markdown source is shown too');
    await sleep(4000); // the webview renders
    const shot = await screenshot('environment-view');
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    return { uri: doc.uri.toString(), tab: tab.label, viewType: tab.input.viewType, screenshot: shot };
  });

  /** The title of the quick input on screen (a prompt), or '' when none is. */
  const promptTitle = () => cdpEvaluate(process.env.KIWI_E2E_CDP, `(() => {
    const w = [...document.querySelectorAll('.quick-input-widget')].find((x) => x.style.display !== 'none' && x.offsetParent !== null);
    return w ? (w.querySelector('.quick-input-title') || {}).innerText || '?' : '';
  })()`);

  await check('▶ Run… asks the parameters in the schema\'s order (path, top, min_length)', async () => {
    const uri = file('.ai/tools/text/count.py');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const ls = await waitFor('lenses on count.py', async () => {
      const l = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
      return l && l.find((x) => x.command && x.command.title === '▶ Run…') && l;
    });
    const ask = ls.find((l) => l.command.title === '▶ Run…').command;
    const order = ask.arguments[0].order;
    assert(JSON.stringify(order) === JSON.stringify(['path', 'top', 'min_length']), `order ${JSON.stringify(order)}`);
    await vscode.commands.executeCommand('notifications.clearAll');
    const running = vscode.commands.executeCommand(ask.command, ...ask.arguments);
    const title = await waitFor('the first prompt', () => promptTitle(), 10000, 250);
    await sleep(300);
    const shot = await screenshot('run-ask-first-prompt');
    await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    const r = await withTimeout(running, 10000, 'the cancelled run');
    assert(title.includes('path (1/3)'), `first prompt: ${title}`);
    assert(r === undefined, `ran: ${JSON.stringify(r)}`);
    return { order, title, screenshot: shot };
  });

  await check('plain ▶ Run of a tool with a required parameter asks for it (and only it)', async () => {
    const uri = file('.ai/tools/text/count.py');
    const ls = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
    const run = ls.find((l) => l.command.title === '▶ Run').command;
    const marker = path.join(proj, 'count.ran');
    fs.rmSync(marker, { force: true });
    await waitFor('no prompt on screen', async () => (await promptTitle()) === '', 10000, 250);
    await vscode.commands.executeCommand('notifications.clearAll');
    const running = vscode.commands.executeCommand(run.command, ...run.arguments);
    const title = await waitFor('the prompt for path', async () => {
      const t = await promptTitle();
      return t.includes('text/count: path') && t;
    }, 10000, 250);
    await sleep(300);
    const shot = await screenshot('run-asks-missing');
    await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    const r = await withTimeout(running, 10000, 'the cancelled run');
    assert(title.includes('path (1/1)'), `prompt: ${title}`);
    assert(r === undefined && !fs.existsSync(marker), `ran: ${JSON.stringify(r)}`);
    return { title, screenshot: shot };
  });

  await check('▶ Run…: a path parameter gets a picker (Browse…, the project\'s files) and a typed path relative to the project', async () => {
    const cdp = process.env.KIWI_E2E_CDP;
    fs.mkdirSync(path.join(proj, 'notes'), { recursive: true });
    fs.writeFileSync(path.join(proj, 'notes', 'words.txt'), 'one two three four\n');
    const uri = file('.ai/tools/text/count.py');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const ls = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
    const ask = ls.find((l) => l.command.title === '▶ Run…').command;
    const marker = path.join(proj, 'count.ran');
    fs.rmSync(marker, { force: true });
    await waitFor('no prompt on screen', async () => (await promptTitle()) === '', 10000, 250);
    await vscode.commands.executeCommand('notifications.clearAll');
    let done = false;
    const running = vscode.commands.executeCommand(ask.command, ...ask.arguments).finally(() => { done = true; });
    const rows = `(() => {
      const w = [...document.querySelectorAll('.quick-input-widget')].find((x) => x.style.display !== 'none' && x.offsetParent !== null);
      return w ? [...w.querySelectorAll('.monaco-list-row')].map((r) => r.innerText.replace(/\\s+/g, ' ').trim()) : [];
    })()`;
    let items = [];
    try {
      await waitFor('the prompt for path', async () => (await promptTitle()).includes('path (1/3)'), 10000, 250);
      // The list is virtual: only the rows on screen are in the page, so the project's files
      // are seen as offered at all here, and words.txt once typed (below).
      items = await waitFor('a picker offering Browse… and the project\'s files', async () => {
        const r = await cdpEvaluate(cdp, rows);
        return r.some((x) => x.includes('Browse…')) && r.some((x) => x.includes('.ai/tools/text/count.py')) && r;
      }, 8000, 250);
    } catch (e) {
      items = await cdpEvaluate(cdp, rows).catch(() => []);
      await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
      await withTimeout(running, 10000, 'the cancelled run').catch(() => undefined);
      throw new Error(`${e.message}; the prompt offers ${JSON.stringify(items)}`);
    }
    // Type a path relative to the project, as a person would.
    await cdpEvaluate(cdp, `(() => {
      const w = [...document.querySelectorAll('.quick-input-widget')].find((x) => x.style.display !== 'none' && x.offsetParent !== null);
      const input = w.querySelector('.quick-input-box input');
      input.value = 'notes/words.txt';
      input.dispatchEvent(new Event('input', { bubbles: true }));
      return true;
    })()`);
    const typed = await waitFor('notes/words.txt offered once typed', async () => {
      const r = await cdpEvaluate(cdp, rows);
      return r.some((x) => x.includes('notes/words.txt')) && r;
    }, 8000, 250);
    const shot = await screenshot('run-path-picker');
    // Accept it, then the defaults of top and min_length.
    for (let i = 0; i < 30 && !done; i++) {
      await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
      await sleep(400);
    }
    const r = await withTimeout(running, 30000, 'the run');
    assert(r && r.exit_code === 0 && r.stdout.trim().split('\n')[0] === '4', `result: ${JSON.stringify(r)}`);
    const ran = JSON.parse(fs.readFileSync(marker, 'utf8'));
    assert(ran.path === 'notes/words.txt', `the tool got ${JSON.stringify(ran)}`);
    return { items, typed, params: ran, screenshot: shot };
  });

  await check('▶ Run… checks each answer against the schema before running: 0 for minimum 1 is refused in the prompt', async () => {
    const cdp = process.env.KIWI_E2E_CDP;
    const uri = file('.ai/tools/text/banner.py');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const ls = await waitFor('lenses on banner.py', async () => {
      const l = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', uri);
      return l && l.find((x) => x.command && x.command.title === '▶ Run…') && l;
    });
    const ask = ls.find((l) => l.command.title === '▶ Run…').command;
    await waitFor('no prompt on screen', async () => (await promptTitle()) === '', 10000, 250);
    await vscode.commands.executeCommand('notifications.clearAll');
    let done = false;
    const running = vscode.commands.executeCommand(ask.command, ...ask.arguments).finally(() => { done = true; });
    const type = (text) => cdpEvaluate(cdp, `(() => {
      const w = [...document.querySelectorAll('.quick-input-widget')].find((x) => x.style.display !== 'none' && x.offsetParent !== null);
      const input = w.querySelector('.quick-input-box input');
      input.value = ${JSON.stringify(text)};
      input.dispatchEvent(new Event('input', { bubbles: true }));
      return true;
    })()`);
    const message = () => cdpEvaluate(cdp, `(() => {
      const w = [...document.querySelectorAll('.quick-input-widget')].find((x) => x.style.display !== 'none' && x.offsetParent !== null);
      const m = w && w.querySelector('.quick-input-message');
      return m ? m.innerText : '';
    })()`);
    const accept = () => vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
    let refusal = '';
    let still = '';
    let shot;
    try {
      await waitFor('the prompt for text', async () => (await promptTitle()).includes('text (1/3)'), 10000, 250);
      await type('hi');
      await sleep(300);
      await accept();
      await waitFor('the prompt for style', async () => (await promptTitle()).includes('style (2/3)'), 10000, 250);
      await accept(); // the default, plain
      await waitFor('the prompt for width', async () => (await promptTitle()).includes('width (3/3)'), 10000, 250);
      await type('0');
      refusal = await waitFor('the schema\'s refusal of 0 under the prompt', async () => {
        const m = await message();
        return m.includes('minimum') && m;
      }, 10000, 250);
      shot = await screenshot('run-prompt-refuses-minimum');
      await accept();
      await sleep(800);
      still = await promptTitle();
      assert(!done && still.includes('width (3/3)'), `0 was accepted: prompt now ${JSON.stringify(still)}, done ${done}`);
      await type('3');
      await sleep(800);
      await accept();
    } catch (e) {
      await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
      await withTimeout(running, 10000, 'the cancelled run').catch(() => undefined);
      throw e;
    }
    const r = await withTimeout(running, 30000, 'the run');
    assert(r && r.exit_code === 0 && r.stdout.includes('banner: hi'), `result: ${JSON.stringify(r)}`);
    assert(r.stdout.split('\n')[0] === '', `width 3 of plain: ${JSON.stringify(r.stdout)}`);
    return { refusal, still, stdout: r.stdout, screenshot: shot };
  });

  await check('renaming a tool of a read-only extra space is refused with kiwi\'s message; nothing moves', async () => {
    const extra = process.env.KIWI_E2E_EXTRA;
    assert(extra, 'no KIWI_E2E_EXTRA');
    const u = file('.ai/directives/uses_extra.md');
    const doc = await vscode.workspace.openTextDocument(u);
    await vscode.window.showTextDocument(doc);
    const at = doc.positionAt(doc.getText().indexOf('shared/shout') + 3);
    let refusal;
    await waitFor('the rename refused', async () => {
      try {
        const edit = await vscode.commands.executeCommand('vscode.executeDocumentRenameProvider', u, at, 'shared/loud');
        throw new Error(`a rename edit was offered: ${JSON.stringify(edit && edit.entries())}`);
      } catch (e) {
        refusal = String((e && e.message) || e);
        if (refusal.startsWith('a rename edit')) throw e;
        return refusal.includes('read-only');
      }
    }, 20000, 500);
    assert(fs.existsSync(path.join(extra, '.ai', 'tools', 'shared', 'shout.yaml')), 'the tool\'s file moved');
    assert(!fs.existsSync(path.join(extra, '.ai', 'tools', 'shared', 'loud.yaml')), 'a loud.yaml appeared');
    assert(!doc.isDirty && doc.getText().includes('item_id="shared/shout"'), 'the directive changed');
    return { refusal };
  });

  await check('a read-only space\'s file opened from the project: its problems are hints (not in Problems), its references resolve in the project', async () => {
    const extra = process.env.KIWI_E2E_EXTRA;
    const u = vscode.Uri.file(path.join(extra, '.ai', 'tools', 'shared', 'pyish.yaml'));
    const doc = await vscode.workspace.openTextDocument(u);
    await vscode.window.showTextDocument(doc);
    const diags = await waitFor('its diagnostics', () => {
      const d = vscode.languages.getDiagnostics(u);
      return d.length > 0 && d;
    }, 20000, 250);
    const seen = diags.map((d) => ({ severity: d.severity, message: d.message }));
    assert(diags.every((d) => d.severity === vscode.DiagnosticSeverity.Hint && d.message.includes('read-only')), `diagnostics: ${JSON.stringify(seen)}`);
    const at = doc.positionAt(doc.getText().indexOf('rt/py_rt') + 3);
    const hovers = await vscode.commands.executeCommand('vscode.executeHoverProvider', u, at);
    const text = (hovers || []).flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value))).join('\n');
    assert(text.includes(path.join(proj, '.ai', 'tools', 'rt', 'py_rt.py')), `hover: ${text}`);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    return { diagnostics: seen };
  });

  await check('rename, references and formatting through VS Code\'s own providers', async () => {
    const g = file('.ai/directives/greet.md');
    const echo = file('.ai/tools/text/echo.py');
    const doc = await vscode.workspace.openTextDocument(g);
    const editor = await vscode.window.showTextDocument(doc);
    const at = doc.positionAt(doc.getText().indexOf('text/echo') + 2);
    // References of the tool, asked from its own file: the directive that calls it.
    const refs = await vscode.commands.executeCommand('vscode.executeReferenceProvider', echo, new vscode.Position(0, 0));
    assert((refs || []).some((l) => l.uri.fsPath === g.fsPath), `references: ${JSON.stringify(refs)}`);
    // Rename the id from the call: the call (and the tool's file) change.
    const edit = await vscode.commands.executeCommand('vscode.executeDocumentRenameProvider', g, at, 'text/say');
    assert(edit, 'no rename edit');
    const onGreet = edit.entries().filter(([u]) => u.fsPath === g.fsPath).flatMap(([, es]) => es);
    assert(onGreet.some((e) => e.newText.includes('text/say')), `rename edit: ${JSON.stringify(edit.entries())}`);
    // Formatting: a badly indented step is indented again, nothing else changes.
    const original = doc.getText();
    const line = doc.lineAt(doc.positionAt(original.indexOf('<step name="say">')).line);
    await editor.edit((e) => e.replace(line.range, '<step name="say">'));
    const edits = await vscode.commands.executeCommand('vscode.executeFormatDocumentProvider', g, { tabSize: 2, insertSpaces: true });
    assert(edits && edits.length > 0, 'no formatting edits');
    const we = new vscode.WorkspaceEdit();
    we.set(g, edits);
    await vscode.workspace.applyEdit(we);
    const formatted = doc.getText();
    await vscode.commands.executeCommand('workbench.action.files.revert');
    assert(formatted === original, `formatted:\n${formatted}`);
    // What a person sees: the references peek of the tool.
    const ed = await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(echo));
    ed.selection = new vscode.Selection(0, 0, 0, 0);
    await vscode.commands.executeCommand('editor.action.referenceSearch.trigger');
    await sleep(1500);
    const shot = await screenshot('references-peek');
    await vscode.commands.executeCommand('closeReferenceSearch');
    return { references: refs.map((l) => `${path.relative(proj, l.uri.fsPath)}:${l.range.start.line + 1}`), renameEdits: onGreet.length, formatEdits: edits.length, screenshot: shot };
  });

  await check('a skill: references from a mention reach AGENTS.md; rename moves its folder and rewrites every mention (issue 28)', async () => {
    const review = file('.agents/skills/review/SKILL.md');
    const doc = await vscode.workspace.openTextDocument(review);
    await vscode.window.showTextDocument(doc);
    const at = doc.positionAt(doc.getText().indexOf('`/deploy`') + 3);
    const refs = await waitFor('the references of the skill `deploy`', async () => {
      const r = await vscode.commands.executeCommand('vscode.executeReferenceProvider', review, at);
      return r && r.length >= 5 && r;
    }, 20000, 500);
    const where = refs.map((l) => `${path.relative(proj, l.uri.fsPath)}:${l.range.start.line + 1}`).sort();
    const want = ['.agents/skills/deploy/SKILL.md:2', '.agents/skills/deploy/SKILL.md:5', '.agents/skills/review/SKILL.md:3', '.agents/skills/review/SKILL.md:5', 'AGENTS.md:1'];
    assert(JSON.stringify(where) === JSON.stringify(want), `references: ${JSON.stringify(where)}`);
    const edit = await withTimeout(vscode.commands.executeCommand('vscode.executeDocumentRenameProvider', review, at, 'ship'), 20000, 'the rename provider');
    assert(edit, 'no rename edit');
    const applied = await withTimeout(vscode.workspace.applyEdit(edit), 20000, 'applyEdit of the rename');
    assert(applied, `VS Code did not apply the rename: ${JSON.stringify(edit).slice(0, 2000)}`);
    const skills = path.join(proj, '.agents', 'skills');
    await waitFor('the folder moved to ship/', () => fs.existsSync(path.join(skills, 'ship', 'SKILL.md')) && !fs.existsSync(path.join(skills, 'deploy')), 10000, 250);
    // What VS Code holds for each file, then what it saved.
    const settled = async (rel, want) => {
      const d = await vscode.workspace.openTextDocument(vscode.Uri.file(path.join(proj, rel)));
      const t = d.getText();
      assert(want(t), `${rel} in VS Code: ${t}`);
      if (d.isDirty) await withTimeout(d.save(), 20000, `saving ${rel}`);
      const disk = await waitFor(`${rel} saved`, () => { const x = fs.readFileSync(path.join(proj, rel), 'utf8'); return want(x) && x; }, 10000, 250)
        .catch(() => fs.readFileSync(path.join(proj, rel), 'utf8'));
      assert(want(disk), `${rel} on disk: ${disk}`);
    };
    await settled('.agents/skills/ship/SKILL.md', (t) => t.includes('name: ship\n') && t.includes('`/ship prod`'));
    await settled('.agents/skills/review/SKILL.md', (t) => t.includes('hand over to `/ship`') && t.includes('(../ship/SKILL.md)'));
    await settled('AGENTS.md', (t) => t === 'Skills: `ship` ships, `review` checks.\n');
    // Again, started on the mention in AGENTS.md (the server is started for it too).
    const agents = file('AGENTS.md');
    const adoc = await vscode.workspace.openTextDocument(agents);
    await vscode.window.showTextDocument(adoc);
    const onShip = adoc.positionAt(adoc.getText().indexOf('`ship`') + 2);
    const again = await waitFor('a rename edit from AGENTS.md', async () => {
      try {
        return await vscode.commands.executeCommand('vscode.executeDocumentRenameProvider', agents, onShip, 'deliver');
      } catch (e) {
        return false;
      }
    }, 20000, 500);
    const appliedAgain = await withTimeout(vscode.workspace.applyEdit(again), 20000, 'applyEdit of the rename from AGENTS.md');
    assert(appliedAgain, `VS Code did not apply the rename from AGENTS.md: ${JSON.stringify(again).slice(0, 2000)}`);
    await waitFor('the folder moved to deliver/', () => fs.existsSync(path.join(skills, 'deliver', 'SKILL.md')) && !fs.existsSync(path.join(skills, 'ship')), 10000, 250);
    await settled('.agents/skills/deliver/SKILL.md', (t) => t.includes('name: deliver\n') && t.includes('`/deliver prod`'));
    await settled('AGENTS.md', (t) => t === 'Skills: `deliver` ships, `review` checks.\n');
    return { references: where, renamed: fs.readdirSync(skills).sort() };
  });

  await check('a custom agent (.github/agents/*.agent.md) gets the server: its unknown target is S821, hover on tools (issue 28, item 8)', async () => {
    const uri = file('.github/agents/plan.agent.md');
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    const diags = await waitFor('S821 on the agent file', () => {
      const d = vscode.languages.getDiagnostics(uri);
      return d.some((x) => String(x.code && (x.code.value || x.code)) === 'S821') && d;
    }, 20000, 250);
    const pos = doc.positionAt(doc.getText().indexOf('tools:') + 1);
    const text = await waitFor('a hover on tools', async () => {
      const hovers = await vscode.commands.executeCommand('vscode.executeHoverProvider', uri, pos);
      const t = (hovers || []).flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value))).join('\n');
      return t.includes('VS Code and GitHub Copilot') && t;
    }, 20000, 500);
    return { language: doc.languageId, diagnostics: diags.map((d) => `${d.code && (d.code.value || d.code)} ${d.message}`), hover: text.slice(0, 300) };
  });

  await check('Kiwi: Initialize User Space (kiwi.init) writes the user space', async () => {
    const all = await vscode.commands.getCommands(true);
    assert(all.includes('kiwi.init'), 'kiwi.init is not a command');
    const r = await withTimeout(vscode.commands.executeCommand('kiwi.init'), 20000, 'kiwi.init');
    const user = process.env.KIWI_USERSPACE_DIR;
    assert(r && Array.isArray(r.written) && r.written.includes('config.yaml'), `init: ${JSON.stringify(r)}`);
    assert(user && fs.existsSync(path.join(user, 'config.yaml')), `no config.yaml in ${user}`);
    return { written: r.written.length };
  });

  await check('Cancel on the progress notification (clicked in Chromium) stops the run', async () => {
    const cdp = process.env.KIWI_E2E_CDP;
    assert(cdp, 'no KIWI_E2E_CDP');
    const t0 = Date.now();
    const running = vscode.commands.executeCommand('kiwi.runTool', { id: 'text/slow' });
    await waitFor('"started" in the Kiwi output channel', () => {
      const f = findChannelLog(logsRoot, api.outputChannelName);
      return f && fs.readFileSync(f, 'utf8').includes('▶ text/slow\nstarted\n');
    }, 20000, 250);
    // Click the notification's Cancel button in the page, as a user would.
    // Earlier checks leave notifications on screen (the failing run's error): VS Code may then
    // keep the progress in the notification center instead of a toast, so the earlier ones
    // are cleared first and the center is searched too.
    await vscode.commands.executeCommand('notifications.clearAll');
    await sleep(1500);
    const progressShot = await screenshot('progress-elapsed');
    let opened = false;
    const clicked = await waitFor('the Cancel button of the progress notification', async () => {
      const found = await cdpEvaluate(cdp, `(() => {
        const items = [...document.querySelectorAll('.notification-list-item')].filter((t) => t.innerText.includes('Kiwi: running text/slow'));
        if (items.length) window.__kiwiProgressText = items[0].innerText;
        for (const item of items) {
          const b = [...item.querySelectorAll('.monaco-button')].find((x) => x.innerText.trim() === 'Cancel');
          if (b) { b.click(); return true; }
        }
        return false;
      })()`);
      if (!found && !opened && Date.now() - t0 > 5000) {
        opened = true;
        await vscode.commands.executeCommand('notifications.showList');
      }
      return found;
    }, 20000, 500);
    const progressText = await cdpEvaluate(cdp, 'window.__kiwiProgressText || ""');
    const r = await withTimeout(running, 20000, 'the cancelled run');
    // The notification shows the elapsed time, not the tool's last output line.
    assert(/\d+ s — output in the Kiwi channel/.test(progressText) && !progressText.includes('started'), `progress: ${JSON.stringify(progressText)}`);
    const ms = Date.now() - t0;
    assert(r && (r.cancelled === true || (r.error && r.error.kind === 'cancelled')), `result: ${JSON.stringify(r)}`);
    assert(ms < 40000, `took ${ms} ms (the tool sleeps 60 s)`);
    const f = findChannelLog(logsRoot, api.outputChannelName);
    const t = fs.readFileSync(f, 'utf8');
    assert(/✗ text\/slow: (cancelled|.*failed \(cancelled\))/.test(t), 'the cancellation is not in the Kiwi output channel');
    return { clicked, ms, cancelled: r.cancelled, exit_code: r.exit_code, progressText, screenshot: progressShot };
  });

  await check('MCP server definition: the language server\'s agent endpoint (kiwi mcp --attach --socket), and it answers initialize', async () => {
    const defs = await api.mcpServerDefinitions();
    assert(defs.length === 1, `${defs.length} definitions`);
    const d = defs[0];
    assert(d instanceof vscode.McpStdioServerDefinition, 'not a McpStdioServerDefinition');
    assert(d.command === bin, `command ${d.command}`);
    const socket = api.agentSocket();
    assert(socket && fs.existsSync(socket), `no agent endpoint: ${socket}`);
    assert((fs.statSync(socket).mode & 0o777) === 0o600, `socket mode ${(fs.statSync(socket).mode & 0o777).toString(8)}`);
    assert(JSON.stringify(d.args) === JSON.stringify(['mcp', '--attach', '--socket', socket]), `args ${JSON.stringify(d.args)}`);
    assert(api.mcpProviderRegistered(), 'vscode.lm.registerMcpServerDefinitionProvider was not called');
    // Start the definition as the editor would and do the MCP handshake.
    const answer = await mcpInitialize(d);
    assert(answer.result && answer.result.serverInfo && answer.result.capabilities.tools, `initialize: ${JSON.stringify(answer)}`);
    return { label: d.label, command: d.command, args: d.args, serverInfo: answer.result.serverInfo };
  });

  await check('VS Code lists the Kiwi MCP server (vscode.lm.mcpServerDefinitions)', async () => {
    // A proposed API: run.sh starts code-server with --enable-proposed-api for this driver.
    assert(vscode.lm && 'mcpServerDefinitions' in vscode.lm, 'this VS Code has no vscode.lm.mcpServerDefinitions');
    const listed = await waitFor('Kiwi among the editor\'s MCP servers, attached', () => {
      const l = vscode.lm.mcpServerDefinitions || [];
      return l.find((d) => d.label === 'Kiwi' && (d.args || []).includes('--attach'));
    }, 30000, 500);
    assert(listed.command === bin, `command ${listed.command}`);
    assert(JSON.stringify(listed.args) === JSON.stringify(['mcp', '--attach', '--socket', api.agentSocket()]), `args ${JSON.stringify(listed.args)}`);
    return { all: vscode.lm.mcpServerDefinitions.map((d) => ({ label: d.label, command: d.command, args: d.args })) };
  });

  await check('the agent (through the registered endpoint) sees an unsaved edit and the item under the cursor', async () => {
    const [d] = await api.mcpServerDefinitions();
    const file = path.join(proj, '.ai/tools/text/echo.py');
    const doc = await vscode.workspace.openTextDocument(file);
    const editor = await vscode.window.showTextDocument(doc);
    const marker = 'UNSAVED_AGENT_4711';
    const edit = new vscode.WorkspaceEdit();
    edit.insert(doc.uri, new vscode.Position(0, 0), `# ${marker}\n`);
    assert(await vscode.workspace.applyEdit(edit), 'the edit was not applied');
    editor.selection = new vscode.Selection(0, 3, 0, 3);
    assert(doc.isDirty && !fs.readFileSync(file, 'utf8').includes(marker), 'the edit is on disk');
    const s = await mcpSession(d);
    try {
      const loaded = await waitFor('the unsaved text in load', async () => {
        const r = await s.request('tools/call', { name: 'load', arguments: { item_type: 'tool', item_id: 'text/echo' } });
        const c = r.result && r.result.structuredContent;
        return c && String(c.content || '').includes(marker) ? c : undefined;
      }, 15000, 500);
      const active = await waitFor('the cursor in kiwi://editor/active', async () => {
        const r = await s.request('resources/read', { uri: 'kiwi://editor/active' });
        const v = JSON.parse(r.result.contents[0].text);
        // The cursor reaches the server 150 ms after it moves (the extension's debounce); until
        // then the resource shows the position the server last had, so wait for the new one.
        return v.active && v.active.id === 'text/echo' && v.active.unsaved_changes && (v.active.line_text || '').includes(marker) ? v : undefined;
      }, 15000, 500);
      assert(active.active.position && active.active.position.line === 0, `position ${JSON.stringify(active.active.position)}`);
      return { content_head: String(loaded.content).split('\n')[0], active: active.active.id, diagnostics: active.diagnostics.length };
    } finally {
      s.close();
      await vscode.commands.executeCommand('workbench.action.files.revert');
    }
  });

  await check('a run started by the agent shows in the Kiwi output channel and is cancelled from the notification', async () => {
    const cdp = process.env.KIWI_E2E_CDP;
    assert(cdp, 'no KIWI_E2E_CDP');
    const [d] = await api.mcpServerDefinitions();
    const s = await mcpSession(d);
    try {
      await vscode.commands.executeCommand('notifications.clearAll');
      const t0 = Date.now();
      const running = s.request('tools/call', { name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'text/slow' } }, 60000);
      await waitFor('the agent\'s run in the Kiwi output channel', () => {
        const f = findChannelLog(logsRoot, api.outputChannelName);
        return f && fs.readFileSync(f, 'utf8').includes('▶ Agent: running text/slow\nstarted\n');
      }, 20000, 250);
      await sleep(1500);
      const shot = await screenshot('agent-run');
      let opened = false;
      await waitFor('the Cancel button of the agent run\'s notification', async () => {
        const found = await cdpEvaluate(cdp, `(() => {
          const items = [...document.querySelectorAll('.notification-list-item')].filter((t) => t.innerText.includes('Kiwi: Agent: running text/slow'));
          for (const item of items) {
            const b = [...item.querySelectorAll('.monaco-button')].find((x) => x.innerText.trim() === 'Cancel');
            if (b) { b.click(); return true; }
          }
          return false;
        })()`);
        if (!found && !opened && Date.now() - t0 > 5000) {
          opened = true;
          await vscode.commands.executeCommand('notifications.showList');
        }
        return found;
      }, 20000, 500);
      const r = await withTimeout(running, 20000, 'the agent\'s cancelled run');
      const ms = Date.now() - t0;
      assert(r.result && r.result.isError === true && /cancel/i.test(JSON.stringify(r.result.structuredContent)), `result: ${JSON.stringify(r).slice(0, 400)}`);
      assert(ms < 40000, `took ${ms} ms (the tool sleeps 60 s)`);
      // The progress's end follows the agent's answer (the channel's file is written a little later).
      await waitFor('the cancellation in the Kiwi output channel', () =>
        fs.readFileSync(findChannelLog(logsRoot, api.outputChannelName), 'utf8').includes('✗ Agent: running text/slow: cancelled'), 10000, 250);
      return { ms, screenshot: shot };
    } finally {
      s.close();
    }
  });

  // Last: it stops the language server.
  await check('kiwi.server.path with no binary there: a clear error, no MCP server, commands say why', async () => {
    await vscode.workspace.getConfiguration('kiwi').update('server.path', '/nonexistent/kiwi', vscode.ConfigurationTarget.Workspace);
    const err = await waitFor('the start error', () => api.startError(), 20000);
    assert(err.includes('/nonexistent/kiwi') && err.includes('no executable file'), err);
    assert(api.mcpServerDefinitions().length === 0, 'MCP definitions offered with no binary');
    const r = await withTimeout(vscode.commands.executeCommand('kiwi.runTool', { id: 'text/echo' }), 10000, 'kiwi.runTool');
    assert(r === undefined, `kiwi.runTool gave ${JSON.stringify(r)}`);
    return err;
  });

  result.ok = result.checks.length > 0 && result.checks.every((c) => c.ok);
  result.finished = new Date().toISOString();
  write();
  fs.renameSync(out + '.tmp', out);
}

/** The newest file VS Code keeps for output channel `name` under this window's logs. */
function findChannelLog(root, name) {
  const found = [];
  const walk = (dir, depth) => {
    let entries = [];
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && depth < 3) walk(p, depth + 1);
      else if (e.isFile() && /^output_logging_/.test(path.basename(dir)) && e.name.replace(/^\d+-/, '') === `${name}.log`) found.push(p);
    }
  };
  walk(root, 0);
  found.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  return found[0];
}

/** Evaluates an expression in the code-server page through Chromium's DevTools protocol. */
/** A PNG of the page (Chromium's DevTools) in KIWI_E2E_SHOTS; its path, or why not. */
async function screenshot(name) {
  const dir = process.env.KIWI_E2E_SHOTS;
  const cdp = process.env.KIWI_E2E_CDP;
  if (!dir || !cdp) return 'no KIWI_E2E_SHOTS';
  try {
    const data = await cdpCall(cdp, 'Page.captureScreenshot', { format: 'png' });
    fs.mkdirSync(dir, { recursive: true });
    const f = path.join(dir, `${name}.png`);
    fs.writeFileSync(f, Buffer.from(data.data, 'base64'));
    return f;
  } catch (e) {
    return `no screenshot: ${e.message}`;
  }
}

/** One DevTools call on the page. */
async function cdpCall(cdp, method, params) {
  const pages = await (await fetch(`${cdp}/json/list`)).json();
  const page = pages.find((p) => p.type === 'page' && p.webSocketDebuggerUrl);
  if (!page) throw new Error('no page in Chromium');
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(page.webSocketDebuggerUrl);
    const timer = setTimeout(() => { ws.close(); reject(new Error('no answer from Chromium')); }, 10000);
    ws.onerror = (e) => { clearTimeout(timer); reject(new Error(`DevTools: ${e.message || e.type}`)); };
    ws.onopen = () => ws.send(JSON.stringify({ id: 1, method, params }));
    ws.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      if (msg.id !== 1) return;
      clearTimeout(timer);
      ws.close();
      if (msg.error) reject(new Error(JSON.stringify(msg.error)));
      else resolve(msg.result);
    };
  });
}

async function cdpEvaluate(cdp, expression) {
  const pages = await (await fetch(`${cdp}/json/list`)).json();
  const page = pages.find((p) => p.type === 'page' && p.webSocketDebuggerUrl);
  if (!page) throw new Error('no page in Chromium');
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(page.webSocketDebuggerUrl);
    const timer = setTimeout(() => { ws.close(); reject(new Error('no answer from Chromium')); }, 5000);
    ws.onerror = (e) => { clearTimeout(timer); reject(new Error(`DevTools: ${e.message || e.type}`)); };
    ws.onopen = () => ws.send(JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression, returnByValue: true } }));
    ws.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      if (msg.id !== 1) return;
      clearTimeout(timer);
      ws.close();
      if (msg.error || msg.result.exceptionDetails) reject(new Error(JSON.stringify(msg.error || msg.result.exceptionDetails)));
      else resolve(msg.result.result.value);
    };
  });
}

/** Spawns a McpStdioServerDefinition and sends `initialize`; resolves with the answer. */
function mcpInitialize(def) {
  return new Promise((resolve, reject) => {
    const p = cp.spawn(def.command, def.args, { cwd: def.cwd && def.cwd.fsPath, stdio: ['pipe', 'pipe', 'ignore'] });
    let buf = '';
    const timer = setTimeout(() => { p.kill(); reject(new Error('kiwi mcp did not answer initialize in 15 s')); }, 15000);
    p.on('error', (e) => { clearTimeout(timer); reject(e); });
    p.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        p.kill();
        try { resolve(JSON.parse(buf.slice(0, nl))); } catch (e) { reject(e); }
      }
    });
    p.stdin.write(JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'kiwi-vscode-e2e', version: '0' } },
    }) + '\n');
  });
}

/** An MCP session over a definition's process (newline-delimited JSON-RPC), initialized. */
async function mcpSession(def) {
  const p = cp.spawn(def.command, def.args, { cwd: def.cwd && def.cwd.fsPath, stdio: ['pipe', 'pipe', 'ignore'] });
  const pending = new Map();
  let buf = '';
  let n = 0;
  p.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let m;
      try { m = JSON.parse(line); } catch { continue; }
      if (m.id !== undefined && pending.has(m.id)) {
        pending.get(m.id)(m);
        pending.delete(m.id);
      }
    }
  });
  const send = (m) => p.stdin.write(JSON.stringify(m) + '\n');
  const request = (method, params, ms = 15000) => withTimeout(new Promise((resolve) => {
    const id = ++n;
    pending.set(id, resolve);
    send({ jsonrpc: '2.0', id, method, params });
  }), ms, `MCP ${method}`);
  await request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'kiwi-vscode-e2e', version: '0' } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { request, close: () => { p.stdin.end(); setTimeout(() => p.kill(), 2000); } };
}

function deactivate() {}
module.exports = { activate, deactivate };
