-- kiwi for Neovim: `require('kiwi').setup{}` starts `kiwi lsp` for files under a `.ai/` folder
-- (markdown, python, yaml, javascript, typescript) and defines :KiwiRun, :KiwiCancel, :KiwiEnv
-- and :KiwiValidate.
--
-- How the client is started depends on the Neovim version:
--   0.11+     vim.lsp.config('kiwi', ...) + vim.lsp.enable('kiwi')
--   0.8–0.10  vim.lsp.start() from a FileType autocommand
--   0.7       vim.lsp.start_client() + vim.lsp.buf_attach_client()
local config = require('kiwi.config')

local M = {}

--- Which way the client was set up: 'vim.lsp.enable', 'vim.lsp.start' or 'vim.lsp.start_client'.
M.method = nil

local client_config -- the resolved client configuration (before 0.11)
local clients_by_root = {} -- 0.7: root -> client id

local function start_07(bufnr, root)
  local id = clients_by_root[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if not client or client.is_stopped() then
    local cfg = vim.deepcopy(client_config)
    cfg.root_dir = root
    id = vim.lsp.start_client(cfg)
    if not id then
      vim.notify('kiwi: could not start ' .. table.concat(cfg.cmd, ' '), vim.log.levels.ERROR)
      return nil
    end
    clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- Start (or reuse) the kiwi client for a buffer, when it is a file under `.ai/`. Returns the
--- client id, or nil for other buffers (ignored quietly). Not used on 0.11+ (vim.lsp.enable).
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local root = config.buf_root(bufnr)
  if not root then
    return nil
  end
  if vim.lsp.start then
    local cfg = vim.deepcopy(client_config)
    cfg.root_dir = root
    return vim.lsp.start(cfg, { bufnr = bufnr })
  end
  return start_07(bufnr, root)
end

--- Options (all optional):
---   cmd           the server command, default { 'kiwi', 'lsp' }
---   on_attach     function(client, bufnr), called after kiwi's own
---   capabilities  merged into Neovim's default client capabilities
---   handlers, settings, init_options, ...: passed to the client as they are
function M.setup(opts)
  opts = opts or {}
  require('kiwi.commands').register()
  if vim.lsp.config ~= nil and vim.lsp.enable ~= nil then
    vim.lsp.config('kiwi', config.lsp_config(opts))
    vim.lsp.enable('kiwi')
    M.method = 'vim.lsp.enable'
    return
  end
  client_config = config.client_config(opts)
  M.method = vim.lsp.start and 'vim.lsp.start' or 'vim.lsp.start_client'
  local group = vim.api.nvim_create_augroup('kiwi_attach', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
    desc = 'kiwi: start the language server for files under .ai/',
  })
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      M.attach(b)
    end
  end
end

return M
