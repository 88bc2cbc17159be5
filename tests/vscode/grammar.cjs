// Tokenizes a directive with VS Code's own TextMate engine (vscode-textmate + vscode-oniguruma
// as shipped in code-server) and VS Code's markdown and XML grammars, with the Kiwi injection
// grammar injected into text.html.markdown the way the extension's `injectTo` does.
// Usage: node grammar.cjs VSCODE_LIB_DIR GRAMMARS_DIR DIRECTIVE.md
// Prints one line per check; exits 1 when one fails.
const fs = require('fs');
const path = require('path');

async function main() {
  const [lib, grammars, file] = process.argv.slice(2).map((p) => path.resolve(p));
  const vsctm = require(path.join(lib, 'node_modules', 'vscode-textmate'));
  const onig = require(path.join(lib, 'node_modules', 'vscode-oniguruma'));
  const wasm = fs.readFileSync(path.join(lib, 'node_modules', 'vscode-oniguruma', 'release', 'onig.wasm'));
  await onig.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const files = {
    'text.html.markdown': path.join(lib, 'extensions', 'markdown-basics', 'syntaxes', 'markdown.tmLanguage.json'),
    'text.xml': path.join(lib, 'extensions', 'xml', 'syntaxes', 'xml.tmLanguage.json'),
    'kiwi.directive.injection': path.join(grammars, 'kiwi-directive.injection.tmLanguage.json'),
    'kiwi.directive.strings.injection': path.join(grammars, 'kiwi-directive-strings.injection.tmLanguage.json'),
  };
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (p) => new onig.OnigScanner(p),
      createOnigString: (s) => new onig.OnigString(s),
    }),
    loadGrammar: async (scope) => (files[scope] ? vsctm.parseRawGrammar(fs.readFileSync(files[scope], 'utf8'), files[scope]) : null),
    getInjections: (scope) =>
      scope === 'text.html.markdown' ? ['kiwi.directive.injection', 'kiwi.directive.strings.injection'] : undefined,
  });
  const grammar = await registry.loadGrammar('text.html.markdown');
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const tokens = [];
  let state = vsctm.INITIAL;
  lines.forEach((line, n) => {
    const r = grammar.tokenizeLine(line, state);
    for (const t of r.tokens) {
      tokens.push({ line: n, text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes });
    }
    state = r.ruleStack;
  });
  if (process.env.DUMP) for (const t of tokens) if (lines[t.line].includes(process.env.DUMP)) console.log(JSON.stringify(t.text), t.scopes.slice(3).join(" "));
  const find = (text, lineIncludes) =>
    tokens.find((t) => t.text === text && lines[t.line].includes(lineIncludes)) || { scopes: [] };
  const checks = [
    ['the <directive> root tag', find('directive', '<directive name='), ['entity.name.tag.directive.kiwi']],
    ['a nested tag is XML inside the directive fence', find('metadata', '<metadata>'), ['entity.name.tag.localname.xml', 'meta.embedded.block.kiwi-directive']],
    ['an attribute name', find('value', '<param name='), ['entity.other.attribute-name.localname.xml']],
    ['{input:who} in element text', find('who', 'freundlich'), ['variable.parameter.input.kiwi']],
    ['{input:who} in an attribute value', find('who', '<param name='), ['variable.parameter.input.kiwi', 'string.quoted.double.xml']],
    ['the closing fence ends the embedding', find('```', '```'), ['punctuation.definition.markdown']],
  ];
  let failed = 0;
  for (const [name, tok, want] of checks) {
    const ok = want.every((w) => tok.scopes.includes(w));
    failed += ok ? 0 : 1;
    console.log(`${ok ? 'ok  ' : 'FAIL'} grammar: ${name}${ok ? '' : ` (scopes: ${tok.scopes.join(' ') || 'token not found'}; want ${want.join(' ')})`}`);
  }
  const prose = tokens.filter((t) => t.line < lines.findIndex((l) => l.startsWith('```')));
  const leaked = prose.filter((t) => t.scopes.some((s) => s.endsWith('.kiwi') || s.includes('kiwi-directive')));
  console.log(`${leaked.length ? 'FAIL' : 'ok  '} grammar: prose before the fence stays markdown`);
  failed += leaked.length ? 1 : 0;
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
