// The Kiwi extension: `kiwi lsp` for files under .ai/, the lens commands with progress and
// output, and the language server's attached MCP endpoint (`kiwi mcp --attach`) offered to the
// editor's agent: it sees the unsaved buffers and the item under the cursor, and its runs show
// here like the author's own.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
} from 'vscode-languageclient/node';
import { Binary, BinaryNotFound, findKiwi } from './binary';
import { askParameters, CheckValue, missingRequired } from './parameters';

// The server's commands (server/kernel/src/ide/mod.rs). vscode-languageclient registers them
// as VS Code commands; the middleware below adds the editor side (prompts, progress, output).
const CMD_RUN_TOOL = 'kiwi.runTool';
const CMD_SHOW_ENV = 'kiwi.showEnvironment';
const CMD_VALIDATE = 'kiwi.validate';
const CMD_INIT = 'kiwi.init';
const CMD_CHECK_PARAMS = 'kiwi.checkParameters';

/** What a lens passes to kiwi.runTool / kiwi.showEnvironment / kiwi.validate. */
type CommandArg = {
  id?: string;
  path?: string;
  uri?: string;
  ask?: boolean;
  schema?: unknown;
  order?: unknown;
  parameters?: unknown;
  /** `▶ Run on HOST`: the execution environment to run in (`ssh:HOST`). */
  environment?: string;
  /** A skill's script: its arguments, or the line the user typed (the server splits it). */
  args?: string[];
  argsLine?: string;
  /** `▶ Run…` of a skill's script: ask for its arguments. */
  askArgs?: boolean;
};

/** What kiwi.runTool returns: a RunResult (process or HTTP), or {error}. */
type RunResult = {
  tool?: string;
  exit_code?: number | null;
  signal?: number | null;
  status?: number;
  duration_ms?: number;
  timed_out?: boolean;
  cancelled?: boolean;
  truncated?: boolean;
  error?: { kind: string; message: string };
};

/** The extension's exports: what other extensions (and the end-to-end test) may use. */
export interface KiwiApi {
  /** The binary in use, or undefined when none was found. */
  readonly binary: () => Binary | undefined;
  /** The language client, once started. */
  readonly client: () => LanguageClient | undefined;
  /** The MCP server definitions the provider gives the editor right now. */
  readonly mcpServerDefinitions: () => vscode.McpStdioServerDefinition[];
  /** Whether the provider was registered with vscode.lm.registerMcpServerDefinitionProvider. */
  readonly mcpProviderRegistered: () => boolean;
  /** Why the language server is not running, when it could not be started. */
  readonly startError: () => string | undefined;
  /** The name of the output channel that receives run output. */
  readonly outputChannelName: string;
  /** The language server's agent endpoint (its socket), when it serves one. */
  readonly agentSocket: () => string | undefined;
}

let client: LanguageClient | undefined;
let binary: Binary | undefined;
let output: vscode.OutputChannel;
let serverOutput: vscode.LogOutputChannel;
let runCounter = 0;
let startError: string | undefined;
/** The language server's agent endpoint (a Unix socket), once known. */
let agentSocket: string | undefined;
/** Fired when the MCP server definitions change (the endpoint came or went). */
let mcpChanged: vscode.EventEmitter<void> | undefined;
// While no server runs, the server's command ids answer with the reason instead of VS Code's
// "command not found" (vscode-languageclient registers the real ones when the server starts).
let fallbackCommands: vscode.Disposable[] = [];

