// Asks a tool's parameters with input boxes built from its CONFIG_SCHEMA (JSON Schema):
// one prompt per property, typed (string, integer, number, boolean, enum, array/object as
// JSON), defaults pre-filled, required ones enforced, each typed answer checked by the server
// against the schema as the run would check it. Escape on any prompt aborts the run.
// A path-typed string (see `isPathProperty`) gets a picker: the project's files, "Browse…"
// (the open dialog), or a typed path; the value is relative to the project root, where the
// tool runs.
import * as path from 'path';
import * as vscode from 'vscode';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = { [k: string]: Json };

const UNSET = '(leave unset)';

function typeOf(prop: Schema): string {
  const t = prop.type;
  if (typeof t === 'string') {
    return t;
  }
  if (Array.isArray(t)) {
    const first = t.find((x) => typeof x === 'string' && x !== 'null');
    if (typeof first === 'string') {
      return first;
    }
  }
  if (Array.isArray(prop.enum)) {
    return 'enum';
  }
  return 'string';
}

/**
 * Whether a string property names a file or folder: `format` says so (`path`, `file-path`,
 * `dir-path`, `directory`, `uri-reference`), or its name is `path`, `file`, `dir`,
 * `directory`, `folder` or ends in `_path`, `_file`, `_dir`, `_directory`, `_folder` (the
 * corpus's schemas use `path`, `file_path`, `package_path`, `working_dir`; none sets a format).
 */
export function isPathProperty(name: string, prop: Schema): boolean {
  if (typeOf(prop) !== 'string' || Array.isArray(prop.enum)) {
    return false;
  }
  const format = typeof prop.format === 'string' ? prop.format.toLowerCase() : '';
  if (['path', 'file-path', 'filepath', 'dir-path', 'directory', 'uri-reference'].includes(format)) {
    return true;
  }
  return /^(path|file|dir|directory|folder)$|_(path|file|dir|directory|folder)$/i.test(name);
}

/** Whether it names a folder rather than a file (the open dialog picks folders then). */
function wantsFolder(name: string, prop: Schema): boolean {
  const format = typeof prop.format === 'string' ? prop.format.toLowerCase() : '';
  return format === 'dir-path' || format === 'directory' || /(^|_)(dir|directory|folder)$/i.test(name);
}

/** `p` relative to `root` when inside it (with `/`), else as it is. */
export function relativeToRoot(root: string | undefined, p: string): string {
  if (!root || !path.isAbsolute(p)) {
    return p;
  }
  const rel = path.relative(root, p);
  if (rel === '') {
    return '.';
  }
  return rel.startsWith('..') || path.isAbsolute(rel) ? p : rel.split(path.sep).join('/');
}

const BROWSE = 'Browse…';

/**
 * A path: picked among the project's files, through "Browse…", or typed (relative to the
 * project root). Undefined when cancelled, null when left unset.
 */
