// Where the `kiwi` binary is: the `kiwi.server.path` setting, else a binary bundled in the
// extension (`bin/kiwi`), else `kiwi` on PATH.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

export type Binary = { path: string; source: 'setting' | 'bundled' | 'PATH' };

export class BinaryNotFound extends Error {}

const exe = process.platform === 'win32' ? 'kiwi.exe' : 'kiwi';

function isExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) {
      return false;
    }
    fs.accessSync(file, process.platform === 'win32' ? fs.constants.F_OK : fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function expand(p: string): string {
  let out = p.trim();
  if (out === '~' || out.startsWith('~/')) {
    out = path.join(os.homedir(), out.slice(1));
  }
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (folder) {
    out = out.replace(/\$\{workspaceFolder\}/g, folder);
  }
  return out;
}

/** Finds the binary or throws a BinaryNotFound whose message says what to do. */
export function findKiwi(extensionPath: string): Binary {
  const configured = vscode.workspace.getConfiguration('kiwi').get<string>('server.path', '');
  if (configured && configured.trim()) {
    const p = expand(configured);
    if (isExecutable(p)) {
      return { path: p, source: 'setting' };
    }
    throw new BinaryNotFound(
      `Kiwi: the setting kiwi.server.path is "${configured}", but no executable file is there.`,
    );
  }
  const bundled = path.join(extensionPath, 'bin', exe);
  if (isExecutable(bundled)) {
    return { path: bundled, source: 'bundled' };
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) {
      continue;
    }
    const p = path.join(dir, exe);
    if (isExecutable(p)) {
      return { path: p, source: 'PATH' };
    }
  }
  throw new BinaryNotFound(
    'Kiwi: the kiwi binary was not found: it is not on PATH and kiwi.server.path is not set. ' +
      'Install kiwi (cargo install --path server/kiwi in the kiwi repository) or set kiwi.server.path.',
  );
}