export async function activate(context: vscode.ExtensionContext): Promise<KiwiApi> {
  output = vscode.window.createOutputChannel('Kiwi');
  serverOutput = vscode.window.createOutputChannel('Kiwi Language Server', { log: true });
  context.subscriptions.push(output, serverOutput);

  context.subscriptions.push(
    vscode.commands.registerCommand('kiwi.runToolWithParameters', (arg?: CommandArg) => runWithParameters(arg)),
    vscode.commands.registerCommand('kiwi.showOutput', () => output.show()),
    environmentChanged,
    vscode.workspace.registerTextDocumentContentProvider(ENV_SCHEME, {
      onDidChange: environmentChanged.event,
      provideTextDocumentContent: (uri) => environments.get(uri.toString()) ?? '',
    }),
    vscode.commands.registerCommand('kiwi.restartServer', () => restart(context)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('kiwi.server.path')) {
        void restart(context);
      }
    }),
  );

  const mcp = registerMcp(context);
  const mcpRegistered = mcp.registered;
  await start(context);

  return {
    binary: () => binary,
    client: () => client,
    mcpServerDefinitions: mcp.definitions,
    mcpProviderRegistered: () => mcpRegistered,
    startError: () => startError,
    outputChannelName: 'Kiwi',
    agentSocket: () => agentSocket,
  };
}

export async function deactivate(): Promise<void> {
  fallbackCommands.forEach((d) => d.dispose());
  if (client) {
    await client.stop();
  }
}

// ---------------------------------------------------------------------------------------
// the language client

