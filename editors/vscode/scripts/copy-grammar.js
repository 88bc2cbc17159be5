// Copies the injection grammars from the repository's grammars/vscode/ into syntaxes/, so the
// .vsix carries them (vsce packs only files under the extension folder).
const fs = require('fs');
const path = require('path');

const srcDir = path.join(__dirname, '..', '..', '..', 'grammars', 'vscode');
const dir = path.join(__dirname, '..', 'syntaxes');
fs.mkdirSync(dir, { recursive: true });
const names = fs.readdirSync(srcDir).filter((n) => n.endsWith('.tmLanguage.json'));
if (names.length === 0) {
  throw new Error(`no grammars in ${srcDir}`);
}
for (const name of names) {
  const text = fs.readFileSync(path.join(srcDir, name), 'utf8');
  JSON.parse(text); // fail the build on a broken grammar
  fs.writeFileSync(path.join(dir, name), text);
}
console.log(`grammars: ${names.join(', ')} -> syntaxes/`);
