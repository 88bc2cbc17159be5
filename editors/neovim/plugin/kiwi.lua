-- Defines :KiwiRun, :KiwiCancel, :KiwiEnv, :KiwiValidate and the lens commands at start-up, so
-- that they also work for users who start the server with vim.lsp.enable('kiwi') and never
-- call require('kiwi').setup{}. Starting the server is left to setup() or vim.lsp.enable().
if vim.g.loaded_kiwi then
  return
end
vim.g.loaded_kiwi = 1
require('kiwi.commands').register()