function failed(message: string): void {
  startError = message;
  serverOutput.error(message);
  void vscode.window.showErrorMessage(message, 'Open Settings').then((choice) => {
    if (choice === 'Open Settings') {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'kiwi.server.path');
    }
  });
  if (fallbackCommands.length === 0) {
    for (const id of [CMD_RUN_TOOL, CMD_SHOW_ENV, CMD_VALIDATE, CMD_INIT]) {
      try {
        fallbackCommands.push(
          vscode.commands.registerCommand(id, () => {
            void vscode.window.showErrorMessage(startError ?? 'Kiwi: the language server is not running.');
            return undefined;
          }),
        );
      } catch {
        // still registered by a client that is going away: it answers itself
      }
    }
  }
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  fallbackCommands.forEach((d) => d.dispose());
  fallbackCommands = [];
  startError = undefined;
  try {
    binary = findKiwi(context.extensionPath);
  } catch (e) {
    binary = undefined;
    failed(e instanceof BinaryNotFound ? e.message : `Kiwi: ${String(e)}`);
    return;
  }
  serverOutput.info(`kiwi: ${binary.path} (from ${binary.source})`);

  const serverOptions: ServerOptions = {
    command: binary.path,
    args: ['lsp'], // stdio; no `transport`, which would add a --stdio argument
  };
  const clientOptions: LanguageClientOptions = {
    // Items under `.ai/`, and Agent Skills (issue 28): a SKILL.md and its scripts in a
    // project's skills folders, with or without `.ai/`.
    documentSelector: [
      ...['markdown', 'python', 'yaml', 'javascript', 'typescript', 'shellscript'].flatMap((language) =>
        KIWI_FOLDERS.map((folder) => ({ scheme: 'file', language, pattern: `**/${folder}/**` })),
      ),
      // Whatever language VS Code gives a SKILL.md (its own chat features may give skill
      // files a language of their own instead of markdown).
      ...KIWI_FOLDERS.map((folder) => ({ scheme: 'file', pattern: `**/${folder}/**/SKILL.md` })),
      // VS Code's own customization files, the neighbours of skills (issue 28, item 8):
      // frontmatter checks and hover, wherever they are opened, whatever language they get
      // (VS Code gives them its chat languages: prompt, instructions, chatagent).
      ...CUSTOMIZATION_SUFFIXES.map((suffix) => ({ scheme: 'file', pattern: `**/*${suffix}` })),
      // Any `.md` in `.github/agents/` is a custom agent (VS Code's custom-agents page).
      { scheme: 'file', pattern: '**/.github/agents/*.md' },
      // A project's `AGENTS.md` names its skills: references and rename start there too.
      { scheme: 'file', pattern: '**/AGENTS.md' },
    ],
    outputChannel: serverOutput,
    // The agent's runs are shown here (kiwi/agentRun, showAgentRun), on a token the server
    // does not ask the client library to create (it would take their progress for its own).
    initializationOptions: { agentRuns: true },
    middleware: {
      executeCommand: async (command, args, next) => {
        switch (command) {
          case CMD_RUN_TOOL:
            return runTool(args[0] as CommandArg | undefined);
          case CMD_SHOW_ENV:
            return showEnvironment(args[0] as CommandArg | undefined);
          case CMD_VALIDATE:
            return validate(args[0] as CommandArg | undefined);
          default:
            return next(command, args);
        }
      },
    },
  };
  client = new LanguageClient('kiwi', 'Kiwi Language Server', serverOptions, clientOptions);
  try {
    await client.start();
    await attachAgent(context, client);
  } catch (e) {
    const lc = client;
    client = undefined;
    await lc.dispose().catch(() => undefined); // unregisters its commands
    failed(`Kiwi: could not start "${binary.path} lsp": ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** The attached agent: the endpoint the server serves (offered as the MCP server), the
 * cursor told to the server as it moves, and the agent's runs shown like the author's. */
async function attachAgent(context: vscode.ExtensionContext, lc: LanguageClient): Promise<void> {
  context.subscriptions.push(
    lc.onNotification('kiwi/agentRun', (p: { token: string | number; title: string }) => showAgentRun(lc, p.token, p.title)),
  );
  let timer: NodeJS.Timeout | undefined;
  context.subscriptions.push(
    vscode.window.onDidChangeTextEditorSelection((e) => {
      const doc = e.textEditor.document;
      if (doc.uri.scheme !== 'file' || !doc.uri.fsPath.split(path.sep).includes('.ai')) {
        return;
      }
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (client === lc && lc.state === State.Running) {
          void lc.sendNotification('kiwi/activeItem', {
            uri: lc.code2ProtocolConverter.asUri(doc.uri),
            position: lc.code2ProtocolConverter.asPosition(e.selections[0].active),
          });
        }
      }, 150);
    }),
  );
  try {
    const r = (await lc.sendRequest('kiwi/agentEndpoint', null)) as { socket?: string | null } | null;
    agentSocket = r?.socket ?? undefined;
  } catch {
    agentSocket = undefined; // an older server: `kiwi mcp --project` is offered instead
  }
  if (agentSocket) {
    serverOutput.info(`agent endpoint: ${agentSocket}`);
  }
  mcpChanged?.fire();
}

/** An agent's run (`kiwi/agentRun`): its output in the Kiwi channel, a notification with
 * Cancel (the server stops the run's process group), as ▶ Run shows the author's runs. */
function showAgentRun(lc: LanguageClient, token: string | number, title: string): void {
  output.show(true);
  output.appendLine(`▶ ${title}`);
  void vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Kiwi: ${title}`, cancellable: true },
    (progress, cancel) =>
      new Promise<void>((resolve) => {
        const started = Date.now();
        const tick = () => progress.report({ message: `${Math.floor((Date.now() - started) / 1000)} s — output in the Kiwi channel` });
        tick();
        const timer = setInterval(tick, 1000);
        const onCancel = cancel.onCancellationRequested(() => {
          void lc.sendNotification(WorkDoneProgressCancelNotification.type, { token });
        });
        const sub = lc.onProgress(WorkDoneProgress.type, token, (v) => {
          if (v.kind === 'report' && v.message !== undefined) {
            output.appendLine(v.message);
          } else if (v.kind === 'end') {
            output.appendLine(`${v.message === 'done' ? '✓' : '✗'} ${title}: ${v.message ?? 'ended'}`);
            clearInterval(timer);
            sub.dispose();
            onCancel.dispose();
            resolve();
          }
        });
      }),
  );
}