async function askPath(
  name: string,
  prop: Schema,
  title: string,
  placeHolder: string,
  isRequired: boolean,
  root: string | undefined,
): Promise<string | null | undefined> {
  const folder = wantsFolder(name, prop);
  const files: vscode.QuickPickItem[] = [];
  if (root) {
    const found = await vscode.workspace.findFiles(
      new vscode.RelativePattern(root, '**/*'),
      '{**/.git/**,**/node_modules/**,**/.venv/**,**/__pycache__/**}',
      500,
    );
    const seen = new Set<string>();
    for (const u of found) {
      const rel = relativeToRoot(root, folder ? path.dirname(u.fsPath) : u.fsPath);
      if (!seen.has(rel)) {
        seen.add(rel);
        files.push({ label: rel });
      }
    }
    files.sort((a, b) => a.label.localeCompare(b.label));
  }
  const browse: vscode.QuickPickItem = {
    label: BROWSE,
    description: folder ? 'choose a folder' : 'choose a file',
    alwaysShow: true,
  };
  const unset: vscode.QuickPickItem = { label: UNSET, description: 'the tool decides', alwaysShow: true };
  const qp = vscode.window.createQuickPick();
  qp.title = title;
  qp.placeholder = placeHolder;
  qp.ignoreFocusOut = true;
  qp.matchOnDescription = true;
  qp.value = shown(prop.default);
  let typed: vscode.QuickPickItem | undefined;
  const update = () => {
    const v = qp.value.trim();
    typed = v && !files.some((f) => f.label === v) ? { label: v, description: 'as typed, relative to the project', alwaysShow: true } : undefined;
    qp.items = [...(typed ? [typed] : []), browse, ...(isRequired ? [] : [unset]), ...files];
    if (typed) {
      qp.activeItems = [typed];
    }
  };
  update();
  const picked = await new Promise<vscode.QuickPickItem | undefined>((resolve) => {
    qp.onDidChangeValue(update);
    qp.onDidAccept(() => {
      const item = qp.selectedItems[0] ?? qp.activeItems[0];
      if (item) {
        resolve(item);
        qp.hide();
      }
    });
    qp.onDidHide(() => resolve(undefined));
    qp.show();
  });
  qp.dispose();
  if (picked === undefined) {
    return undefined;
  }
  if (picked === unset) {
    return null;
  }
  if (picked === browse) {
    const chosen = await vscode.window.showOpenDialog({
      title,
      defaultUri: root ? vscode.Uri.file(root) : undefined,
      canSelectFiles: !folder,
      canSelectFolders: folder,
      canSelectMany: false,
      openLabel: `Use as ${name}`,
    });
    if (!chosen || chosen.length === 0) {
      return undefined;
    }
    return relativeToRoot(root, chosen[0].fsPath);
  }
  return relativeToRoot(root, picked.label);
}

/** Parses what was typed for a property of type `type`; a string is an error message. */
export function parseValue(type: string, text: string): { value: Json } | string {
  switch (type) {
    case 'integer':
      return /^[+-]?\d+$/.test(text.trim()) ? { value: Number(text.trim()) } : 'an integer, e.g. 3';
    case 'number': {
      const n = Number(text.trim());
      return text.trim() !== '' && Number.isFinite(n) ? { value: n } : 'a number, e.g. 2.5';
    }
    case 'array':
    case 'object': {
      try {
        const v = JSON.parse(text) as Json;
        const ok = type === 'array' ? Array.isArray(v) : v !== null && typeof v === 'object' && !Array.isArray(v);
        return ok ? { value: v } : `a JSON ${type}`;
      } catch (e) {
        return `a JSON ${type} (${(e as Error).message})`;
      }
    }
    default:
      return { value: text };
  }
}

