-- The kiwi language server for `vim.lsp.config`/`vim.lsp.enable` (Neovim 0.11+):
--
--   vim.lsp.enable('kiwi')                               -- with this plugin on 'runtimepath'
--   vim.lsp.config('kiwi', { cmd = { '/path/to/kiwi', 'lsp' } })   -- to change a field
--
-- Starts `kiwi lsp` only for markdown, python, yaml, javascript and typescript files under a
-- `.ai/` folder, rooted at the folder that holds `.ai/`; code lenses refresh on BufEnter, InsertLeave and save; run
-- output streams into the kiwi://output buffer. `require('kiwi').setup{}` does the same and
-- also works on Neovim 0.7 to 0.10.
return require('kiwi.config').lsp_config()