async function restart(context: vscode.ExtensionContext): Promise<void> {
  const old = client;
  client = undefined;
  agentSocket = undefined;
  if (old) {
    await old.stop().catch(() => undefined);
    await old.dispose().catch(() => undefined);
  }
  await start(context);
}

function runningClient(): LanguageClient {
  if (!client || client.state !== State.Running) {
    throw new Error(
      binary
        ? 'Kiwi: the language server is not running (see the "Kiwi Language Server" output).'
        : 'Kiwi: the kiwi binary was not found; set kiwi.server.path.',
    );
  }
  return client;
}

/** VS Code's customization files the server checks (`kiwi_kernel::copilot::SUFFIXES`). */
const CUSTOMIZATION_SUFFIXES = ['.agent.md', '.chatmode.md', '.instructions.md', '.prompt.md'];

/** The folders whose files the server reads: `.ai/` and the project's skills folders. */
const KIWI_FOLDERS = ['.ai', '.agents/skills', '.claude/skills', '.github/skills'];

/** Where in `parts` (a path split at separators) a kiwi folder starts, nearest the file; -1 if none. */
function kiwiFolderAt(parts: string[]): number {
  let best = -1;
  for (const f of KIWI_FOLDERS) {
    const fp = f.split('/');
    for (let i = parts.length - fp.length; i > best; i--) {
      if (fp.every((x, j) => parts[i + j] === x)) {
        best = i;
        break;
      }
    }
  }
  return best;
}

/** The lens's argument, or the active editor's file when run from the command palette. */
function targetOf(arg: CommandArg | undefined): CommandArg {
  if (arg && (arg.id || arg.path || arg.uri)) {
    return arg;
  }
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc || doc.uri.scheme !== 'file' || kiwiFolderAt(doc.uri.fsPath.split(path.sep)) < 0) {
    throw new Error('Kiwi: open a Kiwi item (a file under .ai/, or a skill) first.');
  }
  return { ...arg, path: doc.uri.fsPath };
}

/** The project a tool runs in (its working directory): the folder holding the `.ai` of
 * its file, else the first workspace folder. Path parameters are relative to it. */
function projectRootOf(t: CommandArg): string | undefined {
  if (t.path) {
    const parts = t.path.split(path.sep);
    const at = kiwiFolderAt(parts);
    if (at > 0) {
      return parts.slice(0, at).join(path.sep) || path.sep;
    }
  }
  const f = (vscode.workspace.workspaceFolders ?? []).find((w) => w.uri.scheme === 'file');
  return f?.uri.fsPath;
}

function describe(t: CommandArg): string {
  return t.id ?? (t.path ? path.basename(t.path) : 'tool');
}

async function reportErrors<T>(f: () => Promise<T>): Promise<T | undefined> {
  try {
    return await f();
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const shown = message.startsWith('Kiwi') ? message : `Kiwi: ${message}`;
    // Also in the Kiwi output channel, beside the runs: a notification goes away.
    output?.appendLine(`✗ ${shown}`);
    void vscode.window.showErrorMessage(shown);
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------
// kiwi.runTool

/** The argument of the ▶ Run… lens of a tool's file: its schema and the order to ask in. */
async function askLensOf(target: CommandArg): Promise<CommandArg | undefined> {
  if (!target.path) {
    return undefined;
  }
  const uri = vscode.Uri.file(target.path);
  // The lens provider answers only for a loaded document ("Illegal argument" otherwise): a
  // skill's script run from its SKILL.md's lens is not open.
  await vscode.workspace.openTextDocument(uri);
  const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri)) ?? [];
  return lenses
    .map((l) => l.command?.arguments?.[0] as CommandArg | undefined)
    .find((a) => a?.ask && (target.id === undefined || a.id === target.id));
}

async function runWithParameters(arg: CommandArg | undefined): Promise<RunResult | undefined> {
  return reportErrors(async () => {
    const target = targetOf(arg);
    if (target.schema === undefined && target.path) {
      // From the palette: the ▶ Run… lens of the file carries the schema.
      const ask = await askLensOf(target);
      if (ask) {
        return runTool({ ...ask });
      }
    }
    return runTool({ ...target, ask: true });
  });
}

