// Asks a tool's parameters with input boxes built from its CONFIG_SCHEMA (JSON Schema):
// one prompt per property, typed (string, integer, number, boolean, enum, array/object as
// JSON), defaults pre-filled, required ones enforced. Escape on any prompt aborts the run.
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
export async function askParameters(
  toolId: string,
  schema: Json | undefined,
  order?: unknown,
  only?: string[],
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

    const text = await vscode.window.showInputBox({
      title,
      prompt: [description, hint].filter(Boolean).join(' — '),
      value: shown(prop.default),
      ignoreFocusOut: true,
      validateInput: (t) => {
        if (t === '') {
          return isRequired ? `${name} is required` : undefined;
        }
        const r = parseValue(type, t);
        return typeof r === 'string' ? `Expected ${r}` : undefined;
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
