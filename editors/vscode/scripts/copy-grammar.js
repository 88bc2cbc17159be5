// Copies the injection grammar from the repository's grammars/vscode/ into syntaxes/, so the
// .vsix carries it (vsce packs only files under the extension folder).
const fs = require('fs');
const path = require('path');

const name = 'kiwi-directive.injection.tmLanguage.json';
const src = path.join(__dirname, '..', '..', '..', 'grammars', 'vscode', name);
const dir = path.join(__dirname, '..', 'syntaxes');
const text = fs.readFileSync(src, 'utf8');
JSON.parse(text); // fail the build on a broken grammar
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, name), text);
console.log(`grammar: ${path.relative(process.cwd(), src)} -> syntaxes/${name}`);