/** A prompt's check of one answer by the server, for the tool `target` names. */
function checkerFor(lc: LanguageClient, target: CommandArg): CheckValue {
  return async (name, value) => {
    try {
      const r = (await lc.sendRequest(ExecuteCommandRequest.type, {
        command: CMD_CHECK_PARAMS,
        arguments: [{ id: target.id, path: target.path, uri: target.uri, parameters: { [name]: value }, only: [name] }],
      })) as { problems?: Record<string, string> } | null;
      return r?.problems?.[name] ?? r?.problems?.[''];
    } catch {
      return undefined; // a server without the check: the run checks
    }
  };
}

async function runTool(arg: CommandArg | undefined): Promise<RunResult | undefined> {
  return reportErrors(async () => {
    const target = targetOf(arg);
    const lc = runningClient();
    let parameters = target.parameters;
    if (!target.ask && parameters === undefined) {
      // A plain ▶ Run of a tool with a required parameter (and no default): ask for just
      // those, in the schema's order, instead of a run that can only fail.
      const lens = await askLensOf(target);
      const missing = lens ? missingRequired(lens.schema as never, undefined) : [];
      if (lens && missing.length > 0) {
        const asked = await askParameters(
          describe(target),
          lens.schema as never,
          lens.order,
          missing,
          projectRootOf(target),
          checkerFor(lc, target),
        );
        if (asked === undefined) {
          return undefined; // cancelled: nothing runs
        }
        parameters = asked;
      }
    }
    if (target.ask) {
      const asked = await askParameters(
        describe(target),
        target.schema as never,
        target.order,
        undefined,
        projectRootOf(target),
        checkerFor(lc, target),
      );
      if (asked === undefined) {
        return undefined; // cancelled: nothing runs
      }
      // A step's lens carries its fixed parameters and asks for the templated ones.
      const fixed = target.parameters;
      parameters =
        fixed && typeof fixed === 'object' && !Array.isArray(fixed) ? { ...(fixed as Record<string, unknown>), ...asked } : asked;
    }
    const request: CommandArg = { id: target.id, path: target.path, uri: target.uri };
    if (parameters !== undefined) {
      request.parameters = parameters;
    }
    // What the lens asked for besides the parameters: where to run, a script's arguments.
    if (target.environment !== undefined) {
      request.environment = target.environment;
    }
    if (target.args !== undefined) {
      request.args = target.args;
    }
    let argsLine = target.argsLine;
    if (target.askArgs && argsLine === undefined && target.args === undefined) {
      argsLine = await vscode.window.showInputBox({
        title: `Kiwi: run ${describe(target)}`,
        prompt: 'The arguments, as you would type them after the script in a shell (nothing is expanded)',
        placeHolder: 'in.pdf "out file.pdf"',
        ignoreFocusOut: true,
      });
      if (argsLine === undefined) {
        return undefined; // cancelled: nothing runs
      }
    }
    if (argsLine !== undefined) {
      request.argsLine = argsLine;
    }
    const name = describe(target);
    const token = `kiwi-vscode-run-${process.pid}-${++runCounter}`;
    output.show(true);
    output.appendLine(`▶ ${name}${parameters !== undefined ? ' ' + JSON.stringify(parameters) : ''}`);

    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Kiwi: running ${name}`, cancellable: true },
      async (progress, cancel) => {
        // Each output line arrives as a work-done report (and as window/logMessage, which
        // goes to the "Kiwi Language Server" output): it goes to the output channel; the
        // notification shows how long the run has taken.
        const started = Date.now();
        const tick = () => progress.report({ message: `${Math.floor((Date.now() - started) / 1000)} s — output in the Kiwi channel` });
        tick();
        const timer = setInterval(tick, 1000);
        const sub = lc.onProgress(WorkDoneProgress.type, token, (v) => {
          if (v.kind === 'report' && v.message !== undefined) {
            output.appendLine(v.message);
          }
        });
        const onCancel = cancel.onCancellationRequested(() => {
          // The server stops the run (its whole process group) and still answers.
          void lc.sendNotification(WorkDoneProgressCancelNotification.type, { token });
        });
        try {
          return (await lc.sendRequest(ExecuteCommandRequest.type, {
            command: CMD_RUN_TOOL,
            arguments: [request],
            workDoneToken: token,
          })) as RunResult | null;
        } finally {
          clearInterval(timer);
          sub.dispose();
          onCancel.dispose();
        }
      },
    );
    showResult(name, result ?? undefined);
    return result ?? undefined;
  });
}

function showResult(name: string, r: RunResult | undefined): void {
  if (!r) {
    output.appendLine(`✗ ${name}: no result`);
    void vscode.window.showErrorMessage(`Kiwi: ${name} returned no result.`);
    return;
  }
  const showOutput = 'Show Output';
  const open = (choice: string | undefined) => {
    if (choice === showOutput) {
      output.show();
    }
  };
  if (r.error) {
    const msg = `${name} failed (${r.error.kind}): ${r.error.message}`;
    output.appendLine(`✗ ${msg}`);
    void vscode.window.showErrorMessage(`Kiwi: ${msg}`, showOutput).then(open);
    return;
  }
  const took = r.duration_ms !== undefined ? ` in ${r.duration_ms} ms` : '';
  let failed = false;
  let what: string;
  if (r.status !== undefined) {
    what = `HTTP ${r.status}`;
    failed = r.status >= 400;
  } else if (r.cancelled) {
    what = 'cancelled';
    failed = true;
  } else if (r.timed_out) {
    what = 'timed out';
    failed = true;
  } else if (r.signal !== undefined && r.signal !== null) {
    what = `ended by signal ${r.signal}`;
    failed = true;
  } else {
    what = `exit ${r.exit_code}`;
    failed = r.exit_code !== 0;
  }
  const msg = `${name}: ${what}${took}${r.truncated ? ' (output truncated)' : ''}`;
  output.appendLine(`${failed ? '✗' : '✓'} ${msg}`);
  if (failed) {
    void vscode.window.showErrorMessage(`Kiwi: ${msg}`, showOutput).then(open);
  } else {
    void vscode.window.showInformationMessage(`Kiwi: ${msg}`, showOutput).then(open);
  }
}

// ---------------------------------------------------------------------------------------
// kiwi.showEnvironment, kiwi.validate

/** The scheme of the read-only environment views, and what each shows. */
const ENV_SCHEME = 'kiwi-env';
const environments = new Map<string, string>();
const environmentChanged = new vscode.EventEmitter<vscode.Uri>();

async function showEnvironment(arg: CommandArg | undefined): Promise<unknown> {
  return reportErrors(async () => {
    const target = targetOf(arg);
    const r = (await runningClient().sendRequest(ExecuteCommandRequest.type, {
      command: CMD_SHOW_ENV,
      arguments: [{ id: target.id, path: target.path, uri: target.uri }],
    })) as { markdown?: string } | null;
    if (!r?.markdown) {
      throw new Error(`Kiwi: no environment for ${describe(target)}.`);
    }
    // A read-only virtual document (no "Untitled", nothing to save), titled by the tool.
    const uri = vscode.Uri.from({ scheme: ENV_SCHEME, path: `/${describe(target)} — environment.md` });
    environments.set(uri.toString(), r.markdown);
    environmentChanged.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    // Rendered: VS Code's markdown preview of the read-only document (a webview); the source
    // where the preview is not available.
    try {
      await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
    } catch {
      await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    }
    return r;
  });
}

const SHOW_PROBLEMS = 'Show Problems';

type Validation = { path: string; valid: boolean; diagnostics: { code: string; severity: string; message: string; line: number; column: number }[] };

async function validate(arg: CommandArg | undefined): Promise<unknown> {
  return reportErrors(async () => {
    const target = targetOf(arg);
    const r = (await runningClient().sendRequest(ExecuteCommandRequest.type, {
      command: CMD_VALIDATE,
      arguments: [{ id: target.id, path: target.path, uri: target.uri }],
    })) as Validation | null;
    if (!r) {
      throw new Error(`Kiwi: no answer for ${describe(target)}.`);
    }
    const name = path.basename(r.path);
    const n = r.diagnostics.length;
    if (n === 0) {
      void vscode.window.showInformationMessage(`Kiwi: ${name} is valid.`);
    } else {
      const summary = `${name}: ${n} problem${n === 1 ? '' : 's'} (${r.diagnostics.map((d) => d.code).join(', ')})`;
      // Not awaited: the command answers at once; the action opens the Problems view.
      void (r.valid ? vscode.window.showWarningMessage : vscode.window.showErrorMessage)(`Kiwi: ${summary}`, SHOW_PROBLEMS).then(
        (choice) => {
          if (choice === SHOW_PROBLEMS) {
            void vscode.commands.executeCommand('workbench.actions.view.problems');
          }
        },
      );
    }
    return r;
  });
}

// ---------------------------------------------------------------------------------------
// MCP for the editor's agent: the language server's endpoint (`kiwi mcp --attach --socket S`,
// the live workspace) for the folder it serves, `kiwi mcp --project <folder>` for the others

function registerMcp(context: vscode.ExtensionContext): {
  definitions: () => vscode.McpStdioServerDefinition[];
  registered: boolean;
} {
  const version = String(context.extension.packageJSON.version ?? '');
  const definitions = (): vscode.McpStdioServerDefinition[] => {
    if (!vscode.workspace.getConfiguration('kiwi').get<boolean>('mcp.enabled', true)) {
      return [];
    }
    let bin: Binary;
    try {
      bin = findKiwi(context.extensionPath);
    } catch {
      return []; // the error was shown when the language server could not start
    }
    const folders = (vscode.workspace.workspaceFolders ?? []).filter(
      (f) => f.uri.scheme === 'file' && fs.existsSync(path.join(f.uri.fsPath, '.ai')),
    );
    return folders.map((f, i) => {
      const label = folders.length > 1 ? `Kiwi (${f.name})` : 'Kiwi';
      // The server's project is the first folder's: that one is attached.
      const args =
        agentSocket && i === 0 ? ['mcp', '--attach', '--socket', agentSocket] : ['mcp', '--project', f.uri.fsPath];
      const def = new vscode.McpStdioServerDefinition(label, bin.path, args, {}, version);
      def.cwd = f.uri;
      return def;
    });
  };
  const lm = (vscode as { lm?: typeof vscode.lm }).lm;
  if (typeof lm?.registerMcpServerDefinitionProvider !== 'function') {
    serverOutput.warn('This editor has no MCP server definition API: kiwi mcp is not offered to its agent.');
    return { definitions, registered: false };
  }
  const changed = new vscode.EventEmitter<void>();
  mcpChanged = changed;
  context.subscriptions.push(
    changed,
    lm.registerMcpServerDefinitionProvider('kiwi.mcp', {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: () => definitions(),
      resolveMcpServerDefinition: (def) => {
        if (def instanceof vscode.McpStdioServerDefinition && !fs.existsSync(def.command)) {
          throw new Error(`Kiwi: ${def.command} does not exist any more; check kiwi.server.path.`);
        }
        return def;
      },
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('kiwi.server.path') || e.affectsConfiguration('kiwi.mcp.enabled')) {
        changed.fire();
      }
    }),
  );
  return { definitions, registered: true };
}