function shown(v: Json | undefined): string {
  if (v === undefined) {
    return '';
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * The property names in the schema's own order: `order` (the server sends the order the file
 * declares them in, which a JSON object does not keep), then any other property.
 */
export function orderedNames(props: Schema, order: unknown): string[] {
  const listed = Array.isArray(order) ? order.filter((n): n is string => typeof n === 'string' && n in props) : [];
  return [...listed, ...Object.keys(props).filter((n) => !listed.includes(n))];
}

/** The required properties without a default that `given` does not set: what a run lacks. */
export function missingRequired(schema: Json | undefined, given: unknown): string[] {
  const s = schema && typeof schema === 'object' && !Array.isArray(schema) ? (schema as Schema) : {};
  const props = s.properties && typeof s.properties === 'object' && !Array.isArray(s.properties) ? (s.properties as Schema) : {};
  const have = given && typeof given === 'object' && !Array.isArray(given) ? (given as Record<string, unknown>) : {};
  const required = Array.isArray(s.required) ? s.required.filter((x): x is string => typeof x === 'string') : [];
  return required.filter((n) => {
    const p = props[n];
    const hasDefault = p !== null && typeof p === 'object' && !Array.isArray(p) && p.default !== undefined;
    return !(n in have) && !hasDefault;
  });
}

/**
 * The parameters, or undefined when the user cancelled. A schema with no properties (or none
 * at all) asks for the whole parameter object as JSON.
 */
/**
 * The server's check of one answer (`kiwi.checkParameters`, the run's own check against the
 * schema: minimum, maximum, enum, pattern...): what is wrong with it, or undefined.
 */
export type CheckValue = (name: string, value: Json) => Promise<string | undefined>;

export async function askParameters(
  toolId: string,
  schema: Json | undefined,
  order?: unknown,
  only?: string[],
  root?: string,
  checkValue?: CheckValue,
): Promise<Record<string, Json> | undefined> {
  const s = schema && typeof schema === 'object' && !Array.isArray(schema) ? (schema as Schema) : {};
  const props = s.properties && typeof s.properties === 'object' && !Array.isArray(s.properties) ? (s.properties as Schema) : {};
  const names = orderedNames(props, order).filter((n) => !only || only.includes(n));
  const required = new Set(Array.isArray(s.required) ? s.required.filter((x): x is string => typeof x === 'string') : []);
  if (names.length === 0) {
    const text = await vscode.window.showInputBox({
      title: `Run ${toolId}`,
      prompt: 'Parameters as a JSON object',
      value: '{}',
      ignoreFocusOut: true,
      validateInput: (t) => {
        const r = parseValue('object', t);
        return typeof r === 'string' ? `Expected ${r}` : undefined;
      },
    });
    if (text === undefined) {
      return undefined;
    }
    return (parseValue('object', text) as { value: Record<string, Json> }).value;
  }

  const params: Record<string, Json> = {};
  for (const [i, name] of names.entries()) {
    const prop = (props[name] && typeof props[name] === 'object' ? props[name] : {}) as Schema;
    const type = typeOf(prop);
    const isRequired = required.has(name);
    const title = `Run ${toolId}: ${name} (${i + 1}/${names.length})`;
    const description = typeof prop.description === 'string' ? prop.description : '';
    const hint = `${type}${isRequired ? ', required' : ', optional'}${prop.default !== undefined ? `, default ${shown(prop.default)}` : ''}`;

    if (type === 'boolean' || Array.isArray(prop.enum)) {
      const values: Json[] = type === 'boolean' ? [true, false] : (prop.enum as Json[]);
      const items: vscode.QuickPickItem[] = values.map((v) => ({
        label: shown(v),
        description: prop.default !== undefined && shown(prop.default) === shown(v) ? 'default' : undefined,
      }));
      // The default first, so Enter takes it.
      items.sort((a, b) => Number(b.description === 'default') - Number(a.description === 'default'));
      if (!isRequired) {
        items.push({ label: UNSET, description: 'the tool decides' });
      }
      const pick = await vscode.window.showQuickPick(items, {
        title,
        placeHolder: [description, hint].filter(Boolean).join(' — '),
        ignoreFocusOut: true,
      });
      if (pick === undefined) {
        return undefined;
      }
      if (pick.label !== UNSET) {
        params[name] = values.find((v) => shown(v) === pick.label) as Json;
      }
      continue;
    }

    if (isPathProperty(name, prop)) {
      const p = await askPath(name, prop, title, [description, hint].filter(Boolean).join(' — '), isRequired, root);
      if (p === undefined) {
        return undefined;
      }
      if (p !== null) {
        params[name] = p;
      }
      continue;
    }

    const text = await vscode.window.showInputBox({
      title,
      prompt: [description, hint].filter(Boolean).join(' — '),
      value: shown(prop.default),
      ignoreFocusOut: true,
      validateInput: async (t) => {
        if (t === '') {
          return isRequired ? `${name} is required` : undefined;
        }
        const r = parseValue(type, t);
        if (typeof r === 'string') {
          return `Expected ${r}`;
        }
        return checkValue ? await checkValue(name, r.value) : undefined;
      },
    });
    if (text === undefined) {
      return undefined;
    }
    if (text === '') {
      continue;
    }
    params[name] = (parseValue(type, text) as { value: Json }).value;
  }
  return params;
}
